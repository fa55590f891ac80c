"""The replication model's protocol logic that its rules share (no rules here), in the order of the
TLA+ specification of kafka-tlaplus v3.5 it follows: the parameter domains, message passing (the TLA+
Send, Discard and Reply), the functions of its `v3_5_functions` module and of the actions' own helpers,
each under its TLA+ name (the replica's, then the controller's, then the fetchers' and role changes'), the
joint disruption budget, and the initial state (the TLA+ `Init`)."""

from __future__ import annotations

import bisect
import functools

from harness.bitset import bit, members, size
from specs.replication.state import (BLANK_FETCHER, BLANK_METADATA, BLANK_PEER, EMPTY_DATA, EMPTY_NETWORK, FENCED,
                                     FENCED_LEADER_EPOCH, FETCH_REQ, FETCH_RESP, FOLLOWER, INELIGIBLE_REPLICA,
                                     INT_MAX, LEADER, NIL, NO_ERROR, NO_LEADER, NO_PENDING_AP, NO_ROLE,
                                     PENDING_BLANK_FETCHER, RUNNING, UNFENCED, AlterPartitionRequest, BrokerState,
                                     Counters, Fetcher, Network, PartitionChange, PartitionData, Registration,
                                     ReplicaMetadata, State)


# ------------------------------------------------------------------------------ parameter domains


def brokers(cfg):
    return range(1, cfg.broker_count + 1)


def all_brokers(cfg) -> int:
    return sum(bit(b) for b in brokers(cfg))


def restarts(cfg) -> bool:
    return cfg.clean_shutdown_limit + cfg.unclean_shutdown_limit > 0


def message_slots(cfg):
    return range(cfg.message_bound)


def metadata_offsets(cfg):
    return range(1, cfg.metadata_log_bound + 1)


def leader_choices(cfg):
    """0: the controller has no leader to choose; else the candidate it picks."""
    return range(0, cfg.broker_count + 1)


def broker_sets(cfg):
    return range(0, 1 << (cfg.broker_count + 1), 2)


def shrinks_allowed(cfg):
    """The followers a leader may treat as timed out: none once no shrink is allowed at all."""
    return broker_sets(cfg) if cfg.leader_shrink_isr_limit else (0,)


def value_ids(cfg):
    return range(1, cfg.values + 1)


# ------------------------------------------------------------------------------ message passing


def put(t: tuple, b: int, v) -> tuple:
    """`t` with the entry of broker (or 1-based position) `b` replaced by `v`."""
    entries = list(t)
    entries[b - 1] = v
    return tuple(entries)


_network = functools.partial(tuple.__new__, Network)  # Network(*parts) without the per-field arguments


def send(net: Network, kind: int, m) -> Network:
    """The network with message `m` added (a set: a message already present stays once)."""
    msgs = net[kind]
    i = bisect.bisect_left(msgs, m)
    if i < len(msgs) and msgs[i] == m:
        return net
    parts = list(net)  # one list, where slicing the network and joining the slices took four tuples
    parts[kind] = msgs[:i] + (m,) + msgs[i:]
    return _network(parts)


def remove(net: Network, kind: int, m) -> Network:
    msgs = net[kind]
    i = msgs.index(m)
    parts = list(net)
    parts[kind] = msgs[:i] + msgs[i + 1:]
    return _network(parts)


def discard(s: State, kind: int, m) -> dict:
    """The TLA+ Discard: `m` leaves the bag and joins the processed messages."""
    return {"messages": remove(s.messages, kind, m), "messages_discard": send(s.messages_discard, kind, m)}


def reply(s: State, kind: int, m, reply_kind: int, r) -> dict:
    """The TLA+ Reply: discard `m` and send `r`."""
    return {"messages": send(remove(s.messages, kind, m), reply_kind, r),
            "messages_discard": send(s.messages_discard, kind, m)}


# ------------------------------------------------------------------------- replica functions


def last_epoch(log: tuple) -> int:
    return log[-1].epoch if log else 0


