"""The brokers' rules: a broker's start and registration, and each partition replica learning the metadata
log (the TLA+ actions whose WHO is Broker or Broker/Partition replica; kafka-tlaplus, v3.5, ch. 2 and 8).
The sub-actions of ReceiveMetadataUpdate follow it under their TLA+ names."""

from __future__ import annotations

from specs.replication import spec
from specs.replication.logic import (add_partition_to_fetcher, brokers, discard, hwm_on_partition_change,
                                     message_slots, metadata_offsets, partition_needs_action, put,
                                     remove_partition_from_fetchers, renounce_leadership, restarts, send)
from specs.replication.speed import in_flight, unlearned_offsets
from specs.replication.state import (BLANK_METADATA, BLANK_PEER, EMPTY_DATA, FOLLOWER, LEADER, NIL, NO_LEADER,
                                     NO_PENDING_AP, NO_ROLE, OFFLINE_CLEAN, OFFLINE_DIRTY, REG_REQ, REG_RESP, RUNNING,
                                     STARTING, BrokerState, RegisterBrokerRequest, ReplicaMetadata, State)


@spec.rule(b=brokers, fair=True, applies=restarts)
def BrokerStart(cfg, s: State, b):
    """Broker: a stopped broker starts and asks the controller to register it (kafka-tlaplus, v3.5, ch. 8).

    Who acts: broker b (the TLA+ WHO: Broker).
    Enabled when: it is offline, after a clean or an unclean shutdown.
    Next: it is STARTING under a new incarnation id (kip966: with the broker epoch it kept), its replica has
    no role, and a RegisterBrokerRequest with that incarnation id is in flight."""
    if s.broker_state[b - 1].status not in (OFFLINE_CLEAN, OFFLINE_DIRTY):
        return None
    incarnation = s.aux_ctrs.incarn_ctr
    kept_epoch = s.broker_state[b - 1].broker_epoch if cfg.kip966 else 0
    return s._replace(
        broker_state=put(s.broker_state, b, BrokerState(STARTING, kept_epoch, incarnation, False)),
        partition_status=put(s.partition_status, b, NO_ROLE),
        messages=send(s.messages, REG_REQ, RegisterBrokerRequest(b, incarnation, kept_epoch)),
        aux_ctrs=s.aux_ctrs._replace(incarn_ctr=incarnation + 1))


@spec.rule(b=brokers, m=message_slots, fair=True, applies=restarts,
           candidates=in_flight(REG_RESP, 0))
def ReceiveBrokerRegResponse(cfg, s: State, b, m):
    """Broker: its registration is accepted and it runs.

    Who acts: broker b, STARTING and not yet registered (the TLA+ WHO: Broker).
    Enabled when: a RegisterBrokerResponse to b for its current incarnation id is in flight.
    Next: b is RUNNING with the broker epoch the controller gave it, caught up with the metadata log up to
    (not including) the record of its registration's time, its partition metadata blank; the response is
    processed."""
    msgs = s.messages[REG_RESP]
    if m >= len(msgs):
        return None
    msg = msgs[m]
    if msg.dest != b:
        return None
    bs = s.broker_state[b - 1]
    if bs.status != STARTING or bs.registered:
        return None
    if bs.incarnation_id != msg.incarnation_id and not cfg.mutated.reg_response_ignores_incarnation:
        return None
    caught_up = s.con_metadata_log[:msg.metadata_offset - 1] if msg.metadata_offset > 1 else ()
    return s._replace(
        broker_state=put(s.broker_state, b, BrokerState(RUNNING, msg.broker_epoch, bs.incarnation_id, True)),
        broker_metadata_log=put(s.broker_metadata_log, b, caught_up),
        partition_metadata=put(s.partition_metadata, b, BLANK_METADATA),
        **discard(s, REG_RESP, msg))


