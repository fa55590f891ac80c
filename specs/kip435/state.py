"""The `kip435` model's records and config: a partition's assignment and running step (`Partition`), the
dynamic limits R, P and L (`Limits`), the whole state (`State`), and `Kip435Config` with the variants the
KIP leaves open and the parameter domains."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, NamedTuple

from harness.itf import IdSet, Int, OptId, Seq
from harness.model import Config, budget, ids, param, variant

MAX_BROKERS = 16
NO_LEADER = 0  # shown as -1 in traces


@dataclass(frozen=True)
class Kip435Config(Config):
    reading: str = variant("example", "step calculation: example = the reading that reproduces the KIP's worked "
                                      "example (new replicas where the dropped ones stood, a new preferred leader "
                                      "first), text = the numbered rules read literally (rule 4: TR = CR + NR - DR, "
                                      "NR after the survivors)", ("example", "text"))
    leader_step: str = variant("with-others", "the step that adds FTR's new preferred leader (rule 3.2): with-others "
                                              "= rules 3.3-3.4 go on, up to R new replicas in all; alone = only the "
                                              "leader, beyond it only the MinISR top-up (as the KIP author's draft, "
                                              "apache/kafka PR #6011, adds one new replica a step)",
                               ("with-others", "alone"))
    topup: str = variant("before", "the MinISR top-up of reading=example (Proposed Changes; rule 3.1/3.3) counts "
                                   "the in-sync replicas of CR: before = all of CR, after = CR - DR (the survivors "
                                   "of the step's drops)", ("before", "after"))
    batch: str = variant("described", "batch collection: described = at most L leader movements, the rest filled "
                                      "with other moves; pseudocode = leader movements first, as written",
                         ("described", "pseudocode"))
    moves: str = variant("first", "what counts as a leader movement for L (Collecting a reassignment batch leaves "
                                  "involvesLeaderReassignment undefined): first = TR's first replica is not the "
                                  "current leader (the step ends with it leading); leaves = the current leader is "
                                  "not in TR (Performing reassignment, step 7: a new leader only if the current one "
                                  "is not in TR)", ("first", "leaves"))
    wait: str = variant("none", "when DR are forced out of the ISR: none = in the step that adds NR (KIP-435, "
                                "Performing reassignment for a single partition, new algorithm, steps 1-10: nothing "
                                "waits for NR to catch up), new = once every NR replica is in the ISR (Motivation: "
                                "bring one replica in sync, then remove an old one), target = once every TR replica "
                                "is (the existing algorithm's step 4)", ("none", "new", "target"))
    brokers: int = param(4, "brokers 1..N", lo=1, hi=MAX_BROKERS)
    replicas: tuple[tuple[int, ...], ...] = ids(((1, 2), (2, 3)), "each partition's current replicas (CR); the first "
                                                "leads", most=MAX_BROKERS, lists=4)
    targets: tuple[tuple[int, ...], ...] = ids(((3, 4), (3, 4)), "each partition's final target replicas (FTR)",
                                               most=MAX_BROKERS, lists=4)
    lagging: int = param(0, "up to `lagging` replicas of each partition, other than its first (the leader), start "
                            "out of the ISR: one initial state per choice of them", lo=0, hi=8)
    r: int = param(1, "reassignment.parallel.replica.count (R)", lo=1, hi=MAX_BROKERS)
    p: int = param(1, "reassignment.parallel.partition.count (P)", lo=1, hi=4)
    l: int = param(1, "reassignment.parallel.leader.movements (L)", lo=1, hi=4)
    min_isr: int = param(1, "min.insync.replicas", lo=1, hi=MAX_BROKERS)
    max_failures: int = budget(0, "broker failures (each broker may recover)")
    max_config_changes: int = budget(0, "dynamic changes of R, P and L between batches (each to 1 or 2)")

    def validate(self) -> str | None:
        if len(self.replicas) != len(self.targets):
            return "replicas and targets must name the same partitions"
        for group in self.replicas + self.targets:
            if len(set(group)) != len(group) or not all(1 <= b <= self.brokers for b in group):
                return f"replica lists must be non-empty lists of distinct brokers in 1..{self.brokers}"
        if any(self.lagging >= len(g) for g in self.replicas):
            return "every partition needs an in-sync replica to start"
        return None


class Partition(NamedTuple):
    replicas: Annotated[tuple, Seq(Int())]  # CR (during a step: TR followed by DR not yet deleted)
    isr: Annotated[int, IdSet()]
    leader: Annotated[int, OptId()]  # NO_LEADER: offline
    adding: Annotated[int, IdSet()]  # NR of the running step
    removing: Annotated[int, IdSet()]  # DR of the running step
    target: Annotated[tuple, Seq(Int())]  # TR of the running step; () = none
    step_isr: int  # in-sync replicas the step's MinISR top-up counted (`topup`) (history)
    step_r: int  # the R the step was computed with (history)
    start_isr: int  # in-sync replicas when the reassignment started (history)
    steps: int  # steps taken (history)


class Limits(NamedTuple):
    r: int  # reassignment.parallel.replica.count as the next step calculation reads it
    p: int  # reassignment.parallel.partition.count
    l: int  # reassignment.parallel.leader.movements


class State(NamedTuple):
    partitions: Annotated[tuple, Seq(Partition)]
    limits: Limits  # the dynamic configs; a change applies from the next batch on
    config_changes: int
    alive: Annotated[int, IdSet()]
    failures: int
    leader_moves: int  # leader movements in the current batch (history)
    batch_size: int  # partitions in the current batch (history)
    # history, 1 + the first partition where it happened (0: never):
    shrunk: int  # a step's drop left fewer in-sync replicas than min(MinISR, in-sync at the start, |FTR|)
    lost: int  # a deletion emptied the ISR: acknowledged records lost
    late: int  # a first step that added FTR's preferred leader ended with another leader while it could lead

