"""The partition leader's rules: ISR changes through AlterPartition, answering fetches, and producer writes
(the TLA+ actions whose WHO is Partition leader or Broker/Partition leader; kafka-tlaplus, v3.5, ch. 2 §2.2
and §2.4, ch. 3)."""

from __future__ import annotations

from harness.bitset import bit, members, size
from specs.replication import spec
from specs.replication.logic import (brokers, commit_offset, discard, hwm_history, hwm_on_partition_change,
                                     last_offset_for_epoch, may_advance_hwm, may_disrupt, maybe_advance_hwm,
                                     message_slots, pending_ap_response, put, reply, send, shrinks_allowed,
                                     validate_alter_partition, value_ids)
from specs.replication.speed import in_flight, leading, leading_without_pending_request
from specs.replication.state import (AP_REQ, AP_RESP, FENCED_LEADER_EPOCH, FETCH_REQ, FETCH_RESP, INT_MAX, LEADER,
                                     NIL, NOT_LEADER_OR_FOLLOWER, NO_ERROR, NO_PENDING_AP, RUNNING,
                                     UNKNOWN_LEADER_EPOCH, VALUE_NAMES, AlterPartitionRequest, FetchResponse,
                                     LogRecord, PartitionData, PeerState, PendingAlterPartition, ReplicaMetadata,
                                     State)


def proposed_isr(cfg, s: State, b: int, curr_isr: int, timed_out: int) -> int:
    """The TLA+ ProposeNewISR: the leader, the ISR members that did not time out, and the caught-up
    followers outside the ISR (a fetch in this leader epoch, at or past the HWM and the LESO)."""
    hwm, leso = s.partition_data[b - 1].hwm, s.partition_leso[b - 1]
    rs = s.partition_replica_state[b - 1]
    out = 0
    for b1 in members(s.partition_metadata[b - 1].replicas):
        if b1 == b:
            out |= bit(b1)
        elif curr_isr >> b1 & 1:
            if not timed_out >> b1 & 1:
                out |= bit(b1)
        else:
            leo = rs[b1 - 1].leo
            if (leo != NIL and (leo >= hwm or cfg.mutated.isr_join_below_hwm)
                    and (leo >= leso or cfg.mutated.isr_join_below_leso)):
                out |= bit(b1)
    return out


@spec.rule(b=brokers, timed_out=shrinks_allowed, fair=True, candidates=leading_without_pending_request)
def SendAlterPartitionRequest(cfg, s: State, b, timed_out):
    """Leader: proposes a new ISR to the controller (kafka-tlaplus, v3.5, ch. 2 §2.4).

    Who acts: the partition leader at broker b (the TLA+ WHO: Partition leader).
    Enabled when: b runs, leads and awaits no AlterPartition response; its proposal (itself, the ISR
    members outside `timed_out`, the caught-up followers) differs from its ISR; followers time out only
    while the shrink budget (and the joint disruption budget) lasts; a request already sent is not sent
    again if the controller would refuse it again (the TLA+ __AvoidCycle).
    Next: the request is in flight; b replicates to the union of both ISRs (the Maximal ISR) and expects
    the next partition epoch."""
    if s.broker_state[b - 1].status != RUNNING or s.partition_status[b - 1] != LEADER or pending_ap_response(s, b):
        return None
    md = s.partition_metadata[b - 1]
    curr = md.isr
    if timed_out & ~curr or timed_out >> b & 1:
        return None
    if timed_out and (s.aux_ctrs.leader_shrink_isr_ctr >= cfg.leader_shrink_isr_limit or not may_disrupt(cfg, s)):
        return None
    proposal = proposed_isr(cfg, s, b, curr, timed_out)
    if proposal == curr:
        return None
    rs = s.partition_replica_state[b - 1]
    epochs = tuple(0 if not proposal >> b1 & 1
                   else s.broker_state[b - 1].broker_epoch if b1 == b
                   else 0 if curr >> b1 & 1
                   else rs[b1 - 1].broker_epoch
                   for b1 in brokers(cfg))
    request = AlterPartitionRequest(b, proposal, epochs, b, md.leader_epoch, md.partition_epoch,
                                    s.broker_state[b - 1].broker_epoch)
    kind = AP_REQ
    sent = request in s.messages[kind] or request in s.messages_discard[kind]
    if sent and validate_alter_partition(cfg, s, b, request) != NO_ERROR:
        return None  # the TLA+ __AvoidCycle: no retry the controller would refuse again
    changes = {}
    if curr & ~proposal:
        changes["aux_ctrs"] = s.aux_ctrs._replace(leader_shrink_isr_ctr=s.aux_ctrs.leader_shrink_isr_ctr + 1)
    return s._replace(
        messages=send(s.messages, kind, request),
        partition_metadata=put(s.partition_metadata, b, md._replace(maximal_isr=proposal | curr)),
        partition_pending_ap=put(s.partition_pending_ap, b, PendingAlterPartition(md.partition_epoch + 1, (request,))),
        **changes)


