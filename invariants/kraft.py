"""Properties of the `kraft` model.

Structural properties of the controller's partition metadata; the replication properties of the
Kafka replication protocol description (kafka-tlaplus, v3.5), ch. 2 §2.4 and §2.4.1 (Leader
Completeness, Log Matching, Leader Candidate Completeness), with the ELR of KIP-966; and the
reassignment rule of ch. 4 §4.2 of the same description (kafka-tlaplus, kip-966). Short citations
as in `specs.kraft`: [kafka-tlaplus v3.5 §2.x] and [kafka-tlaplus kip-966 §4.x].

A property's docstring is what it states (traces carry it). Each returns True at once when it
holds, and only when it fails builds a `Violated` reason naming the broker, offset, epoch or
replicas that break it.
"""

from harness.bitset import as_list, as_set, mask, size
from harness.model import Violated
from specs.kraft import spec
from specs.kraft.logic import gone
from specs.kraft.state import FENCED, State, follows_kafka


def has_prefix(log: tuple, prefix: tuple) -> bool:
    return log[:len(prefix)] == prefix


def first_missing(log: tuple, prefix: tuple) -> str:
    """Where `log` first departs from `prefix`: "offset 1 (epoch 2): its log has 1 record"."""
    for offset, epoch in enumerate(prefix):
        if offset >= len(log):
            return f"offset {offset} (epoch {epoch}): its log has {len(log)} record{'s' if len(log) != 1 else ''}"
        if log[offset] != epoch:
            return f"offset {offset} (epoch {epoch}): it holds epoch {log[offset]} there"
    return "nothing"  # not reached: `log` has the prefix


# ------------------------------------------------------------------------------- structural


@spec.invariant(name="IsrSubsetOfReplicas", reads=("partition",))
def isr_subset_of_replicas(cfg, s: State):
    """Every ISR member is a replica (ISR ⊆ replicas)."""
    p = s.partition
    outside = p.isr & ~mask(p.replicas)
    if not outside:
        return True
    return Violated(f"ISR members {as_set(outside)} are not replicas {as_list(p.replicas)}")


@spec.invariant(name="LeaderInIsr", reads=("partition",))
def leader_in_isr(cfg, s: State):
    """The leader, if any, is a replica and an ISR member."""
    p = s.partition
    if not p.leader or (p.leader in p.replicas and p.isr >> p.leader & 1):
        return True
    where = "a replica" if p.leader not in p.replicas else f"in the ISR {as_set(p.isr)}"
    return Violated(f"leader {p.leader} is not {where}")


@spec.invariant(name="ElrDisjointFromIsr", reads=("partition",))
def elr_disjoint_from_isr(cfg, s: State):
    """No replica is both in the ISR and in the ELR."""
    both = s.partition.isr & s.partition.elr
    return True if not both else Violated(f"brokers {as_set(both)} are in both the ISR and the ELR")


@spec.invariant(name="ReassignmentWellFormed", reads=("partition",))
def reassignment_well_formed(cfg, s: State):
    """`adding` and `removing` are disjoint subsets of the replicas, the replicas are distinct, and a
    reassignment in progress keeps at least one replica that is not being removed."""
    p = s.partition
    reps = mask(p.replicas)
    if len(set(p.replicas)) != len(p.replicas):
        return Violated(f"replicas {as_list(p.replicas)} repeat a broker")
    if (p.adding | p.removing) & ~reps:
        return Violated(f"adding {as_set(p.adding)} / removing {as_set(p.removing)} name non-replicas of "
                        f"{as_list(p.replicas)}")
    if p.adding & p.removing:
        return Violated(f"brokers {as_set(p.adding & p.removing)} are both adding and removing")
    if (p.adding or p.removing) and not reps & ~p.removing:
        return Violated(f"every replica of {as_list(p.replicas)} is being removed")
    return True


