"""Kafka data replication with the KRaft controller, message by message (Kafka 3.5).

State for state the TLA+ specification `kafka_replication_v3_5` of the public repository
Vanlightly/kafka-tlaplus (`kafka_data_replication/kraft/v3.5/`, MIT licensed), written again in this
project's style. Its protocol description is cited as (kafka-tlaplus, v3.5), ch. N §N.x.

Who acts: the controller (broker registrations, fencing and unfencing, AlterPartition requests,
reassignments; it appends PartitionChange records to the metadata log), brokers (start, register,
shut down) and partition replicas (learn metadata, lead, follow by fetching, propose ISR changes).
One partition; brokers 1..N; producers write each value of `values` at most once.

Correspondence with the TLA+ specification (docs/ARCHITECTURE.md, "The replication model", has the
full map):
* every TLA+ variable is a state field of the same name; `messages` and `messages_discard` (the bag
  and the processed messages) are each a `Network` record of six sets, one per message type;
* every disjunct of `Next` is one rule of the same name, declared in `Next`'s order; the TLA+
  existential choices (which message, which leader candidate, which followers time out, which
  reassignment) are rule parameters;
* the TLA+ `view` is this spec's view: the search tells states apart by every field but the
  auxiliary counters (`aux_broker_epoch`, `aux_ctrs`, `aux_flo`) and `messages_discard`, which the
  state layout puts last;
* `Nil` is 0 wherever the TLA+ value is a number or a broker (a LEO, a LESO, a broker id), an empty
  sequence where it is a message, and `added = False` for a fetcher without the partition;
  offsets are 1-based as in the TLA+ specification, so states read the same as TLC's.
* A message set is a sorted tuple without repeats, so equal sets are equal tuples.
"""

from __future__ import annotations

import bisect
import functools
from itertools import count
from operator import itemgetter
from dataclasses import dataclass
from typing import Annotated, NamedTuple

from harness.bitset import as_set, bit, members, size
from harness.errors import BadInput
from harness.itf import Bool, ById, Enum, IdSet, Int, OptId, Seq
from harness.model import Config, Spec, budget, param, variant
from harness.speed import fast_replace, per_state

MAX_BROKERS = 5
INT_MAX = 10000  # the TLA+ IntMax: aux_flo of a replica with no pending producer acknowledgement
NIL = 0
NO_LEADER = 0

FENCED, UNFENCED = REG_STATUS = Enum("FENCED", "UNFENCED")
OFFLINE_CLEAN, OFFLINE_DIRTY, STARTING, RUNNING = BROKER_STATUS = Enum(
    "OFFLINE_CLEAN", "OFFLINE_DIRTY", "STARTING", "RUNNING")
NO_ROLE, LEADER, FOLLOWER = ROLE = Enum("Nil", "Leader", "Follower")
(NO_ERROR, INELIGIBLE_REPLICA, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH,
 NOT_LEADER_OR_FOLLOWER) = ERROR = Enum("Nil", "IneligibleReplica", "FencedLeaderEpoch", "UnknownLeaderEpoch",
                                        "NotLeaderOrFollower")
VALUE_NAMES = "ABCDEFGH"


@dataclass(frozen=True)
class ReplicationConfig(Config):
    kip966: bool = variant(False, "KIP-966 Eligible Leader Replicas, as kafka-tlaplus kip-966 specifies it: the "
                                  "ELR and last known ELR, an ISR that may be empty, the HWM held while the ISR is "
                                  "below MinISR, the broker epoch kept across a clean shutdown")
    write_commit: str = variant("kafka", "a record written by a leader alone in its Maximal ISR: kafka = committed and "
                                         "acknowledged at once (Kafka's leader advances the HWM on append); tla = as "
                                         "the TLA+ GetCommitOffset, which reads the LEO before the write, so a first "
                                         "record is never committed (TLC's state counts)", ("kafka", "tla"))
    broker_count: int = param(3, "BrokerCount: brokers 1..N", lo=1, hi=MAX_BROKERS)
    init_replication_factor: int = param(3, "InitReplicationFactor: replicas {1..RF} at the start; broker 1 leads",
                                         lo=1, hi=MAX_BROKERS)
    values: int = param(1, "Values: how many distinct values producers write (A, B, ...), each at most once",
                        lo=1, hi=len(VALUE_NAMES))
    min_isr: int = param(2, "MinISR: min.insync.replicas", lo=1, hi=MAX_BROKERS)
    init_isr_size: int = param(2, "InitIsrSize: the initial ISR is {1..InitIsrSize}; the other replicas start "
                                  "out of sync, fenced, with a stale partition epoch", lo=1, hi=MAX_BROKERS)
    clean_shutdown_limit: int = budget(0, "CleanShutdownLimit: clean shutdowns (kip966: NoDataLossShutdownLimit)")
    unclean_shutdown_limit: int = budget(0, "UncleanShutdownLimit: unclean shutdowns, the log is lost (kip966: "
                                            "DataLossShutdownLimit)")
    fence_broker_limit: int = budget(0, "FenceBrokerLimit: times the controller fences a broker at will")
    leader_shrink_isr_limit: int = budget(0, "LeaderShrinkIsrLimit: AlterPartition requests that shrink the ISR")
    reassignment_limit: int = budget(0, "ReassignmentLimit: partition reassignments")
    max_disruptions: int = budget(-1, "clean and unclean shutdowns, fencings and ISR shrinks together, in one run "
                                      "(-1: only the limits above; not in the TLA+ specification: it keeps a config "
                                      "with every kind of fault small enough for the graph engine)", least=-1)
    avoid_last_replica_standing: bool = param(True, "AvoidLastReplicaStanding: no unclean shutdown of the last "
                                                    "ISR member (v3.5 only)")
    metadata_log_bound: int = param(8, "most records the metadata log may hold (a bound of the action table: "
                                        "exceeding it stops the search with an error)", lo=1, hi=64)
    message_bound: int = param(6, "most messages of one type in flight (a bound of the action table: "
                                  "exceeding it stops the search with an error)", lo=1, hi=32)

    def validate(self) -> str | None:
        if not self.init_isr_size <= self.init_replication_factor <= self.broker_count:
            return "InitIsrSize <= InitReplicationFactor <= BrokerCount is required"
        if not self.min_isr <= self.init_isr_size:
            return "MinISR <= InitIsrSize is required"
        return None


