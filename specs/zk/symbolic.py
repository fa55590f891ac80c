"""The controller-level transition relation of `zk` (seed variant) in Z3, for inductive proofs.

Citations as in `specs.zk`: [seed] is the comment on KafkaController.onPartitionReassignment (Kafka
2.4-3.x), [seed-2.3] its pre-KIP-455 form. About 620 lines, kept whole: one transition relation, whose
rules and lemmas all read the one symbolic state defined below.

The symbolic state, over N brokers (broker sets are (N+1)-bit vectors, bit b = broker b, bit 0 unused):
* ZooKeeper: RS (a set: replica order is abstracted, see below), AR/RR (0 in the seed variant), the
  /admin/reassign_partitions entry (`admin` present, `T` its target set), the state znode (leader `L`
  one-hot or 0, ISR `I`, leader epoch `le`, writer's controller epoch `sce`, zkVersion `ver`),
  /controller_epoch `ce` and the pending ISR change notification `notice`;
* the active controller: `c_epoch` (0 = none), `step` (the spec's STEP codes), its RS/AR/RR, the replicas
  it is stopping, the brokers it believes live, the queued znode-creation event;
* the history fields of the model: `status`, `ors`, `trs` (a set), `regressed`;
* `live`, the registered brokers, chosen freely by the environment in every state (crashes and restarts);
* `LR`, a history variable the model does not hold: the replica lists of the LeaderAndIsr requests sent
  to the current leader in the current leader epoch (reset by a new epoch, and when the controller
  handles the leader's failure: a crash loses them). A leader may add to the ISR only a replica of the
  list it holds, and it holds one of these (its zkVersion must be the current one).

Brokers, logs and requests are abstracted away. The environment changes the ISR as the leader's
conditional writes do (a fetch that adds a member of LR, a shrink that removes a non-leader), each with
zkVersion + 1 and an ISR change notification. Replica order only matters where a choice is "the first
replica of a list" (B3's `Election.leaderForReassign`, `Election.leaderForOffline`, the preferred
replica): here any member of the set may be chosen, which is exactly what all the orders of the lists
allow. Under `delete_before_shrink` the step B5 that runs before B4 gets its own code (B5_FIRST), so that
a step code says whether B4 has run.

Strengthening lemmas (entries of `spec.z3_invariants` named Lemma*, not model properties: `prove`
assumes and proves them with the properties; each holds in every state the model reaches, which the
tests check, and each is needed: without it some property or lemma has a CTI):
* LemmaControllerEpoch: the active controller's epoch is /controller_epoch, and no writer of the state
  znode had a newer one (so its writes pass the /controller_epoch check and `state_writable`); with no
  active controller its context is empty.
* LemmaSeedZk: AR = RR = [] in ZooKeeper (the seed keeps them in memory); ISR ⊆ RS at every step, not
  only between events; while the admin entry is present its reassignment is in progress, or done with
  RS = its target (a fail-over between B6 and B7); at B7 it is done.
* LemmaEventMemory: the controller's memory agrees with ZooKeeper while an event runs. RS in memory is
  RS in ZooKeeper, except at A0 (RS ⊆ memory, not yet written) and in B3-B6 (RS = memory + the replicas
  being stopped, until B6 writes RS = TRS last); at B1-B2 without A0 (TRS already in the ISR) the two
  are equal since TRS ⊆ ISR ⊆ RS. From A0 to B7 the admin entry is present and memory's TRS is its
  target; memory holds AR/RR only while the reassignment is in progress and waiting for the ISR or
  in A0-B2, with AR ⊆ TRS, RR ∩ TRS = ∅ and RS = TRS + RR.
* LemmaPhaseB: phase B starts with TRS ⊆ ISR and nothing removes a TRS replica before B4 ([seed]: "Phase
  B (when TRS = ISR)"): TRS ⊆ ISR in B1-B4, and after B4 the ISR is within TRS, so B6's RS = TRS keeps
  ISR ⊆ RS. It fails when leaders may shrink the ISR (`max_shrinks` > 0): a shrink between B1 and B3
  can leave no live in-sync TRS replica to elect, B4 then keeps a removed replica as the ISR's last
  member, and B6 writes RS = TRS without it: the model violates IsrSubsetOfReplicas and
  CompletionPostcondition there (9 steps at 2 brokers, [1,2] -> [2], one shrink).
* LemmaLeaderReplicas: the leader's replica lists are within RS; it has none once the controller has
  seen it fail; after B3, those outside TRS only if it is leaving (B4 then removes it), and after B4
  none outside TRS ([seed] B3: the LeaderAndIsr with RS = TRS "will prevent the leader from adding any
  replica in TRS - ORS back in the isr").

Each rule mirrors one rule of `specs.zk` (`expand_isr` the ISR expansion of `fetch`); tests/test_zk_z3.py
checks, on concrete states, that the Z3 models of each controller rule are exactly that rule's successors
(projected, over every order of the replica lists), that the environment's rules include the leaders'
writes, and that every step of the model is a stutter or a step of the relation (with LR).
"""

