"""KRaft partition reassignment with Eligible Leader Replicas, on Kafka's replication core.

Sources. The rules follow two chapters of one public protocol description, the prose that
accompanies the TLA+ specifications of github.com/Vanlightly/kafka-tlaplus; throughout the kraft
model (this package, `invariants/kraft.py`) they are cited in short form:

* [kafka-tlaplus kip-966 §4.x]: Kafka replication protocol description (kafka-tlaplus, kip-966),
  ch. 4 §4.x, partition reassignment (kafka_data_replication/kraft/kip-966/description/4_reassignment.md);
* [kafka-tlaplus v3.5 §2.x]: Kafka replication protocol description (kafka-tlaplus, v3.5), ch. 2 §2.x,
  the replication algorithm (kafka_data_replication/kraft/v3.5/description/2_replication_algorithm.md);
* KIP-966 (Eligible Leader Replicas) for the ELR, and Apache Kafka's own classes (apache/kafka at
  1eb76443, the pre-4.0 trunk of 2024-10-25) where the model follows Kafka: the `kafka` variant
  (`specs.kraft.controller`) and the leader's handling of AlterPartition errors;
* "TLA+: Name" names the action of kafka-tlaplus's kafka_replication_kip_966.tla a rule corresponds to.

Each rule reads like those TLA+ actions: a docstring naming who acts and the protocol step, then
its enabling conditions (a rule returns None where it is not enabled), then the next state.

Who acts: the controller (reassignment, cancellation, AlterPartition handling, fencing, elections)
and the brokers (producing, fetching, advancing the high watermark, proposing ISR changes,
learning metadata, crashing and restarting). One partition; brokers 1..N.

Abstractions (see docs/ARCHITECTURE.md, "The kraft model"):
* Records are identified by (offset, leader epoch); a log is the tuple of the epochs its records
  were written in. Values and producer ids are abstracted away.
* The metadata log is abstracted to "a broker learns the controller's current partition state":
  a broker can skip intermediate states, as materialised snapshots do [kafka-tlaplus v3.5 §2.3.2].
* A fetch is one request/response step: the follower reports its fetch offset, the leader
  records it and returns the next record (or the follower truncates on divergence).
* An AlterPartition request is in flight from `propose_*` until `handle_alter_partition`; its
  response is in flight until `handle_alter_partition_response`.
* An unclean shutdown loses the unflushed suffix of the log when the broker restarts (the
  `keep` parameter of `restart_after_unclean_shutdown` is how much was flushed).

The controller's partition-change logic is in `specs.kraft.controller` as pure functions. The
speed measures (positional setters, caches) are gathered in the last section of this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, NamedTuple

from harness.bitset import as_list, as_set  # noqa: F401 (as_set: re-exported for the invariants)
from harness.itf import Bool, ById, Enum, IdSet, Int, OptId, Seq
from harness.model import Config, Spec, budget, distinct_ids, ids, param, variant
from harness.speed import fast_replace, memoized, per_state, setter
from specs.kraft import controller as ctl
from specs.kraft.controller import NO_LEADER, Partition, Rules, bit, mask, size

# Broker status, as the controller registers it and as the process is [kafka-tlaplus v3.5 §1.2.2]. The codes
# are ordered: a broker is running iff its status is FENCED or UNFENCED (status >= FENCED).
#   GONE      stopped for good (a dead machine): never restarts
#   OFFLINE   shut down cleanly (controlled shutdown): its log is flushed
#   CRASHED   shut down uncleanly (power loss): the unflushed suffix is lost at restart
#   FENCED    running and registered, fenced (no heartbeat yet, or missed heartbeats)
#   UNFENCED  running and unfenced: may lead and join the ISR
GONE, OFFLINE, CRASHED, FENCED, UNFENCED = BROKER_STATUS = Enum("GONE", "OFFLINE", "CRASHED", "FENCED", "UNFENCED")

# The controller's answer to a leader's AlterPartition request, as the leader holds it
# [kafka-tlaplus v3.5 §2.9.2]; the errors are those of Kafka's `ReplicationControlManager.alterPartition`.
# The codes are ordered: ACCEPTED..STALE_REQUEST are answers the leader has yet to act on.
#   NO_RESPONSE_YET     no request, or the request is still in flight to the controller
#   ACCEPTED            the partition change is committed (the response carries ISR and epochs)
#   INELIGIBLE_REPLICA  a proposed member is fenced or restarted: the leader rolls its Maximal ISR back
#   STALE_REQUEST       FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, INVALID_REQUEST: wait for metadata
#   AWAITING_METADATA   acted on; the leader keeps its pending state until it learns new metadata
NO_RESPONSE_YET, ACCEPTED, INELIGIBLE_REPLICA, STALE_REQUEST, AWAITING_METADATA = RESPONSE_STATUS = Enum(
    "NO_RESPONSE_YET", "ACCEPTED", "INELIGIBLE_REPLICA", "STALE_REQUEST", "AWAITING_METADATA")

# Where the user-visible texts below (mutations, expected violations: they appear in `list` and in
# traces) cite the description, they spell it out.
REASSIGNMENT_DESC = "Kafka replication protocol description (kafka-tlaplus, kip-966), ch. 4"
REPLICATION_DESC = "Kafka replication protocol description (kafka-tlaplus, v3.5), ch. 2"


# Static bounds of the config (relations between fields are `validate`).
MAX_BROKERS = 8  # as validate() had it: `prove` proves the Z3 properties for 1..8 brokers by default
MAX_TARGETS = 64  # each target is an action per leader choice
MAX_RECORDS = 100  # restart_after_unclean_shutdown has an action per (broker, flushed length 0..max_records)


@dataclass(frozen=True)
class KraftConfig(Config):
    completion: str = variant("seed", f"completion rule and controller logic: seed = the protocol description "
                                      f"({REASSIGNMENT_DESC} §4.2), kafka = Kafka's controller "
                                      f"(ReplicationControlManager, PartitionChangeBuilder)", ("seed", "kafka"))
    elr: bool = variant(True, "KIP-966 Eligible Leader Replicas")
    unclean: bool = variant(False, "unclean.leader.election.enable")
    brokers: int = param(3, "brokers 1..N", lo=1, hi=MAX_BROKERS)
    replicas: tuple[int, ...] = ids((1, 2), "initial replica assignment (ordered)", most=MAX_BROKERS)
    isr: tuple[int, ...] = ids((1, 2), "initial ISR", most=MAX_BROKERS)
    leader: int = param(1, "initial leader", lo=1, hi=MAX_BROKERS)
    min_isr: int = param(2, "min.insync.replicas", lo=1, hi=MAX_BROKERS)
    targets: tuple[tuple[int, ...], ...] = ids(((2, 3),), "assignments AlterPartitionReassignments may request",
                                               most=MAX_BROKERS, lists=MAX_TARGETS)
    max_records: int = param(1, "records producers may write", lo=0, hi=MAX_RECORDS)
    max_reassignments: int = budget(1, "AlterPartitionReassignments requests")
    max_cancels: int = budget(1, "cancellations")
    max_faults: int = budget(1, "fencings and clean shutdowns")
    max_unclean_shutdowns: int = budget(0, "unclean shutdowns (power loss)")
    max_shrinks: int = budget(0, "ISR shrinks proposed by the leader")
    max_permanent_failures: int = budget(0, "brokers that stop for good (a dead machine; the others' faults still heal)")
    max_disruptions: int = budget(-1, "fencings, clean and unclean shutdowns, ISR shrinks and permanent failures "
                                      "together, in one run (-1: only the limits above)", least=-1)

    def validate(self) -> str | None:
        for name, group in [("replicas", self.replicas), ("isr", self.isr)] + [("targets", t) for t in self.targets]:
            if not distinct_ids(group, self.brokers):
                return f"{name} must be non-empty lists of distinct brokers in 1..{self.brokers}"
        if not set(self.isr) <= set(self.replicas) or self.leader not in self.isr:
            return "isr must be a subset of replicas and contain the leader"
        return None


# ------------------------------------------------------------------------------------ the state


class AlterPartition(NamedTuple):
    """An AlterPartition request in flight [kafka-tlaplus v3.5 §2.9.2]; isr 0 = none."""

    isr: Annotated[int, IdSet()]
    leader_epoch: int
    partition_epoch: int
    added_epochs: Annotated[tuple, ById(Int())]  # broker epochs of replicas being added (0 = not added)


class Response(NamedTuple):
    """The controller's AlterPartition response to a leader."""

    status: Annotated[int, RESPONSE_STATUS]
    isr: Annotated[int, IdSet()]
    leader_epoch: int
    partition_epoch: int