@spec.rule(b=brokers, m=message_slots, fair=True, candidates=in_flight(AP_RESP, 0))
def ReceiveAlterPartitionResponse(cfg, s: State, b, m):
    """Leader: takes the controller's answer to its pending AlterPartition request.

    Who acts: the partition leader at broker b (the TLA+ WHO: Broker/Partition leader).
    Enabled when: b runs, leads and awaits the answer to this very request; an acceptance only if its
    partition epoch is newer than b's and its leader epoch is b's.
    Next: b adopts the new partition state (accepted) or rolls its Maximal ISR back to its ISR (refused);
    the HWM may advance; no request is pending."""
    msgs = s.messages[AP_RESP]
    if m >= len(msgs):
        return None
    msg = msgs[m]
    if msg.dest != b:
        return None
    if s.broker_state[b - 1].status != RUNNING or s.partition_status[b - 1] != LEADER or not pending_ap_response(s, b):
        return None
    if s.partition_pending_ap[b - 1].request != (msg.request,):
        return None
    md = s.partition_metadata[b - 1]
    if msg.error == NO_ERROR:
        if not (msg.partition_epoch > md.partition_epoch and msg.leader_epoch == md.leader_epoch):
            return None
        new = ReplicaMetadata(msg.replicas, msg.isr, msg.isr, msg.leader, msg.leader_epoch, msg.partition_epoch)
    else:
        new = md._replace(maximal_isr=md.isr)
    changes = hwm_on_partition_change(cfg, s, b, new)
    return s._replace(
        partition_metadata=put(s.partition_metadata, b, new),
        partition_pending_ap=put(s.partition_pending_ap, b, NO_PENDING_AP),
        **discard(s, AP_RESP, msg), **changes)