from __future__ import annotations

import z3

from harness.bitset import mask
from harness.symbolic import all_mask, broker, const, field, one_hot, within
from specs.zk.state import (A0, A1, A2, B1, B2, B3, B4, B5, B6, B7, B8, CANCELLED, CANCELLING, DONE, IDLE,
                            IN_PROGRESS, LEADER, LEADER_AND_ISR, NOT_STARTED, RESUME, STATUS)
from specs.zk import init as model_init

B5_FIRST = 16  # delete_before_shrink: B5 before B4 (B4 still to run)
STEPS = (IDLE, A0, A1, A2, B1, B2, B3, B4, B5, B6, B7, B8, RESUME, B5_FIRST)

SETS = ("RS", "AR", "RR", "T", "L", "I", "c_RS", "c_AR", "c_RR", "c_stop", "c_live", "ors", "trs")
INTS = ("le", "sce", "ver", "ce", "c_epoch", "step", "status")
BOOLS = ("admin", "notice", "c_event", "regressed")
MATCHED = SETS + INTS + BOOLS  # what a concrete state determines (project); `live` and `LR` are not
# The state fields they stand for (`project` computes them), the names `prove`'s CTIs are written with.
STATE_FIELDS = {
    "RS": field("zk.rs"), "AR": field("zk.adding"), "RR": field("zk.removing"), "T": field("zk.admin"),
    "L": broker("zk.leader"), "I": field("zk.isr"), "c_RS": field("controller.rs"), "c_AR": field("controller.adding"),
    "c_RR": field("controller.removing"), "c_stop": field("controller.stopping"), "c_live": field("controller.live"),
    "ors": field("ors"), "trs": field("trs"), "le": field("zk.leader_epoch"), "sce": field("zk.state_ctrl_epoch"),
    "ver": field("zk.version"), "ce": field("zk.controller_epoch"), "c_epoch": field("controller.epoch"),
    "step": field("controller.step"), "status": field("status"), "admin": field("zk.admin present"),
    "notice": field("zk.isr_notice"), "c_event": field("controller.znode_event"), "regressed": field("epoch_regressed"),
    "LR": field("the leader's replica lists (brokers[leader].replicas, LeaderAndIsr in flight to it)"),
    "live": field("live brokers (brokers[b].alive)")}


def make_state(prefix: str, n: int) -> dict:
    w = n + 1
    s = {f: z3.BitVec(f"{prefix}{f}", w) for f in SETS + ("LR", "live")}
    s.update({f: z3.Int(f"{prefix}{f}") for f in INTS})
    s.update({f: z3.Bool(f"{prefix}{f}") for f in BOOLS})
    s["n"] = n
    return s


def type_ok(s: dict):
    n = s["n"]
    full = all_mask(n)
    return z3.And(*[within(s[f], full) for f in SETS + ("LR", "live")], z3.Or(s["L"] == 0, one_hot(s["L"])),
                  *[s[f] >= 0 for f in INTS], z3.Or(*[s["step"] == v for v in STEPS]),
                  s["status"] < len(STATUS.names))


# ------------------------------------------------------------------ helpers: one step, written in order


def _zero(s):
    return z3.BitVecVal(0, s["n"] + 1)


def _bit(s, r):
    return z3.BitVecVal(1 << r, s["n"] + 1)


def _merge(v: dict, cond, new: dict) -> dict:
    """`new` where `cond` holds, `v` elsewhere (a conditional part of a step)."""
    return {k: (z3.If(cond, new[k], x) if k in new else x) for k, x in v.items()}


def _writable(cfg, v, epoch):
    """`state_writable`: the znode was not written by a newer controller."""
    return z3.BoolVal(True) if cfg.mutated.accept_stale_state_write else v["sce"] <= epoch


def _write(v, cond, epoch, leader, isr, bump: bool = True) -> dict:
    """`write_state` if `cond`: leader epoch + 1, zkVersion + 1, the writer's epoch; a new epoch starts
    with no LeaderAndIsr sent to its leader yet."""
    new = {"L": leader, "I": isr, "le": v["le"] + (1 if bump else 0), "sce": epoch, "ver": v["ver"] + 1,
           "regressed": z3.Or(v["regressed"], epoch < v["sce"])}
    if bump:
        new["LR"] = _zero(v)
    return _merge(v, cond, new)