class Broker(NamedTuple):
    status: Annotated[int, BROKER_STATUS]
    epoch: int  # broker epoch: a new one at every registration (restart)
    log: Annotated[tuple, Seq(Int())]  # the leader epoch of each record
    hwm: int  # local high watermark
    # the partition metadata this broker has learned
    known_leader: Annotated[int, OptId()]
    known_leader_epoch: int
    known_partition_epoch: int
    known_isr: Annotated[int, IdSet()]
    known_replicas: Annotated[int, IdSet()]
    # leader state [kafka-tlaplus v3.5 §2.7, §2.9, §2.10]
    maximal_isr: Annotated[int, IdSet()]
    leso: int  # Leader Epoch Start Offset
    follower_leo: Annotated[tuple, ById(Int())]  # last fetch offset of each follower
    follower_epoch: Annotated[tuple, ById(Int())]  # broker epoch of each follower's last fetch
    # followers outside the Maximal ISR that fetched in the current leader epoch since the leader last proposed
    # adding them: Kafka's leader considers an ISR expansion only on a fetch (`Partition.updateFollowerFetchState`
    # -> `maybeExpandIsr`); a member of the Maximal ISR needs no expansion, so its fetches leave no mark
    fetched: Annotated[int, IdSet()]
    pending: AlterPartition
    response: Response


class Budget(NamedTuple):
    """Perturbations left (healing is never bounded)."""

    reassignments: int
    cancels: int
    faults: int
    unclean_shutdowns: int
    shrinks: int
    records: int


class State(NamedTuple):
    partition: Partition
    brokers: Annotated[tuple, ById(Broker)]
    budget: Budget
    # history, for properties
    committed: Annotated[tuple, Seq(Int())]  # the true committed log (epochs), up to the true HWM
    acked: Annotated[tuple, Seq(Int())]  # records acknowledged to acks=all producers
    committed_overwritten: Annotated[bool, Bool()]  # a leader committed a log that contradicts `committed`
    completed_below_min_isr: Annotated[bool, Bool()]  # a completion left ISR < MinISR


# ------------------------------------------------------------------------- presets, the spec


PRESETS = {
    # A move [1,2] -> [2,3] that removes the leader, with a cancellation and one record: no faults.
    "tiny": {"max_faults": 0},
    # The sole in-sync replica loses its log in an unclean shutdown during the move (ELR cleared by the
    # restart): with unclean election off no replica may lead, so the reassignment never completes. The
    # expected ReassignmentCompletes failure (12,712 states; 7-step lasso).
    "leaderless": {"isr": [1], "max_records": 0, "max_cancels": 0, "max_faults": 0, "max_unclean_shutdowns": 1},
    # Remove replica 3, then add it back: a replica removed in the same leader epoch may have kept fetching,
    # so only the completion's leader-epoch bump stops the leader from trusting its stale fetch state when
    # the replica returns with an empty log. 3 starts outside the ISR: the leader proposes adding a follower
    # only on its fetch, and an ISR member's fetch leaves no mark (47,141 states; with 3 in the ISR, 10,289
    # states, the mutation survived once expansion followed fetches).
    "remove-readd": {"replicas": [1, 2, 3], "isr": [1, 2], "targets": [[1, 2], [1, 2, 3]], "max_reassignments": 2,
                     "max_records": 2, "max_cancels": 0, "max_faults": 0},
    # The move with one fencing or clean shutdown and nothing else: the smallest config where ELR matters.
    "tiny-fence": {"max_faults": 1, "max_records": 0, "max_cancels": 0},
    # A move [1,2] -> [2,3] whose new broker 3 may die for good: the reassignment cannot complete (the
    # expected ReassignmentCompletes failure), but the partition stays available on 1 and 2.
    "gone-target": {"max_faults": 0, "max_cancels": 0, "max_permanent_failures": 1},
    # Exhausted by BFS in about a minute, every rule fires: the move of an under-replicated partition
    # (follower 2 not yet in the ISR), a record, a cancellation, and one disruption of any kind.
    "ci": {"isr": [1], "max_records": 1, "max_unclean_shutdowns": 1, "max_shrinks": 1, "max_permanent_failures": 1,
           "max_disruptions": 1},
    # Liveness with the graph engine (every rule fires, 61,036 states; docs/ARCHITECTURE.md, "Liveness triage"):
    # the move [1,2] -> [2] of an under-replicated partition (follower 2 not yet in the ISR, MinISR 1), a record,
    # a cancellation, and one disruption of any kind, a permanent failure included.
    "liveness": {"brokers": 2, "replicas": [1, 2], "isr": [1], "targets": [[2]], "min_isr": 1, "max_records": 1,
                 "max_unclean_shutdowns": 1, "max_shrinks": 1, "max_permanent_failures": 1, "max_disruptions": 1},
    # The mutations' config: the move, two records, a cancellation, one unclean shutdown.
    "small": {"max_faults": 0, "max_unclean_shutdowns": 1, "max_records": 2},
    # Two brokers, the follower outside the ISR, Kafka's default MinISR 1, no reassignment: the smallest
    # config of the ISR-expansion bugs of [kafka-tlaplus v3.5 §2.9] (the config of expand_without_fetch_in_epoch).
    "lagging": {"brokers": 2, "replicas": [1, 2], "isr": [1], "min_isr": 1, "targets": [[1, 2]],
                "max_reassignments": 0, "max_cancels": 0, "max_faults": 0, "max_unclean_shutdowns": 1,
                "max_records": 2},
    # Faults of every kind together (for the Spark engine): fencing or clean shutdown, power loss, ISR shrink.
    "faults": {"max_unclean_shutdowns": 1, "max_shrinks": 1},
    # Known-unsafe configurations (expected counterexamples, see `expected` below).
    "unclean-election-loss": {"unclean": True, "max_faults": 2},
    "last-replica-standing": {"elr": False, "max_unclean_shutdowns": 2},
    "kafka-cancel-without-elr": {"completion": "kafka", "elr": False, "isr": [1], "max_records": 1,
                                 "max_unclean_shutdowns": 1, "max_disruptions": 1},
    # Beyond BFS reach, for the Hypothesis engine: 6 brokers, RF 5, two reassignments and faults.
    "large": {"brokers": 6, "replicas": [1, 2, 3, 4, 5], "isr": [1, 2, 3, 4, 5], "min_isr": 3,
              "targets": [[1, 2, 3, 4, 6], [2, 3, 4, 5, 6]], "max_reassignments": 2, "max_records": 3, "max_faults": 2,
              "max_unclean_shutdowns": 1, "max_shrinks": 1},
    "nightly": {"brokers": 4, "replicas": [1, 2, 3], "isr": [1, 2, 3], "targets": [[1, 2, 4], [3, 4]],
                "max_records": 2, "max_unclean_shutdowns": 1, "max_shrinks": 1},
}

EXPECTED = {
    "unclean-election-loss": "unclean leader election (enabled) elects a replica without the committed log: acknowledged data is lost",
    "last-replica-standing": "without ELR, the last ISR member loses its unflushed suffix in an unclean shutdown and stays "
                             f"the only leader candidate ({REPLICATION_DESC} §2.4.1; fixed by KIP-966)",
    "kafka-cancel-without-elr": "Kafka's controller (ReplicationControlManager.cancelPartitionReassignment) refuses a "
                                "cancellation only when the reverted ISR is empty, not below MinISR as "
                                f"{REASSIGNMENT_DESC} §4.5 does; without ELR the leader then commits with "
                                "ISR < MinISR and one unclean shutdown loses the committed record",
}

spec = Spec("kraft", KraftConfig, State, doc=__doc__, presets=PRESETS, deadlock=False, expected=EXPECTED,
            mutation_preset="small")
