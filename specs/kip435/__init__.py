"""KIP-435 incremental, batched partition reassignment.

Who acts: the controller (computes a reassignment step per partition, collects a batch of them,
starts the new replicas, elects the preferred leader, forces the dropped replicas out of the ISR
and deletes them), new replicas (catch up by fetching and join the ISR), brokers (fail and recover).
Brokers are 1..N as in the other models (the pure step function takes any ids: its
test uses the KIP's 0..9).

The step calculation (KIP-435, "Calculating a Reassignment Step") is the pure function `step`
below; the model applies it to several partitions in batches (KIP-435, "Collecting a reassignment
batch") and executes each step (KIP-435, "Performing reassignment for a single partition").

Abstractions (docs/ARCHITECTURE.md, "The kip435 model"):
* Fetch is abstracted as in `kraft`'s controller view: a live replica of a partition with a live
  leader catches up in one step and joins the ISR. Records are not modelled one by one: the ISR
  is the set of replicas that hold every acknowledged record, so acknowledged records are lost
  exactly when a partition's ISR becomes empty by a deletion (`lost`).
* A broker failure removes it from every ISR unless it is the last member (Kafka keeps the last
  one) and moves leadership to another live in-sync replica; there is no unclean election.
* The controller does not fail; a batch's steps start atomically when the batch is collected.
* R, P and L change only between batches (`change_config`, budgeted), so a change affects the next
  step calculation only (KIP-435, Proposed Changes).

The choices the KIP leaves open are variants (`Kip435Config`). The defaults are KIP-435 as written: the
worked example's step calculation and the new algorithm's step list, which waits for nothing before
forcing DR out; it loses acknowledged records on the KIP's own example (`expected` below).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations, product
from typing import Annotated, NamedTuple

from harness.bitset import as_list, mask, members
from harness.itf import IdSet, Int, OptId, Seq
from harness.model import Config, Spec, budget, ids, param, variant

MAX_BROKERS = 16
NO_LEADER = 0  # shown as -1 in traces


# =========================================================================== the step calculation

class Step(NamedTuple):
    nr: tuple  # new replicas to add, in the order they are added
    dr: tuple  # replicas to drop, in CR order
    tr: tuple  # the target replicas of this step


def _place(cr: tuple, nr: tuple, dr: tuple, leader_first: int | None) -> tuple:
    """TR = CR + NR - DR as the worked example lists it: each new replica takes the slot of a dropped one
    (the survivors keep their positions), a new preferred leader goes first, the rest go last."""
    rest = [b for b in nr if b != leader_first]
    out = []
    for b in cr:
        if b in dr:
            if rest:
                out.append(rest.pop(0))
        else:
            out.append(b)
    out += rest
    if leader_first is not None and leader_first in nr:
        out.insert(0, leader_first)
    return tuple(out)


def step(ftr, cr, isr, leader, r: int, min_isr: int, reading: str = "example", *, leader_step: str = "with-others",
         topup: str = "before", ignore_r: bool = False, skip_topup: bool = False, keep_order: bool = False,
         leader_later: bool = False) -> Step:
    """The next reassignment step of one partition (KIP-435, "Calculating a Reassignment Step").

    ftr, cr: replica lists (final target, current); isr: the in-sync brokers (any iterable);
    leader: the current leader (NO_LEADER: none); r: reassignment.parallel.replica.count; min_isr:
    min.insync.replicas; leader_step, topup: the choices the KIP leaves open (`Kip435Config`). Returns
    (NR, DR, TR). The other keyword flags are the model's mutations.

    Rule by rule (numbers as in the KIP):
    1. Only FTR and CR are inputs (plus the ISR, leader, R and MinISR the later rules name).
    2. DR: 2.1 computes n = max(R, |FTR| - |CR|), which no later rule uses (both readings ignore
       it); 2.2 ER = CR - FTR in CR order; 2.3 DR = the first R of ER.
    3. NR: 3.1 whether the in-sync replicas reach MinISR; 3.2 a preferred leader FTR[0] that is
       not yet in CR is added first; 3.3 if |NR| < MinISR, take min(MinISR, R) - |NR| from FTR;
       3.4 otherwise as many as R allows.
    4. TR = CR + NR - DR.  5. If TR holds exactly FTR's replicas it is FTR, in FTR's order.

    `text` reads 2-4 literally: every step drops up to R, 3.3 compares |NR| (not the in-sync count)
    with MinISR, so with MinISR = 1 a step drops two and adds one, and TR is CR's survivors followed by
    NR. `example` is the reading that reproduces the KIP's worked example: the step that adds a new
    preferred leader drops nothing (the leader moves first, "Proposed Changes"); other steps drop up to
    R and add up to R but no more than keeps |TR| at |FTR|; 3.3 is the MinISR top-up of "Proposed
    Changes": when fewer than MinISR replicas are in sync (of CR, or of CR - DR: `topup`), add at least
    MinISR minus that count, beyond R; TR puts each new replica where a dropped one stood and a new
    preferred leader first. Under `leader_step=alone` the step that adds a new preferred leader adds
    nothing else but the top-up (rule 3.4 does not apply to it). Both readings take new replicas from
    FTR - CR in FTR order (taking one already in CR adds nothing).
    """
    ftr, cr, isr = tuple(ftr), tuple(cr), set(isr)
    if ignore_r:
        r = len(ftr) + len(cr)
    er = [b for b in cr if b not in ftr]                      # 2.2
    missing = [b for b in ftr if b not in cr]                 # candidates for NR
    preferred = ftr[0]
    new_leader = preferred not in cr and preferred != leader and not leader_later  # 3.2
    nr: list[int] = [preferred] if new_leader else []
    alone = new_leader and leader_step == "alone"             # rule 3.4 does not apply to the leader's step
    if reading == "text":
        dr = er[:r]                                           # 2.3 (n of 2.1 unused)
        if len(nr) < min_isr and not skip_topup:              # 3.3, |NR| compared with MinISR
            want = min(min_isr, r)
        else:                                                 # 3.4
            want = len(nr) if alone else r
    elif reading == "example":
        dr = [] if new_leader else er[:r]
        room = len(ftr) - (len(cr) - len(dr))                 # keeps |TR| at most |FTR| (the example)
        want = len(nr) if alone else max(len(nr), min(r, room))
        counted = cr if topup == "before" else [b for b in cr if b not in dr]
        in_sync = sum(1 for b in counted if b in isr)         # 3.1
        if in_sync < min_isr and not skip_topup:              # the MinISR top-up may exceed R
            want = max(want, min_isr - in_sync)
    else:
        raise ValueError(f"unknown reading {reading!r}")
    nr += [b for b in missing if b not in nr][:max(0, want - len(nr))]
    if reading == "text":
        tr = tuple(b for b in cr if b not in dr) + tuple(nr)  # 4, literally: NR after the survivors
    else:
        tr = _place(cr, tuple(nr), tuple(dr), preferred if new_leader else None)
    if set(tr) == set(ftr) and not keep_order:                # 5: the last step is FTR
        tr = ftr
    return Step(tuple(nr), tuple(dr), tr)


def steps(ftr, cr, r: int, min_isr: int, reading: str = "example", limit: int = 64) -> list[tuple]:
    """The assignments a reassignment passes through when every step completes with all replicas in
    sync and the leader at TR[0] (CR first, FTR last)."""
    seen = [tuple(cr)]
    while seen[-1] != tuple(ftr) and len(seen) <= limit:
        cur = seen[-1]
        seen.append(step(ftr, cur, cur, cur[0], r, min_isr, reading).tr)
    return seen


def step_bound(ftr, cr, r: int, min_isr: int = 1, reading: str = "example") -> int:
    """Steps a reassignment needs at most when every step completes in sync. `example`: one to add a new
    preferred leader, then each step drops min(R, |ER|) and adds toward FTR, plus one to reorder:
    2 + ceil(max(|CR-FTR|, |FTR-CR|) / R). `text` adds only min(MinISR, R) per step when no preferred
    leader is new (rule 3.3 compares |NR| with MinISR), so FTR-CR is divided by that instead."""
    out = len(set(cr) - set(ftr))
    add = len(set(ftr) - set(cr))
    per_add = r if reading == "example" else min(r, min_isr)
    return 2 + max(-(-out // r), -(-add // per_add))


# ================================================================================== the model

@dataclass(frozen=True)
class Kip435Config(Config):
    reading: str = variant("example", "step calculation: example = the reading that reproduces the KIP's worked "
                                      "example (new replicas where the dropped ones stood, a new preferred leader "
                                      "first), text = the numbered rules read literally (rule 4: TR = CR + NR - DR, "
                                      "NR after the survivors)", ("example", "text"))
    leader_step: str = variant("with-others", "the step that adds FTR's new preferred leader (rule 3.2): with-others "
                                              "= rules 3.3-3.4 go on, up to R new replicas in all; alone = only the "
                                              "leader, beyond it only the MinISR top-up (as the KIP author's draft, "
                                              "apache/kafka PR #6011, adds one new replica a step)",
                               ("with-others", "alone"))
    topup: str = variant("before", "the MinISR top-up of reading=example (Proposed Changes; rule 3.1/3.3) counts "
                                   "the in-sync replicas of CR: before = all of CR, after = CR - DR (the survivors "
                                   "of the step's drops)", ("before", "after"))
    batch: str = variant("described", "batch collection: described = at most L leader movements, the rest filled "
                                      "with other moves; pseudocode = leader movements first, as written",
                         ("described", "pseudocode"))
    moves: str = variant("first", "what counts as a leader movement for L (Collecting a reassignment batch leaves "
                                  "involvesLeaderReassignment undefined): first = TR's first replica is not the "
                                  "current leader (the step ends with it leading); leaves = the current leader is "
                                  "not in TR (Performing reassignment, step 7: a new leader only if the current one "
                                  "is not in TR)", ("first", "leaves"))
    wait: str = variant("none", "when DR are forced out of the ISR: none = in the step that adds NR (KIP-435, "
                                "Performing reassignment for a single partition, new algorithm, steps 1-10: nothing "
                                "waits for NR to catch up), new = once every NR replica is in the ISR (Motivation: "
                                "bring one replica in sync, then remove an old one), target = once every TR replica "
                                "is (the existing algorithm's step 4)", ("none", "new", "target"))
    brokers: int = param(4, "brokers 1..N", lo=1, hi=MAX_BROKERS)
    replicas: tuple[tuple[int, ...], ...] = ids(((1, 2), (2, 3)), "each partition's current replicas (CR); the first "
                                                "leads", most=MAX_BROKERS, lists=4)
    targets: tuple[tuple[int, ...], ...] = ids(((3, 4), (3, 4)), "each partition's final target replicas (FTR)",
                                               most=MAX_BROKERS, lists=4)
    lagging: int = param(0, "up to `lagging` replicas of each partition, other than its first (the leader), start "
                            "out of the ISR: one initial state per choice of them", lo=0, hi=8)
    r: int = param(1, "reassignment.parallel.replica.count (R)", lo=1, hi=MAX_BROKERS)
    p: int = param(1, "reassignment.parallel.partition.count (P)", lo=1, hi=4)
    l: int = param(1, "reassignment.parallel.leader.movements (L)", lo=1, hi=4)
    min_isr: int = param(1, "min.insync.replicas", lo=1, hi=MAX_BROKERS)
    max_failures: int = budget(0, "broker failures (each broker may recover)")
    max_config_changes: int = budget(0, "dynamic changes of R, P and L between batches (each to 1 or 2)")

    def validate(self) -> str | None:
        if len(self.replicas) != len(self.targets):
            return "replicas and targets must name the same partitions"
        for group in self.replicas + self.targets:
            if len(set(group)) != len(group) or not all(1 <= b <= self.brokers for b in group):
                return f"replica lists must be non-empty lists of distinct brokers in 1..{self.brokers}"
        if any(self.lagging >= len(g) for g in self.replicas):
            return "every partition needs an in-sync replica to start"
        return None


class Partition(NamedTuple):
    replicas: Annotated[tuple, Seq(Int())]  # CR (during a step: TR followed by DR not yet deleted)
    isr: Annotated[int, IdSet()]
    leader: Annotated[int, OptId()]  # NO_LEADER: offline
    adding: Annotated[int, IdSet()]  # NR of the running step
    removing: Annotated[int, IdSet()]  # DR of the running step
    target: Annotated[tuple, Seq(Int())]  # TR of the running step; () = none
    step_isr: int  # in-sync replicas the step's MinISR top-up counted (`topup`) (history)
    step_r: int  # the R the step was computed with (history)
    start_isr: int  # in-sync replicas when the reassignment started (history)
    steps: int  # steps taken (history)


class Limits(NamedTuple):
    r: int  # reassignment.parallel.replica.count as the next step calculation reads it
    p: int  # reassignment.parallel.partition.count
    l: int  # reassignment.parallel.leader.movements


class State(NamedTuple):
    partitions: Annotated[tuple, Seq(Partition)]
    limits: Limits  # the dynamic configs; a change applies from the next batch on
    config_changes: int
    alive: Annotated[int, IdSet()]
    failures: int
    leader_moves: int  # leader movements in the current batch (history)
    batch_size: int  # partitions in the current batch (history)
    # history, 1 + the first partition where it happened (0: never):
    shrunk: int  # a step's drop left fewer in-sync replicas than min(MinISR, in-sync at the start, |FTR|)
    lost: int  # a deletion emptied the ISR: acknowledged records lost
    late: int  # a first step that added FTR's preferred leader ended with another leader while it could lead


# The existing algorithm's wait (step 4), for the presets that check something other than the execution: the
# default (KIP-435's own step list) loses records on most of them, which would hide what they check.
WAIT_FOR_TARGET = {"wait": "target"}

PRESETS = {
    # One partition (1,2) -> (3,2): no leader movement, one step.
    "tiny": {"brokers": 3, "replicas": [[1, 2]], "targets": [[3, 2]], "r": 1},
    # A new preferred leader whose slot CR's order does not free: (1,2,3) -> (4,1,5) adds 4 before anything
    # moves; without rule 3.2 the first step is (1,4,3) and 4 leads only at the end.
    "leader-first": {"brokers": 5, "replicas": [[1, 2, 3]], "targets": [[4, 1, 5]], "r": 1, **WAIT_FOR_TARGET},
    # Three partitions, R = 1, P = 2, L = 1, MinISR 2, two broker failures, a change of R/P/L: every rule
    # fires (290,055 states, depth 26). The existing algorithm's wait: the gate exhausts it for no violation.
    "ci": {"brokers": 4, "replicas": [[1, 2], [2, 3], [3, 1]], "targets": [[3, 4], [3, 4], [4, 1]], "r": 1, "p": 2,
           "l": 1, "min_isr": 2, "max_failures": 2, "max_config_changes": 1, **WAIT_FOR_TARGET},
    # KIP-435, "Proposed Changes": (0,1,2,3,4) -> (5,6,7,8,9), R = 2, leader 0; brokers shifted by one.
    # MinISR 1 (Kafka's default). KIP-435 as written loses acknowledged records here (`expected` below).
    "example": {"brokers": 10, "replicas": [[1, 2, 3, 4, 5]], "targets": [[6, 7, 8, 9, 10]], "r": 2},
    # Two partitions that both move their leader, P = 2, L = 1: a batch may not move both leaders.
    "leaders": {"brokers": 4, "replicas": [[1, 2], [2, 1]], "targets": [[3, 4], [4, 3]], "p": 2, "l": 1,
                **WAIT_FOR_TARGET},
    # An under-replicated partition: (1,2,3) with up to 2 behind, MinISR 3, R = 1: with only 1 in sync the
    # first step must add two replicas, beyond R (KIP-435, "Proposed Changes").
    "short": {"brokers": 5, "replicas": [[1, 2, 3]], "targets": [[1, 4, 5]], "lagging": 2, "min_isr": 3, "r": 1,
              **WAIT_FOR_TARGET},
    # The last step needs reordering: (1,2) -> (2,3) gives (3,2) before rule 5.
    "order": {"brokers": 3, "replicas": [[1, 2]], "targets": [[2, 3]], "r": 1, **WAIT_FOR_TARGET},
    # Three replicas, two dropped at once, MinISR 2.
    "drop2": {"brokers": 5, "replicas": [[1, 2, 3]], "targets": [[1, 4, 5]], "r": 2, "min_isr": 2, **WAIT_FOR_TARGET},
    # The unsafe readings of the KIP (the corpus commits each one's shortest trace; `expected` below).
    "no-wait": {"brokers": 5, "replicas": [[1, 2, 3]], "targets": [[1, 4, 5]], "r": 2, "min_isr": 2, "wait": "none"},
    # (1,2,3) -> (2,4) with up to one replica behind, R = 2, MinISR 2, no failures: with 2 behind, the step
    # drops 1 and 3 and waits for 4 only.
    "wait-new": {"brokers": 4, "replicas": [[1, 2, 3]], "targets": [[2, 4]], "lagging": 1, "r": 2, "min_isr": 2,
                 "wait": "new"},
    "pseudocode": {"brokers": 4, "replicas": [[1, 2], [2, 1]], "targets": [[3, 4], [4, 3]], "p": 2, "l": 1,
                   "batch": "pseudocode", **WAIT_FOR_TARGET},
    "leaves": {"brokers": 4, "replicas": [[1, 2], [2, 1]], "targets": [[3, 4], [4, 3]], "p": 2, "l": 1,
               "moves": "leaves", **WAIT_FOR_TARGET},
    "text-topup": {"brokers": 5, "replicas": [[1, 2, 3]], "targets": [[1, 4, 5]], "lagging": 2, "min_isr": 3, "r": 1,
                   "reading": "text", **WAIT_FOR_TARGET},
    "text-leader": {"brokers": 5, "replicas": [[1, 2, 3]], "targets": [[4, 1, 5]], "r": 1, "reading": "text",
                    **WAIT_FOR_TARGET},
    # Three partitions of three replicas, two broker failures, a change of R/P/L (1,324,169 states, depth 33).
    "nightly": {"brokers": 5, "replicas": [[1, 2, 3], [2, 3, 4], [3, 4, 5]], "targets": [[4, 5, 1], [1, 5, 3],
                [1, 2, 3]], "r": 1, "p": 2, "l": 1, "min_isr": 2, "max_failures": 2, "max_config_changes": 1,
                **WAIT_FOR_TARGET},
}

spec = Spec("kip435", Kip435Config, State, doc=__doc__, presets=PRESETS, deadlock=True, expected={
    "example": "KIP-435 as written (the default: wait=none) on its own example, R = 2, MinISR 1: the steps force DR "
               "out of the ISR before NR catch up, until the last in-sync replica is deleted (Performing reassignment "
               "for a single partition, steps 8-9: nothing waits for NR)",
    "no-wait": "the new algorithm's step list (wait=none, the default): DR forced out of the ISR before the new "
               "replicas are in sync (KIP-435, Performing reassignment for a single partition, steps 8-9)",
    "wait-new": "waiting for NR only (wait=new): a TR replica behind at the start is not waited for, so DR leave "
                "the ISR below MinISR (the existing algorithm's step 4 waits for every target replica)",
    "pseudocode": "the batch pseudo-code as written (batch=pseudocode): leader movements fill the batch before L "
                  "is applied (KIP-435, Collecting a reassignment batch)",
    "leaves": "a leader movement counted only when the current leader leaves TR (moves=leaves): a step that makes "
              "a new preferred leader lead escapes L (KIP-435, Collecting a reassignment batch)",
    "text-topup": "rule 3.3 read literally (reading=text): the MinISR top-up is capped at min(MinISR, R), against "
                  "Proposed Changes (KIP-435, Calculating a Reassignment Step)",
    "text-leader": "rule 4 read literally (reading=text): TR = CR + NR - DR puts the new preferred leader after the "
                   "survivors, so the first step does not make it lead (KIP-435, Proposed Changes)",
})
spec.mutation("drop_before_in_sync", rule="drop_replicas", caught_at="drop2",
              removes="waiting for NR in the ISR before forcing DR out (the existing algorithm's step 4)")
spec.mutation("ignore_r", rule="collect_batch", caught_at="short",
              removes="the parallel replica count R in the step calculation (KIP-435, Calculating a "
                      "Reassignment Step, rules 2.3 and 3.4)")
spec.mutation("ignore_l", rule="collect_batch", caught_at="leaders",
              removes="the leader movement limit L (KIP-435, Collecting a reassignment batch)")
spec.mutation("skip_topup", rule="collect_batch", caught_at="short",
              removes="the MinISR top-up of the first step (KIP-435, Proposed Changes; rule 3.3)")
spec.mutation("leader_later", rule="collect_batch", caught_at="leader-first",
              removes="adding FTR's new preferred leader first (KIP-435, Proposed Changes; Calculating a "
                      "Reassignment Step, rule 3.2)")
spec.mutation("keep_leader", rule="drop_replicas", caught_at="leader-first",
              removes="electing the new preferred leader by the end of the first step (KIP-435, Proposed Changes)")
spec.mutation("no_reorder", rule="collect_batch", caught_at="order",
              removes="ordering the last step as FTR (KIP-435, Calculating a Reassignment Step, rule 5)")


def brokers(cfg):
    return range(1, cfg.brokers + 1)


def partitions(cfg):
    return range(len(cfg.replicas))


def in_sync(p: Partition) -> int:
    return sum(1 for b in p.replicas if p.isr >> b & 1)


def set_partition(s: State, i: int, new: Partition) -> tuple:
    return s.partitions[:i] + (new,) + s.partitions[i + 1:]


def compute(cfg, s_limits: Limits, i: int, p: Partition) -> Step:
    m = cfg.mutated
    return step(cfg.targets[i], p.replicas, members(p.isr), p.leader, s_limits.r, cfg.min_isr, cfg.reading,
                leader_step=cfg.leader_step, topup=cfg.topup, ignore_r=m.ignore_r, skip_topup=m.skip_topup,
                keep_order=m.no_reorder, leader_later=m.leader_later)


def top_up_count(cfg, p: Partition, dr: tuple) -> int:
    """The in-sync replicas the step's MinISR top-up counted (`topup`): of CR, or of CR - DR."""
    return sum(1 for b in p.replicas if p.isr >> b & 1 and (cfg.topup == "before" or b not in dr))