def _send(v, cond, to, replicas) -> dict:
    """A LeaderAndIsr with `replicas` queued to `to` ∩ the controller's live brokers (`send`): if the
    leader may be among them, its replica lists grow by `replicas`."""
    reaches = z3.And(cond, v["L"] != 0, v["L"] & to & v["c_live"] != 0)
    return dict(v, LR=v["LR"] | z3.If(reaches, replicas, _zero(v)))


def _complete(cfg, target, isr):
    """`complete`: every TRS replica in the ISR, or TRS = ISR (phase_b=literal)."""
    if cfg.mutated.complete_without_trs_in_isr:
        return z3.BoolVal(True)
    return target == isr if cfg.phase_b == "literal" or cfg.mutated.completion_literal else within(target, isr)


def _enter(cfg, v, cond, rs, adding, removing) -> dict:
    """`enter` (seed): the new assignment in memory; B1 if already complete, else A0."""
    step = z3.If(_complete(cfg, rs & ~removing, v["I"]), z3.IntVal(B1), z3.IntVal(A0))
    return _merge(v, cond, {"c_stop": v["c_RS"] & ~rs, "c_RS": rs, "c_AR": adding, "c_RR": removing, "step": step})


def _reassign_to(origin, target):
    """`reassign_to` on sets: RS = TRS + (ORS - TRS), AR = RS - ORS, RR = RS - TRS."""
    return target | (origin & ~target), target & ~origin, origin & ~target


def _elect_if_offline(cfg, v, cond, epoch, live, choice):
    """`elect_if_offline` if `cond`: a partition whose leader is not live gets any live in-sync replica
    (`Election.leaderForOffline` takes the first in RS order), the ISR cut to live members; with unclean
    election, any live replica alone. Returns (v, the constraint on `choice`)."""
    need = z3.And(cond, z3.Not(z3.And(v["L"] != 0, within(v["L"], live))))
    clean = v["RS"] & live & v["I"]
    anyone = v["RS"] & live
    won = z3.And(need, z3.Or(clean != 0, z3.And(z3.BoolVal(cfg.unclean), anyone != 0)))
    go = z3.And(won, _writable(cfg, v, epoch))
    pick = z3.If(go, z3.And(one_hot(choice), within(choice, z3.If(clean != 0, clean, anyone))), choice == 0)
    v = _write(v, go, epoch, choice, z3.If(clean != 0, v["I"] & live, choice))
    return _send(v, go, v["RS"], v["RS"]), pick


def _remove_failed(cfg, v, cond, epoch, dead):
    """The loop of fail-over and `handle_broker_change`: each dead replica in the ISR (in broker order) is
    written out of it (its last member stays, with no leader if it led), +1 leader epoch each, and a
    LeaderAndIsr (replicas RS) goes to the others."""
    for r in range(1, v["n"] + 1):
        b = _bit(v, r)
        go = z3.And(cond, dead & b != 0, v["I"] & b != 0, _writable(cfg, v, epoch))
        v = _write(v, go, epoch, z3.If(v["L"] == b, _zero(v), v["L"]), z3.If(v["I"] != b, v["I"] & ~b, v["I"]))
        v = _send(v, go, v["RS"] & ~b, v["RS"])
    return v


def _post(s, t, v):
    """t is v; LR may only be smaller (requests delivered or lost shrink what the leader may still hold)."""
    return z3.And(*[t[f] == v[f] for f in MATCHED], within(t["LR"], v["LR"]))


def _state(s) -> dict:
    return {k: s[k] for k in MATCHED + ("LR", "n")}


def _at(s, step):
    return z3.And(s["c_epoch"] != 0, s["step"] == step)


def _idle(s):
    return _at(s, IDLE)


def _off():
    """A rule the config does not have (`applies`)."""
    return z3.BoolVal(False)


# ==================================================================================== the rules


def rule_create_reassign_znode(s, t, cfg):
    """Admin: /admin/reassign_partitions created with target X (any non-empty set; BMC bounds it to the
    config's targets). The model refuses a target equal to RS as a list: as sets, only a one-replica RS
    rules its own set out."""
    X = z3.BitVec("target", s["n"] + 1)
    if not cfg.max_reassignments:
        return _off(), [X]
    pre = z3.And(z3.Not(s["admin"]), X != 0, within(X, all_mask(s["n"])), z3.Not(z3.And(X == s["RS"], one_hot(X))))
    v = dict(_state(s), admin=z3.BoolVal(True), T=X, c_event=z3.Or(s["c_event"], s["c_epoch"] != 0),
             status=z3.IntVal(IN_PROGRESS), ors=z3.If(s["status"] == IN_PROGRESS, s["ors"], s["RS"]), trs=X)
    return z3.And(pre, _post(s, t, v)), [X]