spec.mutation("completion_ignores_min_isr", rule="alter_partition_reassignments",
              removes=f"complete although the final ISR < MinISR ({REASSIGNMENT_DESC} §4.2, completion rule 1)")
spec.mutation("keep_removing_in_isr", rule="alter_partition_reassignments",
              removes=f"`removing` replicas stay in the ISR at completion ({REASSIGNMENT_DESC} §4.2, step 3)")
spec.mutation("stale_partition_epoch", rule="handle_alter_partition",
              removes=f"the partition-epoch check: accept a request based on a stale partition epoch "
                      f"({REPLICATION_DESC} §2.9.2)")
spec.mutation("ignore_added_broker_epoch", rule="handle_alter_partition",
              removes=f"the broker-epoch check of added replicas ({REPLICATION_DESC} §2.9.2)")
spec.mutation("expand_below_hwm", rule="propose_isr_expansion",
              removes=f"the HWM condition: add a follower that has not reached the HWM ({REPLICATION_DESC} §2.9)")
spec.mutation("expand_below_leso", rule="propose_isr_expansion",
              removes=f"the LESO condition: add a follower that has not reached the LESO ({REPLICATION_DESC} §2.9)")
spec.mutation("expand_without_fetch_in_epoch", rule="propose_isr_expansion", caught_at="lagging",
              removes=f"the fetch-in-epoch condition: add a follower with no fetch in the current leader epoch "
                      f"({REPLICATION_DESC} §2.9)")
spec.mutation("hwm_below_min_isr", rule="advance_hwm",
              removes="the MinISR condition: advance the HWM while ISR < MinISR with ELR on (KIP-966)")
spec.mutation("hwm_over_learned_isr", rule="advance_hwm",
              removes=f"the Maximal ISR: advance the HWM over the ISR learned from the controller, ignoring a "
                      f"proposed addition the controller may already have committed ({REPLICATION_DESC} §2.7, §2.9.2)")
spec.mutation("leader_min_isr_differs", rule="advance_hwm",
              removes="one MinISR for leader and controller: the leader's is one lower, so it advances the HWM "
                      "while the controller's ISR < MinISR (KIP-966)")
spec.mutation("accept_ineligible_replica", rule="handle_alter_partition",
              removes=f"the eligibility check: accept into the ISR a replica that is fenced or shutting down "
                      f"(KIP-841; {REPLICATION_DESC} §2.9.2)")
spec.mutation("completion_no_epoch_bump", rule="alter_partition_reassignments", caught_at="remove-readd",
              removes=f"the leader-epoch bump of a completion that keeps the leader: replicas removed by the "
                      f"reassignment are not fenced by a new leader epoch ({REASSIGNMENT_DESC} §4.2, step 3)")
spec.mutation("truncate_to_hwm", rule="learn_metadata",
              removes=f"truncation to the divergence point (KIP-101): a follower in a new leader epoch truncates "
                      f"to its own HWM, which may lag the leader's, before fetching ({REPLICATION_DESC} §2.10, ch. 3)")
spec.mutation("keep_removed_log", rule="learn_metadata", caught_at="tiny", liveness=True,
              removes=f"deleting the partition on a broker that learns it is no longer a replica "
                      f"({REPLICATION_DESC} §2.10): a stray replica keeps its log forever")
spec.mutation("elr_not_populated", rule="fence", caught_at="tiny-fence",
              removes="KIP-966's ELR: replicas leaving an ISR below MinISR become eligible leader replicas")
spec.mutation("keep_unclean_in_elr", rule="restart_after_unclean_shutdown",
              removes="the ELR removal: a broker restarting after an unclean shutdown stays in the ELR (KIP-966)")


# ------------------------------------------------------------ parameter domains and formats


def brokers(cfg):
    return range(1, cfg.brokers + 1)


def targets(cfg):
    """Which of the config's `targets` an AlterPartitionReassignments request asks for (an index)."""
    return range(len(cfg.targets))


def target_text(cfg, index: int) -> str:
    """A target as traces show it: the replica list it names, `[2,3]`."""
    return as_list(cfg.targets[index])


def leader_choices(cfg):
    """The controller's leader pick where a partition change elects. 0 = no pick: keep the leader (or
    none when there is no candidate); b = broker b, where the description lets the controller pick
    any member of the new ISR [kafka-tlaplus kip-966 §4.2] (seed variant). Kafka's election is
    deterministic (`PartitionChangeBuilder.electLeader`), so there the only value is 0."""
    return range(0, cfg.brokers + 1) if cfg.completion == "seed" else range(1)


def leader_choice_text(cfg, choice: int) -> str:
    """A leader pick as traces show it: `keep` (Kafka's variant: `elect`, its own election), or the broker."""
    if choice:
        return str(choice)
    return "keep" if cfg.completion == "seed" else "elect"


PICK = {"new_leader": leader_choice_text}


# ---------------------------------------------------------------------------------- helpers


def running(b: Broker) -> bool:
    return b.status >= FENCED


def acts_as_leader(s: State, leader: int) -> Broker | None:
    """The broker if it is running and believes it leads (it may be stale)."""
    b = s.brokers[leader - 1]
    return b if b.status >= FENCED and b.known_leader == leader else None


def acceptable(s: State) -> int:
    """Brokers that may lead or join the ISR: running and unfenced."""
    return broker_facts(s.brokers).unfenced


def some_broker_is(s: State, status: int) -> bool:
    return bool(broker_facts(s.brokers).statuses >> status & 1)


def with_broker(s: State, broker: int, new: Broker) -> tuple:
    """The brokers of `s` with broker `broker` replaced by `new`."""
    i = broker - 1
    return s.brokers[:i] + (new,) + s.brokers[i + 1:]


def update_broker(s: State, broker: int, new: Broker) -> State:
    """`s` with broker `broker` replaced by `new`."""
    return set_brokers(s, with_broker(s, broker, new))


def no_request(n: int) -> AlterPartition:
    """No AlterPartition in flight (for a cluster of n brokers)."""
    return AlterPartition(0, 0, 0, (0,) * n)


NO_RESPONSE = Response(NO_RESPONSE_YET, 0, 0, 0)


def fresh_broker(n: int, status: int, epoch: int, log: tuple, hwm: int) -> Broker:
    """A broker that knows no metadata and holds no leader state."""
    zeros = (0,) * n
    return Broker(status, epoch, log, hwm, NO_LEADER, 0, 0, 0, 0, 0, 0, zeros, zeros, 0, no_request(n), NO_RESPONSE)


def forgotten(n: int, b: Broker) -> Broker:
    """A broker that is not a replica: no log, no metadata for the partition, no leader state.
    An AlterPartition it sent may still be in flight."""
    new = fresh_broker(n, b.status, b.epoch, (), 0)
    if b.response.status == AWAITING_METADATA:
        return new
    return new._replace(pending=b.pending, response=b.response)


def learned(b: Broker, p: Partition) -> Broker:
    """`b` once it knows partition state `p`."""
    return b._replace(known_leader=p.leader, known_leader_epoch=p.leader_epoch, known_partition_epoch=p.partition_epoch,
                      known_isr=p.isr, known_replicas=mask(p.replicas))


def effective_min_isr(cfg, p: Partition) -> int:
    """MinISR as the controller applies it: Kafka takes min(MinISR, |replicas|)
    (`ReplicationControlManager.getTopicEffectiveMinIsr`)."""
    return min(cfg.min_isr, len(p.replicas)) if cfg.completion == "kafka" else cfg.min_isr


def commit_partition(cfg, s: State, old: Partition, new: Partition, **changes) -> State:
    """Apply a partition change; record whether it completed a reassignment below MinISR: one in progress,
    or one that completed at once (an only-removing AlterPartitionReassignments: the replicas change
    with no reassignment in progress before or after)."""
    below = s.completed_below_min_isr
    completes = ctl.in_progress(old) or mask(old.replicas) != mask(new.replicas)
    if completes and not ctl.in_progress(new):
        below = below or size(new.isr) < effective_min_isr(cfg, new)
    return s._replace(partition=new, completed_below_min_isr=below, **changes)


def may_disrupt(cfg, s: State, budget: str) -> bool:
    """A disruption of this kind (fault, unclean_shutdown, shrink) is left in its budget, and in the
    joint one if the config sets it."""
    if not getattr(s.budget, budget):
        return False
    return cfg.max_disruptions < 0 or disruptions(cfg, s) < cfg.max_disruptions


