"""The controller's rules (the TLA+ actions whose WHO is Controller, fencing aside: `faults`): broker
registration and unfencing, AlterPartition decisions and reassignments (kafka-tlaplus, v3.5, ch. 2 §2.4, ch. 4
and 8). Its shared logic (ApplyPartitionChange, the leader elections on a broker change, ...) is in `logic`."""

from __future__ import annotations

from harness.bitset import as_set, size
from specs.replication import spec
from specs.replication.logic import (apply_partition_change, broker_sets, brokers, handle_broker_unfenced,
                                     leader_choices, message_slots, new_leader_ok, process_unclean_broker, put,
                                     reassignment_in_progress, reply, restarts, update_elr, validate_alter_partition)
from specs.replication.speed import fenced_and_running, in_flight
from specs.replication.state import (AP_REQ, AP_RESP, FENCED, NO_ERROR, NO_LEADER, REG_REQ, REG_RESP, RUNNING,
                                     UNFENCED, AlterPartitionResponse, RegisterBrokerResponse, Registration, State)


@spec.rule(b=brokers, m=message_slots, leader=leader_choices, fair=True, applies=restarts,
           candidates=in_flight(REG_REQ, 0))
def ReceiveBrokerRegRequest(cfg, s: State, b, m, leader):
    """Controller: registers a starting broker and unfences it (kafka-tlaplus, v3.5, ch. 8).

    Who acts: the controller, on broker b's RegisterBrokerRequest (the TLA+ WHO: Controller).
    Enabled when: b is fenced, or registered under the request's incarnation id.
    Next: b is registered UNFENCED with the next broker epoch; a partition without a leader elects `leader`
    (kip966: a broker that kept no broker epoch leaves the ISR and the ELR, KIP-966's
    ProcessUncleanBroker); the response carries that epoch and the metadata log's length."""
    msgs = s.messages[REG_REQ]
    if m >= len(msgs):
        return None
    msg = msgs[m]
    if msg.broker_id != b:
        return None
    reg = s.con_broker_reg[b - 1]
    if reg.status != FENCED and reg.incarnation_id != msg.incarnation_id:
        return None
    if cfg.kip966 and msg.broker_epoch == 0:
        changes = process_unclean_broker(cfg, s, b, leader)
    else:
        changes = handle_broker_unfenced(cfg, s, b, leader)
    if changes is None:
        return None
    epoch = s.aux_broker_epoch + 1
    response = RegisterBrokerResponse(b, epoch, msg.incarnation_id, len(s.con_metadata_log))
    return s._replace(con_broker_reg=put(s.con_broker_reg, b, Registration(UNFENCED, epoch, msg.incarnation_id)),
                      aux_broker_epoch=epoch, **reply(s, REG_REQ, msg, REG_RESP, response), **changes)


@spec.rule(b=brokers, m=message_slots, leader=leader_choices, fair=True,
           candidates=in_flight(AP_REQ, 0))
def ReceiveAlterPartitionRequest(cfg, s: State, b, m, leader):
    """Controller: decides a leader's AlterPartition request (kafka-tlaplus, v3.5, ch. 2 §2.4, ch. 4).

    Who acts: the controller, on broker b's AlterPartition request (the TLA+ WHO: Controller).
    Enabled when: the request is in flight; `leader` is the new leader where the change removes the old one
    from the ISR (0 on a refusal).
    Next: accepted (from the leader, in its broker and partition epochs, with every proposed member unfenced
    in the broker epoch given), the proposal becomes the ISR, completing a reassignment whose adding
    replicas all joined, and the change is appended to the metadata log; refused, nothing changes. Either
    way the controller answers."""
    msgs = s.messages[AP_REQ]
    if m >= len(msgs):
        return None
    msg = msgs[m]
    if msg.source != b:
        return None
    error = validate_alter_partition(cfg, s, b, msg)
    if error != NO_ERROR:
        if leader:
            return None
        response = AlterPartitionResponse(b, error, 0, 0, NO_LEADER, 0, 0, msg)
        return s._replace(**reply(s, AP_REQ, msg, AP_RESP, response))
    md = s.con_partition_metadata
    final_isr = msg.isr & ~md.removing
    complete = (reassignment_in_progress(md) and not md.adding & ~final_isr and size(final_isr) >= cfg.min_isr)
    if complete:
        final_replicas = md.replicas & ~md.removing
        new = md._replace(replicas=final_replicas, isr=final_isr, leader_epoch=md.leader_epoch + 1,
                          partition_epoch=md.partition_epoch + 1, adding=0, removing=0)
    else:
        new = md._replace(isr=msg.isr, partition_epoch=md.partition_epoch + 1)
    if cfg.kip966:
        new = new._replace(elr=update_elr(cfg, md, new.isr, new.replicas))
    if not new_leader_ok(md, new.isr, leader):
        return None
    new = new._replace(leader=leader)
    response = AlterPartitionResponse(b, NO_ERROR, new.replicas, new.isr, leader, new.leader_epoch,
                                      new.partition_epoch, msg)
    return s._replace(**reply(s, AP_REQ, msg, AP_RESP, response), **apply_partition_change(cfg, s, new))


