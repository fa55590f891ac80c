"""The controller-level transition relation of `kraft` (seed variant) in Z3, for inductive proofs.

Citations as in `specs.kraft`: [kafka-tlaplus kip-966 §4.x] is the Kafka replication protocol
description (kafka-tlaplus, kip-966), ch. 4 §4.x; [kafka-tlaplus v3.5 §2.x] the same description
(kafka-tlaplus, v3.5), ch. 2 §2.x.

The symbolic state is the partition metadata over N brokers: broker sets are (N+1)-bit vectors (bit
b = broker b, bit 0 unused), the leader a one-hot vector (0 = none), epochs integers; `live` (the
unfenced brokers) is chosen freely by the environment at every step (fencing and unfencing). The
data plane is abstracted away: an AlterPartition may propose any ISR the controller would accept.
Replica order only matters for Kafka's deterministic election, so the seed variant's replica list
is a set here.

Each rule mirrors one pure function of `specs.kraft.logic`; tests/test_z3.py checks, on
concrete states, that the Z3 models of each rule are exactly that function's outcomes.
"""

from __future__ import annotations

import z3

from harness.symbolic import broker, field

FIELDS = ("R", "I", "E", "A", "M", "L")  # replicas, ISR, ELR, adding, removing, leader (one-hot)
# Besides FIELDS: `live` (environment input), `le`/`pe` (epochs) and the history flag `B`: some
# reassignment ended with ISR < MinISR (the state's completed_below_min_isr).
MATCHED = FIELDS + ("le", "pe", "B")  # what a concrete state determines (project); `live` is free
# The state fields they stand for (`project` computes them), the names `prove`'s CTIs are written with.
STATE_FIELDS = {"R": field("partition.replicas"), "I": field("partition.isr"), "E": field("partition.elr"),
                "A": field("partition.adding"), "M": field("partition.removing"), "L": broker("partition.leader"),
                "le": field("partition.leader_epoch"), "pe": field("partition.partition_epoch"),
                "B": field("completed_below_min_isr"), "live": field("unfenced brokers (brokers[b].status)")}


def make_state(prefix: str, n: int) -> dict:
    w = n + 1
    s = {f: z3.BitVec(f"{prefix}{f}", w) for f in FIELDS}
    s["live"] = z3.BitVec(f"{prefix}live", w)
    s["le"], s["pe"] = z3.Int(f"{prefix}le"), z3.Int(f"{prefix}pe")
    s["B"] = z3.Bool(f"{prefix}B")
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
    """seed_isr_change: (isr, elr) after the ISR becomes new_isr [kafka-tlaplus v3.5 §2.8], with KIP-966's ELR."""
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


def _completion(s, t, cfg, isr, elr, removing, choice):
    """seed_final_isr + seed_complete from the caught-up (isr, elr): (the completion rules hold,
    the completion change) [kafka-tlaplus kip-966 §4.2]."""
    n = s["n"]
    zero = z3.BitVecVal(0, n + 1)
    final = isr if cfg.mutated.keep_removing_in_isr else isr & ~removing
    min_ok = z3.BoolVal(True) if cfg.mutated.completion_ignores_min_isr else popcount(isr & ~removing, n) >= cfg.min_isr
    change = z3.And(t["R"] == s["R"] & ~removing, t["I"] == final,
                    t["E"] == z3.If(z3.Or(popcount(final, n) >= cfg.min_isr, not cfg.elr), zero,
                                    elr & ~removing & ~final),
                    _pick(s["L"], final & s["live"], choice), t["L"] == choice, t["A"] == 0, t["M"] == 0,
                    t["le"] == s["le"] + (z3.If(choice != s["L"], 1, 0) if cfg.mutated.completion_no_epoch_bump else 1),
                    t["pe"] == s["pe"] + 1)
    return z3.And(s["A"] & ~final == 0, min_ok), change