def disruptions(cfg, s: State) -> int:
    """Fencings, shutdowns, ISR shrinks and permanent failures so far in this run."""
    b = s.budget
    spent = cfg.max_faults - b.faults + cfg.max_unclean_shutdowns - b.unclean_shutdowns + cfg.max_shrinks - b.shrinks
    return spent + gone(s).bit_count()


# ---------------------------------------------------------------------------------- init state


@spec.init
def init(cfg):
    """A settled partition: every replica in sync with an empty log; every broker knows the metadata."""
    n = cfg.brokers
    p = Partition(tuple(cfg.replicas), mask(cfg.isr), 0, 0, cfg.leader, 1, 1, 0, 0, False)
    bs = []
    for b in brokers(cfg):
        br = fresh_broker(n, UNFENCED, 1, (), 0)
        if b in cfg.replicas:
            br = learned(br, p)
        if b == cfg.leader:
            br = br._replace(maximal_isr=p.isr,
                             follower_epoch=tuple(1 if p.isr >> f & 1 else 0 for f in brokers(cfg)))
        bs.append(br)
    budget = Budget(cfg.max_reassignments, cfg.max_cancels, cfg.max_faults, cfg.max_unclean_shutdowns, cfg.max_shrinks,
                    cfg.max_records)
    yield State(p, tuple(bs), budget, (), (), False, False)


# =========================================================================== controller rules


@spec.rule(target=targets, new_leader=leader_choices, format={"target": target_text, **PICK},
           precondition=lambda cfg, s: s.budget.reassignments > 0, applies=lambda cfg: cfg.max_reassignments > 0)
def alter_partition_reassignments(cfg, s, target, new_leader):
    """Controller: an AlterPartitionReassignments request moves the partition to `target`
    [kafka-tlaplus kip-966 §4.1, §4.2] (Kafka: `ReplicationControlManager.changePartitionReassignment`).
    TLA+: PerformPartitionReassignment.

    Enabled while the budget allows a reassignment and the change is not a no-op; the seed variant
    starts only from a settled assignment.
    Next: growth (replicas = current ++ added, `adding`/`removing` set, partition epoch + 1); with
    nothing to add, the completion change at once if the completion rules hold.
    """
    p, rules = s.partition, rules_of(cfg)
    if cfg.completion == "kafka":
        new = ctl.kafka_reassign(p, cfg.targets[target], rules, acceptable(s)) if not new_leader else None
    else:
        new = ctl.seed_reassign(p, cfg.targets[target], rules, acceptable(s), new_leader)
    if new is None:
        return None
    return commit_partition(cfg, s, p, new, budget=s.budget._replace(reassignments=s.budget.reassignments - 1))


def cancellable(cfg, s: State) -> bool:
    """A cancellation is left in the budget and a reassignment is in progress; in the seed variant,
    also one the controller would not refuse as unsafe (so the refused ones cost one test, not one
    per leader choice)."""
    p = s.partition
    return (s.budget.cancels > 0 and ctl.in_progress(p)
            and (cfg.completion == "kafka" or not ctl.seed_cancel_refused(p, rules_of(cfg))))


@spec.rule(new_leader=leader_choices, format=PICK, precondition=cancellable, applies=lambda cfg: cfg.max_cancels > 0)
def cancel_reassignment(cfg, s, new_leader):
    """Controller: a cancellation reverts the ongoing reassignment [kafka-tlaplus kip-966 §4.5] (Kafka:
    `ReplicationControlManager.cancelPartitionReassignment`, `PartitionReassignmentRevert`).

    Enabled while a reassignment is in progress and the budget allows a cancellation; refused when
    the reverted ISR would be below MinISR (Kafka: when it would be empty), unless unclean leader
    election is enabled.
    Next: the original replicas, the ISR without the `adding` replicas, a leader among them.
    """
    p, rules = s.partition, rules_of(cfg)
    if cfg.completion == "kafka":
        new = ctl.kafka_cancel(p, rules, acceptable(s)) if not new_leader else None
    else:
        new = ctl.seed_cancel(p, rules, acceptable(s), new_leader)
    if new is None:
        return None
    return s._replace(partition=new, budget=s.budget._replace(cancels=s.budget.cancels - 1))


def unanswered(cfg, s: State) -> bool:
    """Some broker has an AlterPartition request the controller has not answered."""
    return broker_facts(s.brokers).unanswered


def alter_partition_verdict(cfg, s: State, leader: int, req: AlterPartition, live: int) -> int:
    """The controller's verdict on `leader`'s request: ACCEPTED, or the error of the first check
    that fails, in the order of `ReplicationControlManager.validateAlterPartitionData` [kafka-tlaplus v3.5 §2.9.2]."""
    p = s.partition
    if req.leader_epoch != p.leader_epoch or p.leader != leader:
        return STALE_REQUEST  # FENCED_LEADER_EPOCH / INVALID_REQUEST (not the leader)
    if req.partition_epoch != p.partition_epoch and not cfg.mutated.stale_partition_epoch:
        return STALE_REQUEST  # INVALID_UPDATE_VERSION
    if req.isr & ~mask(p.replicas) or not req.isr & bit(leader):
        return STALE_REQUEST  # INVALID_REQUEST: a member is not a replica, or the leader is missing
    if req.isr & ~live and not cfg.mutated.accept_ineligible_replica:
        return INELIGIBLE_REPLICA  # fenced or shutting down (KIP-841)
    if not cfg.mutated.ignore_added_broker_epoch and any(
            sent and s.brokers[f - 1].epoch != sent for f, sent in enumerate(req.added_epochs, 1)):
        return INELIGIBLE_REPLICA  # broker epoch mismatch: the added replica restarted since the leader saw it
    return ACCEPTED


@spec.rule(leader=brokers, new_leader=leader_choices, format=PICK, fair=True, precondition=unanswered)
def handle_alter_partition(cfg, s, leader, new_leader):
    """Controller: handles the AlterPartition request `leader` sent [kafka-tlaplus v3.5 §2.9.2] (Kafka:
    `ReplicationControlManager.alterPartition`). TLA+: ReceiveAlterPartitionRequest.

    Enabled while `leader`'s request is unanswered.
    Next: accepted only if the sender leads in the current leader epoch, the partition epoch
    matches, the new ISR is made of replicas and contains the leader, and every member is eligible
    (unfenced; an added replica with the broker epoch the leader saw). Then catch-up and completion
    are one atomic partition change [kafka-tlaplus kip-966 §4.2], with `new_leader` the controller's pick if
    completion removes the leader, and the response carries the new ISR and epochs. Otherwise the
    response carries the error and nothing else changes.
    """
    b = s.brokers[leader - 1]
    req = b.pending
    if not req.isr or b.response.status != NO_RESPONSE_YET:
        return None
    p, rules = s.partition, rules_of(cfg)
    live = acceptable(s)
    verdict = alter_partition_verdict(cfg, s, leader, req, live)
    if verdict != ACCEPTED:
        if new_leader:
            return None  # no partition change, so no leader pick
        return update_broker(s, leader, b._replace(response=Response(verdict, 0, 0, 0)))
    if cfg.completion == "kafka":
        if new_leader:
            return None
        new = ctl.kafka_build(p, rules, live, target_isr=req.isr, recovered=True)
    else:
        new = ctl.seed_alter_isr(p, req.isr, rules, live, new_leader)
        if new is None and (new_leader or req.isr != p.isr or p.recovering):
            return None  # not a legal leader pick
    after = new or p  # None: accepted, and the partition already is what the leader asks for
    s = update_broker(s, leader, b._replace(response=Response(ACCEPTED, after.isr, after.leader_epoch,
                                                               after.partition_epoch)))
    return commit_partition(cfg, s, p, new) if new is not None else s