def moves_leader(cfg, p: Partition, st: Step) -> bool:
    """Whether the batch counts the step as a leader movement (`moves`)."""
    return st.tr[0] != p.leader if cfg.moves == "first" else p.leader not in st.tr


def elect(p: Partition, alive: int, order: tuple) -> int:
    """The first live in-sync replica in `order`, else none."""
    return next((b for b in order if p.isr >> b & 1 and alive >> b & 1), NO_LEADER)


def behind_choices(cr: tuple, most: int) -> list[int]:
    """The ISRs a partition may start with: all of CR but up to `most` replicas other than its first."""
    return [mask(b for b in cr if b not in out) for k in range(most + 1) for out in combinations(cr[1:], k)]


@spec.init
def init(cfg):
    """Every partition at its CR, led by its first replica; up to `lagging` other replicas behind (in CR,
    not in the ISR), every choice of them an initial state."""
    for isrs in product(*(behind_choices(cr, cfg.lagging) for cr in cfg.replicas)):
        parts = tuple(Partition(replicas=tuple(cr), isr=isr, leader=cr[0], adding=0, removing=0, target=(), step_isr=0,
                                step_r=0, start_isr=isr.bit_count(), steps=0)
                      for cr, isr in zip(cfg.replicas, isrs))
        yield State(partitions=parts, limits=Limits(cfg.r, cfg.p, cfg.l), config_changes=cfg.max_config_changes,
                    alive=mask(brokers(cfg)), failures=cfg.max_failures, leader_moves=0,
                    batch_size=0, shrunk=0, lost=0, late=0)


