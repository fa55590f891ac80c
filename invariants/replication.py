"""Properties of the `replication` model: the invariants and liveness properties of the TLA+
specification's `v3_5_properties` module (kafka-tlaplus, v3.5), under the same names, grouped
as the protocol description's chapter 6 (Replication correctness) discusses them. A property's
docstring is what it states; each returns True at once when it holds and builds a `Violated` reason
only when it fails.
"""

from harness.bitset import as_set, members, size
from harness.model import Violated
from specs.replication import spec
from specs.replication.logic import partition_needs_action, pending_ap_response
from specs.replication.state import (FENCED, FOLLOWER, LEADER, NO_LEADER, NO_ROLE, RUNNING, STARTING, UNFENCED,
                                     VALUE_NAMES, State)


def non_stale_leader(s: State, b: int) -> bool:
    """The TLA+ IsNonStaleLeader: b leads in the controller's leader epoch."""
    return (s.partition_status[b - 1] == LEADER
            and s.partition_metadata[b - 1].leader_epoch == s.con_partition_metadata.leader_epoch)


def holds_value(s: State, b: int, v: int) -> bool:
    return any(r.value == v for r in s.partition_data[b - 1].log)


# ---- Leader Completeness, and what elections need for it (kafka-tlaplus, v3.5, ch. 6 and §6.5: Leader Candidate
# Completeness; §6.5.2: Replication Quorum Superset, the Maximal ISR)

@spec.invariant(name="LeaderCompletenessProperty",
                reads=("con_partition_metadata", "broker_state", "partition_data", "inv_true_hwm", "inv_pos_acked"))
def leader_completeness(cfg, s: State):
    """Once something is committed, the running leader the controller chose holds every committed
    offset and every positively acknowledged value."""
    if s.inv_true_hwm <= 1:
        return True
    leader = s.con_partition_metadata.leader
    if leader == NO_LEADER or s.broker_state[leader - 1].status != RUNNING:
        return True
    if s.partition_data[leader - 1].leo < s.inv_true_hwm:
        return Violated(f"leader {leader} has LEO {s.partition_data[leader - 1].leo} below the true HWM "
                        f"{s.inv_true_hwm}")
    for v in members(s.inv_pos_acked):
        if not holds_value(s, leader, v):
            return Violated(f"leader {leader} lacks acknowledged value {VALUE_NAMES[v - 1]}")
    return True


@spec.invariant(name="LeaderCandidateCompletenessProperty",
                reads=("con_partition_metadata", "broker_state", "partition_data", "inv_true_hwm"))
def leader_candidate_completeness(cfg, s: State):
    """Once something is committed, every running member of the controller's ISR (kip966: and ELR)
    holds every committed offset."""
    if s.inv_true_hwm <= 1:
        return True
    for b in members(s.con_partition_metadata.isr | s.con_partition_metadata.elr):
        if s.partition_data[b - 1].leo < s.inv_true_hwm and s.broker_state[b - 1].status == RUNNING:
            return Violated(f"ISR member {b} has LEO {s.partition_data[b - 1].leo} below the true HWM "
                            f"{s.inv_true_hwm}")
    return True


@spec.invariant(name="ReplicationQuorumSupersetProperty",
                reads=("con_partition_metadata", "partition_status", "partition_metadata", "partition_pending_ap"))
def replication_quorum_superset(cfg, s: State):
    """A leader in the controller's leader epoch replicates to a Maximal ISR that contains the
    controller's ISR, and equals its own ISR when no AlterPartition request is pending. (kip966: the
    Maximal ISR contains the controller's ISR and ELR while the leader's ISR has MinISR members.)"""
    con_isr = s.con_partition_metadata.isr | s.con_partition_metadata.elr
    for b in range(1, cfg.broker_count + 1):
        if not non_stale_leader(s, b):
            continue
        md = s.partition_metadata[b - 1]
        if not pending_ap_response(s, b) and md.maximal_isr != md.isr:
            return Violated(f"leader {b} has no pending AlterPartition yet its Maximal ISR {as_set(md.maximal_isr)} "
                            f"is not its ISR {as_set(md.isr)}")
        if con_isr & ~md.maximal_isr and (not cfg.kip966 or size(md.isr) >= cfg.min_isr):
            return Violated(f"leader {b}'s Maximal ISR {as_set(md.maximal_isr)} lacks controller ISR members "
                            f"{as_set(con_isr & ~md.maximal_isr)}")
    return True


# ---- Log Matching (ch. 6): the replicas' logs, and the brokers' copies of the metadata log

@spec.invariant(name="LogMatchingProperty", reads=("partition_data",))
def log_matching(cfg, s: State):
    """Below both replicas' HWMs, any two replica logs hold the same value at each offset."""
    data = s.partition_data
    for offset in range(1, cfg.values + 1):
        seen = {}
        for b, d in enumerate(data, 1):
            if d.leo > offset and d.hwm > offset:
                seen.setdefault(d.log[offset - 1].value, b)
        if len(seen) > 1:
            (v1, b1), (v2, b2) = list(seen.items())[:2]
            return Violated(f"offset {offset}: broker {b1} holds {VALUE_NAMES[v1 - 1]}, broker {b2} holds "
                            f"{VALUE_NAMES[v2 - 1]}, both below their HWM")
    return True


@spec.invariant(name="MetadataLogMatchingProperty", reads=("con_metadata_log", "broker_metadata_log"))
def metadata_log_matching(cfg, s: State):
    """Every broker's copy of the metadata log is a prefix of the controller's."""
    con = s.con_metadata_log
    for b, log in enumerate(s.broker_metadata_log, 1):
        if con[:len(log)] != log:
            return Violated(f"broker {b}'s metadata log is not a prefix of the controller's")
    return True


