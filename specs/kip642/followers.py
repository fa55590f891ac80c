"""The followers' rule: a follower or observer fetches from a leader (KIP-595 Fetch), adopting its epoch,
truncating where its log diverges and copying the leader's log and HWM."""

from __future__ import annotations

from specs.kip642 import spec
from specs.kip642.logic import leading, servers, set_server
from specs.kip642.state import CANDIDATE, FOLLOWER, LEADER


@spec.rule(follower=servers, leader=servers, fair=True)
def fetch(cfg, s, follower, leader):
    """Follower or observer: fetches from a leader of an epoch at least its own [KIP-595 Fetch; Ongaro's
    dissertation, §3.5].

    Who acts: server `follower` (a voter or an observer), fetching from server `leader`.
    Enabled when: `leader` leads an epoch at least the follower's (else FENCED_LEADER_EPOCH), the two are
    not leaders of one epoch, and the fetch changes something.
    Next: the follower adopts the leader's epoch (a candidate of that epoch has lost the election); if its
    log diverges from the leader's it is truncated to the common prefix, which reverts any VoterAssignment
    truncated (KIP-642, Reassignment Algorithm, the note after step 6); else it takes every entry up to the
    leader's log end, its HWM becomes min(leader's HWM, its log end), and the leader records its fetch
    offset."""
    if follower == leader:
        return None
    ld = leading(s, leader)
    f = s.servers[follower - 1]
    if ld is None or ld.epoch < f.epoch:
        return None  # no leader, or a stale one (FENCED_LEADER_EPOCH)
    if f.role == LEADER and f.epoch == ld.epoch:
        return None  # two leaders of one epoch do not fetch from each other
    common = 0
    for x, y in zip(f.log, ld.log):
        if x != y:
            break
        common += 1
    new_f = f
    if f.epoch < ld.epoch:  # a new epoch: it follows the leader, with no vote in that epoch
        new_f = f._replace(epoch=ld.epoch, voted_for=0, role=FOLLOWER, votes=0, fetched=(0,) * cfg.servers)
    elif f.role == CANDIDATE:  # a candidate of the leader's epoch has lost the election
        new_f = f._replace(role=FOLLOWER, votes=0)
    if common < len(f.log):  # diverged: truncate to the common prefix
        new_f = new_f._replace(log=f.log[:common], hwm=min(f.hwm, common))
        return s._replace(servers=set_server(s, follower, new_f))
    new_f = new_f._replace(log=ld.log, hwm=max(f.hwm, min(ld.hwm, len(ld.log))))
    new_ld = ld._replace(fetched=ld.fetched[:follower - 1] + (len(f.log),) + ld.fetched[follower:])
    if new_f == f and new_ld == ld:
        return None  # the fetch changes nothing
    srv = list(s.servers)
    srv[follower - 1], srv[leader - 1] = new_f, new_ld
    return s._replace(servers=tuple(srv))
