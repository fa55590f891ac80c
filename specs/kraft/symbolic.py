"""The controller-level transition relation of `kraft` (seed variant) in Z3, for inductive proofs.

The symbolic state is the partition metadata over N brokers: broker sets are (N+1)-bit vectors (bit
b = broker b, bit 0 unused), the leader a one-hot vector (0 = none), epochs integers; `live` (the
unfenced brokers) is chosen freely by the environment at every step (fencing and unfencing). The
data plane is abstracted away: an AlterPartition may propose any ISR the controller would accept.
Replica order only matters for Kafka's deterministic election, so the seed variant's replica list
is a set here.

Each rule mirrors one pure function of `specs.kraft.controller`; tests/test_z3.py checks, on
concrete states, that the Z3 models of each rule are exactly that function's outcomes.
"""

from __future__ import annotations

import z3

FIELDS = ("R", "I", "E", "A", "M", "L")  # replicas, ISR, ELR, adding, removing, leader (one-hot)


def make_state(prefix: str, n: int) -> dict:
    w = n + 1
    s = {f: z3.BitVec(f"{prefix}{f}", w) for f in FIELDS}
    s["live"] = z3.BitVec(f"{prefix}live", w)
    s["le"], s["pe"] = z3.Int(f"{prefix}le"), z3.Int(f"{prefix}pe")
    s["n"] = n
    return s


def popcount(x, n):
    return z3.Sum([z3.ZeroExt(8, z3.Extract(i, i, x)) for i in range(1, n + 1)])


def all_mask(n: int, w: int):
    return z3.BitVecVal(((1 << (n + 1)) - 1) & ~1, w)


def one_hot_or_zero(x):
    return x & (x - 1) == 0


def type_ok(s: dict):
    n = s["n"]
    w = n + 1
    full = all_mask(n, w)
    return z3.And(*[s[f] & ~full == 0 for f in FIELDS], s["live"] & ~full == 0, one_hot_or_zero(s["L"]),
                  s["le"] >= 0, s["pe"] >= 0)


def _isr_change(s, new_isr, cfg, unclean_shutdown=None):
    """seed_isr_change: (isr, elr) after the ISR becomes new_isr."""
    n = s["n"]
    zero = z3.BitVecVal(0, n + 1)
    if not cfg.elr:
        return z3.If(new_isr == 0, s["I"], new_isr), zero
    us = zero if unclean_shutdown is None else unclean_shutdown
    return new_isr, z3.If(popcount(new_isr, n) >= cfg.min_isr, zero, (s["E"] | s["I"]) & ~new_isr & ~us)


def _pick(current, candidates, choice):
    """seed_pick_leader as a relation: keep a leader that stays a candidate; otherwise any candidate
    (or none when there is none). `choice` is the new leader (one-hot or 0)."""
    keep = z3.And(current != 0, current & candidates == current)
    return z3.If(keep, choice == current,
                 z3.If(candidates == 0, choice == 0, z3.And(choice != 0, choice & candidates == choice)))


def _completion(s, t, cfg, mutation, isr, removing, choice):
    """seed_final_isr + seed_complete: (the completion rules hold, the completion change)."""
    n = s["n"]
    zero = z3.BitVecVal(0, n + 1)
    final = isr if mutation == "keep_removing_in_isr" else isr & ~removing
    min_ok = z3.BoolVal(True) if mutation == "completion_ignores_min_isr" else popcount(isr & ~removing, n) >= cfg.min_isr
    change = z3.And(t["R"] == s["R"] & ~removing, t["I"] == final,
                    t["E"] == z3.If(z3.Or(popcount(final, n) >= cfg.min_isr, not cfg.elr), zero,
                                    s["E"] & ~removing & ~final),
                    _pick(s["L"], final & s["live"], choice), t["L"] == choice, t["A"] == 0, t["M"] == 0,
                    t["le"] == s["le"] + 1, t["pe"] == s["pe"] + 1)
    return z3.And(s["A"] & ~final == 0, min_ok), change


