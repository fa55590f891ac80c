"""Properties of the `kip642` model (Raft safety plus seed 004's single-member changes)."""

from specs.kip642 import LEADER, VOTERS, State, spec


@spec.invariant(name="OneLeaderPerEpoch")
def one_leader_per_epoch(cfg, s: State) -> bool:
    """No two servers are ever elected leader of the same epoch."""
    if s.two_leaders_in_an_epoch:
        return False
    epochs = [b.epoch for b in s.servers if b.role == LEADER]
    return len(epochs) == len(set(epochs))


@spec.invariant(name="LogMatching")
def log_matching(cfg, s: State) -> bool:
    """If two logs hold an entry with the same offset and epoch, they agree up to it."""
    logs = [b.log for b in s.servers]
    for i, a in enumerate(logs):
        for b in logs[i + 1:]:
            n = min(len(a), len(b))
            for k in range(n - 1, -1, -1):
                if a[k].epoch == b[k].epoch:
                    if a[:k + 1] != b[:k + 1]:
                        return False
                    break
    return True


@spec.invariant(name="LeaderCompleteness")
def leader_completeness(cfg, s: State) -> bool:
    """Every leader of an epoch at least that of the last commit holds the committed log."""
    return all(b.log[:len(s.committed)] == s.committed for b in s.servers
               if b.role == LEADER and b.epoch >= s.commit_epoch)


@spec.invariant(name="StateMachineSafety")
def state_machine_safety(cfg, s: State) -> bool:
    """Committed entries are never lost or changed: no commit contradicts an earlier one, and every
    server's committed prefix (up to its HWM) agrees with the committed log."""
    if s.committed_overwritten:
        return False
    return all(b.log[:b.hwm] == s.committed[:b.hwm] and b.hwm <= len(s.committed) for b in s.servers)


@spec.invariant(name="AtMostOneUncommittedVoterChange")
def at_most_one_uncommitted_change(cfg, s: State) -> bool:
    """A leader's log holds at most one VoterAssignment beyond its HWM."""
    return all(sum(1 for e in b.log[b.hwm:] if e.kind == VOTERS) <= 1 for b in s.servers if b.role == LEADER)


@spec.invariant(name="SingleMemberChanges")
def single_member_changes(cfg, s: State) -> bool:
    """Consecutive voter sets in any log differ by at most one member."""
    for b in s.servers:
        prev = None
        for e in b.log:
            if e.kind == VOTERS:
                if prev is not None and (prev ^ e.voters).bit_count() > 1:
                    return False
                prev = e.voters
    return True
