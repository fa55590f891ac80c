"""The zk model's controller: the rules of the active controller (the events it handles: the admin znode,
the AlterPartitionReassignments API, AlterPartition, broker changes, preferred elections; the phase steps
U1-U3, A0-A2, B1-B8 of `onPartitionReassignment`; its fail-over) and of a deposed controller that has
not yet noticed (the zombie), with the step functions both run.

Citations as in `specs.zk`: [seed] is the comment on `KafkaController.onPartitionReassignment` (Kafka
2.4-3.x); Kafka class and method names refer to Apache Kafka 3.9.0.
"""

from __future__ import annotations

from harness.bitset import bit, mask, members
from specs.zk import spec
from specs.zk.logic import (TARGET, ControllerMoved, alive, brokers, check_controller_epoch, complete,
                            elect_if_offline, idle_controller, kafka, leader_and_isr, minus, origin_of, reassign_to,
                            reassigning, remove_from_isr, replaces, send, spend, state_writable, stop_replica,
                            submittable, take_all_offline, target_of, targets, with_broker, write_state, write_topic)
from specs.zk.state import (A0, A1, A2, B1, B2, B3, B4, B5, B6, B7, B8, CANCELLED, CANCELLING, DONE, IDLE,
                            IN_PROGRESS, NO_CONTROLLER, NO_LEADER, RESUME, STEP, U1, U3_DELETE, U3_OFFLINE, Controller,
                            State)


# ================================================================== entering phases, the events


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


@spec.rule(fair=True, precondition=lambda cfg, s: idle_controller(cfg, s) and s.controller.znode_event)
def handle_reassign_znode_creation(cfg, s):
    """Controller: handles the creation of /admin/reassign_partitions (`PartitionReassignmentHandler`,
    creation only; `processZkPartitionReassignment`).

    Who acts: the active controller.
    Enabled when: it is idle with the creation event queued.
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

    Who acts: the active controller, answering the admin's call.
    Enabled when: it is idle and the budget allows; refused (INVALID_REPLICA_ASSIGNMENT, no
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

    Who acts: the active controller, answering the admin's call.
    Enabled when: it is idle with a reassignment in progress and a cancellation in the budget
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


# ================================================================ the phase steps
# Each step is a function of (cfg, state, controller) returning (state, controller); the active
# controller's rule and the zombie's step share them. A ZooKeeper write may raise ControllerMoved.


def step_u1(cfg, s: State, c: Controller):
    """U1: write the new RS, AR, RR to the topic znode, before memory (`updateCurrentReassignment`)."""
    s = write_topic(cfg, s, c, c.rs, c.adding, c.removing)
    nxt = U3_OFFLINE if c.stopping and not cfg.mutated.cancel_keeps_adding else after_phase_u(cfg, s, c)
    return s, c._replace(step=nxt)


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
        fn.__doc__ = (f"Controller: {STEPS[step].__doc__}\n\nWho acts: the active controller, in the event it is "
                      f"running (a deposed one runs the same step in `zombie_step`).\nEnabled when: the event is at "
                      f"{STEP.names[step]}; a crash may come before or after it.\nNext: as above; then the event's "
                      f"next step, or idle.")
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


# ====================================================== ISR changes, brokers, elections


@spec.rule(leader=brokers, fair=True, precondition=idle_controller, applies=kafka)
def handle_alter_partition(cfg, s, leader):
    """Controller: handles `leader`'s AlterPartition (`KafkaController.processAlterPartition`, IBP >= 2.7).

    Who acts: the active controller.
    Enabled when: it is idle and `leader` has a request in flight.
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

    Who acts: the active controller.
    Enabled when: it is idle with a notification pending.
    Next: the notification is consumed; for a reassigning partition, the completion test on the ISR
    in ZooKeeper: if complete, phase B starts in this event.
    """
    c = s.controller
    s = s._replace(zk=s.zk._replace(isr_notice=False))
    if reassigning(c) and complete(cfg, target_of(c), s.zk.isr):
        return s._replace(controller=c._replace(step=B1))
    return s


@spec.rule(fair=True, precondition=lambda cfg, s: idle_controller(cfg, s) and s.controller.live != alive(s),
           applies=lambda cfg: cfg.max_broker_crashes > 0)
def handle_broker_change(cfg, s):
    """Controller: handles a change of /brokers/ids (`onBrokerFailure`, `onBrokerStartup`).

    Who acts: the active controller.
    Enabled when: it is idle and its view of live brokers differs from ZooKeeper's.
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

    Who acts: the active controller (asked by the admin, or by its own auto-rebalance task).
    Enabled when: it is idle and the budget allows, when RS's first replica is live, in the
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


# ========================================================================= fail-over, the zombie


@spec.rule(fair=True, precondition=lambda cfg, s: not s.controller.epoch, applies=lambda cfg: cfg.max_failovers > 0)
def controller_failover(cfg, s):
    """Controller: a broker wins the /controller election (`KafkaController.elect`, `onControllerFailover`).

    Who acts: the broker that wins the election, as the new active controller.
    Enabled when: there is no active controller.
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
    """Deposed controller: runs its next step with its old epoch.

    Who acts: a crashed controller that has not yet noticed (the zombie).
    Enabled when: there is one.
    Next: the step as the active controller runs it; requests it sends carry its epoch (brokers that have
    seen a newer one reject them); its first ZooKeeper write fails the /controller_epoch check and it
    resigns (`ControllerMovedException`, `maybeResign`). An idle one resigns at once.
    """
    z = s.zombie
    if z.step == IDLE:
        return s._replace(zombie=NO_CONTROLLER)
    try:
        s, z = STEPS[z.step](cfg, s, z)
    except ControllerMoved:
        return s._replace(zombie=NO_CONTROLLER)
    return s._replace(zombie=z if z.step != IDLE else NO_CONTROLLER)
