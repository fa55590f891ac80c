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

Variants (docs/ARCHITECTURE.md, "The zk model", has the table of where they differ):
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

Abstractions (docs/ARCHITECTURE.md, "The zk model"):
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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, NamedTuple

from harness.bitset import as_list, as_set, bit, mask, members, size  # noqa: F401 (as_set: for the invariants)
from harness.itf import Bool, ById, Enum, IdSet, Int, OptId, Seq
from harness.model import Config, Spec, budget, distinct_ids, ids, param, variant
from harness.speed import fast_replace

NO_LEADER = 0  # shown as -1 (Kafka's LeaderAndIsr.NoLeader) in traces

# The step an active controller runs next; IDLE between events. One event's steps run back to back
# (the controller's single event thread), but crashes and every broker interleave with them.
(IDLE, A0, U1, U3_OFFLINE, U3_DELETE, A1, A2, B1, B2, B3, B4, B5, B6, B7, B8, RESUME) = STEP = Enum(
    "IDLE", "A0", "U1", "U3_OFFLINE", "U3_DELETE", "A1", "A2", "B1", "B2", "B3", "B4", "B5", "B6", "B7", "B8",
    "RESUME")

# A replica's part at a broker (`ReplicaManager`): NONE = no partition object (never created, deleted,
# or lost at a restart), STOPPED = StopReplica(delete=false): the log is kept, nothing is fetched.
NONE, FOLLOWER, LEADER, STOPPED = ROLE = Enum("NONE", "FOLLOWER", "LEADER", "STOPPED")

LEADER_AND_ISR, STOP_REPLICA, STOP_REPLICA_DELETE = REQUEST_KIND = Enum(
    "LEADER_AND_ISR", "STOP_REPLICA", "STOP_REPLICA_DELETE")

# The reassignment as its submitter sees it (history, for properties).
NOT_STARTED, IN_PROGRESS, CANCELLING, DONE, CANCELLED = STATUS = Enum(
    "NOT_STARTED", "IN_PROGRESS", "CANCELLING", "DONE", "CANCELLED")

SEED = "KafkaController.onPartitionReassignment comment (Kafka 2.4-3.x)"
MAX_BROKERS = 8
MAX_TARGETS = 16


@dataclass(frozen=True)
class ZkConfig(Config):
    controller: str = variant("seed", f"controller logic: seed = the phases as the {SEED} describes them, "
                                      "kafka = Kafka 3.9.0's ZooKeeper controller", ("seed", "kafka"))
    phase_b: str = variant("subset", "completion test: subset = every TRS replica in the ISR (Kafka), literal = "
                                     "TRS = ISR as the comment words it", ("subset", "literal"))
    unclean: bool = variant(False, "unclean.leader.election.enable")
    brokers: int = param(3, "brokers 1..N", lo=1, hi=MAX_BROKERS)
    replicas: tuple[int, ...] = ids((1, 2), "initial replica list (RS); the first leads, all are in sync",
                                    most=MAX_BROKERS)
    min_isr: int = param(1, "min.insync.replicas", lo=1, hi=MAX_BROKERS)
    targets: tuple[tuple[int, ...], ...] = ids(((2, 3),), "replica lists a reassignment may ask for (TRS)",
                                               most=MAX_BROKERS, lists=MAX_TARGETS)
    max_records: int = param(1, "records producers may write", lo=0, hi=20)
    max_reassignments: int = budget(1, "reassignment submissions (a second one while one runs replaces it)")
    max_cancels: int = budget(0, "cancellations (kafka variant)")
    max_failovers: int = budget(1, "controller crashes (each followed by a fail-over)")
    max_zombies: int = budget(0, "crashed controllers that keep running until their next ZooKeeper write fails")
    max_broker_crashes: int = budget(1, "broker crashes")
    max_shrinks: int = budget(0, "ISR shrinks proposed by leaders")
    max_preferred: int = budget(0, "preferred-replica elections (manual, or the periodic auto-rebalance)")
    max_disruptions: int = budget(-1, "broker crashes, ISR shrinks and controller crashes together in one run "
                                      "(-1: only the limits above)", least=-1)

    def validate(self) -> str | None:
        for name, group in [("replicas", self.replicas)] + [("targets", t) for t in self.targets]:
            if not distinct_ids(group, self.brokers):
                return f"{name} must be non-empty lists of distinct brokers in 1..{self.brokers}"
        if self.controller == "seed" and self.max_cancels:
            return "cancellation is a KIP-455 API: max_cancels needs controller=kafka"
        return None


# ------------------------------------------------------------------------------------ the state


class Zk(NamedTuple):
    """What ZooKeeper holds: it survives every crash."""

    rs: Annotated[tuple, Seq(Int())]  # topic znode: the partition's replica list (RS)
    adding: Annotated[int, IdSet()]  # topic znode adding_replicas (AR); KIP-455, kafka variant only
    removing: Annotated[int, IdSet()]  # topic znode removing_replicas (RR)
    admin: Annotated[tuple, Seq(Int())]  # /admin/reassign_partitions: the target for the partition; () = absent
    leader: Annotated[int, OptId()]  # partition state znode
    leader_epoch: int
    isr: Annotated[int, IdSet()]
    state_ctrl_epoch: int  # the controller epoch that wrote the state znode
    version: int  # the state znode's zkVersion (Kafka's partitionEpoch), checked by every conditional write
    controller_epoch: int  # /controller_epoch; its zkVersion moves with it, so one number stands for both
    isr_notice: Annotated[bool, Bool()]  # seed: /isr_change_notification has an entry for the controller


class Controller(NamedTuple):
    """A controller's in-memory context (`ControllerContext`): lost when it crashes."""

    epoch: int  # its controller epoch; 0 = no such controller
    step: Annotated[int, STEP]
    rs: Annotated[tuple, Seq(Int())]  # the assignment it believes in (`ReplicaAssignment`)
    adding: Annotated[int, IdSet()]
    removing: Annotated[int, IdSet()]
    stopping: Annotated[int, IdSet()]  # replicas U3 or B4/B5 of the running event are to stop
    started: Annotated[int, IdSet()]  # replicas not in NonExistentReplica state (`ReplicaStateMachine`)
    new: Annotated[int, IdSet()]  # replicas in NewReplica state: a broker start sends them nothing
    live: Annotated[int, IdSet()]  # the brokers it has seen registered (its broker-change events)
    znode_event: Annotated[bool, Bool()]  # the creation of /admin/reassign_partitions is queued for it


class Request(NamedTuple):
    """A controller request to a broker: LeaderAndIsr, or StopReplica with delete=false/true."""

    kind: Annotated[int, REQUEST_KIND]
    ctrl_epoch: int
    leader: Annotated[int, OptId()]
    leader_epoch: int
    isr: Annotated[int, IdSet()]
    version: int
    replicas: Annotated[int, IdSet()]


class Broker(NamedTuple):
    alive: Annotated[bool, Bool()]
    ctrl_epoch: int  # the highest controller epoch it has seen (ReplicaManager, in memory: 0 after a restart)
    role: Annotated[int, ROLE]
    leader: Annotated[int, OptId()]  # from the last LeaderAndIsr it applied
    leader_epoch: int
    version: int
    replicas: Annotated[int, IdSet()]
    isr: Annotated[int, IdSet()]
    log: Annotated[tuple, Seq(Int())]  # the leader epoch of each record
    hwm: int
    leso: int  # leader: its log end when it took this leader epoch
    follower_leo: Annotated[tuple, ById(Int())]  # leader: each follower's last fetch offset
    alter: Annotated[int, IdSet()]  # kafka: the ISR of its AlterPartition in flight; 0 = none
    inbox: Annotated[tuple, Seq(Request)]  # controller requests in flight to it, in send order


class Budget(NamedTuple):
    reassignments: int
    cancels: int
    failovers: int
    zombies: int
    broker_crashes: int
    shrinks: int
    preferred: int
    records: int