# ---- what clients see (§6.1, linearizability): consumers' reads stay, acknowledged records stay somewhere

@spec.invariant(name="ConsistentReadProperty",
                reads=("con_partition_metadata", "partition_status", "partition_metadata", "partition_data",
                       "inv_consumed"))
def consistent_read(cfg, s: State):
    """A leader in the controller's leader epoch holds, at every offset consumers have read, the very
    record they read."""
    consumed = s.inv_consumed
    for b in range(1, cfg.broker_count + 1):
        if non_stale_leader(s, b) and s.partition_data[b - 1].log[:len(consumed)] != consumed:
            return Violated(f"leader {b}'s log differs from the {len(consumed)} records consumers read")
    return True


@spec.invariant(name="NoCommittedRecordLostGlobally", reads=("partition_data", "inv_pos_acked"))
def no_committed_record_lost_globally(cfg, s: State):
    """Every positively acknowledged value is held by some replica."""
    for v in members(s.inv_pos_acked):
        if not any(holds_value(s, b, v) for b in range(1, cfg.broker_count + 1)):
            return Violated(f"acknowledged value {VALUE_NAMES[v - 1]} is on no replica")
    return True


# ---- KIP-966 (the kip966 variant): the quorum an unclean recovery would ask

@spec.invariant(name="MinIsrRecoveryQuorum", reads=("con_partition_metadata",))
def min_isr_recovery_quorum(cfg, s: State):
    """(kip966) With neither ISR nor ELR left, the last known ELR has exactly MinISR members: the replicas
    an unclean recovery would ask. (Always true in v3.5, whose ISR is never empty.)"""
    md = s.con_partition_metadata
    if md.isr or md.elr or size(md.last_known_elr) == cfg.min_isr:
        return True
    return Violated(f"no ISR or ELR, and the last known ELR {as_set(md.last_known_elr)} has not {cfg.min_isr} members")


# ------------------------------------------------------------------- liveness (under the spec's fairness)

def _all_brokers(cfg):
    return range(1, cfg.broker_count + 1)


spec.eventually(
    "EventuallyRuns",
    trigger=lambda cfg, s: any(b.status == STARTING for b in s.broker_state),
    goal=lambda cfg, s: all(b.status != STARTING for b in s.broker_state),
    doc="A starting broker eventually runs, unfenced (checked for all brokers together: once some broker "
        "starts, eventually none is still starting).")
spec.eventually(
    "EventuallyUnfenced",
    trigger=lambda cfg, s: any(r.status == FENCED for r in s.con_broker_reg),
    goal=lambda cfg, s: all(r.status == UNFENCED for r in s.con_broker_reg),
    doc="A fenced broker is eventually unfenced (for all brokers together).")
spec.eventually(
    "AlterPartitionEpochEventuallyReachedOrZero",
    trigger=lambda cfg, s: any(p.epoch > 0 for p in s.partition_pending_ap),
    goal=lambda cfg, s: all(p.epoch in (0, s.partition_metadata[b - 1].partition_epoch)
                            for b, p in enumerate(s.partition_pending_ap, 1)),
    doc="A replica that sent an AlterPartition request eventually reaches the partition epoch it expects, "
        "or gives the request up.")


def metadata_converged(cfg, s: State) -> bool:
    con = s.con_partition_metadata
    for b in _all_brokers(cfg):
        md = s.partition_metadata[b - 1]
        status = s.partition_status[b - 1]
        if (md.isr, md.leader, md.leader_epoch, md.partition_epoch) == (
                con.isr, con.leader, con.leader_epoch, con.partition_epoch):
            continue
        if status == FOLLOWER and not any(partition_needs_action(s, b, o) for o in
                                          range(len(s.broker_metadata_log[b - 1]) + 1, len(s.con_metadata_log) + 1)):
            continue
        if status == NO_ROLE and not con.replicas >> b & 1:
            continue
        return False
    return True


spec.eventually("EventuallyMetadataConverges", goal=metadata_converged,
                doc="Always eventually every replica has the controller's partition state, or is a follower "
                    "with nothing relevant left to learn, or was removed.")
spec.eventually(
    "EventuallyWriteIsAcceptedOrRejected",
    trigger=lambda cfg, s: bool(s.inv_sent & ~(s.inv_pos_acked | s.inv_neg_acked)),
    goal=lambda cfg, s: not s.inv_sent & ~(s.inv_pos_acked | s.inv_neg_acked),
    doc="A written value is eventually acknowledged, positively or negatively.")


def acked_everywhere(cfg, s: State) -> bool:
    return all(holds_value(s, b, v) for v in members(s.inv_pos_acked)
               for b in members(s.con_partition_metadata.replicas))


spec.eventually(
    "EventuallyAcknowledgedValueFullyReplicated",
    trigger=lambda cfg, s: not acked_everywhere(cfg, s), goal=acked_everywhere,
    doc="A positively acknowledged value eventually is on every replica.")
spec.eventually(
    "EventuallyReassignmentCompletes",
    trigger=lambda cfg, s: bool(s.con_partition_metadata.adding or s.con_partition_metadata.removing),
    goal=lambda cfg, s: not (s.con_partition_metadata.adding or s.con_partition_metadata.removing),
    doc="A reassignment eventually completes.")




# ------------------------------------------------------------------ Z3 forms (harness prove)
# The safety properties, and the lemmas that strengthen them, over specs/replication/symbolic.py.

from specs.replication import symbolic as _sym  # noqa: E402

spec.symbolic = _sym
spec.z3_invariants.update({**_sym.PROPERTIES, **_sym.LEMMAS})
