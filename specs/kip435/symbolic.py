"""One partition of `kip435` as a Z3 transition relation, for `prove` and bounded model checking.

Proving the model's step properties over this relation proves them for every input of the step
calculation up to N brokers: `init` is any settled partition (any CR and FTR over 1..N, any ISR within
CR, any R and MinISR), and `collect_batch` computes a step from whatever state the invariants allow.

The symbolic state, over N brokers (broker sets are (N+1)-bit vectors, bit b = broker b, bit 0 unused):
* the partition: CR, FTR (`F`), ISR (`I`), the leader `L` (one-hot or 0), the running step's NR, DR and
  TR (sets), whether a step is running; the live brokers; R as the next calculation reads it, MinISR;
* replica order, as far as a property or a rule reads it: the first replica of CR (`Ch`), of TR (`Th`)
  and of FTR (`Fh`), and whether CR, and TR, equal FTR as lists (`at_ftr`, `t_ftr`);
* the model's history: the in-sync count and R a step was computed with, the in-sync count at the start,
  whether a step has completed (`started`), and the ghosts `shrunk`, `lost`, `late`; the budgets.

Order is otherwise abstracted: where the KIP takes "the first R" of a list (DR from ER in CR order, NR
from FTR - CR in FTR order), any subset of that size may be taken, which is what all orders of the
lists allow; where it picks "the first live in-sync replica", any one may be picked. A property proved
for every choice holds for the model's. Batches (P, L) need several partitions and are not modelled:
BatchWithinLimits has no Z3 form, and bounded model checking takes single-partition configs only.

Each rule mirrors the model rule of the same name; tests/test_kip435_z3.py checks on concrete states
that every step of the model is a step of the relation (projected), and that the Z3 properties evaluate
like their Python twins.
"""

from __future__ import annotations

import z3

from harness.bitset import mask
from harness.symbolic import all_mask, broker, count, field, one_hot, within, zmax, zmin

SETS = ("CR", "F", "I", "L", "NR", "DR", "TR", "Ch", "Th", "Fh", "live")
INTS = ("r", "min_isr", "step_isr", "step_r", "start_isr", "failures", "changes")
BOOLS = ("running", "at_ftr", "t_ftr", "started", "shrunk", "lost", "late")
MATCHED = SETS + INTS + BOOLS  # every field: a concrete state determines them all (project)
# The state fields they stand for (`project` computes them; the one partition is partitions[0], FTR its target
# in the config), the names `prove`'s CTIs are written with.
STATE_FIELDS = {
    "CR": field("partitions[0].replicas"), "F": field("FTR (config targets[0])"), "I": field("partitions[0].isr"),
    "L": broker("partitions[0].leader"), "NR": field("partitions[0].adding"), "DR": field("partitions[0].removing"),
    "TR": field("partitions[0].target"), "Ch": broker("partitions[0].replicas[0]"),
    "Th": broker("partitions[0].target[0]"), "Fh": broker("FTR's first replica"), "live": field("alive"),
    "r": field("limits.r"), "min_isr": field("MinISR (config min_isr)"), "step_isr": field("partitions[0].step_isr"),
    "step_r": field("partitions[0].step_r"), "start_isr": field("partitions[0].start_isr"),
    "failures": field("failures"), "changes": field("config_changes"),
    "running": field("a step runs (partitions[0].target not empty)"),
    "at_ftr": field("partitions[0].replicas is FTR"), "t_ftr": field("partitions[0].target is FTR"),
    "started": field("a step completed (partitions[0].steps > 0)"), "shrunk": field("shrunk (not 0)"),
    "lost": field("lost (not 0)"), "late": field("late (not 0)")}


def make_state(prefix: str, n: int) -> dict:
    s = {f: z3.BitVec(f"{prefix}{f}", n + 1) for f in SETS}
    s.update({f: z3.Int(f"{prefix}{f}") for f in INTS})
    s.update({f: z3.Bool(f"{prefix}{f}") for f in BOOLS})
    s["n"] = n
    return s


# ---------------------------------------------------------------------------------------- helpers

def choose_one(name: str, n: int, among):
    """A parameter: one broker of `among`, or 0 when `among` is empty ("the first live in-sync replica"
    under some order)."""
    x = z3.BitVec(name, n + 1)
    return x, z3.If(among == 0, x == 0, z3.And(one_hot(x), within(x, among)))