def rule_handle_reassign_znode_creation(s, t, cfg):
    """Controller: the znode's target applied against ORS in memory, then `enter`."""
    v = dict(_state(s), c_event=z3.BoolVal(False))
    rs, adding, removing = _reassign_to(s["c_RS"] & ~s["c_AR"], s["T"])
    v = _enter(cfg, v, s["admin"], rs, adding, removing)
    return z3.And(_idle(s), s["c_event"], _post(s, t, v)), []


def rule_a0(s, t, cfg):
    """A0 ([seed-2.3]): RS = TRS ++ (ORS - TRS) written to the topic znode."""
    v = dict(_state(s), RS=s["c_RS"], AR=_zero(s), RR=_zero(s), step=z3.IntVal(A1))
    return z3.And(_at(s, A0), _post(s, t, v)), []


def rule_a1(s, t, cfg):
    """A1: leader epoch + 1, LeaderAndIsr to RS."""
    v = _state(s)
    if not cfg.mutated.a1_no_epoch_bump:
        v = _write(v, _writable(cfg, v, s["c_epoch"]), s["c_epoch"], s["L"], s["I"])
    v = _send(v, z3.BoolVal(True), s["c_RS"], s["c_RS"])
    return z3.And(_at(s, A1), _post(s, t, dict(v, step=z3.IntVal(A2)))), []


def rule_a2(s, t, cfg):
    """A2: AR not yet started get a LeaderAndIsr (which of them were started is not kept: any may)."""
    v = _send(_state(s), z3.BoolVal(True), s["c_AR"], s["c_RS"])
    return z3.And(_at(s, A2), _post(s, t, dict(v, step=z3.IntVal(IDLE)))), []


def rule_b1(s, t, cfg):
    """B1: AR online (memory only); mutation rs_updated_first writes RS = TRS here."""
    v = dict(_state(s), step=z3.IntVal(B2))
    if cfg.mutated.rs_updated_first:
        v.update(RS=s["c_RS"] & ~s["c_RR"], AR=_zero(s), RR=_zero(s))
    return z3.And(_at(s, B1), _post(s, t, v)), []


def rule_b2(s, t, cfg):
    """B2: RS = TRS in memory; RR kept as the replicas to stop."""
    v = dict(_state(s), c_RS=s["c_RS"] & ~s["c_RR"], c_AR=_zero(s), c_RR=_zero(s), c_stop=s["c_RR"],
             step=z3.IntVal(B3))
    return z3.And(_at(s, B2), _post(s, t, v)), []


def rule_b3(s, t, cfg):
    """B3: a leader outside TRS or not live is replaced by a live in-ISR TRS replica (any: the first in
    TRS order; unclean_in_b3: in the ISR or not), else kept; both bump the epoch; LeaderAndIsr (replicas
    TRS) to RS in ZooKeeper."""
    c = z3.BitVec("choice", s["n"] + 1)
    v = _state(s)
    target, epoch = s["c_RS"], s["c_epoch"]
    leader_ok = z3.And(s["L"] != 0, within(s["L"], target & s["c_live"]))
    cands = target & s["c_live"] & (all_mask(s["n"]) if cfg.mutated.unclean_in_b3 else s["I"])
    writable = _writable(cfg, v, epoch)
    elect = z3.And(writable, z3.Not(leader_ok), z3.BoolVal(not cfg.mutated.b3_skip_election), cands != 0)
    keep = z3.And(writable, z3.Or(leader_ok, z3.BoolVal(cfg.mutated.b3_skip_election)))
    pick = z3.If(elect, z3.And(one_hot(c), within(c, cands)), c == 0)
    v = _write(v, elect, epoch, c, s["I"])
    v = _write(v, keep, epoch, s["L"], s["I"])
    v = _send(v, z3.BoolVal(True), v["RS"], target)
    nxt = B5_FIRST if cfg.mutated.delete_before_shrink else B4
    return z3.And(_at(s, B3), pick, _post(s, t, dict(v, step=z3.IntVal(nxt)))), [c]


def rule_b4(s, t, cfg):
    """B4 (seed): RR out of the ISR in one write, keeping its last member; a removed leader leaves no
    leader; LeaderAndIsr only to the leader."""
    v = _state(s)
    shrunk = s["I"] & ~s["c_stop"]
    isr = z3.If(shrunk != 0, shrunk, s["I"])
    removing, writable = s["I"] & s["c_stop"] != 0, _writable(cfg, v, s["c_epoch"])
    go = z3.And(removing, writable)
    leader = z3.If(z3.And(s["L"] != 0, s["L"] & s["c_stop"] != 0), _zero(s), s["L"])
    v = _write(v, go, s["c_epoch"], leader, isr)
    v = _send(v, z3.And(go, leader != 0), leader, s["c_RS"])
    v = _merge(v, z3.And(removing, z3.Not(writable)), {"c_stop": s["c_stop"] & ~s["I"]})
    nxt = B6 if cfg.mutated.delete_before_shrink else B5
    return z3.And(_at(s, B4), _post(s, t, dict(v, step=z3.IntVal(nxt)))), []


