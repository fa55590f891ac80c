"""KIP-642 dynamic quorum reassignment on pull-based Raft (KIP-595).

Who acts: the leader (appends VoterAssignment records, single-member steps, completion,
resignation, commit), candidates and voters (elections), followers and observers (fetch).
Servers 1..N. The voter set a server uses is the `CurrentVoters` of the latest VoterAssignment in
its own log, committed or not: followers act on a voter set as soon as it is appended and revert
when it is truncated (KIP-642, Reassignment Algorithm, step 4 and the note after step 6; the
same rule as Ongaro's dissertation, §4.1).

Abstractions (docs/ARCHITECTURE.md, "The kip642 model"):
* Messages are atomic request/response steps: a vote (VoteRequest + response), a fetch (Fetch +
  response, with divergence truncation), EndQuorumEpoch as the leader's resignation. What is lost
  is only message delay and loss between the two halves, which the properties do not depend on:
  a delayed response is equivalent to a later atomic step, a lost one to no step.
* A new leader appends a LeaderChange record (KIP-595); a voter change waits until the leader has
  committed an entry of its own epoch (the fix of the single-server change bug Diego Ongaro
  reported on raft-dev in 2015, listed in the errata of his dissertation, chapter 4).
* Data records have no values: an entry is (epoch, kind, voters, target).
* Crashes lose volatile state only (role, votes received, fetch offsets); log, epoch, vote and the
  HWM a server knows stay.
* Elections: adversarial timeouts (a server times out while a leader serves, or beside another
  candidate: split votes, disruptions) are a bounded perturbation (`become_candidate`,
  `stand_against_nonvoter`, `max_elections`). Once no server leads the highest epoch and the elections
  under way are over, `win_election` (fair, unbudgeted) is one randomized timeout that wins: Raft's
  liveness assumption (Ongaro's dissertation, §3.4, §3.10). The state space stays finite because a
  leader of the highest epoch only stops leading through a budgeted event or a resignation.
* `fetched` (a leader's view of fetch offsets) is cleared when a server stops leading: it is read
  only while leading, and keeping stale offsets multiplied the state space (tiny: 101,169 -> 11,411).
* Offsets count from 0, as in Kafka: a server's HWM is the offset of its first uncommitted entry.
* Who votes is the variant `votes`: KIP-853's relaxed Vote handling (default), or KIP-642's own rule,
  under which ReassignmentCompletes fails (`literal-votes`, docs/ARCHITECTURE.md).
* A server that restarts without its log is no longer the voter it was (KIP-853's new directory id):
  it neither stands nor votes, and its fetches do not count toward a commit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, NamedTuple

from harness.bitset import mask
from harness.itf import Bool, ById, Enum, IdSet, OptId, Seq
from harness.model import Config, Spec, budget, distinct_ids, ids, param, variant
from harness.speed import fast_replace

# A server's role: KIP-595's quorum states, and RESIGNED for a leader that has sent EndQuorumEpoch.
FOLLOWER, CANDIDATE, LEADER, RESIGNED = ROLE = Enum("FOLLOWER", "CANDIDATE", "LEADER", "RESIGNED")
# A log entry's kind: a data record, KIP-642's VoterAssignmentMessage, KIP-595's LeaderChangeMessage.
DATA, VOTER_ASSIGNMENT, LEADER_CHANGE = KIND = Enum("DATA", "VOTER_ASSIGNMENT", "LEADER_CHANGE")


# Static bounds of the config (relations between fields are `validate`).
MAX_SERVERS = 60  # server s is bit s of the voter bitmasks (ITF sets hold 0..60), and state ints stay below 2**61-1
MAX_TARGETS = 64  # each target is an action per server


@dataclass(frozen=True)
class Kip642Config(Config):
    servers: int = param(4, "servers 1..N (voters and observers)", lo=1, hi=MAX_SERVERS)
    voters: tuple[int, ...] = ids((1, 2, 3), "initial voters; server `leader` leads epoch 1", most=MAX_SERVERS)
    leader: int = param(1, "the leader of epoch 1", lo=1, hi=MAX_SERVERS)
    targets: tuple[tuple[int, ...], ...] = ids(((1, 2, 4),), "voter sets AlterPartitionReassignments may request",
                                               most=MAX_SERVERS, lists=MAX_TARGETS)
    max_reassignments: int = budget(1, "AlterPartitionReassignments requests")
    max_cancels: int = budget(0, "cancellations (resubmitting the current voters)")
    max_elections: int = budget(1, "adversarial election timeouts (a server becomes a candidate: split votes, "
                                   "disruptions); a fair `win_election` is not counted")
    max_writes: int = budget(1, "data records clients may write")
    max_crashes: int = budget(0, "crash-restarts")
    max_disk_losses: int = budget(0, "restarts without the log (a lost disk)")
    max_disruptions: int = budget(-1, "adversarial election timeouts, crash-restarts and restarts without the log "
                                      "together, in one run (-1: only the limits above)", least=-1)
    votes: str = variant("kip853", "who grants votes: kip642 = only a voter, and only to a voter, of the voter set "
                         "in its own log (KIP-642, Reassignment Algorithm, the note after step 6); kip853 = any server "
                         "that holds a log, to any candidate (KIP-853, Vote handling; Ongaro's dissertation, §4.1)",
                         ("kip853", "kip642"))

    def validate(self) -> str | None:
        for group in (self.voters,) + self.targets:
            if not distinct_ids(group, self.servers):
                return f"voter sets must be non-empty lists of distinct servers in 1..{self.servers}"
        if self.leader not in self.voters:
            return "the initial leader must be a voter"
        return None


class Entry(NamedTuple):
    epoch: int
    kind: Annotated[int, KIND]
    voters: Annotated[int, IdSet()]  # CurrentVoters (VOTER_ASSIGNMENT entries)
    target: Annotated[int, IdSet()]  # TargetVoters; empty = null


class Server(NamedTuple):
    epoch: int
    voted_for: Annotated[int, OptId()]
    role: Annotated[int, ROLE]
    log: Annotated[tuple, Seq(Entry)]
    hwm: int
    votes: Annotated[int, IdSet()]  # votes a candidate has received
    fetched: Annotated[tuple, ById(int)]  # leader: each server's fetch offset


class Budget(NamedTuple):
    reassignments: int
    cancels: int
    elections: int
    writes: int
    crashes: int
    disk_losses: int


class State(NamedTuple):
    servers: Annotated[tuple, ById(Server)]
    budget: Budget
    committed: Annotated[tuple, Seq(Entry)]  # history: the committed log
    commit_epoch: int  # the epoch of the leader that last advanced it
    committed_overwritten: Annotated[bool, Bool()]
    two_leaders_in_an_epoch: Annotated[bool, Bool()]
    leaders: Annotated[tuple, ById(OptId())]  # history: leader of each epoch 1..E (0 = none yet)
    disk_lost: Annotated[int, IdSet()]  # servers that restarted without their log (KIP-853: a new directory id)


PRESETS = {
    "tiny": {"servers": 3, "voters": [1, 2], "targets": [[1, 3]], "max_writes": 0},
    # The leader 1 is replaced: add 3, resign, the next leader (a fair `win_election`) removes 1; one
    # adversarial election timeout and one crash.
    "ci": {"servers": 3, "voters": [1, 2], "targets": [[2, 3]], "max_writes": 0, "max_crashes": 1},
    # `tiny` under KIP-642's own vote rule, where ReassignmentCompletes fails (an expected failure).
    "literal-votes": {"servers": 3, "voters": [1, 2], "targets": [[1, 3]], "max_writes": 0, "votes": "kip642"},
    # Ongaro's single-server change bug: two removals from different epochs whose majorities do not
    # intersect. Four voters shrinking to {1,2}, two election timeouts.
    "ongaro": {"servers": 4, "voters": [1, 2, 3, 4], "targets": [[1, 2]], "max_elections": 2, "max_writes": 0,
               "votes": "kip642"},
    # Votes counted against the previous configuration elect a leader that lacks entries committed
    # two configurations later: three voters growing to five, led by 3.
    "old-config": {"servers": 5, "voters": [1, 2, 3], "leader": 3, "targets": [[1, 2, 3, 4, 5]], "max_elections": 1,
                   "max_writes": 0, "votes": "kip642"},
    # A voter that restarts without its log (a lost disk): three voters, one reassignment to commit.
    "disk-loss": {"servers": 3, "voters": [1, 2, 3], "targets": [[1, 2]], "max_writes": 0, "max_disk_losses": 1},
    # Liveness with the graph engine (every rule fires, 24,311 states; docs/ARCHITECTURE.md, "Liveness triage"):
    # voter 1 replaced by 2 (add 2, 1 resigns, the next leader removes 1), a write, a cancellation, and one
    # disruption of any kind: an adversarial timeout, a crash or a lost disk.
    "liveness": {"servers": 2, "voters": [1], "targets": [[2]], "max_writes": 1, "max_cancels": 1, "max_crashes": 1,
                 "max_disk_losses": 1, "max_disruptions": 1},
    # Beyond BFS reach, for the Hypothesis engine: 5 servers, two reassignments, crashes, writes.
    "large": {"servers": 5, "voters": [1, 2, 3], "targets": [[3, 4, 5], [1, 4]], "max_reassignments": 2,
              "max_cancels": 1, "max_elections": 3, "max_writes": 2, "max_crashes": 1},
    "nightly": {"servers": 4, "max_elections": 2, "max_writes": 1, "max_crashes": 1, "max_cancels": 1},
    # KIP-642, Quorum Change Protocol: the example (1, 2, 3) -> (4, 5, 6) with replica 1 leading.
    "worked-example": {"servers": 6, "voters": [1, 2, 3], "targets": [[4, 5, 6]], "max_elections": 1,
                       "max_writes": 0},
}

# Ongaro's scenario (raft-dev, 2015) in this protocol, with removals, as unguided BFS found it at
# `ongaro` (the shortest: 19 steps, 4,536,531 states, docs/ARCHITECTURE.md). 1 commits the target
# {1,2} and removes 3 (C1 = {1,2,4}, uncommitted); 3, still a voter in its own log, is elected in
# epoch 2 by {2,3,4}; 1, seeing a vote request from a non-voter, stands and is elected in epoch 3
# by {1,4}, a majority of C1; 3 removes 4 before committing anything of its epoch (the mutation)
# and commits C2 = {1,2,3} with {2,3}, which leader 1 lacks. {1,4} and {2,3} do not intersect.
# The corpus replays it as a guided search (harness.engines.guided) so the gate stays fast.
ONGARO_SCENARIO = [
    ('alter_partition_reassignments', {'leader': 1, 'target': 0}),
    ('fetch', {'follower': 2, 'leader': 1}),
    ('fetch', {'follower': 2, 'leader': 1}),
    ('fetch', {'follower': 3, 'leader': 1}),
    ('fetch', {'follower': 3, 'leader': 1}),
    ('advance_hwm', {'leader': 1}),
    ('fetch', {'follower': 3, 'leader': 1}),
    ('leader_step', {'leader': 1, 'member': 3}),
    ('become_candidate', {'server': 3}),
    ('handle_vote_request', {'voter': 2, 'candidate': 3}),
    ('handle_vote_request', {'voter': 4, 'candidate': 3}),
    ('stand_against_nonvoter', {'voter': 1, 'candidate': 3}),
    ('handle_vote_request', {'voter': 4, 'candidate': 1}),
    ('become_leader', {'candidate': 1}),
    ('become_leader', {'candidate': 3}),
    ('leader_step', {'leader': 3, 'member': 4}),
    ('fetch', {'follower': 2, 'leader': 3}),
    ('fetch', {'follower': 2, 'leader': 3}),
    ('advance_hwm', {'leader': 3}),
]

# Votes counted against the previous configuration: 3 grows {1,2,3} to {1,2,3,4} then {1,2,3,4,5},
# committing the last with {3,4,5}; 1, whose log ends at {1,2,3,4}, counts {1,2} against {1,2,3}.
OLD_CONFIG_SCENARIO = [
    ('alter_partition_reassignments', {'leader': 3, 'target': 0}),
    ('fetch', {'follower': 1, 'leader': 3}),
    ('fetch', {'follower': 1, 'leader': 3}),
    ('advance_hwm', {'leader': 3}),
    ('leader_step', {'leader': 3, 'member': 4}),
    ('fetch', {'follower': 1, 'leader': 3}),
    ('fetch', {'follower': 4, 'leader': 3}),
    ('fetch', {'follower': 1, 'leader': 3}),
    ('fetch', {'follower': 4, 'leader': 3}),
    ('advance_hwm', {'leader': 3}),
    ('leader_step', {'leader': 3, 'member': 5}),
    ('fetch', {'follower': 4, 'leader': 3}),
    ('fetch', {'follower': 5, 'leader': 3}),
    ('fetch', {'follower': 4, 'leader': 3}),
    ('fetch', {'follower': 5, 'leader': 3}),
    ('advance_hwm', {'leader': 3}),
    ('become_candidate', {'server': 1}),
    ('handle_vote_request', {'voter': 2, 'candidate': 1}),
    ('become_leader', {'candidate': 1}),
]


spec = Spec("kip642", Kip642Config, State, doc=__doc__, presets=PRESETS, deadlock=False, mutation_preset="ci",
            guides={"change_before_epoch_commit": ONGARO_SCENARIO, "votes_against_old_config": OLD_CONFIG_SCENARIO})
spec.mutation("change_before_epoch_commit", rule="leader_step", caught_at="ongaro",
              removes="the epoch-commit condition: append a voter change before committing an entry of the leader's "
                      "epoch (Ongaro's single-server change bug, raft-dev 2015; dissertation errata, chapter 4)")
spec.mutation("two_uncommitted_changes", rule="leader_step",
              removes="the one-change-at-a-time condition: a voter change while the previous one is uncommitted "
                      "(KIP-642, Reassignment Algorithm, step 4; Ongaro's dissertation, §4.1)")
spec.mutation("votes_without_log", rule="handle_vote_request", caught_at="disk-loss",
              removes="withholding the vote of a server that restarted without its log: with no voter set in its "
                      "log it takes `quorum.voters` (KIP-642, Quorum Bootstrapping, step 5) and votes as if it had "
                      "its log (Ongaro's dissertation, §3.8; KIP-853's directory id exists to stop it)")
spec.mutation("votes_against_old_config", rule="become_leader", caught_at="old-config",
              removes="counting votes against the current configuration: count them against the previous one "
                      "(KIP-642, Reassignment Algorithm, the note after step 6)")


# ------------------------------------------------------------------------------------- helpers

def servers(cfg):
    return range(1, cfg.servers + 1)


def targets(cfg):
    return range(len(cfg.targets))


def voter_list(cfg, target: int) -> str:
    """How a `target` parameter reads in traces: the voter list it names, `[1,2,4]`."""
    return "[" + ",".join(map(str, cfg.targets[target])) + "]"


def voters_of(log: tuple) -> int:
    """CurrentVoters of the latest VoterAssignment in the log (committed or not)."""
    for e in reversed(log):
        if e.kind == VOTER_ASSIGNMENT:
            return e.voters
    return 0


def target_of(log: tuple) -> int:
    """TargetVoters of the latest VoterAssignment in the log (0 = null: no reassignment pending)."""
    for e in reversed(log):
        if e.kind == VOTER_ASSIGNMENT:
            return e.target
    return 0


def previous_voters(log: tuple) -> int:
    """CurrentVoters of the VoterAssignment before the latest (the latest's if there is one only)."""
    seen = 0
    for e in reversed(log):
        if e.kind == VOTER_ASSIGNMENT:
            seen += 1
            if seen == 2:
                return e.voters
    return voters_of(log)


def is_majority(votes: int, voters: int) -> bool:
    return 2 * (votes & voters).bit_count() > voters.bit_count()


def last_epoch(log: tuple) -> int:
    return log[-1].epoch if log else 0


def grants_vote(cfg, s: State, v: Server, voter: int, candidate: int, log: tuple) -> bool:
    """Server v (`voter`, already in the candidate's epoch) grants its vote to `candidate`, whose log is
    `log`: v has not restarted without its log (it has lost the votes it cast and the epoch it promised;
    KIP-853 gives it a new directory id, so it is no longer the voter it was), has not voted for another server in that epoch (Ongaro's
    dissertation, §3.4), and the candidate's log is at least as up to date (§3.6.1). Under
    `votes=kip642` both must also be voters in v's own log's voter set (observers do not vote, voters
    reject non-voters: KIP-642, Reassignment Algorithm, the note after step 6); under `votes=kip853`
    any server votes, for any candidate (KIP-853, Vote handling; Ongaro's dissertation, §4.1)."""
    if s.disk_lost >> voter & 1 and not cfg.mutated.votes_without_log:
        return False
    if cfg.votes == "kip642":
        # votes_without_log: with no voter set in its log, it falls back to `quorum.voters` (KIP-642,
        # Quorum Bootstrapping, step 5) and votes as the voter it was.
        voters = voters_of(v.log) or (mask(cfg.voters) if cfg.mutated.votes_without_log else 0)
        if not (voters >> voter & 1 and voters >> candidate & 1):
            return False
    return v.voted_for in (0, candidate) and (last_epoch(v.log), len(v.log)) <= (last_epoch(log), len(log))


def election_config(cfg, log: tuple) -> int:
    """The voter set a candidate whose log is `log` counts its votes against: its log's latest."""
    return previous_voters(log) if cfg.mutated.votes_against_old_config else voters_of(log)


def uncommitted_change(b: Server) -> bool:
    """A VoterAssignment beyond the server's HWM."""
    return any(e.kind == VOTER_ASSIGNMENT for e in b.log[b.hwm:])


def committed_in_epoch(b: Server) -> bool:
    """The server has committed an entry of its own epoch."""
    return any(e.epoch == b.epoch for e in b.log[:b.hwm])


def leading(s: State, leader: int) -> Server | None:
    """Server `leader`, if it is a leader (of any epoch)."""
    b = s.servers[leader - 1]
    return b if b.role == LEADER else None


def set_server(s: State, i: int, new: Server) -> tuple:
    """The servers with server i replaced by `new`."""
    return s.servers[:i - 1] + (new,) + s.servers[i:]


def append(s: State, leader: int, entry: Entry, **changes) -> State:
    """The leader appends `entry` and records its own fetch offset; `changes` update other fields of the state."""
    b = s.servers[leader - 1]
    log = b.log + (entry,)
    fetched = b.fetched[:leader - 1] + (len(log),) + b.fetched[leader:]
    return s._replace(servers=set_server(s, leader, b._replace(log=log, fetched=fetched)), **changes)


@spec.init
def init(cfg):
    """Epoch 1: `leader` leads, elected by the voters; every server holds the bootstrap VoterAssignment
    (CurrentVoters = `voters`), committed (KIP-642, Bootstrapping Procedure)."""
    boot = Entry(epoch=0, kind=VOTER_ASSIGNMENT, voters=mask(cfg.voters), target=0)

    def server(i: int) -> Server:
        leads = i == cfg.leader
        return Server(epoch=1, voted_for=cfg.leader if i in cfg.voters else 0, role=LEADER if leads else FOLLOWER,
                      log=(boot,), hwm=1, votes=0, fetched=(1 if leads else 0,) * cfg.servers)

    yield State(servers=tuple(server(i) for i in servers(cfg)),
                budget=Budget(reassignments=cfg.max_reassignments, cancels=cfg.max_cancels,
                              elections=cfg.max_elections, writes=cfg.max_writes, crashes=cfg.max_crashes,
                              disk_losses=cfg.max_disk_losses),
                committed=(boot,), commit_epoch=1, committed_overwritten=False, two_leaders_in_an_epoch=False, disk_lost=0,
                leaders=(cfg.leader,))


# ================================================================================ leader rules

@spec.rule(leader=servers, target=targets, precondition=lambda cfg, s: s.budget.reassignments > 0,
           format={"target": voter_list})
def alter_partition_reassignments(cfg, s, leader, target):
    """Leader, on an AlterPartitionReassignments request for the voter set `target` (KIP-642,
    AlterPartitionReassignments Request Handling, and Reassignment Algorithm, step 1): it appends
    VoterAssignment(CurrentVoters, TargetVoters = target)."""
    b = leading(s, leader)
    if b is None:
        return None  # NOT_LEADER_FOR_PARTITION
    current, wanted = voters_of(b.log), mask(cfg.targets[target])
    if wanted == current:
        return None  # a request for the current voters is a cancellation: cancel_reassignment
    if uncommitted_change(b) and not cfg.mutated.two_uncommitted_changes:
        return None  # one voter change at a time
    entry = Entry(epoch=b.epoch, kind=VOTER_ASSIGNMENT, voters=current, target=wanted)
    return append(s, leader, entry, budget=s.budget._replace(reassignments=s.budget.reassignments - 1))


@spec.rule(leader=servers, precondition=lambda cfg, s: s.budget.cancels > 0, applies=lambda cfg: cfg.max_cancels > 0)
def cancel_reassignment(cfg, s, leader):
    """Leader, on a cancellation (KIP-642, AlterPartitionReassignments: `Replicas` null, or the current
    voters resubmitted), while a reassignment is pending and no voter change is uncommitted: it appends
    VoterAssignment(CurrentVoters, null), which leaves the quorum with the current voters."""
    b = leading(s, leader)
    if b is None or not target_of(b.log) or uncommitted_change(b):
        return None
    entry = Entry(epoch=b.epoch, kind=VOTER_ASSIGNMENT, voters=voters_of(b.log), target=0)
    return append(s, leader, entry, budget=s.budget._replace(cancels=s.budget.cancels - 1))


@spec.rule(leader=servers, member=servers, fair=True)
def leader_step(cfg, s, leader, member):
    """Leader: the next single-member change (KIP-642, Reassignment Algorithm, steps 2-3): add `member`
    from NewVoters if |NewVoters| >= |RemovingVoters|, else remove `member` from RemovingVoters, never
    itself; only once the previous change is committed (step 4; Ongaro's dissertation, §4.1) and it has
    committed an entry of its own epoch (the fix of Ongaro's single-server change bug)."""
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
    """Leader: CurrentVoters has reached TargetVoters and is committed (KIP-642, Reassignment Algorithm,
    step 6a): it appends VoterAssignment(CurrentVoters, null)."""
    b = leading(s, leader)
    if b is None or uncommitted_change(b):
        return None
    target = target_of(b.log)
    if not target or target != voters_of(b.log):
        return None
    return append(s, leader, Entry(epoch=b.epoch, kind=VOTER_ASSIGNMENT, voters=target, target=0))


@spec.rule(leader=servers, fair=True)
def resign(cfg, s, leader):
    """Leader: it is the last of RemovingVoters, with no NewVoters left and the last change committed
    (KIP-642, Reassignment Algorithm, step 6b): it sends EndQuorumEpoch and resigns; it stays a voter
    until the next leader removes it (in Ongaro's dissertation, §4.2.2, a leader instead removes itself
    and steps down once that change commits, or transfers its leadership). As for `leader_step`, only
    once it has committed an entry of its own epoch: a leader re-elected after resigning (see
    `win_election`) first brings a majority up to its log, so that a successor can win."""
    b = leading(s, leader)
    if b is None or uncommitted_change(b) or not committed_in_epoch(b):
        return None
    target, current = target_of(b.log), voters_of(b.log)
    if not target or target & ~current or current & ~target != 1 << leader:
        return None
    return s._replace(servers=set_server(s, leader, b._replace(role=RESIGNED, fetched=(0,) * cfg.servers)))


@spec.rule(leader=servers, precondition=lambda cfg, s: s.budget.writes > 0, applies=lambda cfg: cfg.max_writes > 0)
def client_write(cfg, s, leader):
    """Leader, on a client write (KIP-595; Ongaro's dissertation, §3.5): it appends a data record."""
    b = leading(s, leader)
    if b is None:
        return None
    return append(s, leader, Entry(epoch=b.epoch, kind=DATA, voters=0, target=0),
                  budget=s.budget._replace(writes=s.budget.writes - 1))


@spec.rule(leader=servers, fair=True)
def advance_hwm(cfg, s, leader):
    """Leader: it commits up to the largest offset a majority of the current voters of its own log have
    fetched (KIP-642, Reassignment Algorithm, step 4), if that entry is of its epoch (KIP-595; Ongaro's
    dissertation, §3.6.2). The `committed` history records the commit."""
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


# ============================================================================ follower rules

@spec.rule(follower=servers, leader=servers, fair=True)
def fetch(cfg, s, follower, leader):
    """Follower or observer, fetching from a leader of an epoch at least its own (KIP-595 Fetch): it
    adopts the epoch and truncates its log where it diverges (Ongaro's dissertation, §3.5), which
    reverts any VoterAssignment truncated (KIP-642, Reassignment Algorithm, the note after step 6);
    else it takes every entry up to the leader's log end and its HWM becomes min(leader's HWM, its
    log end). The leader records the fetch offset."""
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


@spec.rule(server=servers, precondition=lambda cfg, s: s.budget.elections > 0 and may_disrupt(cfg, s))
def become_candidate(cfg, s, server):
    """A server that is not a leader and is a voter in its own log's voter set times out (Ongaro's
    dissertation, §3.4; KIP-642, Reassignment Algorithm, the note after step 6): it starts a new epoch
    and votes for itself."""
    b = s.servers[server - 1]
    if b.role == LEADER or not voters_of(b.log) >> server & 1 or s.disk_lost >> server & 1:
        return None
    new = b._replace(epoch=b.epoch + 1, voted_for=server, role=CANDIDATE, votes=1 << server)
    return s._replace(servers=set_server(s, server, new), budget=s.budget._replace(elections=s.budget.elections - 1))


@spec.rule(voter=servers, candidate=servers, fair=True)
def handle_vote_request(cfg, s, voter, candidate):
    """Voter, on a candidate's VoteRequest: it adopts a higher epoch first (a leader steps down, KIP-595),
    then grants the vote if both are voters in its own log's voter set (KIP-642, Reassignment Algorithm,
    the note after step 6; unlike Ongaro's dissertation, §4.1), the candidate's log is at least as up to
    date (§3.6.1), and it has not voted for another server in that epoch (§3.4)."""
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
    """Voter, on a VoteRequest from a server that is not a voter in its own log's voter set: it rejects
    it and becomes a candidate itself, since the non-voter may still win (KIP-642, Reassignment
    Algorithm, the note after step 6)."""
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
    """Candidate with votes from a majority of the voter set of its own log (Ongaro's dissertation, §3.4;
    KIP-642, Reassignment Algorithm, the note after step 6): it leads, appends a LeaderChange record
    (KIP-595; KIP-642, Bootstrapping Procedure) and starts tracking fetch offsets."""
    c = s.servers[candidate - 1]
    if c.role != CANDIDATE or not is_majority(c.votes, election_config(cfg, c.log)):
        return None
    return lead(cfg, s, candidate, c)


def lead(cfg, s: State, candidate: int, c: Server) -> State:
    """Candidate `c` (server `candidate`, with its votes) takes the lead of its epoch: it appends a
    LeaderChange record and tracks fetch offsets; the `leaders` history records it."""
    log = c.log + (Entry(epoch=c.epoch, kind=LEADER_CHANGE, voters=0, target=0),)
    fetched = tuple(len(log) if i == candidate else 0 for i in servers(cfg))
    leaders = s.leaders + (0,) * (c.epoch - len(s.leaders))  # the history grows with the epochs
    previous = leaders[c.epoch - 1]  # who led this epoch before
    srv = set_server(s, candidate, c._replace(role=LEADER, log=log, fetched=fetched))
    return s._replace(servers=srv, leaders=leaders[:c.epoch - 1] + (candidate,) + leaders[c.epoch:],
                      two_leaders_in_an_epoch=s.two_leaders_in_an_epoch or previous not in (0, candidate))


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
    """Candidate: once no server leads the highest epoch and the elections under way are over (election
    timeouts are much longer than a round of messages: Ongaro's dissertation, §3.10), randomized election
    timeouts (§3.4; KIP-595) eventually let a voter time out alone and win: the assumption Raft's
    liveness rests on. A voter in its own log's voter set starts epoch
    E = (highest epoch any server holds) + 1, votes for itself and sends VoteRequest to the voters of
    its log's voter set; each adopts E and grants as `handle_vote_request` decides. With the votes of a
    majority it leads E, as `become_leader`; without, the rule is disabled. One step stands for
    `become_candidate` (repeated until its epoch passes every other), `handle_vote_request` for each
    voter and `become_leader`, with no split vote, so it adds no behaviour those rules lack; it spends
    no budget (a split vote is `become_candidate`, budgeted). A resigned leader stands too (Kafka's
    `QuorumState`: Resigned becomes Candidate when its election timeout expires), but only when no
    other voter can win: its EndQuorumEpoch names the others as preferred successors, who time out
    first. Before, it never stood, and a leader that resigned ahead of its successor's log left the
    quorum leaderless for good (docs/ARCHITECTURE.md, "Liveness triage")."""
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


def may_disrupt(cfg, s: State) -> bool:
    """The joint limit on adversarial timeouts, crashes and disk losses (if the config sets one) leaves room for
    another."""
    b = s.budget
    spent = cfg.max_elections - b.elections + cfg.max_crashes - b.crashes + cfg.max_disk_losses - b.disk_losses
    return cfg.max_disruptions < 0 or spent < cfg.max_disruptions


@spec.rule(server=servers, precondition=lambda cfg, s: s.budget.crashes > 0 and may_disrupt(cfg, s),
           applies=lambda cfg: cfg.max_crashes > 0)
def crash_restart(cfg, s, server):
    """A server crashes and restarts (Ongaro's dissertation, §3.8; KIP-642, Bootstrapping Procedure,
    step 1: its voter set is read back from its log): it loses its role, votes and fetch offsets; its
    log, epoch, vote and HWM stay."""
    b = s.servers[server - 1]
    if b.role == FOLLOWER and not b.votes and not any(b.fetched):
        return None  # nothing volatile to lose
    new = b._replace(role=FOLLOWER, votes=0, fetched=(0,) * cfg.servers)
    return s._replace(servers=set_server(s, server, new), budget=s.budget._replace(crashes=s.budget.crashes - 1))


@spec.rule(server=servers, precondition=lambda cfg, s: s.budget.disk_losses > 0 and may_disrupt(cfg, s),
           applies=lambda cfg: cfg.max_disk_losses > 0)
def restart_without_log(cfg, s, server):
    """A server restarts with an empty disk: it has lost its log, its HWM and the quorum-state file with
    its epoch and vote, and is a follower of epoch 0 that refetches the log from a leader. Raft assumes
    stable storage (Ongaro's dissertation, §3.8); KIP-853 gives such a server a new directory id so that
    it cannot rejoin as the voter it was: from then on it neither stands nor votes, and a leader does not
    count its fetches toward the HWM (`disk_lost`; re-adding it as a new voter is not modelled)."""
    b = s.servers[server - 1]
    new = Server(epoch=0, voted_for=0, role=FOLLOWER, log=(), hwm=0, votes=0, fetched=(0,) * cfg.servers)
    if b == new:
        return None
    return s._replace(servers=set_server(s, server, new), disk_lost=s.disk_lost | 1 << server,
                      budget=s.budget._replace(disk_losses=s.budget.disk_losses - 1))


def reassignment_done(cfg, s: State) -> bool:
    """No server's log has a pending TargetVoters."""
    return all(not target_of(b.log) for b in s.servers)


def reassignment_completed(cfg, s: State) -> bool:
    """The committed log has no pending TargetVoters, no server that remains a voter (in the committed
    voter set) has one in its own log, and some server leads. A removed voter may never hear of the
    completion (once removed it is not fetched for and may be fenced by a higher epoch), so it does not count."""
    if target_of(s.committed) or not any(b.role == LEADER for b in s.servers):
        return False
    remaining = voters_of(s.committed)
    return all(not target_of(b.log) for i, b in enumerate(s.servers, 1) if remaining >> i & 1)


spec.eventually("ReassignmentCompletes", goal=reassignment_completed, trigger=lambda cfg, s: not reassignment_done(cfg, s),
                doc="once some server's log holds a pending TargetVoters, eventually the committed log completes "
                    "it, no server that remains a voter holds one, and some server leads, under weak fairness of "
                    "the fair rules (adversarial timeouts and faults are bounded, so they stop; `win_election` is "
                    "fair: randomized timeouts eventually elect a leader)")
spec.expect_liveness_failure(
    "literal-votes", "ReassignmentCompletes",
    "KIP-642's own vote rule (votes=kip642): a server added by an entry it has not fetched acts as an observer and "
    "does not vote, and voters reject non-voters; after one adversarial timeout no server can win: the old leader's "
    "log has removed 2 from {1,2,3}, 2's log holds {1,2,3}, 3's log still holds {1,2} (KIP-853 relaxes Vote handling "
    "for this)")

spec.expect_liveness_failure(
    "liveness", "ReassignmentCompletes",
    "a quorum that loses a majority of its voters' logs cannot elect a leader: the only voter restarts without its "
    "log and, with a new directory id, no longer counts as the voter it was (KIP-853, KRaft Controller Membership "
    "Changes: the directory id; Raft assumes stable storage, Ongaro's dissertation, §3.8)")

# ================================================================================ speed helpers
# Every rule `_replace`s a Server and the State. Measured: BFS of `ci` took 13.5 s and 15.4 s of CPU
# with fast_replace against 14.2 s and 16.8 s without (5-8%, same 412,495 states, runs alternated).
fast_replace(Entry, Server, Budget, State)


# ================================================================================ how it is drawn
@spec.protocol_view
def drawn(cfg: Kip642Config, s: State) -> dict:
    """The state as `harness explore` draws a quorum (template views/quorum.html): the voters, each
    server's role and epoch, and its log with the VoterAssignment entries set apart from the records."""
    def show_set(m: int) -> str:
        return IdSet().show(m)

    servers = []
    for i, v in enumerate(s.servers, 1):
        log, entries = [], []
        for offset, e in enumerate(v.log):
            kind = KIND.show(e.kind)
            if e.kind == VOTER_ASSIGNMENT:
                text = f"voters {show_set(e.voters)}" + (f", target {show_set(e.target)}" if e.target else "")
                entries.append(f"offset {offset}, epoch {e.epoch}: {text}" + (" (committed)" if offset < v.hwm else ""))
                log.append({"epoch": e.epoch, "label": "V", "css": "config", "text": text})
            else:
                log.append({"epoch": e.epoch, "label": "L" if e.kind == LEADER_CHANGE else e.epoch, "text": kind.lower()})
        known = [("voted for", OptId().show(v.voted_for)), ("voters (its log)", show_set(voters_of(v.log))),
                 ("target (its log)", show_set(target_of(v.log)) if target_of(v.log) else "none")]
        if v.role == CANDIDATE:
            known.append(("votes", show_set(v.votes)))
        if v.role == LEADER:
            known.append(("fetch offsets", ", ".join(f"{f}:{o}" for f, o in enumerate(v.fetched, 1))))
        if s.disk_lost >> i & 1:
            known.append(("disk", "lost (restarted with an empty log)"))
        servers.append({"id": i, "role": ROLE.show(v.role), "epoch": v.epoch, "log": log, "known": known,
                        "marks": [("HWM", v.hwm, v.hwm), ("LEO", len(v.log), len(v.log))], "config_entries": entries})
    summary = [("voters (committed log)", show_set(voters_of(s.committed))),
               ("target (committed log)", show_set(target_of(s.committed)) if target_of(s.committed) else "none"),
               ("leader of each epoch", ", ".join(f"{e}:{OptId().show(x)}" for e, x in enumerate(s.leaders, 1)) or "-")]
    history = [("committed", ", ".join(f"{KIND.show(e.kind).lower()}@{e.epoch}" for e in s.committed) or "-"),
               ("commit epoch", str(s.commit_epoch)), ("committed overwritten", str(s.committed_overwritten)),
               ("two leaders in an epoch", str(s.two_leaders_in_an_epoch)),
               ("budget", ", ".join(f"{k} {n}" for k, n in s.budget._asdict().items()))]
    return {"kind": "quorum", "summary": summary, "servers": servers, "history": history}