def type_ok(s: dict):
    full = all_mask(s["n"])
    return z3.And(*[within(s[f], full) for f in SETS], s["CR"] != 0, s["F"] != 0,
                  one_hot(s["Ch"]), within(s["Ch"], s["CR"]), one_hot(s["Fh"]), within(s["Fh"], s["F"]),
                  z3.Or(s["L"] == 0, one_hot(s["L"])), z3.Or(s["Th"] == 0, one_hot(s["Th"])),
                  s["r"] >= 1, s["min_isr"] >= 1, *[s[f] >= 0 for f in INTS])


def _post(s, t, v: dict):
    """t is s with the fields of v changed."""
    return z3.And(*[t[f] == v.get(f, s[f]) for f in SETS + INTS + BOOLS])


def brokers(cfg) -> int:
    return cfg.brokers


def unsupported(cfg) -> str | None:
    """Why this relation does not model `cfg` for `prove`: never (it models any one partition)."""
    return None


def bmc_unsupported(cfg) -> str | None:
    """Why bounded model checking from `cfg`'s initial state cannot use this relation."""
    if len(cfg.replicas) != 1:
        return "the relation models one partition: bounded model checking needs a one-partition config"
    return None


# ==================================================================================== the rules
# One per rule of specs.kip435, same names; each returns (relation, parameters).

def collect_batch(s, t, cfg):
    """The controller computes the partition's step and starts it (the step calculation, both readings)."""
    m, n = cfg.mutated, s["n"]
    cr, f, isr, fh = s["CR"], s["F"], s["I"], s["Fh"]
    dr, nr, th = (z3.BitVec(f"collect_{x}", n + 1) for x in ("DR", "NR", "Th"))
    t_ftr = z3.Bool("collect_t_ftr")
    r = count(f) + count(cr) if m.ignore_r else s["r"]
    er, missing = cr & ~f, f & ~cr                                    # 2.2; the candidates for NR
    new_leader = z3.And(fh & cr == 0, s["L"] != fh) if not m.leader_later else z3.BoolVal(False)  # 3.2
    nr0 = z3.If(new_leader, 1, 0)
    alone = z3.And(new_leader, z3.BoolVal(cfg.leader_step == "alone"))  # no rule 3.4 in the leader's step
    in_sync = count(cr & isr & (~dr if cfg.topup == "after" else all_mask(n)))  # 3.1, as `topup` counts
    if cfg.reading == "example":
        n_dr = z3.If(new_leader, 0, zmin(r, count(er)))
        room = count(f) - (count(cr) - n_dr)
        want = z3.If(alone, nr0, zmax(nr0, zmin(r, room)))
        if not m.skip_topup:
            want = z3.If(in_sync < s["min_isr"], zmax(want, s["min_isr"] - in_sync), want)
    else:
        n_dr = zmin(r, count(er))                                     # 2.3
        three_four = z3.If(alone, nr0, r)
        want = three_four if m.skip_topup else z3.If(nr0 < s["min_isr"], zmin(s["min_isr"], r), three_four)
    tr = (cr | nr) & ~dr                                              # 4
    final = z3.And(tr == f, z3.BoolVal(not m.no_reorder))             # 5
    # TR's first replica: FTR's in the last step; else a new preferred leader (example: placed first), else
    # CR's first if it stays, else one of TR (the next survivor, or a new replica in the dropped one's slot)
    led_by_new = z3.BoolVal(False) if cfg.reading == "text" else new_leader
    head = z3.If(z3.Or(led_by_new, final), th == fh,
                 z3.If(s["Ch"] & dr == 0, th == s["Ch"], z3.And(one_hot(th), within(th, tr))))
    rel = z3.And(z3.Not(s["running"]), z3.Not(s["at_ftr"]), isr & s["live"] != 0,
                 within(dr, er), count(dr) == n_dr,
                 within(nr, missing), count(nr) == zmin(count(missing), zmax(nr0, want)),
                 z3.Implies(new_leader, within(fh, nr)), head,
                 z3.Implies(final, t_ftr), z3.Implies(t_ftr, z3.And(tr == f, th == fh)),
                 z3.Or(nr != 0, dr != 0, final),                     # step 2: a step that changes nothing waits
                 _post(s, t, {"CR": cr | nr, "NR": nr, "DR": dr, "TR": tr, "Th": th, "Ch": th, "running": True,
                              "t_ftr": t_ftr, "at_ftr": z3.And(dr == 0, t_ftr), "step_isr": in_sync,
                              "step_r": s["r"]}))
    return rel, [dr, nr, th, t_ftr]


def catch_up(s, t, cfg):
    b = z3.BitVec("catch_up_broker", s["n"] + 1)
    rel = z3.And(one_hot(b), within(b, s["CR"]), b & s["I"] == 0, within(b, s["live"]), b & s["DR"] == 0,
                 s["L"] != 0, within(s["L"], s["live"]), _post(s, t, {"I": s["I"] | b}))
    return rel, [b]