def pending_ap_response(s: State, b: int) -> bool:
    """The TLA+ PendingAlterPartitionResponse."""
    return s.partition_pending_ap[b - 1].epoch > s.partition_metadata[b - 1].partition_epoch


def reassignment_in_progress(md: PartitionChange) -> bool:
    return bool(md.adding or md.removing)


def commit_offset(s: State, b: int, maximal_isr: int, leo: int, replica_state: tuple) -> int:
    """The TLA+ GetCommitOffset: the highest offset below `leo` that every Maximal ISR member other
    than the leader has fetched past (0: none). Committed offsets are downward closed, so it is the
    least of those followers' LEOs, less one."""
    if leo == 1:  # an empty log
        return 0
    highest = leo - 1
    for b1 in members(maximal_isr):
        if b1 != b:
            follower_leo = replica_state[b1 - 1].leo
            if follower_leo == NIL:
                return 0
            highest = min(highest, follower_leo - 1)
    return max(highest, 0)


def acks_for(s: State, b: int, log: tuple, lower: int, higher: int) -> int:
    """The TLA+ SendAcksFor's value set: unacknowledged values written at offsets lower..higher of
    `log`, at or above the replica's floor leader offset. Evaluated as TLC does, value by value and
    offset by offset up to the first match, so an offset beyond the log is an error only if reached."""
    floor = s.aux_flo[b - 1]
    out = 0
    for v in members(s.inv_sent & ~s.inv_pos_acked & ~s.inv_neg_acked):
        for offset in range(lower, higher + 1):
            if offset > len(log):
                raise RuntimeError(f"broker {b}: acknowledging offset {offset} beyond its log (TLC fails here)")
            if log[offset - 1].value == v and offset >= floor:
                out |= bit(v)
                break
    return out


def hwm_history(s: State, b: int, log: tuple, old_hwm: int, new_hwm: int, positive: bool) -> dict:
    """The TLA+ UpdateHwmInvariantVars: acknowledge, move the true HWM, record what consumers read."""
    if positive:
        changes = {"inv_pos_acked": s.inv_pos_acked | acks_for(s, b, log, old_hwm, new_hwm - 1)}
    else:
        changes = {"inv_neg_acked": s.inv_neg_acked | acks_for(s, b, log, old_hwm, s.partition_data[b - 1].leo - 1)}
    if new_hwm > s.inv_true_hwm:
        if new_hwm - 1 > len(log):
            raise RuntimeError(f"broker {b}: consuming beyond its log (TLC fails here)")
        changes["inv_true_hwm"] = new_hwm
        changes["inv_consumed"] = s.inv_consumed + log[s.inv_true_hwm - 1:new_hwm - 1]
    return changes


def may_advance_hwm(cfg, isr: int) -> bool:
    """KIP-966's SafeToAdvanceHwm: the HWM moves only while the replica's ISR has MinISR members (always in v3.5)."""
    return not cfg.kip966 or size(isr) >= cfg.min_isr


def maybe_advance_hwm(cfg, s: State, b: int, isr: int, new_hwm: int, positive: bool,
                      data: PartitionData | None = None) -> dict:
    """The TLA+ MaybeAdvanceHighWatermark (`data`: the replica's data to update, if not its current)."""
    current = s.partition_data[b - 1]
    if new_hwm <= current.hwm or not may_advance_hwm(cfg, isr):
        return {}
    data = data or current
    changes = hwm_history(s, b, current.log, current.hwm, new_hwm, positive)
    changes["partition_data"] = put(s.partition_data, b, data._replace(hwm=new_hwm))
    return changes


def hwm_on_partition_change(cfg, s: State, b: int, md: ReplicaMetadata) -> dict:
    """The TLA+ MaybeUpdateHwmAndAckOnPartitionChange."""
    new_hwm = commit_offset(s, b, md.maximal_isr, s.partition_data[b - 1].leo, s.partition_replica_state[b - 1]) + 1
    return maybe_advance_hwm(cfg, s, b, md.isr, new_hwm, size(md.maximal_isr) >= cfg.min_isr)


