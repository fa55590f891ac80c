"""ZooKeeper-era partition reassignment: the controller's phases, its fail-over, and the brokers.

Sources, cited in short form throughout the zk model (this package, `invariants/zk.py`):

* [seed] the comment on `KafkaController.onPartitionReassignment` (Kafka 2.4-3.x), which numbers
  the phases A1-A2 and B1-B8 and gives the {1,2,3} -> {4,5,6} transition table; [seed-2.3] the
  pre-KIP-455 form of the same comment, whose first step writes RS = ORS + TRS to ZooKeeper;
* KIP-455 (AlterPartitionReassignments: cancellation, replacement, the adding/removing replicas
  persisted in the topic znode) and, for the `kafka` variant, Apache Kafka 3.9.0's ZooKeeper
  controller, named by class and method: `KafkaController` (onPartitionReassignment,
  updateCurrentReassignment, isReassignmentComplete, moveReassignedPartitionLeaderIfRequired,
  stopRemovedReplicasOfReassignedPartition, initializePartitionReassignments, onBrokerStartup,
  processAlterPartition), `ReplicaAssignment.reassignTo`, `ReplicaStateMachine`,
  `PartitionStateMachine`, `Election.leaderForReassign` / `leaderForOffline`, `ReplicaManager`
  (becomeLeaderOrFollower, stopReplicas) and `KafkaZkClient` (the /controller_epoch check op).

Who acts: the admin (submits, cancels), the active controller (one event at a time, each event a
sequence of steps, and it may crash between any two), a deposed controller that has not yet
noticed (the zombie), and brokers (receive controller requests, fetch, lead, propose ISR changes,
crash and restart). One partition; brokers 1..N.

Variants (docs/models/zk.md has the table of where they differ):
* `controller=seed` reads [seed] literally where it speaks (AR/RR in memory only, B3's LeaderAndIsr
  to the replicas in ZooKeeper, B4's LeaderAndIsr only to the leader and one ISR write, B7 removing
  the admin entry unconditionally), fills its gaps from [seed-2.3] (RS = TRS ++ (ORS - TRS) written
  first: step `a0_expand_replicas`), and has the ISR changed by the leader's conditional write to the
  state znode plus a notification;
* `controller=kafka` is Kafka 3.9.0 step for step: phase U, completion within the submitting
  event, A1 on every (re)entry, one ISR write and leader-epoch bump per removed replica, cancel and
  replace, resumption on a target broker's start, ISR changes through AlterPartition;
* `phase_b=subset|literal`: the completion test, every TRS replica in the ISR (Kafka) or TRS = ISR
  as [seed] words it;
* `unclean`: unclean.leader.election.enable for the offline-partition election.

Abstractions (docs/models/zk.md):
* A controller step reads ZooKeeper and makes its conditional writes atomically: a write that
  fails on a zkVersion is retried at once by Kafka (`updatesToRetry`), so only the retried outcome
  is a state. A write that fails the /controller_epoch check makes the controller resign.
* Records are identified by the leader epoch they were written in (as in `kraft`); a fetch is one
  step, and the leader's ISR expansion happens on the fetch that makes the follower in sync (as in
  `Partition.updateFollowerFetchState`); followers keep no HWM, ISR or replica list (nothing reads
  them); an AlterPartition request's response reaches the leader in the step that handles it.
* An API reassignment's event removes the admin entry and writes U1 in one step: the API answers
  only after U1, so a crash before it is a call that failed.
* UpdateMetadata is not sent (no property reads a broker's metadata cache); B8 is a step that ends
  the event. LeaderAndIsr's `isNew` flag is not kept (it only matters for log directories).
* A broker restarts only after the controller has handled its failure (Kafka handles a bounce
  the same way: a failure, then a start-up).

Layout (docs/models/zk.md, "Layout"): `state` (records, enums, config), `presets`, `logic` (the shared
pure functions), one module of rules per actor (`admin`, `controller`, `brokers`, `faults`), `view`
(the explorer's drawing), `speed`, `symbolic` (the Z3 form).
"""

from __future__ import annotations

from harness.bitset import mask
from harness.model import Spec
from specs.zk.logic import brokers as broker_ids, finished, has_live_isr_member, in_flight, led
from specs.zk.presets import EXPECTED, PRESETS
from specs.zk.state import (FOLLOWER, IDLE, LEADER, NO_CONTROLLER, NO_LEADER, NONE, NOT_STARTED, SEED, Broker, Budget,
                            Controller, State, Zk, ZkConfig)

spec = Spec("zk", ZkConfig, State, doc=__doc__, presets=PRESETS, deadlock=False, expected=EXPECTED,
            mutation_preset="small")
spec.mutation("rs_updated_first", rule="b1_online_new_replicas", caught_at="tiny",
              removes=f"RS = TRS written to ZooKeeper last, at B6 ({SEED}: \"we have to update RS in ZK with TRS "
                      f"last since it's the only place where we store ORS persistently\"); here at B1")
spec.mutation("a1_no_epoch_bump", rule="a1_bump_leader_epoch", caught_at="tiny", liveness=True,
              removes=f"A1's leader-epoch bump ({SEED}, A1): brokers ignore a LeaderAndIsr without a newer epoch")
