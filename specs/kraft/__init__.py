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
  (`ReplicationControlManager`, `PartitionChangeBuilder`: `specs.kraft.logic`) and the leader's
  handling of AlterPartition errors (`Partition.handleAlterPartitionError`);
* "TLA+: Name" names the action of kafka-tlaplus's kafka_replication_kip_966.tla a rule corresponds to.

Each rule reads like those TLA+ actions: its docstring says who acts, when it is enabled (a rule
returns None where it is not) and the next state. One partition; brokers 1..N.

Abstractions (see docs/models/kraft.md):
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

Layout (docs/models/kraft.md): this module assembles the spec. The rules are in `controller.py`
(reassignment, cancellation, AlterPartition handling, fencing, elections), `brokers.py` (learning
metadata, producing, fetching, advancing the HWM, proposing ISR changes, restarting) and `faults.py`
(clean and unclean shutdowns, permanent failures); `state.py` holds the records, enums and config,
`presets.py` the presets, `logic.py` the pure protocol logic, `speed.py` the measured speed helpers,
`view.py` the explorer's drawing, `symbolic.py` the Z3 form.
"""

from __future__ import annotations

from harness.bitset import mask
from harness.model import Spec
from specs.kraft.logic import available, gone, in_progress, initial_state, reassignment_done, stray_replicas, \
    target_brokers
from specs.kraft.presets import EXPECTED, PRESETS
from specs.kraft.state import REASSIGNMENT_DESC, REPLICATION_DESC, KraftConfig, State

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


@spec.init
def init(cfg):
    """A settled partition: every replica in sync with an empty log; every broker knows the metadata."""
    yield initial_state(cfg)


# ====================================================================================== liveness

spec.eventually("ReassignmentCompletes", goal=reassignment_done, trigger=lambda cfg, s: in_progress(s.partition),
                doc="a started reassignment eventually completes (or is cancelled) once faults stop")
spec.eventually("CompletesUnlessTargetGone",
                goal=lambda cfg, s: not in_progress(s.partition) or bool(target_brokers(s.partition) & gone(s)),
                trigger=lambda cfg, s: in_progress(s.partition),
                doc="a reassignment whose target brokers stay up completes (or is cancelled), once the other "
                    "faults stop")
spec.eventually("AvailableDespiteGoneTarget", goal=available,
                trigger=lambda cfg, s: in_progress(s.partition) and bool(s.partition.adding & gone(s))
                and not (mask(s.partition.replicas) & ~s.partition.adding & gone(s)),
                doc="a reassignment onto a broker that is gone for good keeps (or regains) the partition's "
                    "availability on the old replicas: a leader and ISR >= MinISR, once the other faults stop")
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


# ========================================================================================= the rules

from specs.kraft import controller, brokers, faults  # noqa: E402,F401  registers the rules
from specs.kraft import view, conform  # noqa: E402,F401  registers the protocol view, the mapping to Kafka's code

# The spec and the modules that register on it (pyflakes reads no `noqa`: this marks the imports as used).
__all__ = ["spec", "controller", "brokers", "faults", "view", "conform"]

# The order the rules had in one module, the protocol document's: successors, first-found states and traces follow it.
spec.order_rules(
    "alter_partition_reassignments", "cancel_reassignment", "handle_alter_partition", "fence", "unfence",
    "clean_shutdown", "unclean_shutdown", "fail_permanently", "restart", "restart_after_unclean_shutdown",
    "clean_election", "unclean_election", "learn_metadata", "produce", "fetch", "advance_hwm",
    "propose_isr_expansion", "propose_isr_shrink", "handle_alter_partition_response")