def fail_pending_writes(s: State, b: int) -> dict:
    """The TLA+ FailPendingWrites: negatively acknowledge what lies at or above the HWM."""
    data = s.partition_data[b - 1]
    return {"inv_neg_acked": s.inv_neg_acked | acks_for(s, b, data.log, data.hwm, data.leo - 1)}


def last_offset_for_epoch(s: State, b: int, req_epoch: int, is_leader: bool) -> tuple[int, int]:
    """The TLA+ LastOffsetForEpoch: (epoch, exclusive end offset) of the highest epoch <= `req_epoch`
    in the replica's log (kafka-tlaplus, v3.5, ch. 3)."""
    data = s.partition_data[b - 1]
    log = data.log
    leader_epoch = s.partition_metadata[b - 1].leader_epoch
    if not log or req_epoch == log[-1].epoch or (is_leader and leader_epoch == req_epoch):
        return req_epoch, data.leo
    epochs = [r.epoch for r in log]
    higher = None
    for o, e in enumerate(epochs, 1):  # the first offset of the lowest epoch above req_epoch
        if e > req_epoch and not any(o2 < o and req_epoch < e2 < e for o2, e2 in enumerate(epochs, 1)):
            higher = o
            break
    if higher is None:
        if not (is_leader and leader_epoch > req_epoch):
            raise RuntimeError(f"broker {b}: no end offset for epoch {req_epoch} (TLC fails here)")
        higher = data.leo
    floor = [e for e in epochs if e <= req_epoch]
    return (max(floor) if floor else req_epoch), higher


def converged(s: State, leader: int, follower: int) -> bool:
    """The TLA+ Converged: the leader knows the follower has all it has, in this broker epoch."""
    ld, fd = s.partition_data[leader - 1], s.partition_data[follower - 1]
    peer = s.partition_replica_state[leader - 1][follower - 1]
    return (ld.leo == fd.leo and ld.hwm == fd.hwm and peer.leo == fd.leo
            and peer.broker_epoch == s.broker_state[follower - 1].broker_epoch)


# ------------------------------------------------------------------------ controller functions


def apply_partition_change(cfg, s: State, md: PartitionChange) -> dict:
    """The TLA+ ApplyPartitionChange: the new partition state, appended to the metadata log."""
    if len(s.con_metadata_log) >= cfg.metadata_log_bound:
        raise RuntimeError(f"the metadata log outgrows {cfg.metadata_log_bound} records: raise metadata_log_bound")
    if cfg.kip966:  # ELR members that leave the ELR (not the replicas) join the last known ELR, until the ISR recovers
        old = s.con_partition_metadata
        md = md._replace(last_known_elr=0 if size(md.isr) >= cfg.min_isr
                         else old.last_known_elr | (md.replicas & old.elr & ~md.elr))
    return {"con_partition_metadata": md, "con_metadata_log": s.con_metadata_log + (md,)}


def partition_on_broker_change(cfg, s: State, new_isr: int, new_unfenced: int, choice: int) -> dict | None:
    """The TLA+ MaybeUpdatePartitionOnBrokerChange. `choice` is the new leader where the controller
    picks one among several candidates, and 0 where it has no choice; None: `choice` is not a
    possible outcome."""
    md = s.con_partition_metadata
    candidates = new_isr & new_unfenced
    keeps_leader = ((md.leader == NO_LEADER and not candidates)
                    or (md.leader != NO_LEADER and new_isr >> md.leader & 1 and new_unfenced >> md.leader & 1))
    if keeps_leader:
        if choice:
            return None
        if new_isr == md.isr:
            return {}
        return apply_partition_change(cfg, s, md._replace(isr=new_isr, partition_epoch=md.partition_epoch + 1))
    if candidates:
        if not candidates >> choice & 1 or not choice:
            return None
        leader = choice
    elif choice:
        return None
    else:
        leader = NO_LEADER
    return apply_partition_change(cfg, s, md._replace(leader=leader, isr=new_isr, leader_epoch=md.leader_epoch + 1,
                                                      partition_epoch=md.partition_epoch + 1))