def rule_alter_partition(s, t, cfg, mutation="none"):
    """An accepted AlterPartition with a proposed ISR X (seed_alter_isr), with completion."""
    n = s["n"]
    w = n + 1
    X = z3.BitVec("X", w)
    c = z3.BitVec("choice", w)
    accept = z3.And(X & ~s["R"] == 0, s["L"] != 0, s["L"] & X == s["L"], X & ~s["live"] == 0, one_hot_or_zero(c))
    isr, elr = _isr_change(s, X, cfg)
    in_progress = (s["A"] | s["M"]) != 0
    rules_hold, complete = _completion(s, t, cfg, mutation, isr, s["M"], c)
    completes = z3.And(in_progress, rules_hold)
    catch_up = z3.And(t["R"] == s["R"], t["I"] == isr, t["E"] == elr, t["L"] == s["L"], t["A"] == s["A"],
                      t["M"] == s["M"], t["le"] == s["le"], t["pe"] == s["pe"] + 1,
                      z3.Or(isr != s["I"], elr != s["E"]))
    return z3.And(accept, z3.If(completes, complete, catch_up)), [X, c]


def rule_reassign(s, t, cfg, mutation="none"):
    """AlterPartitionReassignments with target T (seed_reassign), from a settled assignment."""
    n = s["n"]
    w = n + 1
    T = z3.BitVec("T", w)
    c = z3.BitVec("choice", w)
    adding, removing = T & ~s["R"], s["R"] & ~T
    pre = z3.And(s["A"] == 0, s["M"] == 0, T != 0, T & ~all_mask(n, w) == 0, z3.Or(adding != 0, removing != 0),
                 one_hot_or_zero(c))
    min_ok, complete_now = _completion(s, t, cfg, mutation, s["I"], removing, c)
    start = z3.And(c == 0, t["R"] == s["R"], t["I"] == s["I"], t["E"] == s["E"], t["L"] == s["L"], t["A"] == 0,
                   t["M"] == removing, t["le"] == s["le"], t["pe"] == s["pe"] + 1)
    grow = z3.And(c == 0, t["R"] == s["R"] | T, t["I"] == s["I"], t["E"] == s["E"], t["L"] == s["L"],
                  t["A"] == adding, t["M"] == removing, t["le"] == s["le"], t["pe"] == s["pe"] + 1)
    only_removing = adding == 0
    body = z3.If(only_removing, z3.If(min_ok, complete_now, start), grow)
    return z3.And(pre, body), [T, c]


def rule_remove_broker(s, t, cfg, mutation="none"):
    """Fencing or shutdown of broker b (seed_remove_broker)."""
    n = s["n"]
    w = n + 1
    b = z3.BitVec("b", w)
    c = z3.BitVec("choice", w)
    pre = z3.And(b != 0, one_hot_or_zero(b), b & ~all_mask(n, w) == 0, one_hot_or_zero(c),
                 z3.Or((s["I"] | s["E"]) & b != 0, s["L"] == b))
    isr, elr = _isr_change(s, s["I"] & ~b, cfg)
    live = s["live"] & ~b
    current = z3.If(s["L"] == b, z3.BitVecVal(0, w), s["L"])
    new = z3.And(t["R"] == s["R"], t["I"] == isr, t["E"] == elr, _pick(current, isr & live, c), t["L"] == c,
                 t["A"] == s["A"], t["M"] == s["M"], t["le"] == s["le"] + z3.If(c != s["L"], 1, 0),
                 t["pe"] == s["pe"] + 1, z3.Or(isr != s["I"], elr != s["E"], c != s["L"]))
    return z3.And(pre, new), [b, c]


