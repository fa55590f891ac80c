"""The pure protocol logic of `kip435` (no rules here): KIP-435's step calculation (`step`, "Calculating a
Reassignment Step"), its iteration and bound (`steps`, `step_bound`), and the helpers the actors' rules
share (the step of a partition in a state, the leader movement count, elections, the initial ISRs)."""

from __future__ import annotations

from itertools import combinations
from typing import NamedTuple

from harness.bitset import mask, members
from specs.kip435.state import NO_LEADER, Limits, Partition, State


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



# ======================================================================= shared by the rules

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

