"""The zk model's state: ZooKeeper's znodes, the controllers' contexts, the brokers, the budgets, and the
history the properties read; the step and role enums; the config with its parameter domains.

Citations as in `specs.zk`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, NamedTuple

from harness.itf import Bool, ById, Enum, IdSet, Int, OptId, Seq
from harness.model import Config, budget, distinct_ids, ids, param, variant

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
