"""The kraft model's state: the broker and response enums, the config with its parameter domains, the
records of the partition, the brokers and the budget, and the constants the other modules share.

Citations as in `specs.kraft`: [kafka-tlaplus kip-966 §4.x] (partition reassignment) and
[kafka-tlaplus v3.5 §2.x] (the replication algorithm) of the Kafka replication protocol description.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, NamedTuple

from harness.bitset import as_list
from harness.itf import Bool, ById, Enum, IdSet, Int, OptId, Seq
from harness.model import UNMUTATED, Config, budget, distinct_ids, ids, param, variant


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
                                      f"({REASSIGNMENT_DESC} §4.2), kafka = Kafka 4.0's controller "
                                      f"(ReplicationControlManager, PartitionChangeBuilder), kafka-4.4 = Kafka 4.4's "
                                      f"(KAFKA-19975's completion rule; the last known leader elected only if "
                                      f"acceptable)", ("seed", "kafka", "kafka-4.4"))
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


def follows_kafka(cfg) -> bool:
    """The config runs Kafka's controller logic (completion=kafka or kafka-4.4), not the protocol description's."""
    return cfg.completion != "seed"


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


# ------------------------------------------------------------------------------------ the state

NO_LEADER = 0  # shown as -1 (Kafka's NO_LEADER) in traces


class Partition(NamedTuple):
    """Partition metadata as the controller stores it [kafka-tlaplus v3.5 §2.3], plus the ELR of KIP-966."""

    replicas: Annotated[tuple, Seq(Int())]  # ordered broker ids
    isr: Annotated[int, IdSet()]
    elr: Annotated[int, IdSet()]
    last_known_elr: Annotated[int, IdSet()]  # Kafka: the last leader, kept while the ISR is empty
    leader: Annotated[int, OptId()]
    leader_epoch: int
    partition_epoch: int
    adding: Annotated[int, IdSet()]
    removing: Annotated[int, IdSet()]
    recovering: Annotated[bool, Bool()]  # leader recovery state after an unclean election


class Rules(NamedTuple):
    """The config switches the controller logic depends on."""

    min_isr: int
    elr: bool  # KIP-966 Eligible Leader Replicas enabled
    unclean: bool  # unclean.leader.election.enable
    mutated: Any = UNMUTATED  # the config's mutation flags (cfg.mutated)
    kafka_4_4: bool = False  # Kafka 4.4's controller changes (completion=kafka-4.4)


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


# No AlterPartition in flight, by cluster size (NO_REQUEST[n] for n brokers): one shared object per broker
# count, as the rules clear a request on about 15% of all successors (docs/PERFORMANCE.md, session 15).
NO_REQUEST = tuple(AlterPartition(0, 0, 0, (0,) * n) for n in range(MAX_BROKERS + 1))


NO_RESPONSE = Response(NO_RESPONSE_YET, 0, 0, 0)