def remove_broker(cfg, s: State, broker: int, new_leader: int, unclean_shutdown: int = 0) -> Partition | None:
    """The controller takes `broker` out of the ISR (fencing, shutdown) and re-elects if it led
    [kafka-tlaplus v3.5 §2.8, §2.9.1] (Kafka: `ReplicationControlManager.generateLeaderAndIsrUpdates`).
    Returns the partition unchanged if the broker had no part in it, None if `new_leader` is not a legal pick."""
    p, rules = s.partition, rules_of(cfg)
    live = acceptable(s) & ~bit(broker)
    if cfg.completion == "kafka":
        if new_leader:
            return None
        return ctl.kafka_build(p, rules, live, target_isr=p.isr & ~bit(broker), unclean_shutdown=unclean_shutdown) or p
    new = ctl.seed_remove_broker(p, broker, rules, live, new_leader, unclean_shutdown)
    if new is None:
        unaffected = not (p.isr | p.elr) & bit(broker) and p.leader != broker
        return p if unaffected and not new_leader else None
    return new


@spec.rule(broker=brokers, new_leader=leader_choices, format=PICK,
           precondition=lambda cfg, s: may_disrupt(cfg, s, "faults"), applies=lambda cfg: cfg.max_faults > 0)
def fence(cfg, s, broker, new_leader):
    """Controller: fences `broker`, which missed its heartbeats [kafka-tlaplus v3.5 §1.2.2, §2.8]. TLA+: FenceBroker.

    Enabled for an unfenced broker while the fault budget allows.
    Next: the broker leaves the ISR and loses leadership; it keeps running, possibly still
    believing it leads.
    """
    b = s.brokers[broker - 1]
    if b.status != UNFENCED:
        return None
    new = remove_broker(cfg, s, broker, new_leader)
    if new is None:
        return None
    brs = with_broker(s, broker, b._replace(status=FENCED))
    return commit_partition(cfg, s, s.partition, new, brokers=brs, budget=s.budget._replace(faults=s.budget.faults - 1))


@spec.rule(broker=brokers, fair=True, precondition=lambda cfg, s: some_broker_is(s, FENCED),
           applies=lambda cfg: cfg.max_faults + cfg.max_unclean_shutdowns > 0)
def unfence(cfg, s, broker):
    """Controller: unfences `broker`, a running fenced broker that heartbeats again. TLA+: UnfenceBroker.

    Enabled for a fenced broker.
    Next: the broker is unfenced (it does not rejoin the ISR). Kafka then elects a leader for a
    leaderless partition (`ReplicationControlManager.generateLeaderAndIsrUpdates`); the seed
    variant does that in `clean_election`.
    """
    b = s.brokers[broker - 1]
    if b.status != FENCED:
        return None
    s2 = update_broker(s, broker, b._replace(status=UNFENCED))
    if cfg.completion == "kafka" and not s.partition.leader:
        new = ctl.kafka_build(s.partition, rules_of(cfg), acceptable(s2), target_isr=s.partition.isr)
        if new is not None:
            return commit_partition(cfg, s2, s.partition, new)
    return s2


@spec.rule(broker=brokers, new_leader=leader_choices, format=PICK,
           precondition=lambda cfg, s: may_disrupt(cfg, s, "faults"), applies=lambda cfg: cfg.max_faults > 0)
def clean_shutdown(cfg, s, broker, new_leader):
    """Broker and controller: `broker` shuts down cleanly. TLA+: NoDataLossShutdown.

    Enabled for a running broker while the fault budget allows.
    Next: controlled shutdown takes it out of the ISR (and leadership) first; its log is flushed
    (OFFLINE).
    """
    return shut_down(cfg, s, broker, new_leader, OFFLINE, "faults")


@spec.rule(broker=brokers, new_leader=leader_choices, format=PICK,
           precondition=lambda cfg, s: may_disrupt(cfg, s, "unclean_shutdowns"),
           applies=lambda cfg: cfg.max_unclean_shutdowns > 0)
def unclean_shutdown(cfg, s, broker, new_leader):
    """Broker: `broker` loses power; the controller fences it. TLA+: DataLossShutdown.

    Enabled for a running broker while the unclean-shutdown budget allows.
    Next: it leaves the ISR (the ELR may keep it until it re-registers, KIP-966) and is CRASHED:
    what it had not flushed is lost at restart.
    """
    return shut_down(cfg, s, broker, new_leader, CRASHED, "unclean_shutdowns")


def may_disrupt_for_good(cfg, s: State) -> bool:
    """The joint disruption limit (if the config sets one) leaves room for a permanent failure."""
    return cfg.max_disruptions < 0 or disruptions(cfg, s) < cfg.max_disruptions


def gone(s: State) -> int:
    """The brokers that stopped for good."""
    return sum(1 << i for i, b in enumerate(s.brokers, 1) if b.status == GONE)


@spec.rule(broker=brokers, new_leader=leader_choices, format=PICK,
           precondition=lambda cfg, s: gone(s).bit_count() < cfg.max_permanent_failures and may_disrupt_for_good(cfg, s),
           applies=lambda cfg: cfg.max_permanent_failures > 0)
def fail_permanently(cfg, s, broker, new_leader):
    """Broker: `broker` stops for good (its machine is lost); the controller fences it when its
    heartbeats stop [kafka-tlaplus v3.5 §2.8]. No TLA+ counterpart (its faults all heal).

    Enabled for a running broker while fewer than `max_permanent_failures` are gone.
    Next: it leaves the ISR and leadership as in a fencing, and is GONE: no rule restarts it.
    """
    return shut_down(cfg, s, broker, new_leader, GONE, None)


def shut_down(cfg, s: State, broker: int, new_leader: int, status: int, budget: str | None) -> State | None:
    """A running broker stops (GONE, OFFLINE or CRASHED): it leaves the ISR and leadership, its process
    state is gone, its log stays on disk; one unit of `budget` is spent (a permanent failure is counted
    by the GONE brokers instead)."""
    b = s.brokers[broker - 1]
    if not running(b):
        return None
    new = remove_broker(cfg, s, broker, new_leader)
    if new is None:
        return None
    down = fresh_broker(cfg.brokers, status, b.epoch, b.log, b.hwm)
    spent = {} if budget is None else {"budget": s.budget._replace(**{budget: getattr(s.budget, budget) - 1})}
    return commit_partition(cfg, s, s.partition, new, brokers=with_broker(s, broker, down), **spent)


@spec.rule(broker=brokers, fair=True, precondition=lambda cfg, s: some_broker_is(s, OFFLINE),
           applies=lambda cfg: cfg.max_faults > 0)
def restart(cfg, s, broker):
    """Broker: a cleanly shut down `broker` starts and registers [kafka-tlaplus v3.5 §1.2.2]. TLA+:
    BrokerStart, ReceiveBrokerRegRequest, ReceiveBrokerRegResponse (one step here; it is unfenced
    later, by `unfence`).

    Enabled for an OFFLINE broker.
    Next: it runs, fenced, with a new broker epoch and its whole log.
    """
    b = s.brokers[broker - 1]
    if b.status != OFFLINE:
        return None
    return update_broker(s, broker, fresh_broker(cfg.brokers, FENCED, b.epoch + 1, b.log, b.hwm))


@spec.rule(broker=brokers, keep=lambda cfg: range(cfg.max_records + 1), fair=True,
           precondition=lambda cfg, s: some_broker_is(s, CRASHED),
           applies=lambda cfg: cfg.max_unclean_shutdowns > 0)
def restart_after_unclean_shutdown(cfg, s, broker, keep):
    """Broker and controller: a crashed `broker` restarts with only `keep` records flushed and
    registers with the unclean-shutdown flag (KIP-966). TLA+: BrokerStart, then
    ReceiveBrokerRegRequest's ProcessUncleanBroker.

    Enabled for a CRASHED broker that had at least `keep` records.
    Next: it runs, fenced, with a new broker epoch and the first `keep` records; the controller
    removes it from the ELR (Kafka: `ReplicationControlManager.handleBrokerUncleanShutdown`).
    """
    b = s.brokers[broker - 1]
    if b.status != CRASHED or keep > len(b.log):
        return None
    brs = with_broker(s, broker, fresh_broker(cfg.brokers, FENCED, b.epoch + 1, b.log[:keep], min(b.hwm, keep)))
    p = s.partition
    if cfg.mutated.keep_unclean_in_elr:
        new = p
    elif cfg.completion == "kafka":
        new = ctl.kafka_build(p, rules_of(cfg), acceptable(s), target_isr=p.isr & ~bit(broker),
                              unclean_shutdown=bit(broker)) or p
    elif p.elr & bit(broker):
        new = p._replace(elr=p.elr & ~bit(broker), partition_epoch=p.partition_epoch + 1)
    else:
        new = p
    return commit_partition(cfg, s, p, new, brokers=brs)