def update_elr(cfg, md: PartitionChange, proposed_isr: int, replicas: int) -> int:
    """KIP-966's UpdateElr: empty once the ISR has MinISR members, else the ELR (within the replicas) and
    the replicas the ISR just lost."""
    if size(proposed_isr) >= cfg.min_isr:
        return 0
    return (md.elr & replicas) | (md.isr & replicas & ~proposed_isr)


def elr_partition_change(cfg, s: State, new_isr: int, new_elr: int, new_unfenced: int, choice: int) -> dict | None:
    """KIP-966's MaybeUpdatePartitionOnBrokerChange: a leader from the ISR, else an unfenced ELR member
    (who moves to the ISR), else none."""
    md = s.con_partition_metadata
    elr_candidates = new_elr & new_unfenced
    keeps_leader = ((md.leader == NO_LEADER and not new_isr and not elr_candidates)
                    or (md.leader != NO_LEADER and new_isr >> md.leader & 1))
    if keeps_leader:
        if choice:
            return None
        if new_isr == md.isr and new_elr == md.elr:
            return {}
        return apply_partition_change(cfg, s, md._replace(isr=new_isr, elr=new_elr,
                                                          partition_epoch=md.partition_epoch + 1))
    if new_isr or elr_candidates:
        pool = new_isr or elr_candidates
        if not choice or not pool >> choice & 1:
            return None
        if not new_isr:
            new_isr, new_elr = bit(choice), new_elr & ~bit(choice)
        leader = choice
    elif choice:
        return None
    else:
        leader = NO_LEADER
    return apply_partition_change(cfg, s, md._replace(leader=leader, isr=new_isr, elr=new_elr,
                                                      leader_epoch=md.leader_epoch + 1,
                                                      partition_epoch=md.partition_epoch + 1))


def handle_broker_fenced(cfg, s: State, b: int, choice: int) -> dict | None:
    """The TLA+ HandleBrokerFenced: out of the ISR (v3.5: which keeps at least one member; kip966: which
    may empty, the ELR taking up the slack) and the leadership."""
    md = s.con_partition_metadata
    isr = md.isr
    new_unfenced = s.con_unfenced & ~bit(b)
    if cfg.kip966:
        new_isr = isr & ~bit(b)
        changes = elr_partition_change(cfg, s, new_isr, update_elr(cfg, md, new_isr, md.replicas), new_unfenced,
                                       choice)
    else:
        new_isr = isr if size(isr) == 1 else isr & ~bit(b)
        changes = partition_on_broker_change(cfg, s, new_isr, new_unfenced, choice)
    if changes is None:
        return None
    changes["con_unfenced"] = new_unfenced
    return changes


def handle_broker_unfenced(cfg, s: State, b: int, choice: int) -> dict | None:
    """The TLA+ HandleBrokerUnfenced: a partition without a leader may get one."""
    new_unfenced = s.con_unfenced | bit(b)
    md = s.con_partition_metadata
    if md.leader == NO_LEADER:
        changes = (elr_partition_change(cfg, s, md.isr, md.elr, new_unfenced, choice) if cfg.kip966
                   else partition_on_broker_change(cfg, s, md.isr, new_unfenced, choice))
        if changes is None:
            return None
    elif choice:
        return None
    else:
        changes = {}
    changes["con_unfenced"] = new_unfenced
    return changes


def process_unclean_broker(cfg, s: State, b: int, choice: int) -> dict | None:
    """KIP-966's ProcessUncleanBroker: a broker that registers without a kept broker epoch may have lost
    data: out of the ISR and the ELR, whatever MinISR, and unfenced."""
    md = s.con_partition_metadata
    new_unfenced = s.con_unfenced | bit(b)
    changes = elr_partition_change(cfg, s, md.isr & ~bit(b), md.elr & ~bit(b), new_unfenced, choice)
    if changes is None:
        return None
    changes["con_unfenced"] = new_unfenced
    return changes


