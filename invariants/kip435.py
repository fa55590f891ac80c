"""Properties of the `kip435` model: KIP-435's step limits (Calculating a Reassignment Step), batch limits
(Collecting a reassignment batch), and that a step neither shrinks the ISR below MinISR nor deletes the last
in-sync copy."""

from harness.bitset import as_list, as_set
from harness.model import Violated
from specs.kip435 import spec
from specs.kip435.state import State


# ------------------------------------------------------- KIP-435, "Calculating a Reassignment Step"

@spec.invariant(name="StepWithinR", reads=("partitions",))
def step_within_r(cfg, s: State) -> bool | Violated:
    """A running step adds at most the R it was computed with (more only for the MinISR top-up) and drops
    at most R."""
    for i, p in enumerate(s.partitions):
        if not p.target:
            continue
        allowed = max(p.step_r, cfg.min_isr - p.step_isr, 1)
        if p.adding.bit_count() > allowed or p.removing.bit_count() > p.step_r:
            return Violated(f"partition {i}'s step adds {as_set(p.adding)} and drops {as_set(p.removing)}: more than "
                            f"R = {p.step_r} (top-up allowance {allowed})")
    return True


@spec.invariant(name="TopUp", reads=("partitions",))
def top_up(cfg, s: State) -> bool | Violated:
    """A step computed while fewer than MinISR replicas were in sync adds enough to reach MinISR (as far as
    FTR has replicas to add)."""
    for i, p in enumerate(s.partitions):
        if not p.target or p.step_isr >= cfg.min_isr:
            continue
        fresh = len(set(cfg.targets[i]) - set(p.replicas))
        need = min(cfg.min_isr - p.step_isr, fresh + p.adding.bit_count())
        if p.adding.bit_count() < need:
            return Violated(f"partition {i} had {p.step_isr} in-sync replicas (MinISR {cfg.min_isr}) but its step "
                            f"adds only {as_set(p.adding)}")
    return True


@spec.invariant(name="LastStepIsFTR", reads=("partitions",))
def last_step_is_ftr(cfg, s: State) -> bool | Violated:
    """A step that leaves a partition with exactly FTR's replicas leaves them in FTR's order (the last step
    equals FTR)."""
    for i, p in enumerate(s.partitions):
        if p.steps and not p.target and set(p.replicas) == set(cfg.targets[i]) and p.replicas != cfg.targets[i]:
            return Violated(f"partition {i} ends at {as_list(p.replicas)}, not FTR {as_list(cfg.targets[i])}")
    return True


@spec.invariant(name="PreferredLeaderFirst", reads=("partitions", "late"))
def preferred_leader_first(cfg, s: State) -> bool | Violated:
    """A partition whose FTR has a preferred leader outside CR adds it in its first step, as TR's first
    replica, and that step ends with it leading if it is live and in sync."""
    for i, p in enumerate(s.partitions):
        preferred = cfg.targets[i][0]
        if p.target and not p.steps and preferred not in cfg.replicas[i] and (
                not p.adding >> preferred & 1 or p.target[0] != preferred):
            return Violated(f"partition {i}'s first step is {as_list(p.target)}: FTR's preferred leader {preferred} "
                            f"is not added as its first replica")
    return not s.late or Violated(f"partition {s.late - 1}'s first step ended with leader "
                                  f"{s.partitions[s.late - 1].leader}, not FTR's preferred leader "
                                  f"{cfg.targets[s.late - 1][0]} that was live and in sync")


# ------------------------------------------------------- KIP-435, "Collecting a reassignment batch"

@spec.invariant(name="BatchWithinLimits", reads=("batch_size", "leader_moves", "limits"))
def batch_within_limits(cfg, s: State) -> bool | Violated:
    """A batch moves at most P partitions and, under the described rule, at most L leaders (steps that end
    with a new leader, whatever `moves` counted)."""
    if s.batch_size > s.limits.p:
        return Violated(f"the batch moves {s.batch_size} partitions, P = {s.limits.p}")
    if s.leader_moves > s.limits.l:
        return Violated(f"the batch moves {s.leader_moves} leaders, L = {s.limits.l}")
    return True


# ---------------------------------------- KIP-435, "Performing reassignment for a single partition"

@spec.invariant(name="IsrFloor", reads=("shrunk",))
def isr_floor(cfg, s: State) -> bool | Violated:
    """No step leaves a partition with fewer in-sync replicas than min(MinISR, its in-sync count when the
    reassignment started, |FTR|) (a target smaller than MinISR cannot keep MinISR in sync)."""
    return not s.shrunk or Violated(f"a step of partition {s.shrunk - 1} forced replicas out of its ISR below "
                                    f"min(MinISR = {cfg.min_isr}, its in-sync count at the start = "
                                    f"{s.partitions[s.shrunk - 1].start_isr}, |FTR| = "
                                    f"{len(cfg.targets[s.shrunk - 1])})")


@spec.invariant(name="NoAckedRecordLost", reads=("lost",))
def no_acked_record_lost(cfg, s: State) -> bool | Violated:
    """No deletion removes the last in-sync copy of a partition (the ISR holds every acknowledged record)."""
    return not s.lost or Violated(f"a step of partition {s.lost - 1} deleted its last in-sync replicas")


@spec.invariant(name="LeaderInSync", reads=("partitions",))
def leader_in_sync(cfg, s: State) -> bool | Violated:
    """A partition's leader is one of its in-sync replicas."""
    for i, p in enumerate(s.partitions):
        if p.leader and not p.isr >> p.leader & 1:
            return Violated(f"partition {i}'s leader {p.leader} is not in its ISR {as_set(p.isr)}")
    return True


# -------------------------------------------------------------------------- liveness (graph engine)

spec.eventually("ReachesFTR", lambda cfg, s: all(p.replicas == cfg.targets[i] and not p.target
                                                 for i, p in enumerate(s.partitions)),
                doc="once faults stop, every partition reaches its FTR")
# Declared here, next to the property (specs/kip435/__init__.py runs before it exists). The triage of every lasso
# at the liveness preset: docs/models/kip435.md, "Liveness triage".
spec.expect_liveness_failure(
    "liveness", "ReachesFTR",
    "KIP-435 as written: its step list forces DR out of the ISR before NR catch up (Performing reassignment for a "
    "single partition, steps 8-9), so once a broker failure leaves a step's DR as the only in-sync replicas, the "
    "step deletes them; with unclean leader election off (Kafka's default since KIP-106) no replica may lead, "
    "none can catch up, and the partition never reaches its FTR")


# ------------------------------------------------------------------ Z3 forms (harness prove)
# The per-partition properties, and the lemma that makes them inductive, over specs/kip435/symbolic.py.
from specs.kip435 import symbolic as _sym  # noqa: E402

spec.symbolic = _sym
spec.z3_invariants.update({**_sym.PROPERTIES, **_sym.LEMMAS})