# ------------------------------------------------------------------------------------ the state


class LogRecord(NamedTuple):
    """A record of the partition log."""

    epoch: int
    offset: int
    value: Annotated[int, Enum("-", *VALUE_NAMES)]


class PartitionChange(NamedTuple):
    """The controller's partition state, and a PartitionChange record of the metadata log (a full
    snapshot of that state, as in the TLA+ specification)."""

    replicas: Annotated[int, IdSet()]
    isr: Annotated[int, IdSet()]
    leader: Annotated[int, OptId()]
    leader_epoch: int
    partition_epoch: int
    adding: Annotated[int, IdSet()]
    removing: Annotated[int, IdSet()]
    elr: Annotated[int, IdSet()] = 0  # KIP-966 (empty in v3.5)
    last_known_elr: Annotated[int, IdSet()] = 0  # KIP-966 (empty in v3.5)


class Registration(NamedTuple):
    """The controller's registration of one broker."""

    status: Annotated[int, REG_STATUS]
    broker_epoch: int
    incarnation_id: int


class BrokerState(NamedTuple):
    status: Annotated[int, BROKER_STATUS]
    broker_epoch: int
    incarnation_id: int
    registered: Annotated[bool, Bool()]


class Fetcher(NamedTuple):
    """One broker's fetcher towards one peer; `added` false is the TLA+ `partition = Nil`."""

    added: Annotated[bool, Bool()]
    fetch_offset: int
    last_fetched_epoch: int
    delayed: Annotated[bool, Bool()]
    pending_response: Annotated[bool, Bool()]


class ReplicaMetadata(NamedTuple):
    """A replica's view of the partition, with the Maximal ISR it replicates to."""

    replicas: Annotated[int, IdSet()]
    isr: Annotated[int, IdSet()]
    maximal_isr: Annotated[int, IdSet()]
    leader: Annotated[int, OptId()]
    leader_epoch: int
    partition_epoch: int


class PartitionData(NamedTuple):
    log: Annotated[tuple, Seq(LogRecord)]
    hwm: int
    leo: int


class PeerState(NamedTuple):
    """What a leader knows of a follower; leo 0 is Nil (no fetch in this leader epoch)."""

    leo: int
    broker_epoch: int


class RegisterBrokerRequest(NamedTuple):
    broker_id: int
    incarnation_id: int
    broker_epoch: int = 0  # KIP-966: the epoch the broker kept from a clean shutdown (0 in v3.5)


class RegisterBrokerResponse(NamedTuple):
    dest: int
    broker_epoch: int
    incarnation_id: int
    metadata_offset: int


class AlterPartitionRequest(NamedTuple):
    source: int
    isr: Annotated[int, IdSet()]
    isr_and_epochs: Annotated[tuple, ById(Int())]  # 0 for brokers outside `isr`
    leader: int
    leader_epoch: int
    partition_epoch: int
    broker_epoch: int


class PendingAlterPartition(NamedTuple):
    epoch: int
    request: Annotated[tuple, Seq(AlterPartitionRequest)]  # () is Nil


class AlterPartitionResponse(NamedTuple):
    dest: int
    error: Annotated[int, ERROR]
    replicas: Annotated[int, IdSet()]  # the fields below the error are 0 on an error
    isr: Annotated[int, IdSet()]
    leader: Annotated[int, OptId()]
    leader_epoch: int
    partition_epoch: int
    request: AlterPartitionRequest


class FetchRequest(NamedTuple):
    source: int
    dest: int
    broker_epoch: int
    leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int


class FetchResponse(NamedTuple):
    source: int
    dest: int
    error: Annotated[int, ERROR]
    leader_epoch: int
    fetch_offset: int
    diverging: Annotated[bool, Bool()]  # false: the diverging epoch is Nil
    diverging_epoch: int
    diverging_offset: int
    hwm: int
    records: Annotated[tuple, Seq(LogRecord)]