class State(NamedTuple):
    zk: Zk
    controller: Controller
    zombie: Controller  # a deposed controller still running (epoch 0 = none)
    brokers: Annotated[tuple, ById(Broker)]
    budget: Budget
    # history, for properties
    committed: Annotated[tuple, Seq(Int())]  # the committed log (epochs), up to the highest HWM
    acked: Annotated[tuple, Seq(Int())]  # records acknowledged to acks=all producers
    status: Annotated[int, STATUS]  # the reassignment as its submitter sees it
    ors: Annotated[int, IdSet()]  # its original replicas
    trs: Annotated[tuple, Seq(Int())]  # its target (the latest one submitted)
    stale_applied: Annotated[bool, Bool()]  # a broker acted on a request of a superseded controller
    deleted_in_use: Annotated[bool, Bool()]  # a replica was deleted while in the ISR in ZooKeeper
    epoch_regressed: Annotated[bool, Bool()]  # a state-znode epoch (leader or controller) went down


NO_CONTROLLER = Controller(0, IDLE, (), 0, 0, 0, 0, 0, 0, False)


# ------------------------------------------------------------------------- presets, the spec


PRESETS = {
    # The smallest move that changes the leader: [1] -> [2], one record, one controller fail-over.
    "tiny": {"brokers": 2, "replicas": [1], "targets": [[2]], "max_broker_crashes": 0},
    # Exhausted by BFS in about a minute: a move with an overlap broker and a moving leader, one record,
    # and one disruption: a controller crash (fail-over) or a broker crash. (No ISR shrink: in the seed
    # reading a leader's shrink during phase B is a known failure, "seed-shrink-in-phase-b".)
    "ci": {"max_disruptions": 1},
    # The mutations' config: the move, one controller crash, no broker faults.
    "small": {"max_broker_crashes": 0},
    # A deposed controller that keeps running (fencing by /controller_epoch and by controller epochs at
    # brokers), on a move that only adds a replica (the mutation's config: no removal, so the zombie's
    # effect shows as a state-znode write); "zombie_remove": the move [1,2] -> [2,3].
    "zombie": {"targets": [[1, 2, 3]], "max_zombies": 1, "max_broker_crashes": 0},
    "zombie_remove": {"max_zombies": 1, "max_broker_crashes": 0, "max_records": 0},
    # Kafka's controller with cancellation and replacement.
    "kafka-cancel-failover": {"controller": "kafka", "targets": [[3, 1]], "max_cancels": 1, "max_records": 0,
                              "max_disruptions": 2},
    "kafka_small": {"controller": "kafka", "targets": [[2, 3], [3, 1]], "max_reassignments": 2, "max_cancels": 1,
                    "max_broker_crashes": 0, "max_failovers": 0},
    # Kafka's cancellation after the leader moved to an adding replica and an original one left the ISR.
    "kafka_cancel_faults": {"controller": "kafka", "targets": [[3, 1]], "max_cancels": 1, "max_failovers": 0,
                            "max_shrinks": 1, "max_disruptions": 2},
    # [seed]'s own example, beyond BFS reach: for Hypothesis.
    "large": {"brokers": 6, "replicas": [1, 2, 3], "targets": [[4, 5, 6]], "max_records": 2, "max_failovers": 2,
              "max_zombies": 1, "max_shrinks": 1, "max_preferred": 1},
    # The nightly's Spark run: Kafka's controller at the ci move, with an ISR shrink as a third disruption
    # (1,430,094 states). Bigger configs were stopped at 2-3 million states, below depth 25.
    "nightly": {"controller": "kafka", "max_shrinks": 1, "max_disruptions": 1},
    # Known-unsafe configurations (expected counterexamples, see EXPECTED).
    "seed-shrink-in-phase-b": {"brokers": 2, "replicas": [1, 2], "targets": [[2]], "max_shrinks": 1,
                               "max_failovers": 0, "max_broker_crashes": 0, "max_records": 0},
    "unclean-loss": {"unclean": True, "max_failovers": 0, "max_broker_crashes": 2, "max_shrinks": 1,
                     "max_reassignments": 0},
}

EXPECTED = {
    "seed-shrink-in-phase-b": "the seed reading (a leader writes the ISR to ZooKeeper itself, as before AlterPartition) "
                              "lets the leader shrink a TRS replica out of the ISR after phase B began: B3 then has "
                              "no candidate, B4 keeps the removed replica as the ISR's last member, and B6 writes "
                              "RS = TRS, leaving a non-replica in the ISR (Kafka 3.9 handles ISR changes between "
                              "controller events, so its phase B cannot be overtaken)",
    "kafka-cancel-failover": "Kafka's cancellation writes RS = ORS to the topic znode (U1) before it takes an adding "
                             "replica out of the ISR (U3): a controller crash in between leaves a non-replica in the "
                             "ISR for good (the next controller finds a plain assignment and nothing to stop)",
    "unclean-loss": "unclean leader election (enabled) elects a replica without the acknowledged record: "
                    "the record is lost",
}

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


# ------------------------------------------------------------ parameter domains and formats


def brokers(cfg):
    return range(1, cfg.brokers + 1)


def targets(cfg):
    return range(len(cfg.targets))


TARGET = {"target": lambda cfg, i: as_list(cfg.targets[i])}


def kafka(cfg) -> bool:
    return cfg.controller == "kafka"


def replaces(cfg) -> bool:
    """Kafka, where a reassignment can be cancelled or replaced (phase U's U3 has replicas to stop)."""
    return kafka(cfg) and (cfg.max_cancels > 0 or cfg.max_reassignments > 1)


# ------------------------------------------------------------------------- assignment helpers


def minus(rs: tuple, drop: int) -> tuple:
    """The replicas of list `rs` outside set `drop`, in `rs` order."""
    return tuple(r for r in rs if not drop >> r & 1)


def target_of(c) -> tuple:
    """TRS of an assignment: RS minus the removing replicas, in RS order (`ReplicaAssignment.targetReplicas`)."""
    return minus(c.rs, c.removing)


def origin_of(c) -> tuple:
    """ORS of an assignment: RS minus the adding replicas (`ReplicaAssignment.originReplicas`)."""
    return minus(c.rs, c.adding)


def reassign_to(origin: tuple, target: tuple) -> tuple[tuple, int, int]:
    """`ReplicaAssignment.reassignTo`: RS = target ++ (origin - target); AR = RS - origin; RR = RS - target.
    A target equal to the origin (a cancellation) gives a plain assignment."""
    rs = target + minus(origin, mask(target))
    return rs, mask(rs) & ~mask(origin), mask(rs) & ~mask(target)


def complete(cfg, target: tuple, isr: int) -> bool:
    """The completion test (`KafkaController.isReassignmentComplete`): every TRS replica in the ISR read
    from ZooKeeper; `phase_b=literal`: TRS = ISR as [seed] words it."""
    if cfg.mutated.complete_without_trs_in_isr:
        return True
    if cfg.phase_b == "literal" or cfg.mutated.completion_literal:
        return mask(target) == isr
    return not mask(target) & ~isr


def alive(s: State) -> int:
    """The brokers registered in ZooKeeper (/brokers/ids is ephemeral: a crashed broker leaves it at once)."""
    m = 0
    for i, b in enumerate(s.brokers, 1):
        if b.alive:
            m |= 1 << i
    return m


def with_broker(s: State, broker: int, new: Broker) -> State:
    i = broker - 1
    return s._replace(brokers=s.brokers[:i] + (new,) + s.brokers[i + 1:])


def may_disrupt(cfg, s: State, kind: str) -> bool:
    """A disruption of this kind (broker_crashes, shrinks, failovers) is left in its budget and in the joint one."""
    b = s.budget
    if not getattr(b, kind):
        return False
    if cfg.max_disruptions < 0:
        return True
    used = (cfg.max_broker_crashes - b.broker_crashes + cfg.max_shrinks - b.shrinks
            + cfg.max_failovers - b.failovers)
    return used < cfg.max_disruptions


def spend(s: State, **costs: int) -> Budget:
    return s.budget._replace(**{k: getattr(s.budget, k) - v for k, v in costs.items()})


# ---------------------------------------------------------------------- ZooKeeper writes, sends


class ControllerMoved(Exception):
    """A controller's ZooKeeper write failed the /controller_epoch check: it has been superseded."""


