"""Properties of the `kip642` model: Raft's safety properties (Ongaro's dissertation, Figure 3.2) and
KIP-642's single-member voter changes (KIP-642, Quorum Change Protocol).

Each property first decides on the fast path and only on failure works out a reason naming the
servers, offsets, epochs and voter sets involved. Offsets count from 0 (a server's HWM is the offset
of its first uncommitted entry)."""

from harness.bitset import members
from harness.model import Violated
from specs.kip642 import spec
from specs.kip642.state import KIND, LEADER, VOTER_ASSIGNMENT, Entry, State


def voter_set(m: int) -> str:
    return "{" + ",".join(map(str, members(m))) + "}"


def entry_text(e: Entry) -> str:
    """An entry as a reason names it: `VOTER_ASSIGNMENT of epoch 2 (voters {1,2,4}, target {1,2})`."""
    text = f"{KIND.names[e.kind]} of epoch {e.epoch}"
    if e.kind == VOTER_ASSIGNMENT:
        text += f" (voters {voter_set(e.voters)}, target {voter_set(e.target) if e.target else 'null'})"
    return text


def first_difference(a: tuple, b: tuple) -> int:
    """The first offset at which logs a and b differ (the shorter one's length if one is a prefix)."""
    for k, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return k
    return min(len(a), len(b))


# ============================================= Raft's safety properties (Ongaro's dissertation, Figure 3.2)

# Election Safety (Ongaro's dissertation, §3.4).
@spec.invariant(name="OneLeaderPerEpoch")
def one_leader_per_epoch(cfg, s: State) -> bool | Violated:
    """No two servers are ever elected leader of the same epoch."""
    epochs = [b.epoch for b in s.servers if b.role == LEADER]
    if not s.two_leaders_in_an_epoch and len(epochs) == len(set(epochs)):
        return True
    if s.two_leaders_in_an_epoch:
        history = ", ".join(f"epoch {e}: {ld}" for e, ld in enumerate(s.leaders, 1) if ld)
        return Violated(f"a second server was elected leader of an epoch that already had one (latest leader by "
                        f"epoch: {history})")
    epoch = next(e for e in epochs if epochs.count(e) > 1)
    same = [str(i) for i, b in enumerate(s.servers, 1) if b.role == LEADER and b.epoch == epoch]
    return Violated(f"servers {' and '.join(same)} both lead epoch {epoch}")


# Log Matching (Ongaro's dissertation, §3.5).
@spec.invariant(name="LogMatching")
def log_matching(cfg, s: State) -> bool | Violated:
    """If two logs hold an entry with the same offset and epoch, they agree up to it."""
    logs = [b.log for b in s.servers]
    for i, a in enumerate(logs):
        for j in range(i + 1, len(logs)):
            b = logs[j]
            for k in range(min(len(a), len(b)) - 1, -1, -1):
                if a[k].epoch == b[k].epoch:  # the last offset where both hold an entry of one epoch
                    if a[:k + 1] != b[:k + 1]:
                        return Violated(f"servers {i + 1} and {j + 1} both hold an entry of epoch {a[k].epoch} at "
                                        f"offset {k} but differ at offset {first_difference(a, b)}")
                    break
    return True


# Leader Completeness (Ongaro's dissertation, §3.6).
@spec.invariant(name="LeaderCompleteness")
def leader_completeness(cfg, s: State) -> bool | Violated:
    """Every leader of an epoch at least that of the last commit holds the committed log."""
    n = len(s.committed)
    for i, b in enumerate(s.servers, 1):
        if b.role == LEADER and b.epoch >= s.commit_epoch and b.log[:n] != s.committed:
            k = first_difference(b.log, s.committed)
            held = f"it holds {entry_text(b.log[k])} there" if k < len(b.log) else "its log ends before it"
            return Violated(f"leader {i} of epoch {b.epoch} lacks the committed entry at offset {k} (last commit in "
                            f"epoch {s.commit_epoch}), {entry_text(s.committed[k])}; {held}")
    return True


# State Machine Safety (Ongaro's dissertation, §3.6.3).
@spec.invariant(name="StateMachineSafety")
def state_machine_safety(cfg, s: State) -> bool | Violated:
    """No commit changes a committed entry, and every server's log up to its HWM is a prefix of the committed log."""
    if s.committed_overwritten:
        return Violated("a leader's commit replaced entries committed before it (the `committed` history)")
    for i, b in enumerate(s.servers, 1):
        if b.hwm > len(s.committed):
            return Violated(f"server {i} has HWM {b.hwm}, beyond the {len(s.committed)} committed entries")
        if b.log[:b.hwm] != s.committed[:b.hwm]:
            k = first_difference(b.log, s.committed)
            return Violated(f"server {i} holds {entry_text(b.log[k])} at offset {k}, below its HWM {b.hwm}, "
                            f"where {entry_text(s.committed[k])} is committed")
    return True


# ====================================== KIP-642's voter changes (Quorum Change Protocol, Reassignment Algorithm)

# KIP-642, Reassignment Algorithm, step 4; Ongaro's dissertation, §4.1.
@spec.invariant(name="AtMostOneUncommittedVoterChange")
def at_most_one_uncommitted_change(cfg, s: State) -> bool | Violated:
    """A leader's log holds at most one VoterAssignment beyond its HWM."""
    for i, b in enumerate(s.servers, 1):
        if b.role == LEADER and sum(1 for e in b.log[b.hwm:] if e.kind == VOTER_ASSIGNMENT) > 1:
            pending = "; ".join(f"offset {k}: voters {voter_set(e.voters)}" for k, e in enumerate(b.log)
                                if k >= b.hwm and e.kind == VOTER_ASSIGNMENT)
            return Violated(f"leader {i} of epoch {b.epoch} has uncommitted VoterAssignments beyond its HWM {b.hwm} "
                            f"({pending})")
    return True


# KIP-642, Quorum Change Protocol (point 1) and Reassignment Algorithm, step 3; Ongaro's dissertation, §4.1.
@spec.invariant(name="SingleMemberChanges")
def single_member_changes(cfg, s: State) -> bool | Violated:
    """Consecutive voter sets in any log differ by at most one member."""
    for i, b in enumerate(s.servers, 1):
        prev = None
        for k, e in enumerate(b.log):
            if e.kind == VOTER_ASSIGNMENT:
                if prev is not None and (prev ^ e.voters).bit_count() > 1:
                    return Violated(f"server {i}'s log changes the voters from {voter_set(prev)} to "
                                    f"{voter_set(e.voters)} at offset {k}")
                prev = e.voters
    return True


# ================================================================================== their Z3 forms

# The quorum properties, and the lemma that makes them inductive, over specs/kip642/symbolic.py.
from specs.kip642 import symbolic as _sym  # noqa: E402

spec.symbolic = _sym
spec.z3_invariants.update({**_sym.PROPERTIES, **_sym.LEMMAS})