class Network(NamedTuple):
    """A set of messages, by type (each a sorted tuple without repeats)."""

    register_broker_requests: Annotated[tuple, Seq(RegisterBrokerRequest)]
    register_broker_responses: Annotated[tuple, Seq(RegisterBrokerResponse)]
    alter_partition_requests: Annotated[tuple, Seq(AlterPartitionRequest)]
    alter_partition_responses: Annotated[tuple, Seq(AlterPartitionResponse)]
    fetch_requests: Annotated[tuple, Seq(FetchRequest)]
    fetch_responses: Annotated[tuple, Seq(FetchResponse)]


class Counters(NamedTuple):
    """The TLA+ aux_ctrs: the incarnation id source and the state-space limits' counts."""

    incarn_ctr: int
    clean_shutdown_ctr: int
    unclean_shutdown_ctr: int
    fence_broker_ctr: int
    leader_shrink_isr_ctr: int
    reassignment_ctr: int


class State(NamedTuple):
    # controller
    con_unfenced: Annotated[int, IdSet()]
    con_broker_reg: Annotated[tuple, ById(Registration)]
    con_metadata_log: Annotated[tuple, Seq(PartitionChange)]
    con_partition_metadata: PartitionChange
    # brokers
    broker_state: Annotated[tuple, ById(BrokerState)]
    broker_fetchers: Annotated[tuple, ById(ById(Fetcher))]
    broker_metadata_log: Annotated[tuple, ById(Seq(PartitionChange))]
    # partition replicas
    partition_status: Annotated[tuple, ById(ROLE)]
    partition_metadata: Annotated[tuple, ById(ReplicaMetadata)]
    partition_data: Annotated[tuple, ById(PartitionData)]
    partition_leso: Annotated[tuple, ById(Int())]  # 0 is Nil
    partition_replica_state: Annotated[tuple, ById(ById(PeerState))]
    partition_pending_ap: Annotated[tuple, ById(PendingAlterPartition)]
    # the network (the TLA+ NetworkView)
    messages: Network
    # history, for the invariants
    inv_sent: Annotated[int, IdSet()]
    inv_pos_acked: Annotated[int, IdSet()]
    inv_neg_acked: Annotated[int, IdSet()]
    inv_true_hwm: int
    inv_consumed: Annotated[tuple, Seq(LogRecord)]
    # outside the view: processed messages and auxiliary counters
    messages_discard: Network
    aux_broker_epoch: int
    aux_ctrs: Counters
    aux_flo: Annotated[tuple, ById(Int())]


VIEW_FIELDS = State._fields.index("messages_discard")  # the view is the state's first VIEW_FIELDS fields

fast_replace(State, PartitionChange, BrokerState, Fetcher, ReplicaMetadata, PartitionData, Network, Counters,
             Registration)

BLANK_METADATA = ReplicaMetadata(0, 0, 0, NO_LEADER, 0, 0)
BLANK_FETCHER = Fetcher(False, 0, 0, False, False)
PENDING_BLANK_FETCHER = BLANK_FETCHER._replace(pending_response=True)
BLANK_PEER = PeerState(NIL, 0)
NO_PENDING_AP = PendingAlterPartition(0, ())
EMPTY_DATA = PartitionData((), 1, 1)
EMPTY_NETWORK = Network((), (), (), (), (), ())
(REG_REQ, REG_RESP, AP_REQ, AP_RESP, FETCH_REQ, FETCH_RESP) = range(6)


# ------------------------------------------------------------------------------------ helpers


def brokers(cfg):
    return range(1, cfg.broker_count + 1)


def all_brokers(cfg) -> int:
    return sum(bit(b) for b in brokers(cfg))


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


# ---- speed: candidate actions ------------------------------------------------------------------
# A rule's `candidates=` names the argument prefixes that can be enabled, so that a search calls a
# receiving rule once per message in flight instead of once per (broker, slot) pair, and a leader's rule at
# the leaders only: at `fence`, 15.0 rule calls per expanded state became 7.3 (first 300,000 states;
# docs/PERFORMANCE.md, "The replication model"). Each body still checks everything;
# tests/test_replication.py compares every hint with the full enumeration. The hints run on every
# expanded state (about a ninth of the search's instructions at `fence`), so those over brokers are plain
# loops that read each field once (a comprehension is a call of its own).


def in_flight(kind: int, party: int):
    """The messages of this type in flight, as (the broker field `party` of the message names, slot).
    A bag beyond the action table's bound (`message_bound` slots per type) is an error, not a silent
    loss of transitions."""

    def candidates(cfg, s: State) -> list[tuple[int, int]]:
        msgs = s.messages[kind]
        if not msgs:
            return ()
        if len(msgs) > cfg.message_bound:
            raise RuntimeError(f"{len(msgs)} messages of one type are in flight: raise message_bound "
                               f"(now {cfg.message_bound})")
        return [(msg[party], slot) for slot, msg in enumerate(msgs)]

    return candidates


def unlearned_offsets(cfg, s: State):
    """ReceiveMetadataUpdate: each broker's offsets past its own copy of the metadata log whose record
    concerns its replica (PartitionNeedsAction)."""
    end = len(s.con_metadata_log)
    if end > cfg.metadata_log_bound:
        raise RuntimeError(f"the metadata log holds {end} records: raise metadata_log_bound (now {cfg.metadata_log_bound})")
    out = []
    for b, log in zip(count(1), s.broker_metadata_log):
        for offset in range(len(log) + 1, end + 1):  # none for a broker whose log is current
            if partition_needs_action(s, b, offset):
                out.append((b, offset))
    return out