# Found necessary by `harness prove`: without it, an ELR election can put a non-replica into the ISR.
@spec.invariant(name="ElrSubsetOfReplicas", reads=("partition",))
def elr_subset_of_replicas(cfg, s: State):
    """In the seed variant every ELR member is a replica (completion and cancellation trim the ELR).
    Kafka keeps removed replicas in the ELR (PartitionChangeBuilder.maybePopulateTargetElr after a
    completion), so there it holds vacuously."""
    outside = s.partition.elr & ~mask(s.partition.replicas)
    if follows_kafka(cfg) or not outside:
        return True
    return Violated(f"ELR members {as_set(outside)} are not replicas {as_list(s.partition.replicas)}")


# ------------------------------------------------------------------ replication [kafka-tlaplus v3.5 §2.4]


@spec.invariant(name="LeaderCompleteness")
def leader_completeness(cfg, s: State):
    """Leader Completeness [Kafka replication protocol description (kafka-tlaplus, v3.5), ch. 2 §2.4]:
    the leader holds the whole committed log, every offset up to the true HWM."""
    p = s.partition
    if not p.leader or not s.committed:
        return True
    log = s.brokers[p.leader - 1].log
    if has_prefix(log, s.committed):
        return True
    return Violated(f"leader {p.leader} lacks committed {first_missing(log, s.committed)}")


@spec.invariant(name="LeaderCandidateCompleteness")
def leader_candidate_completeness(cfg, s: State):
    """Leader Candidate Completeness [Kafka replication protocol description (kafka-tlaplus, v3.5),
    ch. 2 §2.4.1], with KIP-966's ELR: every leader candidate, an ISR member or an ELR member that is
    a replica, holds the whole committed log. Kafka can leave removed replicas in the ELR, but never
    elects them, so they are not candidates."""
    committed = s.committed
    if not committed:
        return True
    p = s.partition
    candidates = p.isr | p.elr & mask(p.replicas)
    n = len(committed)
    for i, b in enumerate(s.brokers, 1):
        if candidates >> i & 1 and b.log[:n] != committed:
            role = "ISR member" if p.isr >> i & 1 else "ELR member"
            return Violated(f"{role} {i} lacks committed {first_missing(b.log, committed)}")
    return True


@spec.invariant(name="LogMatching")
def log_matching(cfg, s: State):
    """Log Matching [Kafka replication protocol description (kafka-tlaplus, v3.5), ch. 2 §2.4]: any
    two replicas' logs are equal up to the smaller of their local HWMs (the stable prefix)."""
    bs = s.brokers
    for i, a in enumerate(bs):
        if not a.hwm:
            continue  # nothing stable on this replica (the common case: skip the slicing)
        for j in range(i + 1, len(bs)):
            b = bs[j]
            n = min(a.hwm, b.hwm)
            if n and a.log[:n] != b.log[:n]:
                offset = next(o for o in range(n) if a.log[o] != b.log[o])
                return Violated(f"brokers {i + 1} and {j + 1} differ at offset {offset}, below both HWMs "
                                f"({a.hwm}, {b.hwm}): epochs {a.log[offset]} and {b.log[offset]}")
    return True


@spec.invariant(name="ReplicationQuorumSuperset")
def replication_quorum_superset(cfg, s: State):
    """The leader's Maximal ISR (its replication quorum) contains the controller's ISR (the election
    quorum), once the leader knows its leader epoch [Kafka replication protocol description
    (kafka-tlaplus, v3.5), ch. 2 §2.4.1, §2.9]."""
    p = s.partition
    if not p.leader:
        return True
    b = s.brokers[p.leader - 1]
    if b.status < FENCED or b.known_leader != p.leader or b.known_leader_epoch != p.leader_epoch:
        return True
    missing = p.isr & ~b.maximal_isr
    if not missing:
        return True
    return Violated(f"ISR members {as_set(missing)} are not in leader {p.leader}'s Maximal ISR {as_set(b.maximal_isr)} "
                    f"(leader epoch {p.leader_epoch})")


