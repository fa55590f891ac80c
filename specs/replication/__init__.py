"""Kafka data replication with the KRaft controller, message by message (Kafka 3.5).

State for state the TLA+ specification `kafka_replication_v3_5` of the public repository
Vanlightly/kafka-tlaplus (`kafka_data_replication/kraft/v3.5/`, MIT licensed), written again in this
project's style. Its protocol description is cited as (kafka-tlaplus, v3.5), ch. N §N.x.

Who acts: the controller (broker registrations, fencing and unfencing, AlterPartition requests,
reassignments; it appends PartitionChange records to the metadata log), brokers (start, register,
shut down) and partition replicas (learn metadata, lead, follow by fetching, propose ISR changes).
One partition; brokers 1..N; producers write each value of `values` at most once.

Correspondence with the TLA+ specification (docs/models/replication.md has the full map):
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

Layout (docs/models/replication.md, "Layout"), after the TLA+ modules: `state` (the records, enums and
config: `v3_5_types`), `presets`, `logic` (the functions the rules share: `v3_5_functions`, message
passing, `Init`), one module of rules per actor (`brokers`, `leaders`, `followers`, `controller`, `faults`),
`view` (the explorer's drawing), `speed` (the measured hints and fast paths), `tlc` (TLC's successor order);
the properties (`v3_5_properties`) are `invariants/replication.py`.
"""

from __future__ import annotations

from operator import itemgetter

from harness.model import Spec
from specs.replication.logic import init_state
from specs.replication.presets import EXPECTED, PRESETS
from specs.replication.state import VIEW_FIELDS, ReplicationConfig, State
from specs.replication.tlc import tlc_order

spec = Spec("replication", ReplicationConfig, State, doc=__doc__, presets=PRESETS, default_preset="p1",
            deadlock=False, mutation_preset="fence", expected=EXPECTED, tlc_order=tlc_order,
            view=itemgetter(slice(0, VIEW_FIELDS)),  # the first VIEW_FIELDS fields (a C call: no Python frame)
            hidden=itemgetter(slice(VIEW_FIELDS, None)),  # the rest: the representative is chosen on its hash
            # the graph engine keeps the budget counters too: on the view alone a budgeted fault repeats on a cycle
            liveness_view=lambda s: (s[:VIEW_FIELDS], s.aux_ctrs[1:]))

KAFKA_TLAPLUS = "kafka_replication_v3_5.tla"

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


@spec.init
def init(cfg):
    """The TLA+ `Init`: an established partition led by broker 1, the ISR {1..InitIsrSize}."""
    yield init_state(cfg)


# The rules, one module per actor; they register themselves on `spec` as they are imported (those with
# candidates= hints import `speed`). Then the order engines try them in: the order of the single module
# before the split, which is `Next`'s with the kip966 shutdowns after v3.5's (it decides BFS's successor
# order, its first-found states and the committed traces).
from specs.replication import brokers, leaders, followers, faults, controller  # noqa: E402  registers the rules

spec.order_rules(
    "BrokerStart", "ReceiveBrokerRegResponse", "ReceiveMetadataUpdate", "SendAlterPartitionRequest",
    "ReceiveAlterPartitionResponse", "SendFetchRequest", "ReceiveFetchRequest", "ReceiveFetchResponse",
    "WriteRecordToLeader", "UncleanShutdown", "CleanShutdown", "DataLossShutdown", "NoDataLossShutdown",
    "ReceiveBrokerRegRequest", "ReceiveAlterPartitionRequest", "FenceBroker", "UnfenceBroker",
    "PerformPartitionReassignment")

from specs.replication import speed, view  # noqa: E402  the measured hot paths; the explorer's drawing

MODULES = (brokers, leaders, followers, faults, controller, speed, view)  # what importing them registered