@spec.rule(candidate=brokers, fair=True, precondition=lambda cfg, s: not s.partition.leader,
           applies=lambda cfg: cfg.completion == "seed")
def clean_election(cfg, s, candidate):
    """Controller (seed variant): elects `candidate` to lead a leaderless partition [kafka-tlaplus v3.5 §2.8, KIP-966].

    Enabled while the partition has no leader, for an unfenced ISR member, or an unfenced ELR
    member when the ISR is empty.
    Next: `candidate` leads (an ELR member becomes the ISR); both epochs are bumped.
    """
    new = ctl.seed_clean_election(s.partition, candidate, rules_of(cfg), acceptable(s))
    return None if new is None else s._replace(partition=new)


@spec.rule(candidate=brokers, precondition=lambda cfg, s: not s.partition.leader,
           applies=lambda cfg: cfg.completion == "seed" and cfg.unclean)
def unclean_election(cfg, s, candidate):
    """Controller (seed variant, unclean election enabled): elects any live replica when no clean
    candidate is available [kafka-tlaplus v3.5 §2.8].

    Enabled while the partition has no leader and no unfenced ISR (or ELR) member, for an
    unfenced replica.
    Next: `candidate` leads alone (ISR = {candidate}, ELR empty) and the partition enters leader recovery.
    """
    new = ctl.seed_unclean_election(s.partition, candidate, rules_of(cfg), acceptable(s))
    return None if new is None else s._replace(partition=new)


# =============================================================================== broker rules


@spec.rule(broker=brokers, fair=True)
def learn_metadata(cfg, s, broker):
    """Broker: `broker` catches up with the metadata log and acts on the partition's state
    [kafka-tlaplus v3.5 §2.10]. TLA+: ReceiveMetadataUpdate.

    Enabled for a running broker whose partition epoch is behind the controller's, if it is a
    replica or holds something of the partition.
    Next: see `broker_after_learning`.
    """
    b = s.brokers[broker - 1]
    p = s.partition
    if b.status < FENCED or b.known_partition_epoch == p.partition_epoch:
        return None
    if not b.known_partition_epoch and not b.log and broker not in p.replicas:
        return None  # not a replica and holds nothing: nothing to learn
    m = cfg.mutated
    return update_broker(s, broker, broker_after_learning(cfg.brokers, broker, b, p, m.truncate_to_hwm,
                                                          m.keep_removed_log))


def broker_after_learning(n: int, broker: int, b: Broker, p: Partition, truncate_to_hwm: bool = False,
                          keep_removed_log: bool = False) -> Broker:
    """What `broker` (state `b`) becomes when it learns partition state `p` [kafka-tlaplus v3.5 §2.10]: it
    takes the metadata; a leader waiting for metadata drops its request; a removed replica deletes
    its log; a new leader starts with fresh follower state and its LESO; a leader re-elected in a
    new epoch forgets the fetches of the old one; a demoted leader drops its leader state."""
    was_leader = b.known_leader == broker
    new = learned(b, p)
    if b.response.status == AWAITING_METADATA:
        new = new._replace(pending=no_request(n), response=NO_RESPONSE)
    if not new.known_replicas & bit(broker) and not keep_removed_log:  # removed: delete the partition
        return forgotten(n, b)
    zeros = (0,) * n
    if p.leader == broker:
        if not was_leader:  # follower -> leader (§2.10.1): fresh follower state, new LESO
            return new._replace(maximal_isr=p.isr, leso=len(b.log), follower_leo=zeros, follower_epoch=zeros, fetched=0)
        if p.leader_epoch != b.known_leader_epoch:  # leader -> leader, new epoch (§2.10.3)
            return new._replace(maximal_isr=p.isr, leso=len(b.log), fetched=0)  # fetches of the old epoch lapse
        # same epoch (§2.10.2): the committed ISR replaces the maximal one
        return new._replace(maximal_isr=p.isr, fetched=b.fetched & ~p.isr)
    if truncate_to_hwm and p.leader_epoch != b.known_leader_epoch:  # the mutation: pre-KIP-101 truncation
        new = new._replace(log=new.log[:new.hwm])
    if was_leader:  # leader -> follower (§2.10.4)
        return new._replace(maximal_isr=0, leso=0, follower_leo=zeros, follower_epoch=zeros, fetched=0)
    return new


@spec.rule(leader=brokers, precondition=lambda cfg, s: s.budget.records > 0)
def produce(cfg, s, leader):
    """Leader: `leader` appends an acks=all record in its leader epoch [kafka-tlaplus v3.5 §2.5, §2.6].
    TLA+: WriteRecordToLeader.

    Enabled for a running broker that believes it leads, with ISR >= MinISR (it refuses writes
    below), while the record budget allows.
    Next: its log grows by one record of its leader epoch.
    """
    b = acts_as_leader(s, leader)
    if b is None or size(b.known_isr) < cfg.min_isr:
        return None
    return s._replace(brokers=with_broker(s, leader, b._replace(log=b.log + (b.known_leader_epoch,))),
                      budget=s.budget._replace(records=s.budget.records - 1))


@spec.rule(follower=brokers, fair=True)
def fetch(cfg, s, follower):
    """Follower: `follower` fetches from the leader it knows, in the same leader epoch
    [kafka-tlaplus v3.5 §2.2.2]. TLA+: SendFetchRequest, ReceiveFetchRequest, ReceiveFetchResponse (one step here).

    Enabled for a running follower whose leader is running, believes it leads in the same epoch
    and knows the follower as a replica; and unless the follower is caught up and the leader
    already knows it (and has the fetch still to act on, or has the follower in its Maximal ISR:
    a caught-up follower outside it fetches again, which prompts another ISR expansion).
    Next: a diverging follower truncates to the common prefix; otherwise it appends the next record
    and takes min(leader HWM, its LEO) as its HWM, and the leader records the fetch offset, broker
    epoch and "fetched in this leader epoch" (`after_fetch`).
    """
    f = s.brokers[follower - 1]
    lid = f.known_leader
    if f.status < FENCED or not lid or lid == follower:
        return None
    ld = s.brokers[lid - 1]
    if ld.status < FENCED or ld.known_leader != lid or ld.known_leader_epoch != f.known_leader_epoch \
            or not ld.known_replicas & bit(follower):
        return None
    flog, llog = f.log, ld.log
    offset = len(flog)
    if llog[:offset] != flog:  # divergence: truncate to the last common offset
        common = 0
        for x, y in zip(flog, llog):
            if x != y:
                break
            common += 1
        return update_broker(s, follower, f._replace(log=flog[:common], hwm=min(f.hwm, common)))
    grows = offset < len(llog)
    hwm = min(ld.hwm, offset + grows)
    i = follower - 1
    if not grows and hwm == f.hwm and ld.follower_leo[i] == offset and ld.follower_epoch[i] == f.epoch \
            and (ld.fetched | ld.maximal_isr) & bit(follower):
        return None  # caught up, and the leader already knows it: nothing changes
    brs = list(s.brokers)
    brs[i], brs[lid - 1] = after_fetch(follower, f, ld, hwm)
    return set_brokers(s, tuple(brs))


def after_fetch(follower: int, f: Broker, ld: Broker, hwm: int) -> tuple[Broker, Broker]:
    """The follower and its leader after a fetch that does not diverge: the follower takes the
    next record (if any) and `hwm`; the leader records the fetch."""
    i, offset = follower - 1, len(f.log)
    log = f.log + (ld.log[offset],) if offset < len(ld.log) else f.log
    leader_view = ld._replace(follower_leo=ld.follower_leo[:i] + (offset,) + ld.follower_leo[i + 1:],
                              follower_epoch=ld.follower_epoch[:i] + (f.epoch,) + ld.follower_epoch[i + 1:],
                              fetched=ld.fetched | bit(follower) & ~ld.maximal_isr)
    return f._replace(log=log, hwm=hwm), leader_view


def unreplicated_leader(cfg, s: State) -> bool:
    """Some running broker that believes it leads has records above its HWM."""
    return broker_facts(s.brokers).unreplicated