@spec.invariant(name="NoAckedRecordLost")
def no_acked_record_lost(cfg, s: State):
    """Records acknowledged to acks=all producers stay committed and on the leader."""
    acked = s.acked
    if not acked:
        return True
    if not has_prefix(s.committed, acked):
        return Violated(f"the committed log no longer holds acknowledged {first_missing(s.committed, acked)}")
    p = s.partition
    if not p.leader:
        return True
    log = s.brokers[p.leader - 1].log
    if has_prefix(log, acked):
        return True
    return Violated(f"leader {p.leader} lacks acknowledged {first_missing(log, acked)}")


@spec.invariant(name="CommittedNeverOverwritten", reads=("committed_overwritten",))
def committed_never_overwritten(cfg, s: State):
    """No leader ever commits a log that contradicts the committed one."""
    if not s.committed_overwritten:
        return True
    return Violated(f"a leader advanced its HWM over a log that contradicts the committed log (epochs) "
                    f"{as_list(s.committed)}")


# -------------------------------------------------------------- reassignment [kafka-tlaplus kip-966 §4.2]


@spec.invariant(name="CompletionRespectsMinIsr", reads=("completed_below_min_isr",))
def completion_respects_min_isr(cfg, s: State):
    """Every completed reassignment left ISR >= MinISR [Kafka replication protocol description
    (kafka-tlaplus, kip-966), ch. 4 §4.2, completion rule 1]."""
    if not s.completed_below_min_isr:
        return True
    p = s.partition
    return Violated(f"a reassignment completed with the ISR below MinISR (min.insync.replicas {cfg.min_isr}); "
                    f"now replicas {as_list(p.replicas)}, ISR {as_set(p.isr)}")


@spec.invariant(name="MinIsrRecoveryQuorum", reads=("partition", "brokers", "budget"))
def min_isr_recovery_quorum(cfg, s: State):
    """KIP-966 with ELR on: the ISR and the ELR together keep at least min(MinISR, |replicas|) replicas
    (each holding the committed log: LeaderCandidateCompleteness), from a partition that started with
    ISR >= MinISR, until some replica loses its log (an unclean shutdown) or its broker for good; with
    unclean leader election off (an unclean election trades this guarantee for availability)."""
    if not cfg.elr or cfg.unclean or len(cfg.isr) < cfg.min_isr or \
            s.budget.unclean_shutdowns != cfg.max_unclean_shutdowns:
        return True
    p = s.partition
    need = min(cfg.min_isr, len(p.replicas))
    if size(p.isr | p.elr) >= need or gone(s):
        return True
    return Violated(f"ISR {as_set(p.isr)} and ELR {as_set(p.elr)} together hold fewer than min(MinISR, "
                    f"|replicas|) = {need} replicas, with no replica's log lost")


@spec.invariant(name="EpochsMonotonic")
def epochs_monotonic(cfg, s: State):
    """Epochs never decrease: no broker knows epochs newer than the controller's, and every log's
    leader epochs are non-decreasing and at most the current leader epoch."""
    p = s.partition
    leader_epoch, partition_epoch = p.leader_epoch, p.partition_epoch
    for i, b in enumerate(s.brokers, 1):
        if b.known_leader_epoch > leader_epoch or b.known_partition_epoch > partition_epoch:
            return Violated(f"broker {i} knows leader/partition epochs {b.known_leader_epoch}/"
                            f"{b.known_partition_epoch}, newer than the controller's {leader_epoch}/{partition_epoch}")
        log = b.log
        # (a log of one record, the common case, is trivially non-decreasing)
        if log and (log[-1] > leader_epoch or len(log) > 1 and any(x > y for x, y in zip(log, log[1:]))):
            return Violated(f"broker {i}'s log epochs {as_list(log)} decrease or pass the leader epoch {leader_epoch}")
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