def validate_alter_partition(cfg, s: State, b: int, m: AlterPartitionRequest) -> int:
    """The TLA+ ValidateAlterPartitionRequest: NO_ERROR, or the error the controller answers."""
    md = s.con_partition_metadata
    reg = s.con_broker_reg
    if not (b == md.leader and m.broker_epoch == reg[b - 1].broker_epoch
            and (m.partition_epoch == md.partition_epoch or cfg.mutated.ap_ignores_partition_epoch)):
        return FENCED_LEADER_EPOCH
    for b1 in members(m.isr):
        epoch = m.isr_and_epochs[b1 - 1]
        if reg[b1 - 1].status != UNFENCED:
            return INELIGIBLE_REPLICA
        if not (epoch == 0 or reg[b1 - 1].broker_epoch == epoch or cfg.mutated.ap_ignores_broker_epoch):
            return INELIGIBLE_REPLICA
    return NO_ERROR


def new_leader_ok(md: PartitionChange, new_isr: int, leader: int) -> bool:
    """A reassignment or an ISR change keeps the leader if it stays in the ISR, else any new ISR member may lead."""
    if md.leader != NO_LEADER and new_isr >> md.leader & 1:
        return leader == md.leader
    return leader != NO_LEADER and bool(new_isr >> leader & 1)


# ------------------------------------------------------------------- fetchers and role changes


def without_partition(f: Fetcher) -> Fetcher:
    """The fetcher once the partition is removed from it: blank, but a pending response stays pending."""
    return PENDING_BLANK_FETCHER if f.pending_response else BLANK_FETCHER


def remove_partition_from_fetchers(s: State, b: int) -> tuple:
    """The TLA+ RemovePartitionFromFetchers (pending responses stay pending)."""
    return put(s.broker_fetchers, b, tuple(map(without_partition, s.broker_fetchers[b - 1])))


def add_partition_to_fetcher(cfg, s: State, b: int, leader: int, leader_epoch: int) -> tuple:
    """The TLA+ AddPartitionToFetcher: on a new leader epoch, or if the leader's fetcher lacks the
    partition, fetch from the leader at the log end (and from no one else)."""
    fetchers = s.broker_fetchers[b - 1]
    new_epoch = leader_epoch > s.partition_metadata[b - 1].leader_epoch and not cfg.mutated.fetcher_kept_on_new_epoch
    if not new_epoch and fetchers[leader - 1].added:
        return s.broker_fetchers
    data = s.partition_data[b - 1]
    row = list(map(without_partition, fetchers))
    row[leader - 1] = Fetcher(True, data.leo, last_epoch(data.log), False, fetchers[leader - 1].pending_response)
    return put(s.broker_fetchers, b, tuple(row))


def renounce_leadership(cfg, s: State, b: int, new_md: ReplicaMetadata) -> dict:
    """The TLA+ EnsureLeadershipRenounced: fail pending writes if the replica cannot commit them, forget
    followers, the pending AlterPartition and the floor leader offset."""
    data = s.partition_data[b - 1]
    changes = {}
    if data.hwm < data.leo and (size(new_md.isr) < cfg.min_isr or b != new_md.leader):
        changes = fail_pending_writes(s, b)
    changes["partition_replica_state"] = put(s.partition_replica_state, b, (BLANK_PEER,) * cfg.broker_count)
    changes["partition_pending_ap"] = put(s.partition_pending_ap, b, NO_PENDING_AP)
    changes["aux_flo"] = put(s.aux_flo, b, INT_MAX)
    return changes


def partition_needs_action(s: State, b: int, offset: int) -> bool:
    """The TLA+ PartitionNeedsAction: the record matters to this replica."""
    md = s.partition_metadata[b - 1]
    record = s.con_metadata_log[offset - 1]
    if s.partition_status[b - 1] == LEADER:
        return True
    if md.replicas >> b & 1:
        return record.leader_epoch > md.leader_epoch
    return bool(record.replicas >> b & 1)


