"""The kip642 model's state and config: roles and entry kinds, the config with its parameter domains, and
the records of a state (an entry, a server, the budgets, the state)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, NamedTuple

from harness.itf import Bool, ById, Enum, IdSet, OptId, Seq
from harness.model import Config, budget, distinct_ids, ids, param, variant

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
