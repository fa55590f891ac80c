"""The leader's rules: the single-member voter changes of a reassignment, its completion, the leader's
resignation when it is the last voter to remove, client writes, and commits (KIP-642, Reassignment
Algorithm; KIP-595)."""

from __future__ import annotations

from specs.kip642 import spec
from specs.kip642.logic import (append, committed_in_epoch, leading, servers, set_server, target_of,
                                uncommitted_change, voters_of)
from specs.kip642.state import DATA, RESIGNED, VOTER_ASSIGNMENT, Entry


@spec.rule(leader=servers, member=servers, fair=True)
def leader_step(cfg, s, leader, member):
    """Leader: appends the next single-member change, adding or removing `member` [KIP-642, Reassignment
    Algorithm, steps 2-3].

    Who acts: server `leader`, while it leads with a reassignment pending in its log.
    Enabled when: its log's CurrentVoters has not reached TargetVoters; the previous change is committed
    (step 4; Ongaro's dissertation, §4.1) and it has committed an entry of its own epoch (the fix of
    Ongaro's single-server change bug); `member` is in NewVoters if |NewVoters| >= |RemovingVoters| (step
    3a), else in RemovingVoters and not the leader itself (step 3b: the leader removes itself last, by
    resigning).
    Next: its log ends with a VoterAssignment whose CurrentVoters adds or removes `member`, with the same
    TargetVoters."""
    b = leading(s, leader)
    if b is None:
        return None
    target, current = target_of(b.log), voters_of(b.log)
    if not target or target == current:
        return None  # no reassignment pending, or it has reached its target: complete_reassignment
    if uncommitted_change(b) and not cfg.mutated.two_uncommitted_changes:
        return None
    if not committed_in_epoch(b) and not cfg.mutated.change_before_epoch_commit:
        return None
    new, removing = target & ~current, current & ~target
    adding = new.bit_count() >= removing.bit_count()  # step 3a, else 3b
    if adding and not new >> member & 1:
        return None
    if not adding and (not removing >> member & 1 or member == leader):
        return None  # the leader removes itself last, by resigning
    voters = current | 1 << member if adding else current & ~(1 << member)
    return append(s, leader, Entry(epoch=b.epoch, kind=VOTER_ASSIGNMENT, voters=voters, target=target))


@spec.rule(leader=servers, fair=True)
def complete_reassignment(cfg, s, leader):
    """Leader: completes the reassignment, appending VoterAssignment(CurrentVoters, null) [KIP-642,
    Reassignment Algorithm, step 6a].

    Who acts: server `leader`, while it leads.
    Enabled when: its log's CurrentVoters has reached TargetVoters and that change is committed.
    Next: its log ends with VoterAssignment(CurrentVoters, null): no reassignment pending."""
    b = leading(s, leader)
    if b is None or uncommitted_change(b):
        return None
    target = target_of(b.log)
    if not target or target != voters_of(b.log):
        return None
    return append(s, leader, Entry(epoch=b.epoch, kind=VOTER_ASSIGNMENT, voters=target, target=0))


@spec.rule(leader=servers, fair=True)
def resign(cfg, s, leader):
    """Leader: the last of RemovingVoters, it sends EndQuorumEpoch and resigns [KIP-642, Reassignment
    Algorithm, step 6b].

    Who acts: server `leader`, while it leads.
    Enabled when: it is the last of RemovingVoters, with no NewVoters left and the last change committed;
    as for `leader_step`, only once it has committed an entry of its own epoch: a leader re-elected after
    resigning (see `win_election`) first brings a majority up to its log, so that a successor can win.
    Next: it is RESIGNED and drops its fetch offsets; it stays a voter until the next leader removes it (in
    Ongaro's dissertation, §4.2.2, a leader instead removes itself and steps down once that change
    commits, or transfers its leadership)."""
    b = leading(s, leader)
    if b is None or uncommitted_change(b) or not committed_in_epoch(b):
        return None
    target, current = target_of(b.log), voters_of(b.log)
    if not target or target & ~current or current & ~target != 1 << leader:
        return None
    return s._replace(servers=set_server(s, leader, b._replace(role=RESIGNED, fetched=(0,) * cfg.servers)))


@spec.rule(leader=servers, precondition=lambda cfg, s: s.budget.writes > 0, applies=lambda cfg: cfg.max_writes > 0)
def client_write(cfg, s, leader):
    """Leader: appends a data record on a client write [KIP-595; Ongaro's dissertation, §3.5].

    Who acts: server `leader`, on a client's write.
    Enabled when: writes are left in the budget and `leader` leads.
    Next: its log ends with a data record of its epoch."""
    b = leading(s, leader)
    if b is None:
        return None
    return append(s, leader, Entry(epoch=b.epoch, kind=DATA, voters=0, target=0),
                  budget=s.budget._replace(writes=s.budget.writes - 1))


@spec.rule(leader=servers, fair=True)
def advance_hwm(cfg, s, leader):
    """Leader: commits up to the largest offset a majority of its log's current voters have fetched
    [KIP-642, Reassignment Algorithm, step 4; KIP-595; Ongaro's dissertation, §3.6.2].

    Who acts: server `leader`, while it leads.
    Enabled when: the offset a majority of the current voters of its own log have fetched (the fetches of a
    server that restarted without its log do not count) is beyond its HWM, and the entry below it is of
    the leader's epoch.
    Next: its HWM is that offset; the `committed` history records the commit (and whether it replaced a
    committed entry)."""
    b = leading(s, leader)
    if b is None:
        return None
    voters = voters_of(b.log)
    # a server that restarted without its log is not the voter it was: its fetches do not count
    offsets = sorted((0 if s.disk_lost >> i & 1 else b.fetched[i - 1] for i in servers(cfg) if voters >> i & 1),
                     reverse=True)
    if not offsets:
        return None
    hwm = offsets[len(offsets) // 2]
    if hwm <= b.hwm or b.log[hwm - 1].epoch != b.epoch:
        return None
    prefix = b.log[:hwm]
    overwritten = s.committed_overwritten or prefix[:len(s.committed)] != s.committed[:hwm]
    return s._replace(servers=set_server(s, leader, b._replace(hwm=hwm)),
                      committed=prefix if hwm > len(s.committed) else s.committed,
                      commit_epoch=max(s.commit_epoch, b.epoch), committed_overwritten=overwritten)