@spec.rule(fair=True, precondition=lambda cfg, s: not any(p.target for p in s.partitions))
def collect_batch(cfg, s):
    """Controller, when no step is running (KIP-435, "Performing reassignment for a single partition",
    steps 1-5): it computes the next step of every partition not at its FTR, keeps those that change the
    assignment and have an in-sync replica (step 2), collects a batch of at most P, leader movements
    first (`pseudocode`) or at most L of them (`described`), and starts each: CR becomes TR plus DR (DR
    are deleted at the end of the step), NR start as new replicas."""
    moves, others = [], []
    for i, p in enumerate(s.partitions):
        if p.replicas == cfg.targets[i] or not (p.isr & s.alive):
            continue
        st = compute(cfg, s.limits, i, p)
        if st.tr == p.replicas:
            continue
        (moves if moves_leader(cfg, p, st) else others).append((i, st))
    if not moves and not others:
        return None
    if cfg.batch == "pseudocode" or cfg.mutated.ignore_l:
        chosen = (moves + others)[:s.limits.p]
    else:
        chosen = moves[:min(s.limits.l, s.limits.p)]
        chosen += others[:s.limits.p - len(chosen)]
    parts = s.partitions
    for i, st in chosen:
        p = parts[i]
        cur = p.replicas
        parts = parts[:i] + (p._replace(replicas=st.tr + tuple(b for b in cur if b in st.dr), adding=mask(st.nr),
                                        removing=mask(st.dr), target=st.tr, step_isr=top_up_count(cfg, p, st.dr),
                                        step_r=s.limits.r),) + parts[i + 1:]
    # the leaders the batch moves, whatever `moves` counted: each step ends with TR's first replica leading
    n_moves = sum(1 for i, st in chosen if st.tr[0] != s.partitions[i].leader)
    return s._replace(partitions=parts, leader_moves=n_moves, batch_size=len(chosen))