def rule_clean_election(s, t, cfg, mutation="none"):
    """Leaderless: elect an unfenced ISR member, or an ELR member when the ISR is empty."""
    n = s["n"]
    w = n + 1
    c = z3.BitVec("candidate", w)
    zero = z3.BitVecVal(0, w)
    pre = z3.And(s["L"] == 0, c != 0, one_hot_or_zero(c), c & s["live"] == c)
    from_isr = z3.And(c & s["I"] == c, t["I"] == s["I"], t["E"] == s["E"])
    new_elr = z3.If(popcount(c, n) >= cfg.min_isr, zero, s["E"] & ~c)
    from_elr = z3.And(s["I"] == 0, c & s["E"] == c, t["I"] == c, t["E"] == new_elr)
    return z3.And(pre, z3.Or(from_isr, from_elr), t["R"] == s["R"], t["L"] == c, t["A"] == s["A"],
                  t["M"] == s["M"], t["le"] == s["le"] + 1, t["pe"] == s["pe"] + 1), [c]


def rule_cancel(s, t, cfg, mutation="none"):
    """Cancellation (seed_cancel): revert to the original replicas."""
    n = s["n"]
    w = n + 1
    c = z3.BitVec("choice", w)
    zero = z3.BitVecVal(0, w)
    isr = s["I"] & ~s["A"]
    reps = s["R"] & ~s["A"]
    safe = popcount(isr, n) >= cfg.min_isr
    pre = z3.And((s["A"] | s["M"]) != 0, one_hot_or_zero(c), z3.Or(safe, z3.BoolVal(cfg.unclean)))
    elr = z3.If(z3.Or(safe, z3.BoolVal(not cfg.elr)), zero, (s["E"] | s["I"]) & ~s["A"] & ~isr)
    le = s["le"] + z3.If(z3.Or(s["A"] != 0, c != s["L"]), 1, 0)
    clean = z3.And(isr != 0, _pick(s["L"], isr & s["live"], c), t["I"] == isr, t["E"] == elr)
    dirty = z3.And(isr == 0, _pick(zero, reps & s["live"], c),
                   z3.If(c != 0, z3.And(t["I"] == c, t["E"] == 0),
                         z3.And(t["E"] == elr,
                                t["I"] == zero if cfg.elr else  # without ELR: one original replica stays
                                z3.And(t["I"] != 0, one_hot_or_zero(t["I"]), t["I"] & reps == t["I"]))))
    return z3.And(pre, z3.Or(clean, dirty), t["R"] == reps, t["L"] == c, t["A"] == 0, t["M"] == 0, t["le"] == le,
                  t["pe"] == s["pe"] + 1), [c]


def rule_forget_unclean_broker(s, t, cfg, mutation="none"):
    """A broker re-registers after an unclean shutdown: it leaves the ELR (KIP-966)."""
    n = s["n"]
    w = n + 1
    b = z3.BitVec("b", w)
    keep = mutation == "keep_unclean_in_elr"
    pre = z3.And(b != 0, one_hot_or_zero(b), s["E"] & b == b)
    new_elr = s["E"] if keep else s["E"] & ~b
    return z3.And(pre, t["R"] == s["R"], t["I"] == s["I"], t["E"] == new_elr, t["L"] == s["L"], t["A"] == s["A"],
                  t["M"] == s["M"], t["le"] == s["le"], t["pe"] == s["pe"] + (0 if keep else 1)), [b]


RULES = {
    "handle_alter_partition": rule_alter_partition,
    "alter_partition_reassignments": rule_reassign,
    "remove_broker": rule_remove_broker,
    "clean_election": rule_clean_election,
    "cancel_reassignment": rule_cancel,
    "restart_after_unclean_shutdown": rule_forget_unclean_broker,
}


def unsupported(cfg) -> str | None:
    """Why this relation does not model `cfg`, if it does not."""
    return None if cfg.completion == "seed" else "the relation models the seed variant (completion=seed) only"


def init(s: dict, cfg):
    """Any settled partition with an in-sync leader (the config's initial state is one of them)."""
    return z3.And(s["A"] == 0, s["M"] == 0, s["E"] == 0, s["R"] != 0, s["I"] & ~s["R"] == 0, s["L"] != 0,
                  s["L"] & s["I"] == s["L"], s["le"] >= 0, s["pe"] >= 0)