def rule_b5(s, t, cfg):
    """B5: StopReplica(delete=true) to RR (requests are abstracted)."""
    if cfg.mutated.delete_before_shrink:
        return z3.And(_at(s, B5_FIRST), _post(s, t, dict(_state(s), step=z3.IntVal(B4)))), []
    v = dict(_state(s), c_stop=_zero(s), step=z3.IntVal(B6))
    return z3.And(_at(s, B5), _post(s, t, v)), []


def rule_b6(s, t, cfg):
    """B6: RS = TRS written last; `mark_done`."""
    rs = s["c_RS"]
    st = s["status"]
    done = z3.And(st == IN_PROGRESS, rs == s["trs"])
    status = z3.If(done, z3.IntVal(DONE), z3.If(st == CANCELLING, z3.IntVal(CANCELLED), st))
    ors = z3.If(z3.And(st == IN_PROGRESS, z3.Not(done)), rs, s["ors"])
    v = dict(_state(s), RS=rs, AR=_zero(s), RR=_zero(s), status=status, ors=ors, c_stop=_zero(s), step=z3.IntVal(B7))
    return z3.And(_at(s, B6), _post(s, t, v)), []


def rule_b7(s, t, cfg):
    """B7 (seed): the admin entry removed unconditionally."""
    v = dict(_state(s), admin=z3.BoolVal(False), T=_zero(s), step=z3.IntVal(B8))
    return z3.And(_at(s, B7), _post(s, t, v)), []


def rule_b8(s, t, cfg):
    """B8: the event ends."""
    return z3.And(_at(s, B8), _post(s, t, dict(_state(s), step=z3.IntVal(IDLE)))), []


def rule_handle_isr_change_notification(s, t, cfg):
    """Controller (seed): the notification consumed; a reassigning partition whose TRS is complete in
    the ZooKeeper ISR starts phase B."""
    starts = z3.And((s["c_AR"] | s["c_RR"]) != 0, _complete(cfg, s["c_RS"] & ~s["c_RR"], s["I"]))
    v = dict(_state(s), notice=z3.BoolVal(False), step=z3.If(starts, z3.IntVal(B1), z3.IntVal(IDLE)))
    return z3.And(_idle(s), s["notice"], _post(s, t, v)), []


def rule_controller_crash(s, t, cfg):
    """Environment: the active controller's session ends (no zombie: it stops)."""
    if not cfg.max_failovers:
        return _off(), []
    v = _state(s)
    v.update({f: z3.IntVal(0) for f in ("c_epoch", "step")})
    v.update({f: _zero(s) for f in ("c_RS", "c_AR", "c_RR", "c_stop", "c_live")}, c_event=z3.BoolVal(False))
    return z3.And(s["c_epoch"] != 0, _post(s, t, v)), []


def rule_controller_failover(s, t, cfg):
    """Controller: /controller_epoch + 1; the context rebuilt from ZooKeeper and `live`; LeaderAndIsr to
    live replicas; dead replicas out of the ISR; an offline election."""
    c = z3.BitVec("choice", s["n"] + 1)
    if not cfg.max_failovers:
        return _off(), [c]
    now, epoch = s["live"], s["ce"] + 1
    v = dict(_state(s), ce=epoch, c_epoch=epoch, step=z3.IntVal(RESUME), c_RS=s["RS"], c_AR=s["AR"], c_RR=s["RR"],
             c_stop=_zero(s), c_live=now, c_event=z3.BoolVal(False))
    v["LR"] = z3.If(z3.And(s["L"] != 0, s["L"] & now == 0), _zero(s), s["LR"])  # a dead leader has lost them
    v = _send(v, z3.BoolVal(True), s["RS"] & now, s["RS"])
    v = _remove_failed(cfg, v, z3.BoolVal(True), epoch, s["RS"] & ~now)
    v, pick = _elect_if_offline(cfg, v, z3.BoolVal(True), epoch, now, c)
    return z3.And(s["c_epoch"] == 0, pick, _post(s, t, v)), [c]


def rule_resume_reassignments(s, t, cfg):
    """Controller, end of fail-over: the admin entry re-applied against ORS (or, kafka, AR/RR resumed)."""
    if not cfg.max_failovers:
        return _off(), []
    v = dict(_state(s), step=z3.IntVal(IDLE))
    rs, adding, removing = _reassign_to(s["c_RS"] & ~s["c_AR"], s["T"])
    resumed = z3.And(z3.Not(s["admin"]), (s["c_AR"] | s["c_RR"]) != 0)
    v = _enter(cfg, v, s["admin"], rs, adding, removing)
    v = _enter(cfg, v, resumed, s["c_RS"], s["c_AR"], s["c_RR"])
    return z3.And(_at(s, RESUME), _post(s, t, v)), []