def check_controller_epoch(cfg, s: State, c: Controller, state_znode: bool = False) -> None:
    """Every controller write is a multi-op with a check on /controller_epoch (KafkaZkClient); the
    mutation `accept_stale_state_write` takes it out of state-znode writes."""
    if c.epoch != s.zk.controller_epoch and not (state_znode and cfg.mutated.accept_stale_state_write):
        raise ControllerMoved


def write_state(cfg, s: State, c: Controller, leader: int, isr: int, bump: bool = True) -> State:
    """A conditional write of the partition state znode by controller `c`: leader and ISR, the leader
    epoch + 1 (`LeaderAndIsr.newLeaderAndIsr`, `newEpoch`; an AlterPartition keeps it), the writer's
    controller epoch, zkVersion + 1. Recorded if an epoch goes down."""
    check_controller_epoch(cfg, s, c, state_znode=True)
    zk = s.zk
    epoch = zk.leader_epoch + 1 if bump else zk.leader_epoch
    regressed = s.epoch_regressed or c.epoch < zk.state_ctrl_epoch
    zk = zk._replace(leader=leader, leader_epoch=epoch, isr=isr, state_ctrl_epoch=c.epoch, version=zk.version + 1)
    return s._replace(zk=zk, epoch_regressed=regressed)


def state_writable(cfg, s: State, c: Controller) -> bool:
    """Kafka aborts a state-znode update when the znode was written by a newer controller
    (`KafkaController.updateLeaderEpoch`, `PartitionStateMachine`)."""
    return s.zk.state_ctrl_epoch <= c.epoch or cfg.mutated.accept_stale_state_write


def write_topic(cfg, s: State, c: Controller, rs: tuple, adding: int, removing: int) -> State:
    """A write of the topic znode's assignment (unconditional but for /controller_epoch)."""
    check_controller_epoch(cfg, s, c)
    return s._replace(zk=s.zk._replace(rs=rs, adding=adding, removing=removing))


def leader_and_isr(s: State, c: Controller, replicas: int) -> Request:
    """A LeaderAndIsr carrying the state znode as it now is, and `replicas` as the replica set."""
    zk = s.zk
    return Request(LEADER_AND_ISR, c.epoch, zk.leader, zk.leader_epoch, zk.isr, zk.version, replicas)


def stop_replica(s: State, c: Controller, delete: bool) -> Request:
    zk = s.zk
    return Request(STOP_REPLICA_DELETE if delete else STOP_REPLICA, c.epoch, NO_LEADER, zk.leader_epoch, 0, 0, 0)


def send(s: State, c: Controller, to: int, req: Request) -> State:
    """Queue `req` to each broker of `to` that the controller believes live and that is up: requests to
    other brokers are dropped (`ControllerChannelManager`)."""
    to &= c.live
    if not to:
        return s
    brs = list(s.brokers)
    for b in members(to):
        br = brs[b - 1]
        if br.alive:
            brs[b - 1] = br._replace(inbox=br.inbox + (req,))
    return s._replace(brokers=tuple(brs))


# ---------------------------------------------------------------------------------- init state


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
    for b in brokers(cfg):
        if b in rs:
            role = LEADER if b == first else FOLLOWER
            bs.append(Broker(True, 1, role, first, 0, 0, isr, isr, (), 0, 0, zeros, 0, ()))
        else:
            bs.append(Broker(True, 0, NONE, NO_LEADER, 0, 0, 0, 0, (), 0, 0, zeros, 0, ()))
    budget = Budget(cfg.max_reassignments, cfg.max_cancels, cfg.max_failovers, cfg.max_zombies,
                    cfg.max_broker_crashes, cfg.max_shrinks, cfg.max_preferred, cfg.max_records)
    yield State(zk, ctrl, NO_CONTROLLER, tuple(bs), budget, (), (), NOT_STARTED, 0, (), False, False, False)


# ====================================================================== the admin: submissions


def submittable(cfg, s: State) -> bool:
    return s.budget.reassignments > 0


@spec.rule(target=targets, format=TARGET, precondition=submittable)
def create_reassign_znode(cfg, s, target):
    """Admin: creates /admin/reassign_partitions with the partition's target (kafka-reassign-partitions
    before KIP-455, and still accepted by Kafka 3.9). Not validated: a target on a dead broker is
    accepted (`KafkaController.processZkPartitionReassignment`).

    Enabled while the znode is absent and the budget allows; seed: the target differs from RS (kafka:
    a target equal to RS, or the running reassignment's target, is a submission too).
    Next: the znode holds the target; its creation is an event queued for the active controller.
    The submitter's reassignment is the target, from the replicas it believes current.
    """
    trs = cfg.targets[target]
    if s.zk.admin or trs == s.zk.rs and not kafka(cfg):
        return None
    if kafka(cfg):
        origin = origin_of(s.zk) if s.status in (IN_PROGRESS, CANCELLING) else s.zk.rs
    else:
        origin = s.zk.rs
    ors = s.ors if s.status == IN_PROGRESS else mask(origin)
    c = s.controller._replace(znode_event=True) if s.controller.epoch else s.controller
    return s._replace(zk=s.zk._replace(admin=trs), controller=c, budget=spend(s, reassignments=1),
                      status=IN_PROGRESS, ors=ors, trs=trs)


# ================================================================== controller: entering phases


def enter(cfg, s: State, c: Controller, rs: tuple, adding: int, removing: int) -> Controller:
    """`KafkaController.onPartitionReassignment` for the new assignment (rs, adding, removing): the
    step it runs first. Kafka: phase U if the assignment changes, else the completion test (read from
    ZooKeeper) picks phase A or B within the same event. Seed: A0 (write RS), or B1 if complete."""
    unneeded = mask(c.rs) & ~mask(rs)
    target = minus(rs, removing)
    new = c._replace(rs=rs, adding=adding, removing=removing, stopping=unneeded)
    if kafka(cfg):
        if (rs, adding, removing) != (c.rs, c.adding, c.removing):
            return new._replace(step=U1)
        return new._replace(step=after_phase_u(cfg, s, new))
    if complete(cfg, target, s.zk.isr):
        return new._replace(step=B1)
    return new._replace(step=A0)


def after_phase_u(cfg, s: State, c: Controller) -> int:
    """Phase A or B: an assignment that is not reassigning (a cancellation, a reorder) is complete at once
    (`isReassignmentComplete`), so phase A is skipped."""
    if not reassigning(c) or complete(cfg, target_of(c), s.zk.isr):
        return B1
    return A1


def idle_controller(cfg, s: State) -> bool:
    return s.controller.epoch > 0 and s.controller.step == IDLE


@spec.rule(fair=True, precondition=lambda cfg, s: idle_controller(cfg, s) and s.controller.znode_event)
def handle_reassign_znode_creation(cfg, s):
    """Controller: handles the creation of /admin/reassign_partitions (`PartitionReassignmentHandler`,
    creation only; `processZkPartitionReassignment`).

    Enabled for an idle controller with the creation event queued.
    Next: kafka: the znode's target is applied against ORS (`reassignTo`); seed: AR = TRS - RS,
    RR = RS - TRS against the RS it knows. The event continues with `enter`.
    """
    c = s.controller._replace(znode_event=False)
    trs = s.zk.admin
    if not trs:
        return s._replace(controller=c)
    rs, adding, removing = reassign_to(origin_of(c), trs)
    return s._replace(controller=enter(cfg, s, c, rs, adding, removing))


def api_target_valid(c: Controller, adding: int) -> bool:
    """`validateReplicas`: every adding replica is a live broker (the controller's view)."""
    return not adding & ~c.live


@spec.rule(target=targets, format=TARGET, precondition=lambda cfg, s: idle_controller(cfg, s) and submittable(cfg, s),
           applies=kafka)