@spec.rule(b=brokers, m=message_slots, fair=True, candidates=in_flight(FETCH_REQ, 1))
def ReceiveFetchRequest(cfg, s: State, b, m):
    """Leader: answers a fetch, recording the follower's LEO (kafka-tlaplus, v3.5, ch. 2 §2.2, ch. 3).

    Who acts: broker b, the fetch's destination (the TLA+ WHO: Partition leader).
    Enabled when: b runs and a FetchRequest to it is in flight.
    Next: the response is an error if b does not lead in the fetcher's leader epoch, the diverging epoch
    if the fetcher's log diverges from b's, else the next record; in that last case b records the
    follower's LEO and may advance its HWM."""
    msgs = s.messages[FETCH_REQ]
    if m >= len(msgs):
        return None
    msg = msgs[m]
    if msg.dest != b or s.broker_state[b - 1].status != RUNNING:
        return None
    md = s.partition_metadata[b - 1]
    data = s.partition_data[b - 1]
    if s.partition_status[b - 1] != LEADER or md.leader_epoch != msg.leader_epoch:
        error = (UNKNOWN_LEADER_EPOCH if md.leader_epoch < msg.leader_epoch
                 else FENCED_LEADER_EPOCH if md.leader_epoch > msg.leader_epoch else NOT_LEADER_OR_FOLLOWER)
        response = FetchResponse(b, msg.source, error, md.leader_epoch, msg.fetch_offset, False, 0, 0, data.hwm, ())
        return s._replace(**reply(s, FETCH_REQ, msg, FETCH_RESP, response))
    epoch, end = last_offset_for_epoch(s, b, msg.last_fetched_epoch, True)
    if epoch < msg.last_fetched_epoch or end < msg.fetch_offset:
        response = FetchResponse(b, msg.source, NO_ERROR, md.leader_epoch, msg.fetch_offset, True, epoch, end,
                                 data.hwm, ())
        return s._replace(**reply(s, FETCH_REQ, msg, FETCH_RESP, response))
    rs = put(s.partition_replica_state[b - 1], msg.source, PeerState(msg.fetch_offset, msg.broker_epoch))
    new_hwm = commit_offset(s, b, md.maximal_isr, data.leo, rs) + 1
    if not may_advance_hwm(cfg, md.isr):
        new_hwm = data.hwm
    changes = maybe_advance_hwm(cfg, s, b, md.isr, new_hwm, True)
    records = (data.log[msg.fetch_offset - 1],) if msg.fetch_offset < data.leo else ()
    response = FetchResponse(b, msg.source, NO_ERROR, md.leader_epoch, msg.fetch_offset, False, 0, 0,
                             max(new_hwm, data.hwm), records)
    return s._replace(partition_replica_state=put(s.partition_replica_state, b, rs),
                      **reply(s, FETCH_REQ, msg, FETCH_RESP, response), **changes)


@spec.rule(b=brokers, v=value_ids, format={"v": lambda cfg, v: VALUE_NAMES[v - 1]},
           precondition=lambda cfg, s: s.inv_sent != (1 << (cfg.values + 1)) - 2, candidates=leading)
def WriteRecordToLeader(cfg, s: State, b, v):
    """Leader: appends a producer's value to its log.

    Who acts: the partition leader at broker b, on a produce request (the TLA+ WHO: Partition leader).
    Enabled when: b runs and leads, value v was never written, and the Maximal ISR has at least MinISR
    members.
    Next: b's log ends with the record (b's leader epoch, v); the HWM may advance (write_commit=kafka: a
    leader alone in its Maximal ISR commits and acknowledges the record at once; tla: as the TLA+
    GetCommitOffset, which reads the LEO before the write)."""
    if s.inv_sent >> v & 1 or s.broker_state[b - 1].status != RUNNING or s.partition_status[b - 1] != LEADER:
        return None
    md = s.partition_metadata[b - 1]
    if size(md.maximal_isr) < cfg.min_isr:
        return None
    data = s.partition_data[b - 1]
    new_leo = data.leo + 1
    new_log = data.log + (LogRecord(md.leader_epoch, data.leo, v),)
    new_hwm = commit_offset(s, b, md.maximal_isr, new_leo, s.partition_replica_state[b - 1]) + 1
    tla = cfg.write_commit == "tla"
    if not may_advance_hwm(cfg, md.isr) or tla and data.leo == 1:  # TLA+: `LeoOf(b) = 1`, the LEO before the write
        new_hwm = data.hwm
    changes = {"inv_sent": s.inv_sent | bit(v)}
    if s.aux_flo[b - 1] == INT_MAX:
        changes["aux_flo"] = put(s.aux_flo, b, data.leo)
    if new_hwm > data.hwm:
        # kafka: committed at once, so acknowledged at once (the value is sent); TLA+ acknowledges on a later step
        changes.update(hwm_history(s if tla else s._replace(**changes), b, new_log, data.hwm, new_hwm, True))
    changes["partition_data"] = put(s.partition_data, b, PartitionData(new_log, max(new_hwm, data.hwm), new_leo))
    return s._replace(**changes)