def fetching_from_leader(cfg, s: State):
    """SendFetchRequest: each broker with the leader it knows of, if another broker, and no fetch to it
    awaiting a response."""
    out = []
    for b, md, row in zip(count(1), s.partition_metadata, s.broker_fetchers):
        leader = md.leader
        if leader != NO_LEADER and leader != b and not row[leader - 1].pending_response:
            out.append((b, leader))
    return out


def fenced_and_running(cfg, s: State):
    """UnfenceBroker: the brokers that are fenced and running; the controller chooses a leader (`leader`
    other than 0) only for a partition without one."""
    choice = () if s.con_partition_metadata.leader == NO_LEADER else (0,)
    out = []
    for b, reg, bs in zip(count(1), s.con_broker_reg, s.broker_state):
        if reg.status == FENCED and bs.status == RUNNING:
            out.append((b, *choice))
    return out


@per_state
def _leaders(partition_status: tuple) -> list[tuple[int]]:
    return [(b,) for b, role in enumerate(partition_status, 1) if role == LEADER]


def leading(cfg, s: State):
    """WriteRecordToLeader: the brokers whose replica leads (the rule acts only there). Many states share
    one `partition_status`, so the list is derived once per such tuple in a row."""
    return _leaders(s.partition_status)


def leading_without_pending_request(cfg, s: State):
    """SendAlterPartitionRequest: the brokers whose replica leads and awaits no AlterPartition response."""
    return [b for b in _leaders(s.partition_status) if not pending_ap_response(s, b[0])]



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


# ------------------------------------------------------------------------- controller helpers


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


# ------------------------------------------------------------------------- replica helpers


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


# ------------------------------------------------------------------------------------ init


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


# ------------------------------------------------------------------------------------ the spec

P1 = {"broker_count": 3, "init_replication_factor": 3, "min_isr": 2, "init_isr_size": 2}
RESTART_FAULTS = {"broker_count": 2, "init_replication_factor": 2, "min_isr": 1, "init_isr_size": 1,
                  "clean_shutdown_limit": 1, "unclean_shutdown_limit": 1, "fence_broker_limit": 1}
PRESETS = {
    # the parity configs: TLC's distinct states and depth (with the VIEW) are in docs/ARCHITECTURE.md
    "p1": {**P1, "write_commit": "tla"},
    "p3": {"write_commit": "tla", "broker_count": 3, "init_replication_factor": 2, "min_isr": 1, "init_isr_size": 2,
           "reassignment_limit": 1},
    "fence": {**P1, "fence_broker_limit": 1, "metadata_log_bound": 5},
    "tiny": {"broker_count": 2, "init_replication_factor": 2, "min_isr": 1, "init_isr_size": 1},
    "ci": dict(P1),
    # two brokers through every kind of fault: exhausted clean at 2,576,451 states, depth 51
    "restart_faults": RESTART_FAULTS,
    "nightly": RESTART_FAULTS,
    "restart": {"broker_count": 2, "init_replication_factor": 2, "min_isr": 1, "init_isr_size": 2,
                "clean_shutdown_limit": 1},
    # kafka-tlaplus kip-966's configuration file: one data-loss shutdown and one fence
    "kip966": {**P1, "kip966": True, "unclean_shutdown_limit": 1, "fence_broker_limit": 1},
    "kip966_fence": {**P1, "kip966": True, "fence_broker_limit": 1, "metadata_log_bound": 6},
    "kip966_small": {"kip966": True, "broker_count": 2, "init_replication_factor": 2, "min_isr": 1,
                     "init_isr_size": 2, "fence_broker_limit": 1, "clean_shutdown_limit": 1},
    # MinISR = DataLossShutdownLimit: a committed record can be lost (the known limit of acks=all)
    "kip966_loss": {"kip966": True, "broker_count": 2, "init_replication_factor": 2, "min_isr": 1,
                    "init_isr_size": 2, "unclean_shutdown_limit": 1, "clean_shutdown_limit": 1},
    # Liveness with the graph engine (every rule fires, 17,355 states; docs/ARCHITECTURE.md, "Liveness triage"): one
    # replica on two brokers, a reassignment adding the other, and one disruption of any kind
    "liveness": {"broker_count": 2, "init_replication_factor": 1, "min_isr": 1, "init_isr_size": 1,
                 "reassignment_limit": 1, "clean_shutdown_limit": 1, "unclean_shutdown_limit": 1, "fence_broker_limit": 1,
                 "leader_shrink_isr_limit": 1, "max_disruptions": 1},
    # for random search: every perturbation at once, far beyond exhaustion
    "large": {"broker_count": 4, "init_replication_factor": 3, "min_isr": 2, "init_isr_size": 2, "values": 2,
            "fence_broker_limit": 1, "unclean_shutdown_limit": 1, "clean_shutdown_limit": 1,
            "leader_shrink_isr_limit": 1, "reassignment_limit": 1, "metadata_log_bound": 24, "message_bound": 8},
}