def elect_preferred_leader(s, t, cfg):
    th = s["Th"]
    rel = z3.And(s["running"], s["L"] != th, within(th, s["I"]), within(th, s["live"]), _post(s, t, {"L": th}))
    return rel, []


def drop_replicas(s, t, cfg):
    m, n = cfg.mutated, s["n"]
    waits_for = {"target": s["TR"], "new": s["NR"], "none": z3.BitVecVal(0, n + 1)}[cfg.wait]
    isr = s["I"] & ~s["DR"]
    th, tr, live, lead = s["Th"], s["TR"], s["live"], s["L"]
    other, other_ok = choose_one("drop_leader", n, tr & isr & live)
    keep = z3.And(lead != 0, within(lead, tr), within(lead, live))
    first_leads = z3.And(within(th, isr), within(th, live), z3.BoolVal(not m.keep_leader))
    leader = z3.If(first_leads, th, z3.If(keep, lead, other))
    floor = zmin(s["min_isr"], s["start_isr"], count(s["F"]))
    fh = s["Fh"]
    late = z3.And(z3.Not(s["started"]), within(fh, s["NR"]), leader != fh, within(fh, isr), within(fh, live))
    rel = z3.And(s["running"], z3.BoolVal(True) if m.drop_before_in_sync else within(waits_for, s["I"]), other_ok,
                 _post(s, t, {"I": isr, "CR": tr, "Ch": th, "at_ftr": s["t_ftr"], "NR": z3.BitVecVal(0, n + 1),
                              "DR": z3.BitVecVal(0, n + 1), "TR": z3.BitVecVal(0, n + 1),
                              "Th": z3.BitVecVal(0, n + 1), "running": False, "t_ftr": False, "started": True,
                              "L": leader, "lost": z3.Or(s["lost"], z3.And(isr == 0, s["I"] != 0)),
                              "shrunk": z3.Or(s["shrunk"], z3.And(count(tr & isr) < floor,
                                                                  floor <= count(s["CR"] & s["I"]))),
                              "late": z3.Or(s["late"], late)}))
    return rel, [other]


def fail(s, t, cfg):
    n = s["n"]
    b = z3.BitVec("fail_broker", n + 1)
    live = s["live"] & ~b
    isr = z3.If(z3.And(s["I"] & b != 0, s["I"] != b), s["I"] & ~b, s["I"])
    other, other_ok = choose_one("fail_leader", n, s["CR"] & isr & live)
    rel = z3.And(s["failures"] > 0, one_hot(b), within(b, s["live"]), other_ok,
                 _post(s, t, {"live": live, "I": isr, "L": z3.If(s["L"] == b, other, s["L"]),
                              "failures": s["failures"] - 1}))
    return rel, [b, other]


def recover(s, t, cfg):
    b = z3.BitVec("recover_broker", s["n"] + 1)
    lead = z3.If(z3.And(s["L"] == 0, within(b, s["I"])), b, s["L"])
    rel = z3.And(one_hot(b), b & s["live"] == 0, within(b, all_mask(s["n"])),
                 _post(s, t, {"live": s["live"] | b, "L": lead}))
    return rel, [b]


def change_config(s, t, cfg):
    r = z3.Int("change_config_r")
    rel = z3.And(s["changes"] > 0, z3.Not(s["running"]), r >= 1, r <= 2,
                 _post(s, t, {"r": r, "changes": s["changes"] - 1}))
    return rel, [r]


RULES = {f.__name__: f for f in (collect_batch, change_config, catch_up, elect_preferred_leader, drop_replicas,
                                 fail, recover)}


def init(s: dict, cfg):
    """Any partition before its reassignment: a leader first in CR and in sync, the ISR within CR, every
    broker live, no step taken."""
    zero = z3.BitVecVal(0, s["n"] + 1)
    return z3.And(z3.Not(s["running"]), s["NR"] == zero, s["DR"] == zero, s["TR"] == zero, s["Th"] == zero,
                  z3.Not(s["t_ftr"]), s["L"] == s["Ch"], within(s["L"], s["I"]), within(s["I"], s["CR"]),
                  s["live"] == all_mask(s["n"]), s["start_isr"] == count(s["I"]), s["step_isr"] == 0,
                  s["step_r"] == 0, z3.Not(s["started"]), z3.Not(s["shrunk"]), z3.Not(s["lost"]),
                  z3.Not(s["late"]), z3.Implies(s["at_ftr"], z3.And(s["CR"] == s["F"], s["Ch"] == s["Fh"])),
                  z3.Implies(z3.And(s["CR"] == s["F"], count(s["F"]) == 1), s["at_ftr"]))