def small(cfg):
    return range(1, 3)


@spec.rule(r=small, p=small, l=small, applies=lambda cfg: cfg.max_config_changes > 0,
           precondition=lambda cfg, s: s.config_changes > 0 and not any(p.target for p in s.partitions))
def change_config(cfg, s, r, p, l):
    """Operator, between batches: sets R, P and L dynamically; only the next step calculation reads
    them, the running steps are left as they are (KIP-435, Proposed Changes)."""
    if Limits(r, p, l) == s.limits:
        return None
    # the last batch's counts were checked against the limits it was collected under
    return s._replace(limits=Limits(r, p, l), config_changes=s.config_changes - 1, leader_moves=0, batch_size=0)


@spec.rule(partition=partitions, broker=brokers, fair=True)
def catch_up(cfg, s, partition, broker):
    """Replica `broker` of `partition`, live and out of the ISR, fetches from the live leader until it
    has every record and joins the ISR (fetch abstracted)."""
    p = s.partitions[partition]
    if broker not in p.replicas or p.isr >> broker & 1 or not s.alive >> broker & 1:
        return None
    if p.leader == NO_LEADER or not s.alive >> p.leader & 1:
        return None
    if p.removing >> broker & 1:
        return None  # a dropped replica is not brought back
    return s._replace(partitions=set_partition(s, partition, p._replace(isr=p.isr | 1 << broker)))