EXPECTED = {"kip966_loss": "NoCommittedRecordLostGlobally: with MinISR 1, the only ISR member acknowledges a "
                          "record and loses it in a data-loss shutdown (the TLA+ configuration file drops this "
                          "invariant when MinISR = DataLossShutdownLimit)"}

# ---- TLC's successor order ----------------------------------------------------------------------
# For a search that keeps the first state found per view, as TLC does (`check --view-keep first`). TLC
# splits `Next` into one action per broker and disjunct (`\E b \in Brokers` outermost, then the disjuncts
# in order, PerformPartitionReassignment last) and generates each action's successors in the order of its
# quantifier domains: integers ascending, SUBSET as a binary counter (the bitmask order of
# `broker_sets`), and the message set in TLC's value order (`TLC_MESSAGE_KEY`).

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


spec = Spec("replication", ReplicationConfig, State, doc=__doc__, presets=PRESETS, default_preset="p1",
            deadlock=False, mutation_preset="fence", expected=EXPECTED, tlc_order=tlc_order,
            view=itemgetter(slice(0, VIEW_FIELDS)),  # the first VIEW_FIELDS fields (a C call: no Python frame)
            hidden=itemgetter(slice(VIEW_FIELDS, None)),  # the rest: the representative is chosen on its hash
            # the graph engine keeps the budget counters too: on the view alone a budgeted fault repeats on a cycle
            liveness_view=lambda s: (s[:VIEW_FIELDS], s.aux_ctrs[1:]))

KAFKA_TLAPLUS = "kafka_replication_v3_5.tla"


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


# ---- broker lifecycle -----------------------------------------------------------------------


@spec.rule(b=brokers, fair=True, applies=restarts)
def BrokerStart(cfg, s: State, b):
    """Broker b: a stopped broker starts (STARTING) and asks the controller to register it under a
    new incarnation id (kafka-tlaplus, v3.5, ch. 8)."""
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
    """Broker b: its registration is accepted; it runs with the broker epoch the controller gave it,
    caught up with the metadata log up to (not including) the record of its registration's time."""
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


# ---- metadata --------------------------------------------------------------------------------


@spec.rule(b=brokers, offset=metadata_offsets, fair=True, candidates=unlearned_offsets)
def ReceiveMetadataUpdate(cfg, s: State, b, offset):
    """Replica at broker b: it learns the metadata log up to `offset`, whose PartitionChange record
    concerns it, and acts on it: it stays leader, becomes leader or follower in a new leader epoch,
    stays follower, waits for a leader, or deletes its replica (kafka-tlaplus, v3.5, ch. 2)."""
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


# ---- AlterPartition ------------------------------------------------------------------------


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


def shrinks_allowed(cfg):
    """The followers a leader may treat as timed out: none once no shrink is allowed at all."""
    return broker_sets(cfg) if cfg.leader_shrink_isr_limit else (0,)


@spec.rule(b=brokers, timed_out=shrinks_allowed, fair=True, candidates=leading_without_pending_request)
def SendAlterPartitionRequest(cfg, s: State, b, timed_out):
    """Partition leader at broker b: it proposes a new ISR (the followers in `timed_out` are dropped,
    while the shrink budget lasts), replicates to the union of both ISRs (the Maximal ISR) until the
    controller answers (kafka-tlaplus, v3.5, ch. 2 §2.4)."""
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
    """Partition leader at broker b: the controller's answer to its pending AlterPartition request;
    it adopts the new partition state, or rolls its Maximal ISR back to the ISR."""
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


# ---- fetching --------------------------------------------------------------------------------


@spec.rule(b=brokers, to=brokers, fair=True, candidates=fetching_from_leader)
def SendFetchRequest(cfg, s: State, b, to):
    """Follower at broker b: it fetches from `to`, whom it believes leads, from its fetch offset with
    the epoch it last fetched (kafka-tlaplus, v3.5, ch. 2 §2.2)."""
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


@spec.rule(b=brokers, m=message_slots, fair=True, candidates=in_flight(FETCH_REQ, 1))
def ReceiveFetchRequest(cfg, s: State, b, m):
    """Broker b: it answers a fetch: an error if it does not lead in the fetcher's leader epoch, the
    diverging epoch if the fetcher's log diverges from its own, else the next record, recording the
    follower's LEO and moving the HWM (kafka-tlaplus, v3.5, ch. 2 §2.2, ch. 3)."""
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
    """Follower at broker b: it handles a fetch response, ignored if its fetcher no longer fetches the
    partition from that broker, at that offset or in that leader epoch; an error delays the fetcher; a
    diverging epoch truncates the log; records are appended and the HWM taken within the log's bounds."""
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


# ---- producers and perturbations ----------------------------------------------------------


def value_ids(cfg):
    return range(1, cfg.values + 1)


@spec.rule(b=brokers, v=value_ids, format={"v": lambda cfg, v: VALUE_NAMES[v - 1]},
           precondition=lambda cfg, s: s.inv_sent != (1 << (cfg.values + 1)) - 2, candidates=leading)
def WriteRecordToLeader(cfg, s: State, b, v):
    """Partition leader at broker b: a producer's value v, not written before, is appended if the
    Maximal ISR has at least MinISR members."""
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