def project(cfg, state) -> dict:
    """The symbolic fields a concrete one-partition state determines."""
    p, ftr = state.partitions[0], cfg.targets[0]
    return {"CR": mask(p.replicas), "F": mask(ftr), "I": p.isr, "L": 1 << p.leader if p.leader else 0,
            "NR": p.adding, "DR": p.removing, "TR": mask(p.target), "Ch": 1 << p.replicas[0],
            "Th": 1 << p.target[0] if p.target else 0, "Fh": 1 << ftr[0], "r": state.limits.r,
            "min_isr": cfg.min_isr, "step_isr": p.step_isr, "step_r": p.step_r, "start_isr": p.start_isr,
            "failures": state.failures, "changes": state.config_changes, "running": bool(p.target),
            "at_ftr": p.replicas == tuple(ftr), "t_ftr": p.target == tuple(ftr), "started": p.steps > 0,
            "shrunk": bool(state.shrunk), "lost": bool(state.lost), "late": bool(state.late), "live": state.alive}


# ============================================================================ properties and lemmas

def prop_step_within_r(s):
    return z3.Implies(s["running"], z3.And(count(s["NR"]) <= zmax(s["step_r"], s["min_isr"] - s["step_isr"], 1),
                                           count(s["DR"]) <= s["step_r"]))


def prop_top_up(s):
    need = zmin(s["min_isr"] - s["step_isr"], count(s["F"] & ~s["CR"]) + count(s["NR"]))
    return z3.Implies(z3.And(s["running"], s["step_isr"] < s["min_isr"]), count(s["NR"]) >= need)


def prop_last_step_is_ftr(s):
    return z3.Implies(z3.And(s["started"], z3.Not(s["running"]), s["CR"] == s["F"]), s["at_ftr"])


def prop_preferred_leader_first(s):
    fh = s["Fh"]
    first_step = z3.And(s["running"], z3.Not(s["started"]), fh & (s["CR"] & ~s["NR"]) == 0)
    return z3.And(z3.Implies(first_step, z3.And(within(fh, s["NR"]), s["Th"] == fh)), z3.Not(s["late"]))


def prop_isr_floor(s):
    return z3.Not(s["shrunk"])


def prop_no_acked_record_lost(s):
    return z3.Not(s["lost"])


def prop_leader_in_sync(s):
    return z3.Implies(s["L"] != 0, within(s["L"], s["I"]))


def lemma_shape(s):
    """How the fields fit together: the ISR within CR; a running step's CR is TR plus DR, NR within TR, TR
    led by Th = Ch; no step, no NR/DR/TR; the list flags agree with the sets and heads, and a running step
    whose TR holds FTR's replicas is FTR (rule 5)."""
    zero = z3.BitVecVal(0, s["n"] + 1)
    cr, tr = s["CR"], s["TR"]
    return z3.And(within(s["I"], cr),
                  z3.If(s["running"],
                        z3.And(cr == tr | s["DR"], tr & s["DR"] == 0, within(s["NR"], tr & s["F"]),
                               s["DR"] & s["F"] == 0, one_hot(s["Th"]), within(s["Th"], tr), s["Ch"] == s["Th"]),
                        z3.And(s["NR"] == zero, s["DR"] == zero, tr == zero, s["Th"] == zero, z3.Not(s["t_ftr"]))),
                  z3.Implies(s["at_ftr"], z3.And(cr == s["F"], s["Ch"] == s["Fh"])),
                  z3.Implies(s["t_ftr"], z3.And(tr == s["F"], s["Th"] == s["Fh"])),
                  z3.Implies(z3.And(s["running"], tr == s["F"]), s["t_ftr"]))


def lemma_size(s):
    """A partition never has fewer replicas than min(MinISR, its in-sync count at the start, |FTR|): a step
    keeps |TR| >= min(|CR|, |FTR|) (rule 3.4 adds what it drops while FTR has replicas to add)."""
    floor = zmin(s["min_isr"], s["start_isr"], count(s["F"]))
    return z3.If(s["running"], count(s["TR"]) >= floor, count(s["CR"]) >= floor)


PROPERTIES = {
    "StepWithinR": prop_step_within_r,
    "TopUp": prop_top_up,
    "LastStepIsFTR": prop_last_step_is_ftr,
    "PreferredLeaderFirst": prop_preferred_leader_first,
    "IsrFloor": prop_isr_floor,
    "NoAckedRecordLost": prop_no_acked_record_lost,
    "LeaderInSync": prop_leader_in_sync,
}
LEMMAS = {
    "LemmaShape": lemma_shape,
    "LemmaSize": lemma_size,
}