@spec.rule(partition=partitions, fair=True)
def elect_preferred_leader(cfg, s, partition):
    """Controller: when the running step's TR has a new first replica that is live and in sync, it becomes
    the leader (KIP-435, "Proposed Changes": the new preferred leader is elected in the first step)."""
    p = s.partitions[partition]
    if not p.target or p.leader == p.target[0]:
        return None
    b = p.target[0]
    if not (p.isr >> b & 1 and s.alive >> b & 1):
        return None
    return s._replace(partitions=set_partition(s, partition, p._replace(leader=b)))


@spec.rule(partition=partitions, fair=True)
def drop_replicas(cfg, s, partition):
    """Controller, finishing `partition`'s step (KIP-435, "Performing reassignment for a single
    partition", steps 7-10), once the replicas `wait` names are in the ISR: TR's first replica leads if
    it is live and stays in sync (the new preferred leader of the first step), else the current leader
    stays if it is a live replica of TR, else the first live in-sync replica of TR; DR are forced out of
    the ISR and deleted; CR = TR."""
    p = s.partitions[partition]
    if not p.target:
        return None
    waits_for = {"target": mask(p.target), "new": p.adding, "none": 0}[cfg.wait]
    if not cfg.mutated.drop_before_in_sync and waits_for & ~p.isr:
        return None
    isr = p.isr & ~p.removing
    lost = s.lost or (partition + 1 if isr == 0 and p.isr != 0 else 0)
    after = p._replace(isr=isr, replicas=p.target, adding=0, removing=0, target=(), steps=p.steps + 1)
    first = p.target[0]
    leader = p.leader
    if isr >> first & 1 and s.alive >> first & 1 and not cfg.mutated.keep_leader:
        leader = first
    elif leader == NO_LEADER or leader not in p.target or not s.alive >> leader & 1:
        leader = elect(after, s.alive, p.target)
    after = after._replace(leader=leader)
    floor = min(cfg.min_isr, p.start_isr, len(cfg.targets[partition]))
    shrunk = s.shrunk or (partition + 1 if in_sync(after) < floor <= in_sync(p) else 0)
    preferred = cfg.targets[partition][0]
    late = s.late or (partition + 1 if p.steps == 0 and p.adding >> preferred & 1 and leader != preferred
                      and isr >> preferred & 1 and s.alive >> preferred & 1 else 0)
    return s._replace(partitions=set_partition(s, partition, after), lost=lost, shrunk=shrunk, late=late)