spec.mutation("b3_skip_election", rule="b3_move_leader", caught_at="tiny",
              removes=f"B3's move of the leader into TRS ({SEED}, B3)")
spec.mutation("delete_before_shrink", rule="b5_delete_removed_replicas", caught_at="tiny",
              removes=f"B4 before B5: StopReplica(delete=true) is sent before RR leave the ISR ({SEED}, B4-B5)")
spec.mutation("accept_stale_controller_epoch", rule="deliver", caught_at="tiny",
              removes="the controller-epoch check at brokers: a request of an older controller is applied "
                      "(ReplicaManager, STALE_CONTROLLER_EPOCH)")
spec.mutation("complete_without_trs_in_isr", rule="handle_reassign_znode_creation", caught_at="tiny",
              removes=f"waiting for TRS in the ISR before phase B ({SEED}: \"Phase B (when TRS = ISR)\")")
spec.mutation("accept_stale_state_write", rule="zombie_step", caught_at="zombie",
              removes="the fencing of state-znode writes (the /controller_epoch check op of KafkaZkClient, and the "
                      "abort when the znode was written by a newer controller): a deposed controller writes the "
                      "partition state")
spec.mutation("cancel_keeps_adding", rule="u3_stop_unneeded_replicas", caught_at="kafka_small",
              removes="U3 on a cancellation (KafkaController.updateCurrentReassignment): the adding replicas are "
                      "not stopped")
spec.mutation("replace_against_current", rule="alter_partition_reassignments", caught_at="kafka_small",
              removes="a new target computed against ORS (ReplicaAssignment.reassignTo): computed against the "
                      "current RS instead")
spec.mutation("completion_literal", rule="handle_alter_partition", caught_at="tiny", liveness=True,
              removes="the completion test TRS ⊆ ISR (KafkaController.isReassignmentComplete): TRS = ISR, as the "
                      f"{SEED} words it (the same as the variant phase_b=literal)")
spec.mutation("unclean_in_b3", rule="b3_move_leader", caught_at="kafka_cancel_faults",
              removes="B3's clean election (Election.leaderForReassign: a TRS replica in the ISR): any live TRS "
                      "replica")


@spec.init
def init(cfg):
    """A settled partition: RS = `replicas`, all in sync and led by the first, epoch 0 of the state
    znode; brokers know it; controller epoch 1 is active and idle."""
    n = cfg.brokers
    rs = tuple(cfg.replicas)
    first, isr = rs[0], mask(rs)
    zk = Zk(rs, 0, 0, (), first, 0, isr, 1, 0, 1, False)
    everyone = mask(range(1, n + 1))
    ctrl = Controller(1, IDLE, rs, 0, 0, 0, isr, 0, everyone, False)
    zeros = (0,) * n
    bs = []
    for b in broker_ids(cfg):
        if b in rs:
            role = LEADER if b == first else FOLLOWER
            bs.append(Broker(True, 1, role, first, 0, 0, isr, isr, (), 0, 0, zeros, 0, ()))
        else:
            bs.append(Broker(True, 0, NONE, NO_LEADER, 0, 0, 0, 0, (), 0, 0, zeros, 0, ()))
    budget = Budget(cfg.max_reassignments, cfg.max_cancels, cfg.max_failovers, cfg.max_zombies,
                    cfg.max_broker_crashes, cfg.max_shrinks, cfg.max_preferred, cfg.max_records)
    yield State(zk, ctrl, NO_CONTROLLER, tuple(bs), budget, (), (), NOT_STARTED, 0, (), False, False, False)


# The rules, one module per actor; they register themselves on `spec`. Then the order engines try them in:
# today's order (it decides BFS's successor order, its first-found states and the committed traces).
from specs.zk import admin, brokers, controller, faults  # noqa: E402  registers the rules

spec.order_rules(
    "create_reassign_znode", "handle_reassign_znode_creation", "alter_partition_reassignments", "cancel_reassignment",
    "u1_write_assignment", "u3_stop_unneeded_replicas", "u3_delete_unneeded_replicas", "a0_expand_replicas",
    "a1_bump_leader_epoch", "a2_start_new_replicas", "b1_online_new_replicas", "b2_set_replicas_in_memory",
    "b3_move_leader", "b4_offline_removed_replicas", "b5_delete_removed_replicas", "b6_write_target_replicas",
    "b7_clear_admin_znode", "b8_send_update_metadata", "resume_reassignments", "handle_alter_partition",
    "handle_isr_change_notification", "handle_broker_change", "preferred_leader_election", "controller_crash",
    "controller_failover", "zombie_step", "deliver", "fetch", "advance_hwm", "produce", "shrink_isr", "broker_crash",
    "broker_start")

spec.eventually("ReassignmentCompletes", goal=finished, trigger=in_flight,
                doc="a submitted reassignment (or its cancellation) eventually completes: ZooKeeper holds its "
                    "goal alone and /admin/reassign_partitions no longer names it, once crashes stop")
spec.eventually("PartitionLed", goal=led, trigger=has_live_isr_member,
                doc="a partition with a live in-sync replica is eventually led by a live broker")

from specs.zk import speed, view  # noqa: E402  the measured hot paths; the explorer's drawing

MODULES = (admin, controller, brokers, faults, speed, view)  # what importing them registered: rules, hot paths, drawing