@spec.rule(leader=brokers, fair=True, precondition=unreplicated_leader)
def advance_hwm(cfg, s, leader):
    """Leader: `leader` advances its HWM to the smallest fetch offset in the Maximal ISR
    [kafka-tlaplus v3.5 §2.7].

    Enabled for a running broker that believes it leads when its log end and the fetch offset of
    every other Maximal ISR member are above its HWM; with ELR, only while the ISR >= MinISR (KIP-966).
    Next: the records below the new HWM are committed, and acknowledged to acks=all producers if
    the ISR >= MinISR (the history records both).
    """
    b = acts_as_leader(s, leader)
    if b is None:
        return None
    under_min = size(b.known_isr) < cfg.min_isr - cfg.mutated.leader_min_isr_differs
    if cfg.elr and under_min and not cfg.mutated.hwm_below_min_isr:
        return None
    hwm = len(b.log)
    others = (b.known_isr if cfg.mutated.hwm_over_learned_isr else b.maximal_isr) & ~bit(leader)
    for f, leo in enumerate(b.follower_leo, 1):
        if others >> f & 1 and leo < hwm:
            hwm = leo
    if hwm <= b.hwm:
        return None
    prefix = b.log[:hwm]
    committed, overwritten = s.committed, s.committed_overwritten
    if prefix[:len(committed)] != committed[:hwm]:
        overwritten = True
    if hwm > len(committed):
        committed = prefix
    acked = s.acked
    if not under_min and hwm > len(acked):
        acked = prefix
    return s._replace(brokers=with_broker(s, leader, b._replace(hwm=hwm)), committed=committed, acked=acked,
                      committed_overwritten=overwritten)


def idle_leader(cfg, s: State) -> bool:
    """Some running broker believes it leads and has no AlterPartition pending."""
    return broker_facts(s.brokers).idle


@spec.rule(leader=brokers, follower=brokers, fair=True, precondition=idle_leader)
def propose_isr_expansion(cfg, s, leader, follower):
    """Leader: `leader` sends AlterPartition to add `follower` to the ISR [kafka-tlaplus v3.5 §2.9, §2.9.2].
    TLA+: SendAlterPartitionRequest.

    Enabled for a running broker that believes it leads with no AlterPartition pending, and an
    out-of-sync replica that is in sync: its fetch offset reached the HWM and the LESO, and it
    fetched in the current leader epoch since the leader last proposed adding it (Kafka's leader
    considers an expansion only on a fetch, `Partition.maybeExpandIsr`; so a refused proposal is
    retried only after another fetch, and never for a broker that stopped for good).
    Next: the request (ISR + follower, the leader's epochs, the follower's broker epoch) is in
    flight, the Maximal ISR becomes the union of the ISR and the proposal, and the fetch that
    prompted it is used up.
    """
    if leader == follower:
        return None
    b = acts_as_leader(s, leader)
    if b is None or b.pending.isr or b.response.status:
        return None
    fb = bit(follower)
    if not b.known_replicas & fb or b.maximal_isr & fb:
        return None
    leo = b.follower_leo[follower - 1]
    if leo < b.hwm and not cfg.mutated.expand_below_hwm:
        return None
    if leo < b.leso and not cfg.mutated.expand_below_leso:
        return None
    if not b.fetched & fb and not cfg.mutated.expand_without_fetch_in_epoch:
        return None
    isr = b.known_isr | fb
    epochs = tuple(b.follower_epoch[f - 1] if f == follower else 0 for f in brokers(cfg))
    req = AlterPartition(isr, b.known_leader_epoch, b.known_partition_epoch, epochs)
    return update_broker(s, leader, b._replace(pending=req, maximal_isr=isr, fetched=b.fetched & ~fb))


@spec.rule(leader=brokers, follower=brokers,
           precondition=lambda cfg, s: may_disrupt(cfg, s, "shrinks") and idle_leader(cfg, s),
           applies=lambda cfg: cfg.max_shrinks > 0)
def propose_isr_shrink(cfg, s, leader, follower):
    """Leader: `leader` sends AlterPartition to remove `follower`, which lags or stopped fetching,
    from the ISR [kafka-tlaplus v3.5 §2.9, §2.9.2]. TLA+: SendAlterPartitionRequest (a timed-out follower).

    Enabled for a running broker that believes it leads with no AlterPartition pending, and an ISR
    member, while the shrink budget allows.
    Next: the request (ISR - follower) is in flight; the Maximal ISR keeps the follower until the
    change is committed.
    """
    if leader == follower:
        return None
    b = acts_as_leader(s, leader)
    if b is None or b.pending.isr or b.response.status or not b.known_isr & bit(follower):
        return None
    req = AlterPartition(b.known_isr & ~bit(follower), b.known_leader_epoch, b.known_partition_epoch,
                         (0,) * cfg.brokers)
    return s._replace(brokers=with_broker(s, leader, b._replace(pending=req)),
                      budget=s.budget._replace(shrinks=s.budget.shrinks - 1))


def answered(cfg, s: State) -> bool:
    """Some broker has an AlterPartition response to act on."""
    return broker_facts(s.brokers).answered


@spec.rule(leader=brokers, fair=True, precondition=answered)
def handle_alter_partition_response(cfg, s, leader):
    """Leader: `leader` acts on the controller's AlterPartition response [kafka-tlaplus v3.5 §2.9.2], as
    Kafka's `Partition.handleAlterPartitionError` / `handleAlterPartitionUpdate` do.
    TLA+: ReceiveAlterPartitionResponse.

    Enabled for a broker holding a response it has not acted on (ACCEPTED, INELIGIBLE_REPLICA,
    STALE_REQUEST).
    Next: the request and response are done. If it no longer leads, or learned newer metadata
    since sending, nothing else. ACCEPTED in its leader epoch: it takes the ISR and partition epoch.
    INELIGIBLE_REPLICA: it rolls the Maximal ISR back to the ISR. Otherwise (accepted in another
    leader epoch, stale epochs) it keeps the pending state, AWAITING_METADATA. The description
    rolls back on every error; that reading is unsafe for a leader that has not yet learned it was
    replaced (docs/ARCHITECTURE.md, "The kraft model"), so the model follows Kafka here.
    """
    b = s.brokers[leader - 1]
    r = b.response
    if not NO_RESPONSE_YET < r.status < AWAITING_METADATA:
        return None
    done = set_request(b, no_request(cfg.brokers), NO_RESPONSE)
    if b.status < FENCED or b.known_leader != leader or b.known_partition_epoch != b.pending.partition_epoch:
        new = done  # no longer leads, or learned newer metadata since sending: ignore the response
    elif r.status == ACCEPTED and r.leader_epoch == b.known_leader_epoch:
        new = done._replace(known_isr=r.isr, known_partition_epoch=r.partition_epoch, maximal_isr=r.isr)
    elif r.status == INELIGIBLE_REPLICA:
        new = done._replace(maximal_isr=b.known_isr)
    else:
        new = b._replace(response=Response(AWAITING_METADATA, 0, 0, 0))
    return update_broker(s, leader, new)


# ====================================================================================== liveness


def reassignment_done(cfg, s: State) -> bool:
    return not ctl.in_progress(s.partition)


spec.eventually("ReassignmentCompletes", goal=reassignment_done,
                trigger=lambda cfg, s: ctl.in_progress(s.partition),
                doc="a started reassignment eventually completes (or is cancelled) once faults stop")
def target_brokers(p: Partition) -> int:
    """The brokers of the reassignment's target: the replicas that are not being removed."""
    return mask(p.replicas) & ~p.removing


def available(cfg, s: State) -> bool:
    """The partition has a leader and ISR >= MinISR: producers with acks=all can write."""
    return bool(s.partition.leader) and size(s.partition.isr) >= cfg.min_isr


spec.eventually("CompletesUnlessTargetGone",
                goal=lambda cfg, s: not ctl.in_progress(s.partition) or bool(target_brokers(s.partition) & gone(s)),
                trigger=lambda cfg, s: ctl.in_progress(s.partition),
                doc="a reassignment whose target brokers stay up completes (or is cancelled), once the other "
                    "faults stop")