@spec.rule(broker=brokers, precondition=lambda cfg, s: s.failures > 0)
def fail(cfg, s, broker):
    """Broker `broker` fails: it leaves every ISR where it is not the last member, and leadership moves
    to another live in-sync replica (none: the partition is offline)."""
    if not s.alive >> broker & 1:
        return None
    alive = s.alive & ~(1 << broker)
    parts = []
    for p in s.partitions:
        if p.isr >> broker & 1 and p.isr != 1 << broker:
            p = p._replace(isr=p.isr & ~(1 << broker))
        if p.leader == broker:
            p = p._replace(leader=elect(p, alive, p.replicas))
        parts.append(p)
    return s._replace(partitions=tuple(parts), alive=alive, failures=s.failures - 1)


@spec.rule(broker=brokers, fair=True)
def recover(cfg, s, broker):
    """Broker `broker` recovers; it leads the partitions left offline whose ISR is it."""
    if s.alive >> broker & 1:
        return None
    alive = s.alive | 1 << broker
    parts = tuple(p._replace(leader=broker) if p.leader == NO_LEADER and p.isr >> broker & 1 else p
                  for p in s.partitions)
    return s._replace(partitions=parts, alive=alive)


@spec.quiescent
def quiescent(cfg, s):
    """Done: every partition at its FTR."""
    return all(p.replicas == cfg.targets[i] and not p.target for i, p in enumerate(s.partitions))


