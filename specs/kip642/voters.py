"""The voters' rules: elections (KIP-595's Vote; Ongaro's dissertation, §3.4). A voter times out and
stands, handles a VoteRequest, stands against a candidate that is not a voter in its log (KIP-642), and a
candidate with a majority leads; `win_election` is a whole election won by one randomized timeout, the
assumption Raft's liveness rests on."""

from __future__ import annotations

from specs.kip642 import spec
from specs.kip642.logic import (election_config, grants_vote, is_majority, lead, may_disrupt, servers, set_server,
                                voters_of)
from specs.kip642.state import CANDIDATE, FOLLOWER, LEADER, RESIGNED, State


@spec.rule(server=servers, precondition=lambda cfg, s: s.budget.elections > 0 and may_disrupt(cfg, s))
def become_candidate(cfg, s, server):
    """Voter: times out and stands in a new epoch, voting for itself [Ongaro's dissertation, §3.4; KIP-642,
    Reassignment Algorithm, the note after step 6].

    Who acts: server `server`, a voter in its own log's voter set: an adversarial election timeout (split
    votes, disruptions), bounded by `max_elections` (and `max_disruptions`).
    Enabled when: elections are left in the budget, the server does not lead and has not restarted without
    its log.
    Next: it is a candidate of its epoch + 1 with its own vote."""
    b = s.servers[server - 1]
    if b.role == LEADER or not voters_of(b.log) >> server & 1 or s.disk_lost >> server & 1:
        return None
    new = b._replace(epoch=b.epoch + 1, voted_for=server, role=CANDIDATE, votes=1 << server)
    return s._replace(servers=set_server(s, server, new), budget=s.budget._replace(elections=s.budget.elections - 1))


@spec.rule(voter=servers, candidate=servers, fair=True)
def handle_vote_request(cfg, s, voter, candidate):
    """Voter: handles a candidate's VoteRequest, adopting a higher epoch first and granting the vote as
    `grants_vote` decides [KIP-595 Vote; Ongaro's dissertation, §3.4, §3.6.1].

    Who acts: server `voter`, on the VoteRequest of server `candidate`.
    Enabled when: `candidate` is a candidate that lacks this vote, of an epoch at least the voter's, and the
    request changes something: a higher epoch, or a vote granted. The vote is granted if the voter has
    not voted for another server in that epoch (§3.4), the candidate's log is at least as up to date
    (§3.6.1), the voter has not restarted without its log, and, under `votes=kip642`, both are voters in
    the voter's own log's voter set (KIP-642, Reassignment Algorithm, the note after step 6; unlike
    Ongaro's dissertation, §4.1).
    Next: in a higher epoch the voter is an unattached follower of it (a leader steps down, KIP-595); with
    the vote granted, it has voted for the candidate, which counts the vote."""
    if voter == candidate:
        return None
    c = s.servers[candidate - 1]
    v = s.servers[voter - 1]
    if c.role != CANDIDATE or c.votes >> voter & 1 or v.epoch > c.epoch:
        return None
    new_epoch = v.epoch < c.epoch
    if new_epoch:  # unattached in the candidate's epoch, no vote yet
        v = v._replace(epoch=c.epoch, voted_for=0, role=FOLLOWER, votes=0, fetched=(0,) * cfg.servers)
    grant = grants_vote(cfg, s, v, voter, candidate, c.log)
    if not grant and not new_epoch:
        return None  # a rejection in the voter's own epoch changes nothing
    srv = list(s.servers)
    if grant:
        srv[voter - 1] = v._replace(voted_for=candidate)
        srv[candidate - 1] = c._replace(votes=c.votes | 1 << voter)
    else:
        srv[voter - 1] = v
    return s._replace(servers=tuple(srv))


@spec.rule(voter=servers, candidate=servers, precondition=lambda cfg, s: s.budget.elections > 0 and may_disrupt(cfg, s),
           applies=lambda cfg: cfg.votes == "kip642")
def stand_against_nonvoter(cfg, s, voter, candidate):
    """Voter: rejects a VoteRequest from a server that is not a voter in its own log's voter set and stands
    itself, since the non-voter may still win [KIP-642, Reassignment Algorithm, the note after step 6].

    Who acts: server `voter`, on the VoteRequest of server `candidate` (under `votes=kip642` only); it spends
    an election of the budget.
    Enabled when: elections are left in the budget, `candidate` is a candidate, `voter` is a voter of its
    own log's voter set and `candidate` is not, `voter` has not restarted without its log, and it does not
    lead an epoch at least the candidate's.
    Next: `voter` is a candidate of max(its epoch, the candidate's) + 1 with its own vote."""
    if voter == candidate:
        return None
    c = s.servers[candidate - 1]
    v = s.servers[voter - 1]
    if c.role != CANDIDATE or v.role == LEADER and v.epoch >= c.epoch:
        return None
    if voters_of(v.log) >> candidate & 1 or not voters_of(v.log) >> voter & 1 or s.disk_lost >> voter & 1:
        return None
    new = v._replace(epoch=max(v.epoch, c.epoch) + 1, voted_for=voter, role=CANDIDATE, votes=1 << voter, fetched=(0,) * cfg.servers)
    return s._replace(servers=set_server(s, voter, new), budget=s.budget._replace(elections=s.budget.elections - 1))