def shutdown(cfg, s: State, b: int, leader: int, status: int, kept_epoch: int = 0) -> dict | None:
    """What both shutdowns share: the broker stops, its fetch sessions go, the replica forgets its role,
    followers and pending requests, fails pending writes if it led, and the controller fences it."""
    fenced = handle_broker_fenced(cfg, s, b, leader)
    if fenced is None:
        return None
    changes = {}
    if s.partition_status[b - 1] == LEADER and s.partition_data[b - 1].hwm < s.partition_data[b - 1].leo:
        changes.update(fail_pending_writes(s, b))
    changes.update(drop_fetch_sessions(cfg, s, b))
    changes.update(fenced)
    changes.update(
        broker_state=put(s.broker_state, b, BrokerState(status, kept_epoch, 0, False)),
        partition_status=put(s.partition_status, b, NO_ROLE),
        partition_replica_state=put(s.partition_replica_state, b, (BLANK_PEER,) * cfg.broker_count),
        partition_pending_ap=put(s.partition_pending_ap, b, NO_PENDING_AP),
        con_broker_reg=put(s.con_broker_reg, b, s.con_broker_reg[b - 1]._replace(status=FENCED)),
        aux_flo=put(s.aux_flo, b, INT_MAX))
    return changes


def data_loss_shutdown(cfg, s: State, b: int, leader: int) -> State | None:
    """What UncleanShutdown (v3.5) and DataLossShutdown (kip966) share: the broker stops and loses its log."""
    changes = shutdown(cfg, s, b, leader, OFFLINE_DIRTY)
    if changes is None:
        return None
    changes["partition_data"] = put(s.partition_data, b, EMPTY_DATA)
    changes["partition_leso"] = put(s.partition_leso, b, NIL)
    changes["aux_ctrs"] = s.aux_ctrs._replace(unclean_shutdown_ctr=s.aux_ctrs.unclean_shutdown_ctr + 1)
    return s._replace(**changes)


def running(s: State, b: int) -> bool:
    return s.broker_state[b - 1].status not in (OFFLINE_CLEAN, OFFLINE_DIRTY)


def may_disrupt(cfg, s: State) -> bool:
    """The joint limit on shutdowns, fencings and shrinks (if the config sets one) leaves room for another."""
    c = s.aux_ctrs
    spent = c.clean_shutdown_ctr + c.unclean_shutdown_ctr + c.fence_broker_ctr + c.leader_shrink_isr_ctr
    return cfg.max_disruptions < 0 or spent < cfg.max_disruptions


def unclean_budget(cfg, s: State) -> bool:
    return s.aux_ctrs.unclean_shutdown_ctr < cfg.unclean_shutdown_limit and may_disrupt(cfg, s)


def clean_budget(cfg, s: State) -> bool:
    return s.aux_ctrs.clean_shutdown_ctr < cfg.clean_shutdown_limit and may_disrupt(cfg, s)


@spec.rule(b=brokers, leader=leader_choices, precondition=unclean_budget,
           applies=lambda cfg: cfg.unclean_shutdown_limit > 0 and not cfg.kip966)
def UncleanShutdown(cfg, s: State, b, leader):
    """Broker b: it stops and loses its whole log; the controller fences it (and elects `leader` if it
    must choose one). With AvoidLastReplicaStanding the last ISR member does not stop this way."""
    if not running(s, b):
        return None
    isr = s.con_partition_metadata.isr
    if cfg.avoid_last_replica_standing and isr >> b & 1 and size(isr) == 1:
        return None
    return data_loss_shutdown(cfg, s, b, leader)


@spec.rule(b=brokers, leader=leader_choices, precondition=clean_budget,
           applies=lambda cfg: cfg.clean_shutdown_limit > 0 and not cfg.kip966)
def CleanShutdown(cfg, s: State, b, leader):
    """Broker b: it stops and keeps its log; the controller fences it (and elects `leader` if it must
    choose one)."""
    if not running(s, b):
        return None
    changes = shutdown(cfg, s, b, leader, OFFLINE_CLEAN)
    if changes is None:
        return None
    changes["aux_ctrs"] = s.aux_ctrs._replace(clean_shutdown_ctr=s.aux_ctrs.clean_shutdown_ctr + 1)
    return s._replace(**changes)


@spec.rule(b=brokers, leader=leader_choices, precondition=unclean_budget,
           applies=lambda cfg: cfg.unclean_shutdown_limit > 0 and cfg.kip966)
def DataLossShutdown(cfg, s: State, b, leader):
    """Broker b (kip966): it stops and loses its whole log, and the broker epoch it would have kept; the
    controller fences it (and elects `leader` if it must choose one). Any ISR member may stop so."""
    if not running(s, b):
        return None
    return data_loss_shutdown(cfg, s, b, leader)


@spec.rule(b=brokers, clean=lambda cfg: (0, 1), leader=leader_choices, precondition=clean_budget,
           applies=lambda cfg: cfg.clean_shutdown_limit > 0 and cfg.kip966)