def rule_alter_partition(s, t, cfg):
    """An accepted AlterPartition with a proposed ISR X (seed_alter_isr) [kafka-tlaplus v3.5 §2.9.2], with
    completion [kafka-tlaplus kip-966 §4.2]."""
    n = s["n"]
    w = n + 1
    X = z3.BitVec("X", w)
    c = z3.BitVec("choice", w)
    accept = z3.And(X & ~s["R"] == 0, s["L"] != 0, s["L"] & X == s["L"], X & ~s["live"] == 0, one_hot_or_zero(c))
    isr, elr = _isr_change(s, X, cfg)
    in_progress = (s["A"] | s["M"]) != 0
    rules_hold, complete = _completion(s, t, cfg, isr, elr, s["M"], c)
    completes = z3.And(in_progress, rules_hold)
    catch_up = z3.And(t["R"] == s["R"], t["I"] == isr, t["E"] == elr, t["L"] == s["L"], t["A"] == s["A"],
                      t["M"] == s["M"], t["le"] == s["le"], t["pe"] == s["pe"] + 1,
                      z3.Or(isr != s["I"], elr != s["E"]))
    return z3.And(accept, z3.If(completes, complete, catch_up)), [X, c]


def rule_reassign(s, t, cfg):
    """AlterPartitionReassignments with target T (seed_reassign), from a settled assignment
    [kafka-tlaplus kip-966 §4.1, §4.2]."""
    n = s["n"]
    w = n + 1
    T = z3.BitVec("T", w)
    c = z3.BitVec("choice", w)
    adding, removing = T & ~s["R"], s["R"] & ~T
    pre = z3.And(s["A"] == 0, s["M"] == 0, T != 0, T & ~all_mask(n, w) == 0, z3.Or(adding != 0, removing != 0),
                 one_hot_or_zero(c))
    min_ok, complete_now = _completion(s, t, cfg, s["I"], s["E"], removing, c)
    start = z3.And(c == 0, t["R"] == s["R"], t["I"] == s["I"], t["E"] == s["E"], t["L"] == s["L"], t["A"] == 0,
                   t["M"] == removing, t["le"] == s["le"], t["pe"] == s["pe"] + 1)
    grow = z3.And(c == 0, t["R"] == s["R"] | T, t["I"] == s["I"], t["E"] == s["E"], t["L"] == s["L"],
                  t["A"] == adding, t["M"] == removing, t["le"] == s["le"], t["pe"] == s["pe"] + 1)
    only_removing = adding == 0
    body = z3.If(only_removing, z3.If(min_ok, complete_now, start), grow)
    return z3.And(pre, body), [T, c]


def rule_remove_broker(s, t, cfg):
    """Fencing or shutdown of broker b (seed_remove_broker) [kafka-tlaplus v3.5 §2.8, §2.9.1]."""
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


def rule_clean_election(s, t, cfg):
    """Leaderless: elect an unfenced ISR member [kafka-tlaplus v3.5 §2.8], or an ELR member when the ISR is
    empty (KIP-966) (seed_clean_election)."""
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


def rule_unclean_election(s, t, cfg):
    """Unclean election enabled, leaderless, no live clean candidate (ISR, or ELR when the ISR is
    empty): any live replica leads alone (seed_unclean_election) [kafka-tlaplus v3.5 §2.8]."""
    n = s["n"]
    w = n + 1
    c = z3.BitVec("candidate", w)
    if not cfg.unclean:
        return z3.BoolVal(False), [c]
    zero = z3.BitVecVal(0, w)
    clean = z3.If(s["I"] != 0, s["I"], s["E"])
    pre = z3.And(s["L"] == 0, c != 0, one_hot_or_zero(c), c & s["live"] == c, c & s["R"] == c, clean & s["live"] == 0)
    return z3.And(pre, t["R"] == s["R"], t["I"] == c, t["E"] == zero, t["L"] == c, t["A"] == s["A"],
                  t["M"] == s["M"], t["le"] == s["le"] + 1, t["pe"] == s["pe"] + 1), [c]


def rule_cancel(s, t, cfg):
    """Cancellation (seed_cancel): revert to the original replicas [kafka-tlaplus kip-966 §4.5]."""
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