def rule_handle_broker_change(s, t, cfg):
    """Controller: failed brokers (an offline election, then failed replicas out of the ISR) and started
    ones (LeaderAndIsr, an offline election)."""
    c1, c2 = z3.BitVec("choice", s["n"] + 1), z3.BitVec("choice2", s["n"] + 1)
    if not cfg.max_broker_crashes:
        return _off(), [c1, c2]
    now, epoch = s["live"], s["c_epoch"]
    failed, started = s["c_live"] & ~now, now & ~s["c_live"]
    v = dict(_state(s), c_live=now)
    v["LR"] = z3.If(z3.And(s["L"] != 0, s["L"] & failed != 0), _zero(s), s["LR"])  # a dead leader has lost them
    v, pick1 = _elect_if_offline(cfg, v, failed != 0, epoch, now, c1)
    v = _remove_failed(cfg, v, failed != 0, epoch, failed & s["RS"])
    v = _send(v, started != 0, started & s["RS"], s["RS"])
    v, pick2 = _elect_if_offline(cfg, v, started != 0, epoch, now, c2)
    return z3.And(_idle(s), s["c_live"] != now, pick1, pick2, _post(s, t, v)), [c1, c2]


def rule_preferred_leader_election(s, t, cfg):
    """Controller: RS's first replica (any member: order is abstracted) leads if live, in sync and not
    the leader; LeaderAndIsr to RS."""
    h = z3.BitVec("preferred", s["n"] + 1)
    if not cfg.max_preferred:
        return _off(), [h]
    v = _state(s)
    pre = z3.And(_idle(s), one_hot(h), within(h, s["RS"] & s["I"] & s["c_live"]), h != s["L"],
                 _writable(cfg, v, s["c_epoch"]))
    v = _write(v, z3.BoolVal(True), s["c_epoch"], h, s["I"])
    v = _send(v, z3.BoolVal(True), s["RS"], s["RS"])
    return z3.And(pre, _post(s, t, v)), [h]


def rule_expand_isr(s, t, cfg):
    """Environment (a fetch, then the leader's conditional write): a replica of the leader's list joins
    the ISR; zkVersion + 1, an ISR change notification."""
    f = z3.BitVec("follower", s["n"] + 1)
    v = dict(_state(s), I=s["I"] | f, ver=s["ver"] + 1, notice=z3.BoolVal(True))
    return z3.And(s["L"] != 0, one_hot(f), within(f, s["LR"] & ~s["I"]), _post(s, t, v)), [f]


def rule_shrink_isr(s, t, cfg):
    """Environment (`shrink_isr`): the leader removes another member from the ISR."""
    f = z3.BitVec("follower", s["n"] + 1)
    if not cfg.max_shrinks:
        return _off(), [f]
    v = dict(_state(s), I=s["I"] & ~f, ver=s["ver"] + 1, notice=z3.BoolVal(True))
    return z3.And(s["L"] != 0, one_hot(f), within(f, s["I"]), f != s["L"], _post(s, t, v)), [f]


RULES = {
    "create_reassign_znode": rule_create_reassign_znode,
    "handle_reassign_znode_creation": rule_handle_reassign_znode_creation,
    "a0_expand_replicas": rule_a0,
    "a1_bump_leader_epoch": rule_a1,
    "a2_start_new_replicas": rule_a2,
    "b1_online_new_replicas": rule_b1,
    "b2_set_replicas_in_memory": rule_b2,
    "b3_move_leader": rule_b3,
    "b4_offline_removed_replicas": rule_b4,
    "b5_delete_removed_replicas": rule_b5,
    "b6_write_target_replicas": rule_b6,
    "b7_clear_admin_znode": rule_b7,
    "b8_send_update_metadata": rule_b8,
    "handle_isr_change_notification": rule_handle_isr_change_notification,
    "controller_crash": rule_controller_crash,
    "controller_failover": rule_controller_failover,
    "resume_reassignments": rule_resume_reassignments,
    "handle_broker_change": rule_handle_broker_change,
    "preferred_leader_election": rule_preferred_leader_election,
    "expand_isr": rule_expand_isr,
    "shrink_isr": rule_shrink_isr,
}
# The model's rules each symbolic rule stands for (the others are the same name).
MODEL_RULE = {"expand_isr": "fetch"}


def unsupported(cfg) -> str | None:
    """Why this relation does not model `cfg`, if it does not."""
    if cfg.controller != "seed":
        return "the relation models the seed variant (controller=seed) only"
    if cfg.max_zombies:
        return "the relation has no zombie controller (its requests would reach leaders): max_zombies must be 0"
    return None