def alter_partition_reassignments(cfg, s, target):
    """Controller: handles AlterPartitionReassignments (KIP-455; `processApiPartitionReassignment`).

    Enabled for an idle controller while the budget allows; refused (INVALID_REPLICA_ASSIGNMENT, no
    state change) when an adding replica is not a live broker. A target equal to the current
    assignment (a no-op, or the running reassignment's target) is a submission too.
    Next: the partition's entry leaves /admin/reassign_partitions ("the latest reassignment always takes
    precedence"), the new assignment is `reassignTo(target)` against ORS (a running reassignment is
    replaced), and the event continues with `enter`: U1 at once (`api_reassignment`), or, for the same
    assignment, A1 (incomplete) or B1. A no-op is done at once: ZooKeeper already holds its goal alone.
    """
    c = s.controller
    trs = cfg.targets[target]
    origin = c.rs if cfg.mutated.replace_against_current else origin_of(c)
    rs, adding, removing = reassign_to(origin, trs)
    if not api_target_valid(c, adding):
        return None
    ors = s.ors if s.status == IN_PROGRESS else mask(origin_of(c))
    s = s._replace(budget=spend(s, reassignments=1), status=IN_PROGRESS, ors=ors, trs=trs)
    if (rs, adding, removing) == (c.rs, c.adding, c.removing) and not reassigning(c):
        s = mark_done(s)  # so that a crash before B6, which leaves nothing to resume, is not a stuck submission
    return api_reassignment(cfg, s, enter(cfg, s, c, rs, adding, removing))


def api_reassignment(cfg, s: State, c: Controller) -> State:
    """The start of an API reassignment's event: the partition leaves /admin/reassign_partitions, then U1.
    The API answers only after U1 is durable, so one step stands for both: a crash before it is a call
    that failed (docs/ARCHITECTURE.md, "The zk model")."""
    if s.zk.admin:
        check_controller_epoch(cfg, s, c)
        s = s._replace(zk=s.zk._replace(admin=()))
    if c.step == U1:
        s, c = step_u1(cfg, s, c)
    return s._replace(controller=c)


@spec.rule(precondition=lambda cfg, s: idle_controller(cfg, s) and s.budget.cancels > 0,
           applies=lambda cfg: kafka(cfg) and cfg.max_cancels > 0)
def cancel_reassignment(cfg, s):
    """Controller: handles AlterPartitionReassignments with no target, a cancellation (KIP-455;
    `maybeBuildReassignment` with the origin replicas as target).

    Enabled for an idle controller with a reassignment in progress and a cancellation in the budget
    (otherwise NO_REASSIGNMENT_IN_PROGRESS).
    Next: the entry leaves /admin/reassign_partitions; the assignment becomes ORS (in RS order, with no
    AR/RR); U1 at once (`api_reassignment`), then U3 stops the adding replicas.
    """
    c = s.controller
    if not reassigning(c):
        return None
    rs, adding, removing = reassign_to(origin_of(c), origin_of(c))
    s = s._replace(budget=spend(s, cancels=1), status=CANCELLING, trs=rs)
    return api_reassignment(cfg, s, enter(cfg, s, c, rs, adding, removing))


# ================================================================ controller: the phase steps
# Each step is a function of (cfg, state, controller) returning (state, controller); the active
# controller's rule and the zombie's step share them. A ZooKeeper write may raise ControllerMoved.


def step_u1(cfg, s: State, c: Controller):
    """U1: write the new RS, AR, RR to the topic znode, before memory (`updateCurrentReassignment`)."""
    s = write_topic(cfg, s, c, c.rs, c.adding, c.removing)
    nxt = U3_OFFLINE if c.stopping and not cfg.mutated.cancel_keeps_adding else after_phase_u(cfg, s, c)
    return s, c._replace(step=nxt)


def remove_from_isr(cfg, s: State, c: Controller, r: int) -> tuple[State, bool]:
    """`ReplicaStateMachine.removeReplicasFromIsr` for replica `r`: if it is in the ISR, a conditional write
    of ISR - r (the last member is kept), no leader if it led, leader epoch + 1. Returns the state and
    whether the replica reached OfflineReplica: not when the write is aborted because the state znode was
    written by a newer controller."""
    zk = s.zk
    if not zk.isr >> r & 1:
        return s, True
    if not state_writable(cfg, s, c):
        return s, False
    leader = NO_LEADER if zk.leader == r else zk.leader
    return write_state(cfg, s, c, leader, zk.isr & ~bit(r) or zk.isr), True


def take_offline(cfg, s: State, c: Controller, r: int) -> tuple[State, bool]:
    """Replica `r` goes to OfflineReplica (`ReplicaStateMachine`): StopReplica(delete=false) to it, out of the
    ISR, and a LeaderAndIsr to every other replica of the assignment (Kafka 3.9; the seed's B4 differs)."""
    s = send(s, c, bit(r), stop_replica(s, c, delete=False))
    version = s.zk.version
    s, offline = remove_from_isr(cfg, s, c, r)
    if s.zk.version != version:
        s = send(s, c, mask(c.rs) & ~bit(r), leader_and_isr(s, c, mask(c.rs)))
    return s, offline


def take_all_offline(cfg, s: State, c: Controller) -> tuple[State, Controller]:
    """The replicas in `stopping` go offline one by one; only those that reached OfflineReplica stay in
    `stopping` (ReplicaDeletionStarted is a legal transition only from OfflineReplica)."""
    offline = 0
    for r in members(c.stopping):
        s, ok = take_offline(cfg, s, c, r)
        offline |= bit(r) if ok else 0
    return s, c._replace(stopping=offline)


def step_u3_offline(cfg, s: State, c: Controller):
    """U3, first batch: the replicas of a replaced or cancelled reassignment go offline, one by one."""
    s, c = take_all_offline(cfg, s, c)
    return s, c._replace(step=U3_DELETE)


def step_u3_delete(cfg, s: State, c: Controller):
    """U3, second batch: StopReplica(delete=true) to those that reached OfflineReplica; they are
    NonExistentReplica without waiting for the answer."""
    s = send(s, c, c.stopping, stop_replica(s, c, delete=True))
    c = c._replace(started=c.started & ~c.stopping, new=c.new & ~c.stopping, stopping=0)
    return s, c._replace(step=after_phase_u(cfg, s, c))


def step_a0(cfg, s: State, c: Controller):
    """A0 (seed, [seed-2.3] step 1): write RS = TRS ++ (ORS - TRS) to the topic znode: the leader must know
    the new replicas before they can join the ISR, and ORS stays in RS until B6."""
    s = write_topic(cfg, s, c, c.rs, 0, 0)
    return s, c._replace(step=A1)


def step_a1(cfg, s: State, c: Controller):
    """A1: bump the leader epoch (same leader and ISR) and send LeaderAndIsr to RS
    (`updateLeaderEpochAndSendRequest`), so that the leader caches the expanded replica list."""
    if state_writable(cfg, s, c) and not cfg.mutated.a1_no_epoch_bump:
        s = write_state(cfg, s, c, s.zk.leader, s.zk.isr)
    s = send(s, c, mask(c.rs), leader_and_isr(s, c, mask(c.rs)))
    return s, c._replace(step=A2)


def step_a2(cfg, s: State, c: Controller):
    """A2: AR go from NonExistentReplica to NewReplica, each sent a LeaderAndIsr; replicas already started
    (a resumption) are sent nothing (`ReplicaStateMachine`: an invalid transition is only logged)."""
    new = c.adding & ~c.started
    s = send(s, c, new, leader_and_isr(s, c, mask(c.rs)))
    return s, c._replace(started=c.started | new, new=c.new | new, step=IDLE)


def step_b1(cfg, s: State, c: Controller):
    """B1: AR go to OnlineReplica (from NewReplica: no request, no write)."""
    if cfg.mutated.rs_updated_first:
        s = write_topic(cfg, s, c, target_of(c), 0, 0)
    return s, c._replace(started=c.started | c.adding, new=c.new & ~c.adding, step=B2)


def step_b2(cfg, s: State, c: Controller):
    """B2: RS = TRS, AR = RR = [] in memory; RR is kept for B4-B5."""
    c = c._replace(rs=target_of(c), adding=0, removing=0, stopping=c.removing)
    return s, c._replace(step=B3)