@spec.rule(candidate=servers, fair=True)
def become_leader(cfg, s, candidate):
    """Candidate: with the votes of a majority of its own log's voter set, it leads and appends a
    LeaderChange record [Ongaro's dissertation, §3.4; KIP-642, Reassignment Algorithm, the note after step
    6; KIP-595; KIP-642, Bootstrapping Procedure].

    Who acts: server `candidate`, a candidate.
    Enabled when: its votes are a majority of the voter set of its own log (`election_config`).
    Next: it leads its epoch with a LeaderChange record appended, tracking fetch offsets; the `leaders`
    history records it (`lead`)."""
    c = s.servers[candidate - 1]
    if c.role != CANDIDATE or not is_majority(c.votes, election_config(cfg, c.log)):
        return None
    return lead(cfg, s, candidate, c)


def election_stalled(cfg, s: State) -> bool:
    """No server leads the highest epoch any server holds (no leader at all, or the servers have moved
    past the epoch of every leader), and the elections under way are over: no candidate can become
    leader and no vote request is left to handle."""
    top = max(b.epoch for b in s.servers)
    if any(b.role == LEADER and b.epoch == top for b in s.servers):
        return False
    for c in servers(cfg):
        if s.servers[c - 1].role != CANDIDATE:
            continue
        if become_leader(cfg, s, c) is not None:
            return False
        if any(handle_vote_request(cfg, s, v, c) is not None for v in servers(cfg)):
            return False
    return True


@spec.rule(candidate=servers, precondition=election_stalled, fair=True)
def win_election(cfg, s, candidate):
    """Candidate: wins a whole election in one step, once no server leads the highest epoch and the
    elections under way are over: one randomized timeout that wins [Ongaro's dissertation, §3.4, §3.10;
    KIP-595].

    Who acts: server `candidate`, a voter in its own log's voter set that times out alone: election timeouts
    are much longer than a round of messages (§3.10), and randomized timeouts (§3.4) eventually let one
    voter time out alone and win, the assumption Raft's liveness rests on. A resigned leader stands too
    (Kafka's `QuorumState`: Resigned becomes Candidate when its election timeout expires), but only when
    no other voter can win: its EndQuorumEpoch names the others as preferred successors, who time out
    first. Before, it never stood, and a leader that resigned ahead of its successor's log left the
    quorum leaderless for good (docs/models/kip642.md, "Liveness triage").
    Enabled when: `election_stalled`; the candidate has not restarted without its log; and the votes it
    gets are a majority: it starts epoch E = (highest epoch any server holds) + 1, votes for itself and
    sends VoteRequest to the voters of its log's voter set, and each adopts E and grants as
    `handle_vote_request` decides.
    Next: it leads E, as `become_leader`, and the voters it asked are followers of E. One step stands for
    `become_candidate` (repeated until its epoch passes every other), `handle_vote_request` for each voter
    and `become_leader`, with no split vote, so it adds no behaviour those rules lack; it spends no budget
    (a split vote is `become_candidate`, budgeted)."""
    c = s.servers[candidate - 1]
    config = voters_of(c.log)
    if not config >> candidate & 1 or s.disk_lost >> candidate & 1:
        return None
    if c.role == RESIGNED and any(win_election(cfg, s, other) is not None for other in servers(cfg)
                                  if s.servers[other - 1].role != RESIGNED):
        return None  # EndQuorumEpoch's preferred successors time out first; the resigned one, only if none can win
    epoch = max(b.epoch for b in s.servers) + 1
    srv = list(s.servers)
    votes = 1 << candidate
    for v in servers(cfg):
        if v != candidate and config >> v & 1:
            b = srv[v - 1]._replace(epoch=epoch, voted_for=0, role=FOLLOWER, votes=0, fetched=(0,) * cfg.servers)
            if grants_vote(cfg, s, b, v, candidate, c.log):
                b = b._replace(voted_for=candidate)
                votes |= 1 << v
            srv[v - 1] = b
    if not is_majority(votes, election_config(cfg, c.log)):
        return None
    c = c._replace(epoch=epoch, voted_for=candidate, role=CANDIDATE, votes=votes)
    return lead(cfg, s._replace(servers=tuple(srv)), candidate, c)