def NoDataLossShutdown(cfg, s: State, b, clean, leader):
    """Broker b (kip966): it stops with its log intact; a clean shutdown (`clean` 1) writes its broker
    epoch to disk for the next registration, an unclean one without data loss does not; the controller
    fences it (and elects `leader` if it must choose one)."""
    if not running(s, b):
        return None
    changes = shutdown(cfg, s, b, leader, OFFLINE_CLEAN, s.broker_state[b - 1].broker_epoch if clean else 0)
    if changes is None:
        return None
    changes["aux_ctrs"] = s.aux_ctrs._replace(clean_shutdown_ctr=s.aux_ctrs.clean_shutdown_ctr + 1)
    return s._replace(**changes)


# ---- controller ------------------------------------------------------------------------------


@spec.rule(b=brokers, m=message_slots, leader=leader_choices, fair=True, applies=restarts,
           candidates=in_flight(REG_REQ, 0))
def ReceiveBrokerRegRequest(cfg, s: State, b, m, leader):
    """Controller: it registers broker b if it is fenced or the incarnation is the registered one,
    with the next broker epoch, unfences it (electing `leader` if the partition has none) and answers
    with that epoch and its metadata log's length (kafka-tlaplus, v3.5, ch. 8)."""
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
    """Controller: it decides an AlterPartition request from broker b. Accepted (from the leader, in its
    broker and partition epochs, with every proposed member unfenced in the epoch given) it becomes the new ISR,
    completing a reassignment whose adding replicas all joined; `leader` is the new leader if the old
    one is removed. Either way the controller answers (kafka-tlaplus, v3.5, ch. 2 §2.4, ch. 4)."""
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


@spec.rule(b=brokers, leader=leader_choices, applies=lambda cfg: cfg.fence_broker_limit > 0,
           precondition=lambda cfg, s: s.aux_ctrs.fence_broker_ctr < cfg.fence_broker_limit and may_disrupt(cfg, s))
def FenceBroker(cfg, s: State, b, leader):
    """Controller: it fences unfenced broker b (missed heartbeats, at any time here), removing it from the
    ISR (v3.5: never below one member) and the leadership (electing `leader` if it must choose one)."""
    if s.aux_ctrs.fence_broker_ctr >= cfg.fence_broker_limit or s.con_broker_reg[b - 1].status != UNFENCED:
        return None
    changes = handle_broker_fenced(cfg, s, b, leader)
    if changes is None:
        return None
    return s._replace(con_broker_reg=put(s.con_broker_reg, b, s.con_broker_reg[b - 1]._replace(status=FENCED)),
                      aux_ctrs=s.aux_ctrs._replace(fence_broker_ctr=s.aux_ctrs.fence_broker_ctr + 1), **changes)


@spec.rule(b=brokers, leader=leader_choices, fair=True, candidates=fenced_and_running)
def UnfenceBroker(cfg, s: State, b, leader):
    """Controller: it unfences fenced running broker b (a heartbeat), electing `leader` if the
    partition has none."""
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
    """Controller (an administrator's AlterPartitionReassignments): add `adding` and remove `removing`
    replicas, at once if the ISR already allows it, else by an ongoing reassignment that an ISR change
    completes; `leader` leads if the old leader leaves the ISR (kafka-tlaplus, v3.5, ch. 4)."""
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
        # it leads, and the new replica fetched from it for ever (docs/ARCHITECTURE.md, "Liveness triage").
        candidates = new.isr & s.con_unfenced
        if (leader == NO_LEADER) == bool(candidates) or leader != NO_LEADER and not candidates >> leader & 1:
            return None
        if leader != NO_LEADER:
            new = new._replace(leader_epoch=md.leader_epoch + 1)
    elif not new_leader_ok(md, new.isr, leader):
        return None
    return s._replace(aux_ctrs=s.aux_ctrs._replace(reassignment_ctr=s.aux_ctrs.reassignment_ctr + 1),
                      **apply_partition_change(cfg, s, new._replace(leader=leader)))


@spec.init
def init(cfg):
    yield init_state(cfg)


# ---- mutations: each drops one condition the TLA+ specification marks `CHECK` ------------------
# Those nothing catches at the configs this machine exhausts say so (`survives`), with the evidence.

EXHAUSTED = "exhausted without a violation at p1 (1,163 states), p3 ({} states) and fence ({} states)"

spec.mutation("reg_response_ignores_incarnation", rule="ReceiveBrokerRegResponse", caught_at="restart_faults",
              removes=f"a broker accepts a registration response of another incarnation ({KAFKA_TLAPLUS}, "
                      "ReceiveBrokerRegResponse: the incarnation id check)",
              survives="exhausted without a violation at restart (938 states), restart_faults (2,847,286 states), "
                       "p1 with one clean shutdown (1,533,468 states) and 45 smaller configs (up to 133,399 states)")
spec.mutation("fetcher_kept_on_new_epoch", rule="ReceiveMetadataUpdate", caught_at="fence",
              removes=f"a follower keeps its fetch state across a new leader epoch of the same leader "
                      f"({KAFKA_TLAPLUS}, AddPartitionToFetcher: the new leader epoch condition)",
              survives=EXHAUSTED.format("12,472", "2,366,217") + ", and at 48 smaller configs with shutdowns, fences, "
                                                                 "shrinks or a reassignment (up to 137,628 states)")
