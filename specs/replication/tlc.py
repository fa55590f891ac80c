"""TLC's successor order for the replication model (`Spec.tlc_order`), which a search that keeps the first
state found per view follows, as TLC does (`check --view-keep first`). Its own module, outside the common
package layout: no other model declares a TLC order, and it reads the search's action table, not a state
the protocol defines.

TLC splits `Next` into one action per broker and disjunct (`\\E b \\in Brokers` outermost, then the disjuncts
in order, PerformPartitionReassignment last) and generates each action's successors in the order of its
quantifier domains: integers ascending, SUBSET as a binary counter (the bitmask order of `broker_sets`),
and the message set in TLC's value order (`TLC_MESSAGE_KEY`).
"""

from __future__ import annotations

from harness.bitset import members, size
from harness.errors import BadInput
from specs.replication.state import (AP_REQ, AP_RESP, FENCED_LEADER_EPOCH, FETCH_REQ, FETCH_RESP, INELIGIBLE_REPLICA,
                                     NO_ERROR, NOT_LEADER_OR_FOLLOWER, REG_REQ, REG_RESP, UNKNOWN_LEADER_EPOCH,
                                     AlterPartitionRequest, FetchResponse, State)

RECEIVED = {"ReceiveBrokerRegResponse": REG_RESP, "ReceiveAlterPartitionResponse": AP_RESP,
            "ReceiveFetchRequest": FETCH_REQ, "ReceiveFetchResponse": FETCH_RESP,
            "ReceiveBrokerRegRequest": REG_REQ, "ReceiveAlterPartitionRequest": AP_REQ}


# TLC orders values of one kind (UniqueString tokens, TLC 2.18): a record by its number of fields, then
# its field names, then its values, fields and model values both in the order their names are first
# interned, which is the order they first occur in the text of kafka_replication_v3_5.tla (comments
# aside; checked on every record TLC prints); a set by its size, then its members; a sequence by its
# length, then its elements; a model value before any other value. Below, each message is the tuple of
# its record's values in TLC's field order (leaving out those equal for every candidate of one action:
# `type`, a request's `dest`), a model value beside other values as (0, its rank), the others as (1, key).
TLC_ERROR_RANK = {NO_ERROR: 0, UNKNOWN_LEADER_EPOCH: 1, FENCED_LEADER_EPOCH: 2, NOT_LEADER_OR_FOLLOWER: 3,
                  INELIGIBLE_REPLICA: 4}  # Nil ... NotLeaderOrFollower in the text; IneligibleReplica after it


def _tlc_set(mask: int) -> tuple:
    return size(mask), tuple(members(mask))


def _tlc_ap_request(r: AlterPartitionRequest) -> tuple:
    # type, dest, source, broker_epoch, leader, leader_epoch, partition_epoch, isr, isr_and_epochs
    return r.source, r.broker_epoch, r.leader, r.leader_epoch, r.partition_epoch, _tlc_set(r.isr), r.isr_and_epochs


def _tlc_fetch_response(r: FetchResponse) -> tuple:
    # type, dest, source, partition: [type (only on success)], leader_epoch, fetch_offset, hwm, error,
    # diverging_epoch ([epoch, offset] or Nil), records (sequences of [epoch, offset, value])
    ok = r.error == NO_ERROR and not r.diverging
    diverging = (1, (r.diverging_epoch, r.diverging_offset)) if r.diverging else (0, 0)
    partition = (7 if ok else 6, r.leader_epoch, r.fetch_offset, r.hwm, TLC_ERROR_RANK[r.error], diverging,
                 (len(r.records), r.records))
    return r.dest, r.source, partition


TLC_MESSAGE_KEY = {
    # type, broker_id, incarnation_id, dest, source (its broker_id)
    REG_REQ: lambda r: (r.broker_id, r.incarnation_id),
    # type, incarnation_id, dest, source, broker_epoch, metadata_offset
    REG_RESP: lambda r: (r.incarnation_id, r.dest, r.broker_epoch, r.metadata_offset),
    AP_REQ: _tlc_ap_request,
    # type, dest, source, leader, leader_epoch, partition_epoch, replicas, isr, request, error (10 fields);
    # type, dest, source, request, error (5 fields: a refusal)
    AP_RESP: lambda r: ((5, r.dest, _tlc_ap_request(r.request), TLC_ERROR_RANK[r.error]) if r.error != NO_ERROR else
                        (10, r.dest, r.leader, r.leader_epoch, r.partition_epoch, _tlc_set(r.replicas),
                         _tlc_set(r.isr), _tlc_ap_request(r.request))),
    # type, dest, source, broker_epoch, partition: [leader_epoch, fetch_offset, last_fetched_epoch]
    FETCH_REQ: lambda r: (r.dest, r.source, r.broker_epoch, r.leader_epoch, r.fetch_offset, r.last_fetched_epoch),
    FETCH_RESP: _tlc_fetch_response,
}


def tlc_order(model):
    """`Spec.tlc_order`: per action, its place among TLC's actions and, for a rule that receives a
    message, the message's type (its slot is replaced by the message's key, state by state)."""
    if model.config.kip966:
        raise BadInput("--view-keep first: TLC's order is declared for the v3.5 specification only (kip966's "
                       "specification interns its names in another order)")
    after_brokers = model.config.broker_count + 1
    places = []
    for action, rule in zip(model.actions, model.action_rule):
        params = dict(action.params)
        b = params.pop("b", after_brokers)
        kind = RECEIVED.get(action.rule)
        slot = params.pop("m") if kind is not None else None
        places.append(((b, rule), kind, slot, tuple(params.values())))

    def order(state: State, successors: list) -> list:
        def key(entry):
            place, kind, slot, rest = places[entry[0]]
            return place, () if kind is None else TLC_MESSAGE_KEY[kind](state.messages[kind][slot]), rest

        return sorted(successors, key=key)

    return order