def reassign_candidate(cfg, s: State, c: Controller, target: tuple) -> int:
    """`Election.leaderForReassign`: the first TRS replica (TRS order) that is live (in the controller's
    view: it may have died unnoticed) and in the ISR."""
    zk = s.zk
    for r in target:
        if c.live >> r & 1 and (zk.isr >> r & 1 or cfg.mutated.unclean_in_b3):
            return r
    return NO_LEADER


def step_b3(cfg, s: State, c: Controller):
    """B3: if the leader is not in TRS or not live, elect the first live in-ISR TRS replica; otherwise keep
    it. Both bump the leader epoch (Kafka: `moveReassignedPartitionLeaderIfRequired`; the seed's
    LeaderAndIsr with RS = TRS reaches brokers only with a newer epoch). An election with no candidate
    is only logged. The LeaderAndIsr carries RS = TRS; Kafka sends it to TRS, the seed to the
    replicas in ZooKeeper."""
    target, zk = c.rs, s.zk
    leader_ok = zk.leader in target and c.live >> zk.leader & 1
    if state_writable(cfg, s, c):
        if not leader_ok and not cfg.mutated.b3_skip_election:
            new = reassign_candidate(cfg, s, c, target)
            if new:
                s = write_state(cfg, s, c, new, zk.isr)
        else:
            s = write_state(cfg, s, c, zk.leader, zk.isr)
    to = mask(target) if kafka(cfg) else mask(s.zk.rs)
    s = send(s, c, to, leader_and_isr(s, c, mask(target)))
    return s, c._replace(step=B5 if cfg.mutated.delete_before_shrink else B4)


def step_b4(cfg, s: State, c: Controller):
    """B4: RR go to OfflineReplica: StopReplica(delete=false), and out of the ISR. Kafka: one conditional
    write (+1 leader epoch) and one LeaderAndIsr to TRS per removed in-sync replica; seed: one write
    for all RR and a LeaderAndIsr only to the leader. The ISR keeps its last member."""
    if kafka(cfg):
        s, c = take_all_offline(cfg, s, c)
    else:
        s = send(s, c, c.stopping, stop_replica(s, c, delete=False))
        zk = s.zk
        if zk.isr & c.stopping:
            if not state_writable(cfg, s, c):
                return s, c._replace(stopping=c.stopping & ~zk.isr, step=B6 if cfg.mutated.delete_before_shrink else B5)
            leader = NO_LEADER if c.stopping >> zk.leader & 1 and zk.leader else zk.leader
            s = write_state(cfg, s, c, leader, zk.isr & ~c.stopping or zk.isr)
            if leader:
                s = send(s, c, bit(leader), leader_and_isr(s, c, mask(c.rs)))
    return s, c._replace(step=B6 if cfg.mutated.delete_before_shrink else B5)


def step_b5(cfg, s: State, c: Controller):
    """B5: the RR replicas that reached OfflineReplica go to NonExistentReplica: StopReplica(delete=true),
    without waiting for the answer (`ReplicaDeletionStarted` is legal only from OfflineReplica)."""
    s = send(s, c, c.stopping, stop_replica(s, c, delete=True))
    c = c._replace(started=c.started & ~c.stopping, new=c.new & ~c.stopping)
    if cfg.mutated.delete_before_shrink:
        return s, c._replace(step=B4)
    return s, c._replace(stopping=0, step=B6)


def mark_done(s: State) -> State:
    """The submitter's reassignment is done once the topic znode holds its goal alone. If another
    assignment completed instead (the submitter's latest target is still queued in
    /admin/reassign_partitions), that target will start from this one: it is its origin now."""
    if s.status == IN_PROGRESS and set(s.zk.rs) == set(s.trs) and not s.zk.adding | s.zk.removing:
        return s._replace(status=DONE)
    if s.status == CANCELLING and not s.zk.adding | s.zk.removing:
        return s._replace(status=CANCELLED)
    if s.status == IN_PROGRESS and not s.zk.adding | s.zk.removing:
        return s._replace(ors=mask(s.zk.rs))
    return s


def step_b6(cfg, s: State, c: Controller):
    """B6: write RS = TRS, AR = RR = [] to the topic znode: last, since it is the only place ORS is kept."""
    s = mark_done(write_topic(cfg, s, c, c.rs, 0, 0))
    return s, c._replace(stopping=0, step=B7)


def step_b7(cfg, s: State, c: Controller):
    """B7: remove the partition from /admin/reassign_partitions: the seed unconditionally, Kafka only if
    its target is TRS exactly (`maybeRemoveFromZkReassignment`). An entry created after B6 with that
    target (Kafka: a no-op) is removed with it, and so is done."""
    if s.zk.admin and (not kafka(cfg) or s.zk.admin == c.rs):
        check_controller_epoch(cfg, s, c)
        s = mark_done(s._replace(zk=s.zk._replace(admin=())))
    return s, c._replace(step=B8)


def step_b8(cfg, s: State, c: Controller):
    """B8: UpdateMetadata to every broker (not modelled); the event ends."""
    return s, c._replace(step=IDLE)


def step_resume(cfg, s: State, c: Controller):
    """Fail-over, last part (`initializePartitionReassignments`): an entry of /admin/reassign_partitions is
    re-applied against ORS; otherwise (kafka) a reassignment in the topic znode's AR/RR is resumed. Either
    way an incomplete one runs A1 again."""
    c = c._replace(step=IDLE)
    if s.zk.admin:
        rs, adding, removing = reassign_to(origin_of(c), s.zk.admin)
        return s, enter(cfg, s, c, rs, adding, removing)
    if reassigning(c):
        return s, enter(cfg, s, c, c.rs, c.adding, c.removing)
    return s, c


STEPS = {U1: step_u1, U3_OFFLINE: step_u3_offline, U3_DELETE: step_u3_delete, A0: step_a0, A1: step_a1,
         A2: step_a2, B1: step_b1, B2: step_b2, B3: step_b3, B4: step_b4, B5: step_b5, B6: step_b6, B7: step_b7,
         B8: step_b8, RESUME: step_resume}


def run_step(cfg, s: State, step: int) -> State | None:
    """The active controller runs `step` if it is the one it is at."""
    c = s.controller
    if c.step != step or not c.epoch:
        return None
    s, c = STEPS[step](cfg, s, c)
    return s._replace(controller=c)


def at(step: int):
    return lambda cfg, s: s.controller.step == step and s.controller.epoch > 0


def phase(step: int):
    """A phase-step rule reads as its step: its text is the step function's, with who acts and when."""
    def named(fn):
        fn.__doc__ = (f"Controller: {STEPS[step].__doc__}\n\nEnabled when the active controller's event is at "
                      f"{STEP.names[step]}; a crash may come before or after it.")
        return fn
    return named


@spec.rule(fair=True, precondition=at(U1), applies=kafka)
@phase(U1)
def u1_write_assignment(cfg, s):
    return run_step(cfg, s, U1)


@spec.rule(fair=True, precondition=at(U3_OFFLINE), applies=replaces)
@phase(U3_OFFLINE)
def u3_stop_unneeded_replicas(cfg, s):
    return run_step(cfg, s, U3_OFFLINE)


@spec.rule(fair=True, precondition=at(U3_DELETE), applies=replaces)
@phase(U3_DELETE)
def u3_delete_unneeded_replicas(cfg, s):
    return run_step(cfg, s, U3_DELETE)


@spec.rule(fair=True, precondition=at(A0), applies=lambda cfg: not kafka(cfg))
@phase(A0)
def a0_expand_replicas(cfg, s):
    return run_step(cfg, s, A0)


@spec.rule(fair=True, precondition=at(A1))
@phase(A1)
def a1_bump_leader_epoch(cfg, s):
    return run_step(cfg, s, A1)


@spec.rule(fair=True, precondition=at(A2))
@phase(A2)
def a2_start_new_replicas(cfg, s):
    return run_step(cfg, s, A2)


@spec.rule(fair=True, precondition=at(B1))
@phase(B1)
def b1_online_new_replicas(cfg, s):
    return run_step(cfg, s, B1)


@spec.rule(fair=True, precondition=at(B2))
@phase(B2)
def b2_set_replicas_in_memory(cfg, s):
    return run_step(cfg, s, B2)