spec.mutation("leader_keeps_stale_follower_state", rule="ReceiveMetadataUpdate", caught_at="fence",
              removes=f"a re-elected leader keeps what it knew of followers outside the ISR "
                      f"({KAFKA_TLAPLUS}, BecomeLeaderInNewEpoch: ResetFollowerStateOfAllButISR)",
              survives=EXHAUSTED.format("12,839", "2,366,217"))
spec.mutation("isr_join_below_hwm", rule="SendAlterPartitionRequest", caught_at="p1",
              removes=f"a follower below the HWM may join the ISR ({KAFKA_TLAPLUS}, FollowerIsCaughtUp: the HWM "
                      "condition)")
spec.mutation("isr_join_below_leso", rule="SendAlterPartitionRequest", caught_at="fence",
              removes=f"a follower below the leader epoch start offset may join the ISR ({KAFKA_TLAPLUS}, "
                      "FollowerIsCaughtUp: the LESO condition)",
              survives=EXHAUSTED.format("12,472", "2,366,217"))
spec.mutation("fetch_response_ignores_offset", rule="ReceiveFetchResponse", caught_at="fence",
              removes=f"a follower appends a fetch response for another fetch offset ({KAFKA_TLAPLUS}, "
                      "ReceiveFetchResponse: the fetch offset check)",
              survives=EXHAUSTED.format("12,472", "2,366,217"))
spec.mutation("fetch_response_ignores_epoch", rule="ReceiveFetchResponse", caught_at="fence",
              removes=f"a follower processes a fetch response of another leader epoch ({KAFKA_TLAPLUS}, "
                      "ReceiveFetchResponse: the leader epoch check)",
              survives=EXHAUSTED.format("14,699", "2,581,361"))
spec.mutation("ap_ignores_broker_epoch", rule="ReceiveAlterPartitionRequest", caught_at="restart_faults",
              removes=f"the controller accepts a proposed ISR member in any broker epoch ({KAFKA_TLAPLUS}, "
                      "IsEligibleBroker: the broker epoch check)")
spec.mutation("ap_ignores_partition_epoch", rule="ReceiveAlterPartitionRequest", caught_at="fence",
              removes=f"the controller accepts an AlterPartition request of a stale partition epoch "
                      f"({KAFKA_TLAPLUS}, ValidateAlterPartitionRequest: the partition epoch check)")


# ================================================================================ how it is drawn
@spec.protocol_view
def drawn(cfg: ReplicationConfig, s: State) -> dict:
    """The state as `harness explore` draws a replicated log (template views/replicated_log.html), as for
    kraft: the controller's partition metadata, each broker's log by leader epoch with HWM, LEO and LESO,
    its status and the metadata it knows, a leader's Maximal ISR, and every message in the network."""
    c = s.con_partition_metadata
    controller = [("replicas", as_set(c.replicas)), ("ISR", as_set(c.isr)), ("leader", OptId().show(c.leader)),
                  ("leader epoch", str(c.leader_epoch)), ("partition epoch", str(c.partition_epoch)),
                  ("adding", as_set(c.adding)), ("removing", as_set(c.removing)), ("ELR", as_set(c.elr)),
                  ("last known ELR", as_set(c.last_known_elr)), ("unfenced", as_set(s.con_unfenced))]
    brokers = []
    for i, (b, role, meta, data, leso) in enumerate(zip(s.broker_state, s.partition_status, s.partition_metadata,
                                                        s.partition_data, s.partition_leso), 1):
        leads = role == LEADER
        known = [("broker epoch", str(b.broker_epoch)), ("leader", OptId().show(meta.leader)),
                 ("leader epoch", str(meta.leader_epoch)), ("partition epoch", str(meta.partition_epoch)),
                 ("ISR", as_set(meta.isr)), ("replicas", as_set(meta.replicas))]
        if leads:
            peers = s.partition_replica_state[i - 1]
            known.append(("follower LEOs", ", ".join(f"{f}:{p.leo or '-'}" for f, p in enumerate(peers, 1))))
        brokers.append({"id": i, "status": BROKER_STATUS.show(b.status), "role": ROLE.show(role) if role else "",
                        "log": [{"epoch": r.epoch, "label": VALUE_NAMES[r.value - 1] if r.value else r.epoch,
                                 "text": f"value {VALUE_NAMES[r.value - 1] if r.value else '-'}"} for r in data.log],
                        # offsets start at 1 (the TLA+ specification's): offset n is the boundary before record n - 1
                        "marks": [("HWM", data.hwm, data.hwm - 1), ("LEO", data.leo, data.leo - 1),
                                  ("LESO", leso if leads and leso else None, leso - 1)],
                        "known": known, "maximal_isr": as_set(meta.maximal_isr) if leads else None})
    network = spec.schema.fields["messages"]
    in_flight = [f"{kind.replace('_', ' ')[:-1]}: {network.fields[kind].item.show(message)}"
                 for kind, messages in s.messages._asdict().items() for message in messages]
    history = [("true HWM", str(s.inv_true_hwm)), ("sent", as_set(s.inv_sent)),
               ("acknowledged", as_set(s.inv_pos_acked)), ("refused", as_set(s.inv_neg_acked))]
    return {"kind": "replicated_log", "controller": controller, "brokers": brokers, "in_flight": in_flight,
            "history": history}