def drop_fetch_sessions(cfg, s: State, b: int) -> dict:
    """The TLA+ DropFetchSessions: fetches to and from a stopping broker are lost; its own fetchers
    are blank; a peer waiting on it gives up (and delays, if it still fetches from it)."""
    net, gone = s.messages, s.messages_discard
    for kind in (FETCH_REQ, FETCH_RESP):
        dropped = tuple(m for m in net[kind] if m.dest == b or m.source == b)
        for m in dropped:
            net = remove(net, kind, m)
            gone = send(gone, kind, m)
    fetchers = []
    for b1, row in enumerate(s.broker_fetchers, 1):
        if b1 == b:
            fetchers.append((BLANK_FETCHER,) * cfg.broker_count)
            continue
        f = row[b - 1]
        if f.pending_response:
            f = f._replace(pending_response=False, delayed=True) if f.added else f._replace(pending_response=False)
            row = put(row, b, f)
        fetchers.append(row)
    return {"messages": net, "messages_discard": gone, "broker_fetchers": tuple(fetchers)}


# ------------------------------------------------------------------------------------ budgets


def may_disrupt(cfg, s: State) -> bool:
    """The joint limit on shutdowns, fencings and shrinks (if the config sets one) leaves room for another."""
    c = s.aux_ctrs
    spent = c.clean_shutdown_ctr + c.unclean_shutdown_ctr + c.fence_broker_ctr + c.leader_shrink_isr_ctr
    return cfg.max_disruptions < 0 or spent < cfg.max_disruptions


# ------------------------------------------------------------------------------------ Init


def init_state(cfg) -> State:
    n = cfg.broker_count
    replicas = sum(bit(b) for b in range(1, cfg.init_replication_factor + 1))
    isr = sum(bit(b) for b in range(1, cfg.init_isr_size + 1))
    part_epoch = 1 if cfg.init_isr_size == cfg.init_replication_factor else 2
    record = PartitionChange(replicas, isr, 1, 1, part_epoch, 0, 0)
    unfenced = all_brokers(cfg) & ~(replicas & ~isr)
    follower = Fetcher(True, 1, 0, False, False)

    def metadata(b):
        if not replicas >> b & 1:
            return BLANK_METADATA
        if isr >> b & 1:
            return ReplicaMetadata(replicas, isr, isr, 1, 1, part_epoch)
        return ReplicaMetadata(replicas, replicas, replicas, 1, 1, 1)

    return State(
        con_unfenced=unfenced,
        con_broker_reg=tuple(Registration(UNFENCED if unfenced >> b & 1 else FENCED, b, b) for b in brokers(cfg)),
        con_metadata_log=(record,),
        con_partition_metadata=record,
        broker_state=tuple(BrokerState(RUNNING, b, b, True) for b in brokers(cfg)),
        broker_fetchers=tuple(tuple(follower if b != 1 and b1 == 1 else BLANK_FETCHER for b1 in brokers(cfg))
                              for b in brokers(cfg)),
        broker_metadata_log=tuple((record,) if unfenced >> b & 1 else () for b in brokers(cfg)),
        partition_status=tuple(LEADER if b == 1 else FOLLOWER if replicas >> b & 1 else NO_ROLE
                               for b in brokers(cfg)),
        partition_metadata=tuple(metadata(b) for b in brokers(cfg)),
        partition_data=(EMPTY_DATA,) * n,
        partition_leso=tuple(1 if b == 1 else NIL for b in brokers(cfg)),
        partition_replica_state=((BLANK_PEER,) * n,) * n,
        partition_pending_ap=(NO_PENDING_AP,) * n,
        messages=EMPTY_NETWORK,
        inv_sent=0, inv_pos_acked=0, inv_neg_acked=0, inv_true_hwm=1, inv_consumed=(),
        messages_discard=EMPTY_NETWORK,
        aux_broker_epoch=n,
        aux_ctrs=Counters(n + 1, 0, 0, 0, 0, 0),
        aux_flo=(INT_MAX,) * n,
    )