spec.eventually("AvailableDespiteGoneTarget", goal=available,
                trigger=lambda cfg, s: ctl.in_progress(s.partition) and bool(s.partition.adding & gone(s))
                and not (mask(s.partition.replicas) & ~s.partition.adding & gone(s)),
                doc="a reassignment onto a broker that is gone for good keeps (or regains) the partition's "
                    "availability on the old replicas: a leader and ISR >= MinISR, once the other faults stop")


def stray_replicas(cfg, s: State) -> int:
    """Brokers that are not replicas of the partition but still hold its log (a broker gone for good
    holds nothing anyone can read)."""
    replicas = mask(s.partition.replicas)
    return sum(1 << i for i, b in enumerate(s.brokers, 1) if b.log and not replicas >> i & 1 and b.status != GONE)


spec.eventually("StrayReplicasDeleted", goal=lambda cfg, s: not stray_replicas(cfg, s),
                trigger=lambda cfg, s: bool(stray_replicas(cfg, s)),
                doc="a replica removed by a reassignment (or a cancellation) eventually deletes its log, once "
                    "faults stop (Kafka deletes it when the broker learns it is no longer a replica)")
spec.expect_liveness_failure(
    "gone-target", "ReassignmentCompletes",
    "Kafka's promise: a reassignment onto a broker that never returns waits for it forever (cancel it); "
    "CompletesUnlessTargetGone and AvailableDespiteGoneTarget say what it does promise")
spec.expect_liveness_failure(
    "leaderless", "ReassignmentCompletes",
    "availability, not a bug: the only in-sync replica lost its log and unclean election is off, so no replica "
    "may lead and the reassignment cannot complete (KIP-966 keeps such a partition offline)")
spec.expect_liveness_failure("leaderless", "CompletesUnlessTargetGone",
                             "the same lasso: no target broker is gone, but no replica may lead")
for _prop in ("ReassignmentCompletes", "CompletesUnlessTargetGone"):
    spec.expect_liveness_failure(
        "liveness", _prop,
        "an offline partition, not a bug: the only in-sync replica, the one being moved away, stops for good (or loses "
        "its log in an unclean shutdown and leaves the ELR) before the new replica caught up; with unclean election off "
        "no replica may lead and the new one can never catch up (KIP-966, Eligible Leader Replicas: unclean recovery; "
        "the `leaderless` lasso)")


# ---- speed: measured hot paths (docs/PERFORMANCE.md, "BFS throughput (kraft ci)", sessions 13-15) ----
# Nothing below changes what the model does; each measure was kept because a profile of kraft ci showed it.

# Rules call `_replace` on nearly every step: a `_replace` twice as fast as the stdlib's.
fast_replace(Partition, AlterPartition, Response, Broker, Budget, State)
# Every broker-level step replaces the brokers of a state (update_broker, fetch).
set_brokers = setter(State, "brokers")
# handle_alter_partition_response clears a request and its response on about 15% of all successors.
set_request = setter(Broker, "pending", "response")
# ... and builds the empty request each time: one shared object per broker count.
no_request = memoized(no_request)
# 98% of learn_metadata steps meet a (broker, partition) pair seen before: computed once per pair.
broker_after_learning = memoized(broker_after_learning)
# Most non-diverging fetches repeat a (follower, leader) exchange seen before.
after_fetch = memoized(after_fetch)


def rules_of(cfg: KraftConfig) -> Rules:
    """The controller switches of a config, one object per config: every controller rule passes it
    to a memoized `specs.kraft.controller` function, whose cache then compares it by identity."""
    rules = cfg.__dict__.get("_rules")
    if rules is None:
        rules = Rules(cfg.min_isr, cfg.elr, cfg.unclean, cfg.mutated)
        object.__setattr__(cfg, "_rules", rules)
    return rules


class BrokerFacts(NamedTuple):
    """What rules and their preconditions ask about the brokers as a whole."""

    unfenced: int  # the running, unfenced brokers
    statuses: int  # the statuses some broker has (a set of status codes)
    unreplicated: bool  # some running self-believed leader has records above its HWM
    idle: bool  # some running self-believed leader has no AlterPartition pending
    answered: bool  # some broker has an AlterPartition response to act on
    unanswered: bool  # some broker has an AlterPartition the controller has not answered


@per_state
def broker_facts(brs: tuple) -> BrokerFacts:
    """One pass over the brokers, once per state: `successors` asks every rule's precondition in
    turn, and six of them ask about the brokers as a whole."""
    unfenced = statuses = 0
    unreplicated = idle = answered = unanswered = False
    for i, b in enumerate(brs, 1):
        status = b.status
        statuses |= 1 << status
        if status == UNFENCED:
            unfenced |= 1 << i
        requested = b.pending.isr
        if b.known_leader == i and status >= FENCED:
            if b.hwm < len(b.log):
                unreplicated = True
            if not requested:
                idle = True
        response = b.response.status
        if response:
            if response < AWAITING_METADATA:
                answered = True
        elif requested:
            unanswered = True
    return BrokerFacts(unfenced, statuses, unreplicated, idle, answered, unanswered)


# -------------------------------------------------------------------------------------- how it is drawn


@spec.protocol_view
def drawn(cfg: KraftConfig, s: State) -> dict:
    """The state as `harness explore` draws a replicated log (template views/replicated_log.html): the
    controller's partition metadata, each broker's log by leader epoch with its marks and what it has
    learned, a leader's Maximal ISR, and the AlterPartition requests and responses in flight."""
    p = s.partition
    controller = [("replicas", as_list(p.replicas)), ("ISR", as_set(p.isr)), ("ELR", as_set(p.elr)),
                  ("last known ELR", as_set(p.last_known_elr)), ("leader", OptId().show(p.leader)),
                  ("leader epoch", str(p.leader_epoch)), ("partition epoch", str(p.partition_epoch)),
                  ("adding", as_set(p.adding)), ("removing", as_set(p.removing)),
                  ("recovering", str(p.recovering))]
    brokers, in_flight = [], []
    for i, b in enumerate(s.brokers, 1):
        running = b.status >= FENCED
        leads = running and b.known_leader == i
        role = "leader" if leads else "follower" if running and b.known_replicas & bit(i) else ""
        known = [("broker epoch", str(b.epoch)), ("leader", OptId().show(b.known_leader)),
                 ("leader epoch", str(b.known_leader_epoch)), ("partition epoch", str(b.known_partition_epoch)),
                 ("ISR", as_set(b.known_isr)), ("replicas", as_set(b.known_replicas))]
        if leads:
            known += [("follower LEOs", ", ".join(f"{f}:{leo}" for f, leo in enumerate(b.follower_leo, 1))),
                      ("fetched, expansion not yet proposed", as_set(b.fetched))]
        brokers.append({"id": i, "status": BROKER_STATUS.show(b.status), "role": role,
                        "log": [{"epoch": e} for e in b.log],
                        "marks": [("HWM", b.hwm, b.hwm), ("LEO", len(b.log), len(b.log)),
                                  ("LESO", b.leso if leads else None, b.leso)],
                        "known": known, "maximal_isr": as_set(b.maximal_isr) if leads else None})
        req, response = b.pending, b.response
        if req.isr and response.status == NO_RESPONSE_YET:
            in_flight.append(f"AlterPartition broker {i} -> controller: ISR {as_set(req.isr)}, leader epoch "
                             f"{req.leader_epoch}, partition epoch {req.partition_epoch}")
        elif NO_RESPONSE_YET < response.status < AWAITING_METADATA:
            in_flight.append(f"AlterPartition response controller -> broker {i}: "
                             f"{RESPONSE_STATUS.show(response.status)}, ISR {as_set(response.isr)}, leader epoch "
                             f"{response.leader_epoch}, partition epoch {response.partition_epoch}")
        elif response.status == AWAITING_METADATA:
            in_flight.append(f"broker {i} awaits metadata newer than partition epoch {req.partition_epoch}")
    history = [("committed (epochs)", as_list(s.committed)), ("acknowledged", as_list(s.acked)),
               ("budget", ", ".join(f"{k} {v}" for k, v in s.budget._asdict().items()))]
    return {"kind": "replicated_log", "controller": controller, "brokers": brokers, "in_flight": in_flight,
            "history": history}