@spec.rule(fair=True, precondition=at(B3))
@phase(B3)
def b3_move_leader(cfg, s):
    return run_step(cfg, s, B3)


@spec.rule(fair=True, precondition=at(B4))
@phase(B4)
def b4_offline_removed_replicas(cfg, s):
    return run_step(cfg, s, B4)


@spec.rule(fair=True, precondition=at(B5))
@phase(B5)
def b5_delete_removed_replicas(cfg, s):
    return run_step(cfg, s, B5)


@spec.rule(fair=True, precondition=at(B6))
@phase(B6)
def b6_write_target_replicas(cfg, s):
    return run_step(cfg, s, B6)


@spec.rule(fair=True, precondition=at(B7))
@phase(B7)
def b7_clear_admin_znode(cfg, s):
    return run_step(cfg, s, B7)


@spec.rule(fair=True, precondition=at(B8))
@phase(B8)
def b8_send_update_metadata(cfg, s):
    return run_step(cfg, s, B8)


@spec.rule(fair=True, precondition=at(RESUME), applies=lambda cfg: cfg.max_failovers > 0)
@phase(RESUME)
def resume_reassignments(cfg, s):
    return run_step(cfg, s, RESUME)


# ====================================================== controller: ISR changes, brokers, elections


def reassigning(c: Controller) -> bool:
    return bool(c.adding or c.removing)


@spec.rule(leader=brokers, fair=True, precondition=idle_controller, applies=kafka)
def handle_alter_partition(cfg, s, leader):
    """Controller: handles `leader`'s AlterPartition (`KafkaController.processAlterPartition`, IBP >= 2.7).

    Enabled for an idle controller and a leader with a request in flight.
    Next: refused (the leader drops it and waits for metadata) unless the sender is the leader in the
    current leader epoch and zkVersion and every new member is a live replica (INELIGIBLE_REPLICA);
    else the ISR is written (leader epoch kept, zkVersion + 1) and the leader takes it. Then, for a
    reassigning partition, the completion test: if complete, phase B starts in this event.
    """
    b = s.brokers[leader - 1]
    if not b.alter:
        return None
    zk, c = s.zk, s.controller
    ok = (zk.leader == leader and b.leader_epoch == zk.leader_epoch and b.version == zk.version
          and not b.alter & ~mask(zk.rs) and not b.alter & ~c.live & ~zk.isr and state_writable(cfg, s, c))
    if not ok:
        return with_broker(s, leader, b._replace(alter=0))
    s = write_state(cfg, s, c, leader, b.alter, bump=False)
    s = with_broker(s, leader, b._replace(isr=b.alter, version=s.zk.version, alter=0))
    if reassigning(c) and complete(cfg, target_of(c), s.zk.isr):
        return s._replace(controller=c._replace(step=B1))
    return s


@spec.rule(fair=True, precondition=lambda cfg, s: idle_controller(cfg, s) and s.zk.isr_notice,
           applies=lambda cfg: not kafka(cfg))
def handle_isr_change_notification(cfg, s):
    """Controller (seed): an ISR change notification ([seed]: "the handler registered in zk").

    Enabled for an idle controller with a notification pending.
    Next: the notification is consumed; for a reassigning partition, the completion test on the ISR
    in ZooKeeper: if complete, phase B starts in this event.
    """
    c = s.controller
    s = s._replace(zk=s.zk._replace(isr_notice=False))
    if reassigning(c) and complete(cfg, target_of(c), s.zk.isr):
        return s._replace(controller=c._replace(step=B1))
    return s


def offline_election(cfg, s: State, c: Controller, live: int) -> tuple[int, int] | None:
    """`Election.leaderForOffline`: the first RS replica that is live and in the ISR, the ISR then cut to its
    live members; with unclean election, otherwise the first live replica, alone in the ISR."""
    zk = s.zk
    for r in zk.rs:
        if live >> r & 1 and zk.isr >> r & 1:
            return r, zk.isr & live
    if cfg.unclean:
        for r in zk.rs:
            if live >> r & 1:
                return r, bit(r)
    return None


def elect_if_offline(cfg, s: State, c: Controller) -> State:
    """The partition state machine's election for a partition whose leader is not live."""
    zk = s.zk
    if zk.leader and c.live >> zk.leader & 1:
        return s
    won = offline_election(cfg, s, c, c.live)
    if won is None or not state_writable(cfg, s, c):
        return s
    s = write_state(cfg, s, c, won[0], won[1])
    return send(s, c, mask(s.zk.rs), leader_and_isr(s, c, mask(s.zk.rs)))


@spec.rule(fair=True, precondition=lambda cfg, s: idle_controller(cfg, s) and s.controller.live != alive(s),
           applies=lambda cfg: cfg.max_broker_crashes > 0)
def handle_broker_change(cfg, s):
    """Controller: handles a change of /brokers/ids (`onBrokerFailure`, `onBrokerStartup`).

    Enabled for an idle controller whose view of live brokers differs from ZooKeeper's.
    Next: failed brokers: an offline election if the leader failed, then each failed replica goes to
    OfflineReplica (out of the ISR, +1 leader epoch each). Started brokers: their replicas go online
    (LeaderAndIsr at the current state), a leaderless partition is elected, and (kafka) a reassignment
    whose TRS contains a started broker is resumed: A1 again.
    """
    c = s.controller
    now = alive(s)
    failed, started = c.live & ~now, now & ~c.live
    c = c._replace(live=now)
    replicas = mask(s.zk.rs)
    if failed:
        s = elect_if_offline(cfg, s, c)
        for r in members(failed & replicas):
            version = s.zk.version
            s, _ = remove_from_isr(cfg, s, c, r)
            if s.zk.version != version:
                s = send(s, c, replicas & ~bit(r), leader_and_isr(s, c, replicas))
    if started:  # NewReplica -> OnlineReplica sends nothing: hence Kafka's resumption below
        s = send(s, c, started & replicas & ~c.new, leader_and_isr(s, c, replicas))
        s = elect_if_offline(cfg, s, c)
        if kafka(cfg) and reassigning(c) and started & mask(target_of(c)):
            return s._replace(controller=enter(cfg, s, c, c.rs, c.adding, c.removing))
    return s._replace(controller=c)


@spec.rule(precondition=lambda cfg, s: idle_controller(cfg, s) and s.budget.preferred > 0,
           applies=lambda cfg: cfg.max_preferred > 0)
def preferred_leader_election(cfg, s):
    """Controller: a preferred-replica election, manual or by the periodic auto-rebalance; it runs during
    reassignments, when the preferred replica is TRS's first (KAFKA-10149).

    Enabled for an idle controller while the budget allows, when RS's first replica is live, in the
    ISR and not the leader.
    Next: it leads (+1 leader epoch); LeaderAndIsr to RS.
    """
    c, zk = s.controller, s.zk
    head = zk.rs[0]
    if zk.leader == head or not zk.isr >> head & 1 or not c.live >> head & 1 or not state_writable(cfg, s, c):
        return None
    s = write_state(cfg, s, c, head, zk.isr)
    s = send(s, c, mask(zk.rs), leader_and_isr(s, c, mask(zk.rs)))
    return s._replace(budget=spend(s, preferred=1))


# ========================================================================= controller fail-over


@spec.rule(zombie=lambda cfg: range(2 if cfg.max_zombies else 1),
           format={"zombie": lambda cfg, z: "keeps running" if z else "stops"},
           precondition=lambda cfg, s: s.controller.epoch > 0 and may_disrupt(cfg, s, "failovers"),
           applies=lambda cfg: cfg.max_failovers > 0)
def controller_crash(cfg, s, zombie):
    """Environment: the active controller loses its ZooKeeper session (/controller is ephemeral).

    Enabled while the budget allows, at any step of any event.
    Next: no active controller; its requests already sent stay in flight. With `zombie`, the old
    controller keeps running its event until a ZooKeeper write fails (budget `max_zombies`).
    """
    if zombie and (not s.budget.zombies or s.zombie.epoch):
        return None
    costs = {"failovers": 1, "zombies": 1} if zombie else {"failovers": 1}
    return s._replace(controller=NO_CONTROLLER, zombie=s.controller if zombie else s.zombie,
                      budget=spend(s, **costs))


