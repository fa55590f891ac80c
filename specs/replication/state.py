"""The replication model's state and config (the TLA+ `v3_5_types` module of kafka-tlaplus, v3.5): the
enums, the config with its parameter domains' bounds, the records of the partition, the controller, the
brokers and the messages, the state (one field per TLA+ variable), and the blank values the rules start
from. `Nil` is 0 wherever the TLA+ value is a number or a broker; offsets are 1-based as in the TLA+
specification."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, NamedTuple

from harness.itf import Bool, ById, Enum, IdSet, Int, Offset, OptId, Seq
from harness.model import Config, budget, param, variant

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
# Offsets are 1-based, as the TLA+ specification's (the first record is at offset 1, an empty log's LEO
# and HWM are 1): Kafka's offset is one less. Views name the convention (harness/present.py).
OFFSET = Offset(base=1)
OFFSET_OR_NIL = Offset(base=1, nil=NIL)


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
    offset: Annotated[int, OFFSET]
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
    fetch_offset: Annotated[int, OFFSET_OR_NIL]
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
    hwm: Annotated[int, OFFSET]
    leo: Annotated[int, OFFSET]


class PeerState(NamedTuple):
    """What a leader knows of a follower; leo 0 is Nil (no fetch in this leader epoch)."""

    leo: Annotated[int, OFFSET_OR_NIL]
    broker_epoch: int


class RegisterBrokerRequest(NamedTuple):
    broker_id: int
    incarnation_id: int
    broker_epoch: int = 0  # KIP-966: the epoch the broker kept from a clean shutdown (0 in v3.5)


class RegisterBrokerResponse(NamedTuple):
    dest: int
    broker_epoch: int
    incarnation_id: int
    metadata_offset: Annotated[int, OFFSET]


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
    fetch_offset: Annotated[int, OFFSET]
    last_fetched_epoch: int


class FetchResponse(NamedTuple):
    source: int
    dest: int
    error: Annotated[int, ERROR]
    leader_epoch: int
    fetch_offset: Annotated[int, OFFSET]
    diverging: Annotated[bool, Bool()]  # false: the diverging epoch is Nil
    diverging_epoch: int
    diverging_offset: Annotated[int, OFFSET_OR_NIL]
    hwm: Annotated[int, OFFSET]
    records: Annotated[tuple, Seq(LogRecord)]


class Network(NamedTuple):
    """A set of messages, by type (each a sorted tuple without repeats)."""

    register_broker_requests: Annotated[tuple, Seq(RegisterBrokerRequest, unordered=True)]
    register_broker_responses: Annotated[tuple, Seq(RegisterBrokerResponse, unordered=True)]
    alter_partition_requests: Annotated[tuple, Seq(AlterPartitionRequest, unordered=True)]
    alter_partition_responses: Annotated[tuple, Seq(AlterPartitionResponse, unordered=True)]
    fetch_requests: Annotated[tuple, Seq(FetchRequest, unordered=True)]
    fetch_responses: Annotated[tuple, Seq(FetchResponse, unordered=True)]


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
    partition_leso: Annotated[tuple, ById(OFFSET_OR_NIL)]
    partition_replica_state: Annotated[tuple, ById(ById(PeerState))]
    partition_pending_ap: Annotated[tuple, ById(PendingAlterPartition)]
    # the network (the TLA+ NetworkView)
    messages: Network
    # history, for the invariants
    inv_sent: Annotated[int, IdSet()]
    inv_pos_acked: Annotated[int, IdSet()]
    inv_neg_acked: Annotated[int, IdSet()]
    inv_true_hwm: Annotated[int, OFFSET]
    inv_consumed: Annotated[tuple, Seq(LogRecord)]
    # outside the view: processed messages and auxiliary counters
    messages_discard: Network
    aux_broker_epoch: int
    aux_ctrs: Counters
    aux_flo: Annotated[tuple, ById(Offset(base=1, nil=INT_MAX))]


VIEW_FIELDS = State._fields.index("messages_discard")  # the view is the state's first VIEW_FIELDS fields

# the blank values of the TLA+ specification (BlankMetadata, BlankFetchState, BlankReplicaState, ...)
BLANK_METADATA = ReplicaMetadata(0, 0, 0, NO_LEADER, 0, 0)
BLANK_FETCHER = Fetcher(False, 0, 0, False, False)
PENDING_BLANK_FETCHER = BLANK_FETCHER._replace(pending_response=True)
BLANK_PEER = PeerState(NIL, 0)
NO_PENDING_AP = PendingAlterPartition(0, ())
EMPTY_DATA = PartitionData((), 1, 1)
EMPTY_NETWORK = Network((), (), (), (), (), ())
# the message types, each the index of its set in a Network
(REG_REQ, REG_RESP, AP_REQ, AP_RESP, FETCH_REQ, FETCH_RESP) = range(6)
