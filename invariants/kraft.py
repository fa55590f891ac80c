"""Properties of the `kraft` model (seed 000, seed 003 §2.4, KIP-966)."""

from specs.kraft import FENCED, State, spec
from specs.kraft.controller import mask


def has_prefix(log: tuple, prefix: tuple) -> bool:
    return log[:len(prefix)] == prefix


# ------------------------------------------------------------------------------- structural


@spec.invariant(name="IsrSubsetOfReplicas", reads=("partition",))
def isr_subset_of_replicas(cfg, s: State) -> bool:
    """ISR ⊆ replicas."""
    p = s.partition
    return not p.isr & ~mask(p.replicas)


@spec.invariant(name="LeaderInIsr", reads=("partition",))
def leader_in_isr(cfg, s: State) -> bool:
    """The leader, if any, is a replica and an ISR member."""
    p = s.partition
    return not p.leader or (p.leader in p.replicas and bool(p.isr >> p.leader & 1))


@spec.invariant(name="ElrDisjointFromIsr", reads=("partition",))
def elr_disjoint_from_isr(cfg, s: State) -> bool:
    """No replica is both in the ISR and in the ELR."""
    return not s.partition.isr & s.partition.elr


@spec.invariant(name="ReassignmentWellFormed", reads=("partition",))
def reassignment_well_formed(cfg, s: State) -> bool:
    """adding and removing are disjoint subsets of the replicas; the replicas are distinct; a
    reassignment in progress keeps at least one replica that is not being removed."""
    p = s.partition
    reps = mask(p.replicas)
    return (len(set(p.replicas)) == len(p.replicas) and not (p.adding | p.removing) & ~reps
            and not p.adding & p.removing and (not (p.adding or p.removing) or bool(reps & ~p.removing)))


@spec.invariant(name="ElrSubsetOfReplicas", reads=("partition",))
def elr_subset_of_replicas(cfg, s: State) -> bool:
    """Seed variant: ELR members are replicas (completion and cancellation trim them). Kafka keeps
    removed replicas in the ELR (reference §10), so there this holds vacuously. Found necessary by
    `harness prove`: without it, an ELR election can put a non-replica into the ISR."""
    return cfg.completion == "kafka" or not s.partition.elr & ~mask(s.partition.replicas)


# -------------------------------------------------------------------------- replication (seed 003)


@spec.invariant(name="LeaderCompleteness")
def leader_completeness(cfg, s: State) -> bool:
    """The leader holds the whole committed log (up to the true HWM)."""
    p = s.partition
    return not p.leader or not s.committed or has_prefix(s.brokers[p.leader - 1].log, s.committed)


@spec.invariant(name="LeaderCandidateCompleteness")
def leader_candidate_completeness(cfg, s: State) -> bool:
    """Every leader candidate (ISR member, or ELR member that is a replica) holds the whole
    committed log. Kafka can leave removed replicas in the ELR (reference §10); they are never
    elected, so they are not candidates."""
    committed = s.committed
    if not committed:
        return True
    p = s.partition
    candidates = p.isr | p.elr & mask(p.replicas)
    return all(has_prefix(b.log, committed) for i, b in enumerate(s.brokers, 1) if candidates >> i & 1)


@spec.invariant(name="LogMatching")
def log_matching(cfg, s: State) -> bool:
    """The stable prefixes agree: any two replicas' logs are equal up to the smaller local HWM."""
    bs = s.brokers
    for i, a in enumerate(bs):
        if not a.hwm:
            continue  # nothing stable on this replica (the common case: skip the slicing)
        for b in bs[i + 1:]:
            n = min(a.hwm, b.hwm)
            if n and a.log[:n] != b.log[:n]:
                return False
    return True


@spec.invariant(name="ReplicationQuorumSuperset")
def replication_quorum_superset(cfg, s: State) -> bool:
    """The leader's Maximal ISR contains the controller's ISR, once the leader knows its epoch."""
    p = s.partition
    if not p.leader:
        return True
    b = s.brokers[p.leader - 1]
    if b.status < FENCED or b.known_leader != p.leader or b.known_leader_epoch != p.leader_epoch:
        return True
    return not p.isr & ~b.maximal_isr


@spec.invariant(name="NoAckedRecordLost")
def no_acked_record_lost(cfg, s: State) -> bool:
    """Records acknowledged to acks=all producers stay committed and on the leader."""
    acked = s.acked
    if not acked:
        return True
    if not has_prefix(s.committed, acked):
        return False
    p = s.partition
    return not p.leader or has_prefix(s.brokers[p.leader - 1].log, acked)


@spec.invariant(name="CommittedNeverOverwritten", reads=("committed_overwritten",))
def committed_never_overwritten(cfg, s: State) -> bool:
    """No leader ever commits a log that contradicts the committed one."""
    return not s.committed_overwritten


# ---------------------------------------------------------------------------- reassignment (seed 000)


@spec.invariant(name="CompletionRespectsMinIsr", reads=("completed_below_min_isr",))
def completion_respects_min_isr(cfg, s: State) -> bool:
    """Every completed reassignment left ISR >= MinISR (seed 000 §4.2 rule 1)."""
    return not s.completed_below_min_isr


@spec.invariant(name="EpochsMonotonic")
def epochs_monotonic(cfg, s: State) -> bool:
    """Epochs never decrease: no broker knows epochs newer than the controller's, and every log's
    leader epochs are non-decreasing and at most the current leader epoch."""
    p = s.partition
    leader_epoch, partition_epoch = p.leader_epoch, p.partition_epoch
    for b in s.brokers:
        if b.known_leader_epoch > leader_epoch or b.known_partition_epoch > partition_epoch:
            return False
        log = b.log
        # (a log of one record, the common case, is trivially non-decreasing)
        if log and (log[-1] > leader_epoch or len(log) > 1 and any(x > y for x, y in zip(log, log[1:]))):
            return False
    return True


# ------------------------------------------------------------------ Z3 forms (harness prove)
# The same structural properties over the symbolic controller state of specs/kraft/symbolic.py.

from specs.kraft import symbolic as _sym  # noqa: E402

spec.symbolic = _sym
spec.z3_invariants.update({
    "IsrSubsetOfReplicas": lambda s: s["I"] & ~s["R"] == 0,
    "LeaderInIsr": lambda s: _sym.z3.Or(s["L"] == 0, _sym.z3.And(s["L"] & s["I"] == s["L"], s["L"] & s["R"] == s["L"])),
    "ElrDisjointFromIsr": lambda s: s["I"] & s["E"] == 0,
    "ElrSubsetOfReplicas": lambda s: s["E"] & ~s["R"] == 0,
    "ReassignmentWellFormed": lambda s: _sym.z3.And(
        (s["A"] | s["M"]) & ~s["R"] == 0, s["A"] & s["M"] == 0,
        _sym.z3.Or((s["A"] | s["M"]) == 0, s["R"] & ~s["M"] != 0)),
    "CompletionRespectsMinIsr": lambda s: _sym.z3.Not(s["B"]),
})