def replicas_text(cfg, s) -> str:
    return ", ".join(as_list(p.replicas) for p in s.partitions)


# ================================================================================ how it is drawn
@spec.protocol_view
def drawn(cfg: Kip435Config, s: State) -> dict:
    """The state as `harness explore` draws an assignment (template views/assignment.html): each partition's
    replicas against its final target, its running step (NR, DR, TR) and the batch's phase and limits."""
    def show_set(m: int) -> str:
        return IdSet().show(m)

    sections, phases = [], []
    for n, (p, ftr) in enumerate(zip(s.partitions, cfg.targets)):
        if tuple(p.replicas) == tuple(ftr) and not p.target:
            phase = "done"
        elif p.target:
            phase = f"step {p.steps} running"
        else:
            phase = "idle" if not p.steps else f"between steps ({p.steps} taken)"
        phases.append(f"partition {n}: {phase}")
        sections.append({"title": f"partition {n}", "rows": [
            ("phase", phase), ("replicas (CR)", as_list(p.replicas)), ("final target (FTR)", as_list(ftr)),
            ("ISR", show_set(p.isr)), ("leader", OptId().show(p.leader)), ("adding (NR)", show_set(p.adding)),
            ("removing (DR)", show_set(p.removing)), ("step target (TR)", as_list(p.target) if p.target else "none"),
            ("steps taken", str(p.steps))]})
    sections.append({"title": "cluster", "rows": [
        ("alive", show_set(s.alive)), ("limits R, P, L", f"{s.limits.r}, {s.limits.p}, {s.limits.l}"),
        ("batch size", str(s.batch_size)), ("leader moves in batch", str(s.leader_moves)),
        ("failures", str(s.failures)), ("config changes", str(s.config_changes))]})
    return {"kind": "assignment", "phase": "; ".join(phases), "sections": sections}