@spec.rule(fair=True, precondition=lambda cfg, s: not s.controller.epoch, applies=lambda cfg: cfg.max_failovers > 0)
def controller_failover(cfg, s):
    """Controller: a broker wins the /controller election (`KafkaController.elect`, `onControllerFailover`).

    Enabled while there is no active controller.
    Next: /controller_epoch + 1; the context is rebuilt from ZooKeeper: live brokers, the topic znode's
    RS (and AR/RR: kafka), the state znode. Replica start-up: live replicas of RS go online (a
    LeaderAndIsr at the current state), dead ones offline (out of the ISR, +1 each); a partition whose
    leader is not live is elected. Then reassignments resume (`resume_reassignments`).
    """
    zk = s.zk
    epoch = zk.controller_epoch + 1
    now = alive(s)
    c = Controller(epoch, RESUME, zk.rs, zk.adding, zk.removing, 0, mask(zk.rs), 0, now, False)
    s = s._replace(zk=zk._replace(controller_epoch=epoch), controller=c)
    replicas = mask(zk.rs)
    s = send(s, c, replicas & now, leader_and_isr(s, c, replicas))
    for r in members(replicas & ~now):
        version = s.zk.version
        s, _ = remove_from_isr(cfg, s, c, r)
        if s.zk.version != version:
            s = send(s, c, replicas & ~bit(r), leader_and_isr(s, c, replicas))
    return elect_if_offline(cfg, s, c)


@spec.rule(fair=True, precondition=lambda cfg, s: s.zombie.epoch > 0, applies=lambda cfg: cfg.max_zombies > 0)
def zombie_step(cfg, s):
    """Deposed controller: runs its next step with its old epoch. Requests it sends carry that epoch (brokers
    that have seen a newer one reject them); its first ZooKeeper write fails the /controller_epoch check
    and it resigns (`ControllerMovedException`, `maybeResign`). An idle one resigns at once.
    """
    z = s.zombie
    if z.step == IDLE:
        return s._replace(zombie=NO_CONTROLLER)
    try:
        s, z = STEPS[z.step](cfg, s, z)
    except ControllerMoved:
        return s._replace(zombie=NO_CONTROLLER)
    return s._replace(zombie=z if z.step != IDLE else NO_CONTROLLER)


# ================================================================================ brokers


def channel_heads(b: Broker) -> tuple[int, ...]:
    """Positions of requests that may be delivered next: the first of each sending controller (one
    controller's requests arrive in order; different controllers' connections are independent)."""
    seen, heads = set(), []
    for i, r in enumerate(b.inbox):
        if r.ctrl_epoch not in seen:
            seen.add(r.ctrl_epoch)
            heads.append(i)
    return tuple(heads)


def apply_leader_and_isr(cfg, me: int, b: Broker, req: Request) -> Broker | None:
    """`ReplicaManager.becomeLeaderOrFollower`: applied only with a newer leader epoch than the replica holds
    (or when the broker holds no replica); makes it leader or follower."""
    if b.role != NONE and req.leader_epoch <= b.leader_epoch or not req.replicas >> me & 1:
        return None  # not newer, or "itself is not in assigned replica list": ignored
    zeros = (0,) * len(b.follower_leo)
    if req.leader == me:
        if b.role == LEADER:  # re-elected in a newer epoch: it keeps what it knows of its followers
            return b._replace(leader_epoch=req.leader_epoch, version=req.version, replicas=req.replicas,
                              isr=req.isr, leso=len(b.log), alter=0)
        return b._replace(role=LEADER, leader=me, leader_epoch=req.leader_epoch, version=req.version,
                          replicas=req.replicas, isr=req.isr, leso=len(b.log), follower_leo=zeros, alter=0)
    # A follower keeps only what it fetches by: leader and epoch (its HWM, ISR and replica list serve no
    # rule here, so they are not kept: fewer states that differ in nothing that matters).
    return b._replace(role=FOLLOWER, leader=req.leader, leader_epoch=req.leader_epoch, version=0, replicas=0,
                      isr=0, hwm=0, leso=0, follower_leo=zeros, alter=0)


@spec.rule(broker=brokers, channel=lambda cfg: range(2), fair=True,
           format={"channel": lambda cfg, ch: "first" if not ch else "other controller's first"})
def deliver(cfg, s, broker, channel):
    """Broker: receives a controller request (`ReplicaManager`).

    Enabled for a live broker with a request in flight (`channel` 1: the first request of a second
    controller, when two have requests in flight to it).
    Next: a request of a controller epoch older than the broker has seen is rejected
    (STALE_CONTROLLER_EPOCH). LeaderAndIsr needs a newer leader epoch; StopReplica one that is not
    older: delete=false stops fetching and leading, delete=true also deletes the log.
    """
    b = s.brokers[broker - 1]
    if not b.alive or not b.inbox:
        return None
    heads = channel_heads(b)
    if channel >= len(heads):
        return None
    i = heads[channel]
    req = b.inbox[i]
    b = b._replace(inbox=b.inbox[:i] + b.inbox[i + 1:])
    stale = req.ctrl_epoch < b.ctrl_epoch
    if stale and not cfg.mutated.accept_stale_controller_epoch:
        return with_broker(s, broker, b)
    b = b._replace(ctrl_epoch=max(b.ctrl_epoch, req.ctrl_epoch))
    if req.kind == LEADER_AND_ISR:
        new = apply_leader_and_isr(cfg, broker, b, req)
    elif b.role != NONE and req.leader_epoch < b.leader_epoch:
        new = None  # FENCED_LEADER_EPOCH
    elif req.kind == STOP_REPLICA:
        new = b._replace(role=STOPPED if b.role != NONE else NONE, alter=0)
    else:
        new = b._replace(role=NONE, leader=NO_LEADER, leader_epoch=0, version=0, replicas=0, isr=0, log=(),
                         hwm=0, leso=0, alter=0)
        if s.zk.isr >> broker & 1:
            s = s._replace(deleted_in_use=True)
    if new is None:
        return with_broker(s, broker, b)
    if stale:
        s = s._replace(stale_applied=True)
    return with_broker(s, broker, new)


def leader_broker(s: State, leader: int) -> Broker | None:
    b = s.brokers[leader - 1]
    return b if b.alive and b.role == LEADER else None


@spec.rule(follower=brokers, fair=True)
def fetch(cfg, s, follower):
    """Follower: fetches from the leader it knows, in the same leader epoch; the leader may then add it
    to the ISR (`Partition.updateFollowerFetchState`, `maybeExpandIsr`: expansion happens on a fetch).

    Enabled for a live follower whose leader is live, leads in the same epoch and lists it as a replica.
    Next: a diverging follower truncates to the common prefix; otherwise it takes the next record and
    the leader records its fetch offset. If that offset reached the leader's HWM and leader-epoch start
    offset, the follower is outside the ISR and no ISR change is in flight, `change_isr` adds it.
    (A follower's HWM is not kept: no rule or property reads it; a new leader starts from HWM 0, and
    the LESO condition keeps its ISR safe.)
    """
    f = s.brokers[follower - 1]
    if not f.alive or f.role != FOLLOWER or not f.leader:
        return None
    lid = f.leader
    ld = leader_broker(s, lid)
    if ld is None or ld.leader_epoch != f.leader_epoch or not ld.replicas >> follower & 1:
        return None
    flog, llog = f.log, ld.log
    offset = len(flog)
    if llog[:offset] != flog:
        common = 0
        for x, y in zip(flog, llog):
            if x != y:
                break
            common += 1
        return with_broker(s, follower, f._replace(log=flog[:common]))
    grows = offset < len(llog)
    i = follower - 1
    expands = (not ld.alter and not ld.isr >> follower & 1 and offset >= ld.hwm and offset >= ld.leso)
    if not grows and ld.follower_leo[i] == offset and not expands:
        return None
    if grows:
        s = with_broker(s, follower, f._replace(log=flog + (llog[offset],)))
    ld = ld._replace(follower_leo=ld.follower_leo[:i] + (offset,) + ld.follower_leo[i + 1:])
    s = with_broker(s, lid, ld)
    if expands:
        return change_isr(cfg, s, lid, ld, ld.isr | bit(follower)) or s
    return s