def init(s: dict, cfg):
    """Any settled partition: an in-sync leader, ISR ⊆ RS, an idle controller that sees every broker."""
    zero, full = _zero(s), all_mask(s["n"])
    return z3.And(s["RS"] != 0, s["AR"] == 0, s["RR"] == 0, z3.Not(s["admin"]), s["T"] == 0, s["L"] != 0,
                  within(s["L"], s["I"]), within(s["I"], s["RS"]), s["ce"] >= 1, s["sce"] <= s["ce"],
                  z3.Not(s["notice"]), s["c_epoch"] == s["ce"], s["step"] == IDLE, s["c_RS"] == s["RS"],
                  s["c_AR"] == zero, s["c_RR"] == zero, s["c_stop"] == zero, s["c_live"] == full,
                  z3.Not(s["c_event"]), s["status"] == NOT_STARTED, s["ors"] == zero, s["trs"] == zero,
                  z3.Not(s["regressed"]), within(s["LR"], s["RS"]))


def brokers(cfg) -> int:
    return cfg.brokers


def step_code(cfg, step: int) -> int:
    return B5_FIRST if step == B5 and cfg.mutated.delete_before_shrink else step


def project(cfg, state) -> dict:
    """The symbolic fields (MATCHED) a concrete model state determines."""
    zk, c = state.zk, state.controller
    return {"RS": mask(zk.rs), "AR": zk.adding, "RR": zk.removing, "T": mask(zk.admin),
            "L": 1 << zk.leader if zk.leader else 0, "I": zk.isr, "c_RS": mask(c.rs), "c_AR": c.adding,
            "c_RR": c.removing, "c_stop": c.stopping, "c_live": c.live, "ors": state.ors, "trs": mask(state.trs),
            "le": zk.leader_epoch, "sce": zk.state_ctrl_epoch, "ver": zk.version, "ce": zk.controller_epoch,
            "c_epoch": c.epoch, "step": step_code(cfg, c.step), "status": state.status, "admin": bool(zk.admin),
            "notice": zk.isr_notice, "c_event": c.znode_event, "regressed": state.epoch_regressed}


def leader_replicas(state) -> int:
    """LR of a concrete state, as far as it can still matter: the replica lists the current leader holds
    (leading in the current leader epoch) or has in flight to it from that epoch."""
    zk = state.zk
    if not zk.leader:
        return 0
    b = state.brokers[zk.leader - 1]
    lr = 0
    for req in b.inbox:
        if req.kind == LEADER_AND_ISR and req.leader_epoch == zk.leader_epoch:
            lr |= req.replicas
    if b.alive and b.role == LEADER and b.leader_epoch == zk.leader_epoch:
        lr |= b.replicas
    return lr


def bounds(s: dict, t: dict, cfg):
    """What a concrete config fixes and the relation leaves free (BMC from the config's initial state):
    LR in an initial state (`project` does not give it); submitted targets are the config's; without
    broker crashes every broker stays registered."""
    w = s["n"] + 1
    starts = [z3.Implies(z3.And(*[s[f] == const(s[f], v) for f, v in project(cfg, st).items()]),
                         within(s["LR"], z3.BitVecVal(leader_replicas(st), w))) for st in model_init(cfg)]
    targets = [z3.BitVecVal(mask(target), w) for target in cfg.targets]
    created = z3.And(z3.Not(s["admin"]), t["admin"])
    fixed = z3.BoolVal(True) if cfg.max_broker_crashes else s["live"] == all_mask(s["n"])
    return z3.And(*starts, z3.Implies(created, z3.Or(*[t["T"] == x for x in targets])), fixed)


# ============================================================================ properties and lemmas


def _between(s, *steps):
    return z3.And(s["c_epoch"] != 0, z3.Or(*[s["step"] == x for x in steps]))


def prop_isr_subset_of_replicas(s):
    return z3.Or(s["step"] != IDLE, within(s["I"], s["RS"]))


def prop_leader_in_isr(s):
    return z3.Or(s["L"] == 0, within(s["L"], s["I"]))


def prop_isr_non_empty(s):
    return s["I"] != 0


def prop_reassignment_well_formed(s):
    """RS's replicas are distinct by construction (a set here)."""
    return z3.And(within(s["AR"] | s["RR"], s["RS"]), s["AR"] & s["RR"] == 0, s["RS"] & ~s["RR"] != 0)