@spec.rule(b=brokers, offset=metadata_offsets, fair=True, candidates=unlearned_offsets)
def ReceiveMetadataUpdate(cfg, s: State, b, offset):
    """Replica: learns the metadata log up to a PartitionChange record that concerns it, and acts on it (kafka-tlaplus,
    v3.5, ch. 2).

    Who acts: the partition replica at broker b (the TLA+ WHO: Broker/Partition replica).
    Enabled when: b is up and registered, and the record at `offset`, past b's copy of the metadata log,
    concerns its replica (the TLA+ PartitionNeedsAction).
    Next: b's metadata log reaches `offset`. If the record's partition epoch is newer than b's, the replica
    takes its metadata and stays leader, becomes leader or follower in a new leader epoch, stays follower,
    waits for a leader, or deletes its replica (the sub-actions below)."""
    if offset > len(s.con_metadata_log) or offset <= len(s.broker_metadata_log[b - 1]):
        return None
    bs = s.broker_state[b - 1]
    if bs.status in (OFFLINE_CLEAN, OFFLINE_DIRTY) or not bs.registered or not partition_needs_action(s, b, offset):
        return None
    record = s.con_metadata_log[offset - 1]
    changes = {"broker_metadata_log": put(s.broker_metadata_log, b, s.con_metadata_log[:offset])}
    curr = s.partition_metadata[b - 1]
    new = ReplicaMetadata(record.replicas, record.isr, record.isr, record.leader, record.leader_epoch,
                          record.partition_epoch)
    if new.partition_epoch <= curr.partition_epoch:
        return s._replace(**changes)  # MetadataNoOp
    in_new = bool(new.replicas >> b & 1)
    changes["partition_metadata"] = put(s.partition_metadata, b, new if in_new else BLANK_METADATA)
    is_new_leader = s.partition_status[b - 1] != LEADER and record.leader == b
    if curr.replicas >> b & 1 and not in_new:
        sub = delete_partition(cfg, s, b, new)
    elif curr.leader == b and record.leader == b:
        sub = (remain_leader(cfg, s, b, new) if curr.leader_epoch == new.leader_epoch
               else become_leader_in_new_epoch(cfg, s, b, new, is_new_leader))
    elif curr.leader != b and record.leader == b:
        sub = become_leader_in_new_epoch(cfg, s, b, new, is_new_leader)
    elif in_new and record.leader != NO_LEADER:
        if new.leader_epoch == curr.leader_epoch and curr.leader != b and new.leader != b:
            sub = {}  # RemainFollower
        else:
            sub = become_follower_in_new_epoch(cfg, s, b, new)
    elif in_new:
        sub = wait_for_leader_change(cfg, s, b, new)
    else:
        return None
    changes.update(sub)
    return s._replace(**changes)


def remain_leader(cfg, s: State, b: int, new: ReplicaMetadata) -> dict:
    """Sub-action RemainLeader: the HWM may move with the new ISR; a pending AlterPartition this
    change answers is forgotten."""
    changes = hwm_on_partition_change(cfg, s, b, new)
    if new.partition_epoch >= s.partition_pending_ap[b - 1].epoch:
        changes["partition_pending_ap"] = put(s.partition_pending_ap, b, NO_PENDING_AP)
    return changes


def become_leader_in_new_epoch(cfg, s: State, b: int, new: ReplicaMetadata, is_new_leader: bool) -> dict:
    """Sub-action BecomeLeaderInNewEpoch: lead from the log end (the LESO); forget every follower (a
    new leader) or those outside the ISR (a re-elected one); stop fetching."""
    changes = hwm_on_partition_change(cfg, s, b, new)
    changes["partition_status"] = put(s.partition_status, b, LEADER)
    changes["partition_leso"] = put(s.partition_leso, b, s.partition_data[b - 1].leo)
    if is_new_leader:
        changes["partition_replica_state"] = put(s.partition_replica_state, b, (BLANK_PEER,) * cfg.broker_count)
    elif not cfg.mutated.leader_keeps_stale_follower_state:
        changes["partition_replica_state"] = put(s.partition_replica_state, b, tuple(
            peer if new.isr >> b1 & 1 else BLANK_PEER for b1, peer in enumerate(s.partition_replica_state[b - 1], 1)))
    changes["partition_pending_ap"] = put(s.partition_pending_ap, b, NO_PENDING_AP)
    changes["broker_fetchers"] = remove_partition_from_fetchers(s, b)
    return changes


def become_follower_in_new_epoch(cfg, s: State, b: int, new: ReplicaMetadata) -> dict:
    """Sub-action BecomeFollowerInNewEpoch: fetch from the new leader (truncation waits for the first
    fetch response) and renounce any leadership."""
    changes = renounce_leadership(cfg, s, b, new)
    changes["partition_status"] = put(s.partition_status, b, FOLLOWER)
    changes["broker_fetchers"] = add_partition_to_fetcher(cfg, s, b, new.leader, new.leader_epoch)
    changes["partition_leso"] = put(s.partition_leso, b, NIL)
    return changes


def wait_for_leader_change(cfg, s: State, b: int, new: ReplicaMetadata) -> dict:
    """Sub-action WaitForLeaderChange: no leader; stop fetching and renounce any leadership."""
    changes = renounce_leadership(cfg, s, b, new)
    changes["partition_status"] = put(s.partition_status, b, NO_ROLE)
    changes["broker_fetchers"] = remove_partition_from_fetchers(s, b)
    changes["partition_leso"] = put(s.partition_leso, b, NIL)
    return changes


def delete_partition(cfg, s: State, b: int, new: ReplicaMetadata) -> dict:
    """Sub-action DeletePartition: removed from the replicas, the replica deletes its log."""
    changes = wait_for_leader_change(cfg, s, b, new)
    changes["partition_data"] = put(s.partition_data, b, EMPTY_DATA)
    return changes
