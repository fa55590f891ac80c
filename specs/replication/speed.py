"""The replication model's measured speed helpers, in one place. They change how fast a search finds the
states, never which states: tests/test_replication.py compares every `candidates=` hint with the full
enumeration, and the counts, traces and coverage stay those of the plain rules. The figures are in
docs/PERFORMANCE.md, "The replication model" (BFS at `fence`: 9,900 states/s for the first version,
20,891 on 2026-11-26).

* `candidates=` hints (below): a rule's `candidates=` names the argument prefixes that can be enabled, so
  that a search calls a receiving rule once per message in flight instead of once per (broker, slot) pair,
  and a leader's rule at the leaders only: at `fence`, 15.0 rule calls per expanded state became 7.3
  (first 300,000 states). Each rule body still checks everything. The hints run on every expanded state
  (about a ninth of the search's instructions at `fence`), so those over brokers are plain loops that read
  each field once (a comprehension is a call of its own); `leading` is derived once per
  `partition_status` tuple (`per_state`). The shutdowns and FenceBroker ask a leader choice other than 0
  only where the controller has one to make (issue 42: at p1's initial state with one unclean shutdown,
  12 calls of UncleanShutdown made 3 states; now 6). A hint pays only where it skips more than it costs:
  one for BrokerStart (the offline brokers) cost more than its 3 cheap calls per state (+0.37%).
* `fast_replace` on every record the rules rebuild (below): `_replace` is the hot path of every rule.
* Kept beside the code they speed up, as part of it (the same PERFORMANCE.md section): the view as an
  `itemgetter` (a C call, no Python frame; `specs/replication/__init__.py`); in `logic.py`, `put` copying
  through one list, `send`/`remove` rebuilding the network through one list and `_network` (a
  `functools.partial` of `tuple.__new__`), and a fetcher that loses the partition becoming one of two
  shared blank fetchers (`without_partition`).
"""

from __future__ import annotations

from itertools import count

from harness.speed import fast_replace, per_state
from specs.replication.logic import partition_needs_action, pending_ap_response
from specs.replication.state import (FENCED, LEADER, NO_LEADER, OFFLINE_CLEAN, OFFLINE_DIRTY, RUNNING, UNFENCED,
                                     BrokerState,
                                     Counters, Fetcher, Network, PartitionChange, PartitionData, Registration,
                                     ReplicaMetadata, State)

fast_replace(State, PartitionChange, BrokerState, Fetcher, ReplicaMetadata, PartitionData, Network, Counters,
             Registration)


# ---------------------------------------------------------------------------- candidate actions


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


def stopping(cfg, s: State):
    """UncleanShutdown, CleanShutdown, DataLossShutdown: the running brokers, with their leader choices."""
    running = [b for b, bs in zip(count(1), s.broker_state) if bs.status not in (OFFLINE_CLEAN, OFFLINE_DIRTY)]
    return _leaving(s, running)


def fenceable(cfg, s: State):
    """FenceBroker: the unfenced brokers, with their leader choices."""
    return _leaving(s, [b for b, reg in zip(count(1), s.con_broker_reg) if reg.status == UNFENCED])


def _leaving(s: State, bs: list) -> list:
    """(b, 0) for a broker b whose leaving keeps the leader (another broker, in the ISR and unfenced: the
    new ISR keeps it, so the controller has no leader to choose and any other choice is refused); else
    (b,), every leader choice."""
    md = s.con_partition_metadata
    leader = md.leader
    keeps = leader != NO_LEADER and md.isr >> leader & 1 and s.con_unfenced >> leader & 1
    return [(b, 0) if keeps and b != leader else (b,) for b in bs]


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