@spec.rule(b=brokers, leader=leader_choices, fair=True, candidates=fenced_and_running)
def UnfenceBroker(cfg, s: State, b, leader):
    """Controller: unfences a fenced running broker, as on a heartbeat.

    Who acts: the controller (the TLA+ WHO: Controller).
    Enabled when: b is fenced and running.
    Next: b is unfenced; a partition without a leader elects `leader` (0: it has one)."""
    if s.con_broker_reg[b - 1].status != FENCED or s.broker_state[b - 1].status != RUNNING:
        return None
    changes = handle_broker_unfenced(cfg, s, b, leader)
    if changes is None:
        return None
    return s._replace(con_broker_reg=put(s.con_broker_reg, b, s.con_broker_reg[b - 1]._replace(status=UNFENCED)),
                      **changes)


@spec.rule(adding=broker_sets, removing=broker_sets, leader=leader_choices,
           applies=lambda cfg: cfg.reassignment_limit > 0,
           precondition=lambda cfg, s: (s.aux_ctrs.reassignment_ctr < cfg.reassignment_limit
                                        and not reassignment_in_progress(s.con_partition_metadata)),
           format={"adding": lambda cfg, v: as_set(v), "removing": lambda cfg, v: as_set(v)})
def PerformPartitionReassignment(cfg, s: State, adding, removing, leader):
    """Controller: carries out an administrator's AlterPartitionReassignments (kafka-tlaplus, v3.5, ch. 4).

    Who acts: the controller, on an administrator's request (the TLA+ WHO: Controller).
    Enabled when: the reassignment budget lasts, none is in progress, and the change is valid: something
    to add or remove, `adding` outside the replicas, `removing` within, at least MinISR replicas left.
    Next: the new replicas at once if the ISR already allows it (in a new leader epoch), else an ongoing
    reassignment (`adding`, `removing`) that an ISR change completes; `leader` leads if the old leader
    leaves the ISR (a leaderless partition: an unfenced ISR member, in a new leader epoch, or none)."""
    md = s.con_partition_metadata
    if s.aux_ctrs.reassignment_ctr >= cfg.reassignment_limit or reassignment_in_progress(md):
        return None
    if not (adding or removing) or adding & md.replicas or removing & ~md.replicas:
        return None
    if size(md.replicas) + size(adding) - size(removing) < cfg.min_isr:
        return None
    grown = md.replicas | adding
    final_replicas, final_isr = grown & ~removing, md.isr & ~removing
    if not adding & ~final_isr and size(final_isr) >= cfg.min_isr and final_replicas:
        new = md._replace(replicas=final_replicas, isr=final_isr, leader_epoch=md.leader_epoch + 1,
                          partition_epoch=md.partition_epoch + 1, adding=0, removing=0)
        if cfg.kip966:
            new = new._replace(elr=update_elr(cfg, md, final_isr, final_replicas))
    else:
        new = md._replace(replicas=grown, partition_epoch=md.partition_epoch + 1, adding=adding, removing=removing)
    if md.leader == NO_LEADER:
        # A leaderless partition gets an unfenced ISR member, in a new leader epoch, or stays leaderless (Kafka's
        # PartitionChangeBuilder). Before, a fenced one could be elected in the old epoch: no replica learns that
        # it leads, and the new replica fetched from it for ever (docs/models/replication.md, "Liveness triage").
        candidates = new.isr & s.con_unfenced
        if (leader == NO_LEADER) == bool(candidates) or leader != NO_LEADER and not candidates >> leader & 1:
            return None
        if leader != NO_LEADER:
            new = new._replace(leader_epoch=md.leader_epoch + 1)
    elif not new_leader_ok(md, new.isr, leader):
        return None
    return s._replace(aux_ctrs=s.aux_ctrs._replace(reassignment_ctr=s.aux_ctrs.reassignment_ctr + 1),
                      **apply_partition_change(cfg, s, new._replace(leader=leader)))