def rule_forget_unclean_broker(s, t, cfg):
    """A broker re-registers after an unclean shutdown: it leaves the ELR (KIP-966)."""
    n = s["n"]
    w = n + 1
    b = z3.BitVec("b", w)
    keep = cfg.mutated.keep_unclean_in_elr
    pre = z3.And(b != 0, one_hot_or_zero(b), s["E"] & b == b)
    new_elr = s["E"] if keep else s["E"] & ~b
    return z3.And(pre, t["R"] == s["R"], t["I"] == s["I"], t["E"] == new_elr, t["L"] == s["L"], t["A"] == s["A"],
                  t["M"] == s["M"], t["le"] == s["le"], t["pe"] == s["pe"] + (0 if keep else 1)), [b]


def _history(rule, completes: bool):
    """Adds the history flag B, as commit_partition keeps it: set when a change completes a
    reassignment (in progress, or at once) with ISR < MinISR, never cleared. Cancellation is not a completion (and does not
    go through commit_partition), so it and the other rules leave B unchanged."""
    def relation(s, t, cfg):
        rel, params = rule(s, t, cfg)
        if not completes:
            return z3.And(rel, t["B"] == s["B"]), params
        # a reassignment in progress ends, or one completes at once (the replicas change, none in progress)
        ends = z3.And(z3.Or((s["A"] | s["M"]) != 0, t["R"] != s["R"]), (t["A"] | t["M"]) == 0)
        below = popcount(t["I"], s["n"]) < cfg.min_isr
        return z3.And(rel, t["B"] == z3.Or(s["B"], z3.And(ends, below))), params
    relation.__doc__ = rule.__doc__
    return relation


RULES = {
    "handle_alter_partition": _history(rule_alter_partition, completes=True),
    "alter_partition_reassignments": _history(rule_reassign, completes=True),
    "remove_broker": _history(rule_remove_broker, completes=False),
    "clean_election": _history(rule_clean_election, completes=False),
    "unclean_election": _history(rule_unclean_election, completes=False),
    "cancel_reassignment": _history(rule_cancel, completes=False),
    "restart_after_unclean_shutdown": _history(rule_forget_unclean_broker, completes=False),
}


def unsupported(cfg) -> str | None:
    """Why this relation does not model `cfg`, if it does not."""
    return None if cfg.completion == "seed" else "the relation models the seed variant (completion=seed) only"


def init(s: dict, cfg):
    """Any settled partition with an in-sync leader (the config's initial state is one of them)."""
    return z3.And(s["A"] == 0, s["M"] == 0, s["E"] == 0, s["R"] != 0, s["I"] & ~s["R"] == 0, s["L"] != 0,
                  s["L"] & s["I"] == s["L"], s["le"] >= 0, s["pe"] >= 0, z3.Not(s["B"]))


def brokers(cfg) -> int:
    """The broker count of a config (the bit-vector width of its symbolic states, minus one)."""
    return cfg.brokers


def project(cfg, state) -> dict:
    """The symbolic fields (MATCHED) a concrete model state determines; BMC matches its abstract
    counterexample against these to rebuild a full-model trace."""
    p = state.partition
    return {"R": sum(1 << r for r in p.replicas), "I": p.isr, "E": p.elr, "A": p.adding, "M": p.removing,
            "L": 1 << p.leader if p.leader else 0, "le": p.leader_epoch, "pe": p.partition_epoch,
            "B": state.completed_below_min_isr}


def bounds(s: dict, t: dict, cfg):
    """What a concrete config fixes about one step and the relation leaves free (used by BMC from
    the config's initial state, not by `prove`): reassignments go to the config's targets."""
    w = s["n"] + 1
    targets = [z3.BitVecVal(sum(1 << r for r in target), w) for target in cfg.targets]
    settled, moving = (s["A"] | s["M"]) == 0, (t["A"] | t["M"]) != 0
    starts = z3.And(settled, z3.Or(moving, t["R"] != s["R"]))
    target = z3.If(moving, t["R"] & ~t["M"], t["R"])
    return z3.Implies(starts, z3.Or(*[target == v for v in targets]))