@spec.rule(leader=brokers, fair=True)
def advance_hwm(cfg, s, leader):
    """Leader: advances its HWM to the smallest fetch offset in the ISR (with its pending additions).

    Enabled for a live leader whose log end and in-sync followers' fetch offsets are above its HWM.
    Next: the records below are committed, and acknowledged if the ISR >= MinISR.
    """
    b = leader_broker(s, leader)
    if b is None or b.hwm >= len(b.log):
        return None
    hwm = len(b.log)
    for f, leo in enumerate(b.follower_leo, 1):
        if f != leader and (b.isr | b.alter) >> f & 1 and leo < hwm:
            hwm = leo
    if hwm <= b.hwm:
        return None
    prefix = b.log[:hwm]
    committed = prefix if hwm > len(s.committed) else s.committed
    acked = prefix if size(b.isr) >= cfg.min_isr and hwm > len(s.acked) else s.acked
    return with_broker(s, leader, b._replace(hwm=hwm))._replace(committed=committed, acked=acked)


@spec.rule(leader=brokers, precondition=lambda cfg, s: s.budget.records > 0)
def produce(cfg, s, leader):
    """Leader: appends an acks=all record in its leader epoch.

    Enabled for a live leader with ISR >= MinISR while the record budget allows.
    Next: its log grows by one record.
    """
    b = leader_broker(s, leader)
    if b is None or size(b.isr) < cfg.min_isr:
        return None
    s = with_broker(s, leader, b._replace(log=b.log + (b.leader_epoch,)))
    return s._replace(budget=spend(s, records=1))


def change_isr(cfg, s: State, leader: int, b: Broker, isr: int) -> State | None:
    """The leader's ISR change. Kafka: an AlterPartition request to the controller. Seed: a conditional
    write of the state znode (zkVersion) and an ISR change notification; a stale zkVersion fails."""
    if kafka(cfg):
        return with_broker(s, leader, b._replace(alter=isr))
    zk = s.zk
    if b.version != zk.version:
        return None
    zk = zk._replace(isr=isr, version=zk.version + 1, isr_notice=True)
    return with_broker(s, leader, b._replace(isr=isr, version=zk.version))._replace(zk=zk)


@spec.rule(leader=brokers, follower=brokers, precondition=lambda cfg, s: may_disrupt(cfg, s, "shrinks"),
           applies=lambda cfg: cfg.max_shrinks > 0)
def shrink_isr(cfg, s, leader, follower):
    """Leader: removes a follower that stopped fetching from the ISR (`Partition.maybeShrinkIsr`).

    Enabled for a live leader with no ISR change in flight and another ISR member, while the budget allows.
    Next: `change_isr` with the follower removed.
    """
    b = leader_broker(s, leader)
    if b is None or b.alter or leader == follower or not b.isr >> follower & 1:
        return None
    new = change_isr(cfg, s, leader, b, b.isr & ~bit(follower))
    return None if new is None else new._replace(budget=spend(new, shrinks=1))


@spec.rule(broker=brokers, precondition=lambda cfg, s: may_disrupt(cfg, s, "broker_crashes"),
           applies=lambda cfg: cfg.max_broker_crashes > 0)
def broker_crash(cfg, s, broker):
    """Environment: a broker crashes; its ZooKeeper registration goes; it keeps its log (flushed).

    Enabled for a live broker while the budget allows.
    Next: down, with its in-memory state (replica, controller epoch, requests in flight) gone.
    """
    b = s.brokers[broker - 1]
    if not b.alive:
        return None
    down = b._replace(alive=False, ctrl_epoch=0, role=NONE, leader=NO_LEADER, leader_epoch=0, version=0,
                      replicas=0, isr=0, leso=0, follower_leo=(0,) * cfg.brokers, alter=0, inbox=())
    return with_broker(s, broker, down)._replace(budget=spend(s, broker_crashes=1))


@spec.rule(broker=brokers, fair=True, applies=lambda cfg: cfg.max_broker_crashes > 0)
def broker_start(cfg, s, broker):
    """Environment: a crashed broker starts and registers again.

    Enabled for a dead broker that the active controller (if any) has seen fail.
    Next: live, holding its log and no replica until a LeaderAndIsr arrives.
    """
    b = s.brokers[broker - 1]
    if b.alive or s.controller.live >> broker & 1 and s.controller.epoch:
        return None
    return with_broker(s, broker, b._replace(alive=True))


# ====================================================================================== liveness


def in_flight(cfg, s: State) -> bool:
    return s.status in (IN_PROGRESS, CANCELLING)


def finished(cfg, s: State) -> bool:
    return s.status in (DONE, CANCELLED) and not s.zk.admin


spec.eventually("ReassignmentCompletes", goal=finished, trigger=in_flight,
                doc="a submitted reassignment (or its cancellation) eventually completes: ZooKeeper holds its "
                    "goal alone and /admin/reassign_partitions no longer names it, once crashes stop")


def has_live_isr_member(cfg, s: State) -> bool:
    return bool(s.zk.isr & alive(s))


def led(cfg, s: State) -> bool:
    zk = s.zk
    return bool(zk.leader) and s.brokers[zk.leader - 1].alive


spec.eventually("PartitionLed", goal=led, trigger=has_live_isr_member,
                doc="a partition with a live in-sync replica is eventually led by a live broker")


# ---- speed: measured hot paths ----
fast_replace(Zk, Controller, Request, Broker, Budget, State)


# ================================================================================ how it is drawn
@spec.protocol_view
def drawn(cfg: ZkConfig, s: State) -> dict:
    """The state as `harness explore` draws an assignment (template views/assignment.html): the phase (the
    submitter's status and the step the controller is at), ZooKeeper's assignment and partition state, the
    controllers' contexts, and each broker with the requests in flight to it."""
    def controller_rows(c: Controller) -> list:
        return [("epoch", str(c.epoch)), ("step", STEP.show(c.step)), ("assignment (RS)", as_list(c.rs)),
                ("adding", as_set(c.adding)), ("removing", as_set(c.removing)), ("stopping", as_set(c.stopping)),
                ("started", as_set(c.started)), ("live brokers", as_set(c.live))]

    z = s.zk
    sections = [
        {"title": "reassignment", "rows": [("status", STATUS.show(s.status)), ("original replicas (ORS)", as_set(s.ors)),
                                           ("target (TRS)", as_list(s.trs))]},
        {"title": "ZooKeeper", "rows": [
            ("assignment (RS)", as_list(z.rs)), ("adding (AR)", as_set(z.adding)), ("removing (RR)", as_set(z.removing)),
            ("/admin/reassign_partitions", as_list(z.admin) if z.admin else "absent"),
            ("leader", OptId().show(z.leader)), ("leader epoch", str(z.leader_epoch)), ("ISR", as_set(z.isr)),
            ("zkVersion", str(z.version)), ("controller epoch", str(z.controller_epoch))]},
        {"title": "controller", "rows": controller_rows(s.controller)},
    ]
    if s.zombie.epoch:
        sections.append({"title": "deposed controller (zombie)", "rows": controller_rows(s.zombie)})
    request = spec.schema.fields["brokers"].item.fields["inbox"].item
    for i, b in enumerate(s.brokers, 1):
        rows = [("alive", str(b.alive)), ("role", ROLE.show(b.role)), ("leader", OptId().show(b.leader)),
                ("leader epoch", str(b.leader_epoch)), ("ISR", as_set(b.isr)), ("replicas", as_set(b.replicas)),
                ("log (epochs)", as_list(b.log)), ("HWM", str(b.hwm))]
        rows += [(f"in flight {n}", request.show(r)) for n, r in enumerate(b.inbox, 1)]
        sections.append({"title": f"broker {i}", "rows": rows})
    phase = f"{STATUS.show(s.status)}, controller at {STEP.show(s.controller.step)}"
    return {"kind": "assignment", "phase": phase, "sections": sections}