def prop_assignment_recoverable(s):
    """Sets for lists: ZooKeeper names the target if the admin entry's set, or TRS = RS - RR, is its set."""
    names = z3.Or(z3.And(s["admin"], s["T"] == s["trs"]),
                  z3.And((s["AR"] | s["RR"]) != 0, s["RS"] & ~s["RR"] == s["trs"]))
    return z3.And(z3.Implies(s["status"] == IN_PROGRESS, z3.And(within(s["ors"], s["RS"]), names)),
                  z3.Implies(s["status"] == CANCELLING, within(s["ors"], s["RS"])))


def prop_completion_postcondition(s):
    """The structural part: RS is the goal, ISR and leader within it. (The clause on an idle controller
    leaving the partition leaderless reads broker registrations and the zombie: no Z3 form.)"""
    goal = z3.If(s["status"] == DONE, s["trs"], s["ors"])
    return z3.Implies(z3.Or(s["status"] == DONE, s["status"] == CANCELLED),
                      z3.And(s["RS"] == goal, within(s["I"], goal), within(s["L"], goal)))


def prop_epochs_monotonic(s):
    return z3.Not(s["regressed"])


def lemma_controller_epoch(s):
    none = z3.And(s["step"] == IDLE, *[s[f] == 0 for f in ("c_RS", "c_AR", "c_RR", "c_stop", "c_live")],
                  z3.Not(s["c_event"]))
    return z3.And(s["sce"] <= s["ce"], z3.If(s["c_epoch"] == 0, none, s["c_epoch"] == s["ce"]))


def lemma_seed_zk(s):
    done = z3.And(s["status"] == DONE, s["RS"] == s["T"])
    return z3.And(s["AR"] == 0, s["RR"] == 0, within(s["I"], s["RS"]), s["admin"] == (s["T"] != 0),
                  z3.Implies(s["admin"], z3.Or(s["status"] == IN_PROGRESS, done)),
                  z3.Implies(_between(s, B7), s["status"] == DONE))


def lemma_event_memory(s):
    rs, mem, stop = s["RS"], s["c_RS"], s["c_stop"]
    reassigning = (s["c_AR"] | s["c_RR"]) != 0
    trs = mem & ~s["c_RR"]
    return z3.And(
        z3.Implies(_between(s, IDLE, A1, A2, B1, B2, B7, B8, RESUME), mem == rs),
        z3.Implies(_between(s, A0), within(rs, mem)),
        z3.Implies(_between(s, B3, B4, B5, B5_FIRST), z3.And(rs == mem | stop, mem & stop == 0)),
        z3.Implies(_between(s, A0, A1, A2, B1, B2), z3.And(s["admin"], trs == s["T"])),
        z3.Implies(_between(s, B3, B4, B5, B5_FIRST, B6, B7), z3.And(s["admin"], mem == s["T"])),
        z3.Implies(z3.And(s["c_epoch"] != 0, reassigning),
                   z3.And(_between(s, IDLE, A0, A1, A2, B1, B2), s["admin"], s["status"] == IN_PROGRESS, trs == s["T"],
                          within(s["c_AR"], s["T"]), s["c_RR"] & s["T"] == 0, mem == s["T"] | s["c_RR"])))


def lemma_phase_b(s):
    mem, isr = s["c_RS"], s["I"]
    return z3.And(z3.Implies(_between(s, B1, B2), within(mem & ~s["c_RR"], isr)),
                  z3.Implies(_between(s, B3, B4, B5_FIRST), within(mem, isr)),
                  z3.Implies(_between(s, B5, B6), within(isr, mem)))


def lemma_leader_replicas(s):
    lr, led = s["LR"], s["L"] != 0
    return z3.And(z3.Implies(led, within(lr, s["RS"])),
                  z3.Implies(z3.And(s["c_epoch"] != 0, led, s["L"] & s["c_live"] == 0), lr == 0),
                  z3.Implies(z3.And(_between(s, B4, B5_FIRST), led, z3.Not(within(lr, s["c_RS"]))),
                             s["L"] & s["c_RS"] == 0),
                  z3.Implies(z3.And(_between(s, B5, B6), led), within(lr, s["c_RS"])))


PROPERTIES = {
    "IsrSubsetOfReplicas": prop_isr_subset_of_replicas,
    "LeaderInIsr": prop_leader_in_isr,
    "IsrNonEmpty": prop_isr_non_empty,
    "ReassignmentWellFormed": prop_reassignment_well_formed,
    "AssignmentRecoverable": prop_assignment_recoverable,
    "CompletionPostcondition": prop_completion_postcondition,
    "EpochsMonotonic": prop_epochs_monotonic,
}
LEMMAS = {
    "LemmaControllerEpoch": lemma_controller_epoch,
    "LemmaSeedZk": lemma_seed_zk,
    "LemmaEventMemory": lemma_event_memory,
    "LemmaPhaseB": lemma_phase_b,
    "LemmaLeaderReplicas": lemma_leader_replicas,
}
