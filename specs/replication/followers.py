"""The follower's rules: fetching from the leader and handling the responses, truncating a diverging log
(the TLA+ actions whose WHO is Broker/Partition follower; kafka-tlaplus, v3.5, ch. 2 §2.2, ch. 3)."""

from __future__ import annotations

from specs.replication import spec
from specs.replication.logic import (brokers, converged, discard, last_epoch, last_offset_for_epoch, message_slots,
                                     put, send)
from specs.replication.speed import fetching_from_leader, in_flight
from specs.replication.state import (FETCH_REQ, FETCH_RESP, NO_ERROR, RUNNING, FetchRequest, Fetcher, PartitionData,
                                     State)


@spec.rule(b=brokers, to=brokers, fair=True, candidates=fetching_from_leader)
def SendFetchRequest(cfg, s: State, b, to):
    """Follower: fetches from the broker it believes leads (kafka-tlaplus, v3.5, ch. 2 §2.2).

    Who acts: the follower at broker b (the TLA+ WHO: Broker/Partition follower).
    Enabled when: b runs, its fetcher toward `to` holds the partition and awaits no response, `to` leads
    in b's metadata, and the two have not converged (the TLA+ __SendFetchMakesProgress).
    Next: a FetchRequest from b's fetch offset, with the epoch it last fetched, is in flight; the fetcher
    awaits its response and is no longer delayed."""
    if b == to or s.broker_state[b - 1].status != RUNNING:
        return None
    f = s.broker_fetchers[b - 1][to - 1]
    if not f.added or f.pending_response or s.partition_metadata[b - 1].leader != to or converged(s, to, b):
        return None
    request = FetchRequest(b, to, s.broker_state[b - 1].broker_epoch, s.partition_metadata[b - 1].leader_epoch,
                           f.fetch_offset, f.last_fetched_epoch)
    row = put(s.broker_fetchers[b - 1], to, f._replace(pending_response=True, delayed=False))
    return s._replace(messages=send(s.messages, FETCH_REQ, request),
                      broker_fetchers=put(s.broker_fetchers, b, row))


def truncate_to_safe_point(s: State, b: int, epoch: int, end: int) -> PartitionData:
    """The TLA+ TruncateToSafePoint: cut the log where it stops matching the leader's (the HWM stays)."""
    local_epoch, local_end = last_offset_for_epoch(s, b, epoch, False)
    cut = local_end if local_epoch != epoch or local_end < end else end
    data = s.partition_data[b - 1]
    if cut > 1:
        if cut - 1 > len(data.log):
            raise RuntimeError(f"broker {b}: truncating to offset {cut} beyond its log (TLC fails here)")
        return PartitionData(data.log[:cut - 1], data.hwm, cut)
    return PartitionData((), data.hwm, 1)


@spec.rule(b=brokers, m=message_slots, fair=True, candidates=in_flight(FETCH_RESP, 1))
def ReceiveFetchResponse(cfg, s: State, b, m):
    """Follower: handles a fetch response, appending its records or truncating its log.

    Who acts: the follower at broker b (the TLA+ WHO: Broker/Partition follower).
    Enabled when: b runs and its fetcher toward the response's source awaits a response.
    Next: the response is ignored (the fetcher only stops waiting) if the fetcher no longer fetches the
    partition from that broker, at that offset or in that leader epoch; an error delays the fetcher; a
    diverging epoch truncates the log; else the records are appended and the HWM taken where it falls
    within the log."""
    msgs = s.messages[FETCH_RESP]
    if m >= len(msgs):
        return None
    msg = msgs[m]
    if msg.dest != b or s.broker_state[b - 1].status != RUNNING:
        return None
    f = s.broker_fetchers[b - 1][msg.source - 1]
    if not f.pending_response:
        return None
    changes = discard(s, FETCH_RESP, msg)
    if (not f.added
            or (f.fetch_offset != msg.fetch_offset and not cfg.mutated.fetch_response_ignores_offset)
            or (s.partition_metadata[b - 1].leader_epoch != msg.leader_epoch
                and not cfg.mutated.fetch_response_ignores_epoch)):
        f = f._replace(pending_response=False)
    elif msg.error != NO_ERROR:
        f = f._replace(pending_response=False, delayed=True)
    elif msg.diverging:
        data = truncate_to_safe_point(s, b, msg.diverging_epoch, msg.diverging_offset)
        changes["partition_data"] = put(s.partition_data, b, data)
        f = Fetcher(True, data.leo, last_epoch(data.log), False, False)
    else:
        data = s.partition_data[b - 1]
        new_leo = len(data.log) + len(msg.records) + 1
        fetched_epoch = msg.records[-1].epoch if msg.records else f.last_fetched_epoch
        new = PartitionData(data.log + msg.records, msg.hwm if msg.hwm <= new_leo else data.hwm, new_leo)
        changes["partition_data"] = put(s.partition_data, b, new)
        f = Fetcher(True, new_leo, fetched_epoch, False, False)
    changes["broker_fetchers"] = put(s.broker_fetchers, b, put(s.broker_fetchers[b - 1], msg.source, f))
    return s._replace(**changes)
