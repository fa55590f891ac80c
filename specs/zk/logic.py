"""The zk model's shared protocol logic, pure functions over `State` (no rules here): parameter domains,
the assignment arithmetic of `ReplicaAssignment`, the completion test, budgets, the controller's
ZooKeeper writes and requests, the replica state machine's ISR removal and the offline election, and the
goals of the liveness properties.

Citations as in `specs.zk`: [seed] is the comment on `KafkaController.onPartitionReassignment` (Kafka
2.4-3.x); Kafka class and method names refer to Apache Kafka 3.9.0.
"""

from __future__ import annotations

from harness.bitset import as_list, bit, mask, members
from specs.zk.state import (CANCELLED, CANCELLING, DONE, IDLE, IN_PROGRESS, LEADER_AND_ISR, NO_LEADER, STOP_REPLICA,
                            STOP_REPLICA_DELETE, Broker, Budget, Controller, Request, State)


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


def submittable(cfg, s: State) -> bool:
    return s.budget.reassignments > 0


def idle_controller(cfg, s: State) -> bool:
    return s.controller.epoch > 0 and s.controller.step == IDLE


def reassigning(c: Controller) -> bool:
    return bool(c.adding or c.removing)


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


# --------------------------------------------- the replica and partition state machines (ReplicaStateMachine,
# PartitionStateMachine): what a replica going offline and an offline partition's election write and send


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


# ------------------------------------------------------------------ the liveness properties' goals


def in_flight(cfg, s: State) -> bool:
    return s.status in (IN_PROGRESS, CANCELLING)


def finished(cfg, s: State) -> bool:
    """ZooKeeper holds the reassignment's goal alone (its target; a cancellation's: its original replicas) and
    /admin/reassign_partitions no longer names it. The status ghost is set at B6, but a fail-over after U1
    wrote a plain assignment leaves no B6 to run: the goal is read from ZooKeeper, as a new controller
    (and ListPartitionReassignments, which answers from its context) reads it."""
    zk = s.zk
    if zk.admin:
        return False
    if s.status in (DONE, CANCELLED):
        return True
    goal = mask(s.trs) if s.status == IN_PROGRESS else s.ors
    return not zk.adding | zk.removing and mask(zk.rs) == goal


def has_live_isr_member(cfg, s: State) -> bool:
    return bool(s.zk.isr & alive(s))


def led(cfg, s: State) -> bool:
    zk = s.zk
    return bool(zk.leader) and s.brokers[zk.leader - 1].alive
