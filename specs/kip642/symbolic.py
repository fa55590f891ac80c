"""`kip642`'s quorum properties as a Z3 transition relation, for `prove` and bounded model checking.

What a voter change needs, abstracted from Raft's logs (KIP-642, Reassignment Algorithm; Ongaro's
dissertation, §4.1). Over N servers, each server i's log is summarised by:
* `V[i]`, `T[i]`: CurrentVoters and TargetVoters of its latest VoterAssignment (0 = no entry, null);
* `U1`, `U2`: the servers with at least one, and at least two, VoterAssignments beyond their HWM;
* `ok`: the servers whose logs change the voters by at most one member from each VoterAssignment to the
  next (bit i: SingleMemberChanges holds for log i);
and the state by the servers that lead (`L`, any epoch) and the budgets of reassignments, cancels and
disk losses. Broker sets are (N+1)-bit vectors (bit i = server i); `V` and `T` pack one such set per
server, server i at bits [i(N+1), (i+1)(N+1)).

Epochs, votes, offsets and data records are abstracted away, so the relation allows more than the model:
any server may become leader at any time (`become_leader`, also `win_election`), any leader may stop
leading (`step_down`: a crash, a resignation, a vote or a fetch in a higher epoch), a leader's voter
change does not wait for it to commit an entry of its epoch, a reassignment may target any voter set,
and a divergent fetch may leave any entries (`fetch`: a truncated log's latest VoterAssignment is one of
its earlier ones, which the abstraction has forgotten; `ok` stays, as every prefix of a log whose changes
are single-member has single-member changes too). A property proved for every such behaviour holds for
the model's. What keeps the counts right:
* a leader appends a VoterAssignment only with none uncommitted (KIP-642, step 4), so it has one at most;
* a fetch that copies the leader's log takes HWM >= the leader's (`max(own, min(leader's HWM, log end))`),
  so the follower has at most as many uncommitted VoterAssignments as the leader; a divergent fetch keeps
  a prefix, with at most as many as it had; committing lowers the count.
AtMostOneUncommittedVoterChange alone (about leaders) is not inductive: a follower with two uncommitted
changes could become leader. The lemma LemmaEveryLogAtMostOneUncommitted, the same bound for every
server, makes it inductive (both are checked on every state the model reaches: tests/test_kip642_z3.py).

The Raft properties (LogMatching, LeaderCompleteness, StateMachineSafety, OneLeaderPerEpoch) need epochs
and whole logs and have no Z3 form: the mutations that break only them (`change_before_epoch_commit`,
`votes_without_log`, `votes_against_old_config`) leave this relation's properties intact.
"""

from __future__ import annotations

import z3

from harness.bitset import mask
from harness.symbolic import all_mask, count, field, one_hot, per_broker, within
from specs.kip642.logic import target_of, voters_of
from specs.kip642.state import LEADER, VOTER_ASSIGNMENT

SETS = ("L", "U1", "U2", "ok")  # (N+1)-bit server sets
PACKED = ("V", "T")  # a server set per server
INTS = ("reassignments", "cancels", "disk_losses")
MATCHED = SETS + PACKED + INTS  # every field: a concrete state determines them all (project)
# What they stand for in the state (`project` computes them from the servers' logs), the names `prove`'s CTIs
# are written with.
STATE_FIELDS = {
    "L": field("leaders (servers[i].role)"), "U1": field("servers with an uncommitted VoterAssignment (servers[i].log)"),
    "U2": field("servers with two uncommitted VoterAssignments (servers[i].log)"),
    "ok": field("servers whose log changes the voters one member at a time (servers[i].log)"),
    "V": per_broker("servers[{}].log: CurrentVoters of the latest VoterAssignment"),
    "T": per_broker("servers[{}].log: TargetVoters of the latest VoterAssignment"),
    "reassignments": field("budget.reassignments"), "cancels": field("budget.cancels"),
    "disk_losses": field("budget.disk_losses")}


def make_state(prefix: str, n: int) -> dict:
    w = n + 1
    s = {f: z3.BitVec(f"{prefix}{f}", w) for f in SETS}
    s.update({f: z3.BitVec(f"{prefix}{f}", w * w) for f in PACKED})
    s.update({f: z3.Int(f"{prefix}{f}") for f in INTS})
    s["n"] = n
    return s


# ---------------------------------------------------------------------------------------- helpers

def slot(packed, i: int, n: int):
    """Server i's set in a packed field."""
    return z3.Extract((i + 1) * (n + 1) - 1, i * (n + 1), packed)


def of(packed, who, n: int):
    """The set of the one server `who` (one-hot) names."""
    out = z3.BitVecVal(0, n + 1)
    for i in range(1, n + 1):
        out = z3.If(z3.Extract(i, i, who) == 1, slot(packed, i, n), out)
    return out


def put(packed, who, value, n: int):
    """The packed field with the set of server `who` (one-hot) replaced by `value`."""
    slots = [z3.If(z3.Extract(i, i, who) == 1, value, slot(packed, i, n)) if i else slot(packed, 0, n)
             for i in range(n + 1)]
    return z3.Concat(*reversed(slots))


def has(x, who):
    """Server `who` (one-hot) is in set x."""
    return x & who != 0


def at_most_one(x):
    return x & (x - 1) == 0


def server(name: str, n: int):
    """A rule parameter: one server."""
    x = z3.BitVec(name, n + 1)
    return x, z3.And(one_hot(x), within(x, all_mask(n)))


def type_ok(s: dict):
    n, full = s["n"], all_mask(s["n"])
    return z3.And(*[within(s[f], full) for f in SETS],
                  *[within(slot(s[f], i, n), full) for f in PACKED for i in range(1, n + 1)],
                  *[slot(s[f], 0, n) == 0 for f in PACKED], within(s["U2"], s["U1"]),
                  *[s[f] >= 0 for f in INTS])


def _post(s, t, v: dict):
    """t is s with the fields of v changed."""
    return z3.And(*[t[f] == v.get(f, s[f]) for f in MATCHED])


def brokers(cfg) -> int:
    return cfg.servers


def unsupported(cfg) -> str | None:
    """Why this relation does not model `cfg`: never (every config of the model is one of its inputs)."""
    return None


def _append(s, leader, voters, target) -> dict:
    """Leader `leader` appends VoterAssignment(voters, target): its uncommitted count grows by one."""
    n = s["n"]
    current = of(s["V"], leader, n)
    return {"V": put(s["V"], leader, voters, n), "T": put(s["T"], leader, target, n),
            "U1": s["U1"] | leader, "U2": z3.If(has(s["U1"], leader), s["U2"] | leader, s["U2"]),
            "ok": z3.If(at_most_one(current ^ voters), s["ok"], s["ok"] & ~leader)}


def _one_change_at_a_time(s, leader, cfg):
    return z3.BoolVal(True) if cfg.mutated.two_uncommitted_changes else z3.Not(has(s["U1"], leader))


# ==================================================================================== the rules
# One per rule of specs.kip642 that changes what this relation sees (STEPS maps the model's rules to them).

def alter_partition_reassignments(s, t, cfg):
    """Leader: VoterAssignment(CurrentVoters, TargetVoters = any other voter set)."""
    n = s["n"]
    leader, leader_ok = server("alter_leader", n)
    wanted = z3.BitVec("alter_target", n + 1)
    current = of(s["V"], leader, n)
    changes = _append(s, leader, current, wanted)
    changes["reassignments"] = s["reassignments"] - 1
    rel = z3.And(leader_ok, has(s["L"], leader), s["reassignments"] > 0, wanted != 0, within(wanted, all_mask(n)),
                 wanted != current, _one_change_at_a_time(s, leader, cfg), _post(s, t, changes))
    return rel, [leader, wanted]


def cancel_reassignment(s, t, cfg):
    """Leader: VoterAssignment(CurrentVoters, null) while a reassignment is pending."""
    n = s["n"]
    leader, leader_ok = server("cancel_leader", n)
    changes = _append(s, leader, of(s["V"], leader, n), z3.BitVecVal(0, n + 1))
    changes["cancels"] = s["cancels"] - 1
    rel = z3.And(leader_ok, has(s["L"], leader), s["cancels"] > 0, of(s["T"], leader, n) != 0,
                 z3.Not(has(s["U1"], leader)), _post(s, t, changes))
    return rel, [leader]


def leader_step(s, t, cfg):
    """Leader: add one of NewVoters if |NewVoters| >= |RemovingVoters|, else remove one of RemovingVoters
    other than itself (KIP-642, Reassignment Algorithm, steps 2-4)."""
    n = s["n"]
    leader, leader_ok = server("step_leader", n)
    member, member_ok = server("step_member", n)
    current, target = of(s["V"], leader, n), of(s["T"], leader, n)
    new, removing = target & ~current, current & ~target
    adding = count(new) >= count(removing)
    voters = z3.If(adding, current | member, current & ~member)
    changes = _append(s, leader, voters, target)
    rel = z3.And(leader_ok, member_ok, has(s["L"], leader), target != 0, target != current,
                 _one_change_at_a_time(s, leader, cfg),
                 z3.If(adding, has(new, member), z3.And(has(removing, member), member != leader)),
                 _post(s, t, changes))
    return rel, [leader, member]


def complete_reassignment(s, t, cfg):
    """Leader: CurrentVoters has reached TargetVoters, committed: VoterAssignment(CurrentVoters, null)."""
    n = s["n"]
    leader, leader_ok = server("complete_leader", n)
    target = of(s["T"], leader, n)
    changes = _append(s, leader, target, z3.BitVecVal(0, n + 1))
    rel = z3.And(leader_ok, has(s["L"], leader), target != 0, target == of(s["V"], leader, n),
                 z3.Not(has(s["U1"], leader)), _post(s, t, changes))
    return rel, [leader]


def advance_hwm(s, t, cfg):
    """Leader: it commits some of its entries; its uncommitted VoterAssignments can only decrease."""
    n = s["n"]
    leader, leader_ok = server("commit_leader", n)
    u1, u2 = z3.BitVec("commit_U1", n + 1), z3.BitVec("commit_U2", n + 1)
    rel = z3.And(leader_ok, has(s["L"], leader), within(u1, s["U1"]), within(u2, s["U2"]), within(u2, u1),
                 _post(s, t, {"U1": (s["U1"] & ~leader) | (u1 & leader), "U2": (s["U2"] & ~leader) | (u2 & leader)}))
    return rel, [leader, u1, u2]


def fetch(s, t, cfg):
    """Follower: it stops leading (if it led an older epoch) and either copies the leader's log, with an
    HWM at least the leader's, or truncates its own log where it diverges."""
    n = s["n"]
    follower, follower_ok = server("fetch_follower", n)
    leader, leader_ok = server("fetch_leader", n)
    copies = z3.Bool("fetch_copies")
    v, tg = z3.BitVec("fetch_kept_voters", n + 1), z3.BitVec("fetch_kept_target", n + 1)
    u1, u2 = z3.BitVec("fetch_U1", n + 1), z3.BitVec("fetch_U2", n + 1)
    # the follower's bits of u1/u2 are its new counts: at most the leader's (a copy) or its own (a prefix)
    bound1 = z3.If(copies, has(s["U1"], leader), has(s["U1"], follower))
    bound2 = z3.If(copies, has(s["U2"], leader), has(s["U2"], follower))
    ok = z3.If(copies, z3.If(has(s["ok"], leader), s["ok"] | follower, s["ok"] & ~follower), s["ok"])
    rel = z3.And(follower_ok, leader_ok, follower != leader, has(s["L"], leader),
                 z3.Implies(has(u1, follower), bound1), z3.Implies(has(u2, follower), bound2),
                 z3.Implies(has(u2, follower), has(u1, follower)),
                 within(v, all_mask(n)), within(tg, all_mask(n)),
                 _post(s, t, {"L": s["L"] & ~follower,
                              "V": put(s["V"], follower, z3.If(copies, of(s["V"], leader, n), v), n),
                              "T": put(s["T"], follower, z3.If(copies, of(s["T"], leader, n), tg), n),
                              "U1": (s["U1"] & ~follower) | (u1 & follower),
                              "U2": (s["U2"] & ~follower) | (u2 & follower), "ok": ok}))
    return rel, [follower, leader, copies, v, tg, u1, u2]


def become_leader(s, t, cfg):
    """A server takes the lead of a new epoch (votes from a majority, or `win_election`); servers that
    adopt that epoch stop leading older ones."""
    n = s["n"]
    candidate, candidate_ok = server("lead_candidate", n)
    demoted = z3.BitVec("lead_demoted", n + 1)
    rel = z3.And(candidate_ok, within(demoted, all_mask(n)), _post(s, t, {"L": (s["L"] & ~demoted) | candidate}))
    return rel, [candidate, demoted]


def step_down(s, t, cfg):
    """Leaders stop leading: a crash, a resignation, a vote or a candidacy in a higher epoch."""
    n = s["n"]
    demoted = z3.BitVec("step_down", n + 1)
    rel = z3.And(demoted != 0, within(demoted, s["L"]), _post(s, t, {"L": s["L"] & ~demoted}))
    return rel, [demoted]


def restart_without_log(s, t, cfg):
    """A server restarts with an empty disk: no log, no role."""
    n = s["n"]
    who, who_ok = server("disk_loss", n)
    zero = z3.BitVecVal(0, n + 1)
    rel = z3.And(who_ok, s["disk_losses"] > 0,
                 _post(s, t, {"V": put(s["V"], who, zero, n), "T": put(s["T"], who, zero, n), "L": s["L"] & ~who,
                              "U1": s["U1"] & ~who, "U2": s["U2"] & ~who, "ok": s["ok"] | who,
                              "disk_losses": s["disk_losses"] - 1}))
    return rel, [who]


RULES = {f.__name__: f for f in (alter_partition_reassignments, cancel_reassignment, leader_step, complete_reassignment,
                                 advance_hwm, fetch, become_leader, step_down, restart_without_log)}
# The model's rules, by the relation's rule that simulates a step of theirs which changes the projection.
STEPS = {**{r: r for r in RULES}, "win_election": "become_leader", "crash_restart": "step_down", "resign": "step_down",
         "handle_vote_request": "step_down", "stand_against_nonvoter": "step_down", "become_candidate": "step_down"}


def init(s: dict, cfg):
    """Any bootstrap: every server holds the same committed VoterAssignment (any voter set, no target),
    one of the voters leads; any budgets."""
    n = s["n"]
    boot = z3.BitVec("boot_voters", n + 1)
    return z3.And(boot != 0, within(boot, all_mask(n)), one_hot(s["L"]), within(s["L"], boot),
                  *[z3.And(slot(s["V"], i, n) == boot, slot(s["T"], i, n) == 0) for i in range(1, n + 1)],
                  s["U1"] == 0, s["U2"] == 0, s["ok"] == all_mask(n))


def _single_member_changes(log) -> bool:
    voters = [e.voters for e in log if e.kind == VOTER_ASSIGNMENT]
    return all((a ^ b).bit_count() <= 1 for a, b in zip(voters, voters[1:]))


def project(cfg, state) -> dict:
    """The symbolic fields a concrete state determines."""
    n = cfg.servers
    pack = lambda sets: sum(x << (i * (n + 1)) for i, x in enumerate(sets, 1))  # noqa: E731
    servers = list(enumerate(state.servers, 1))
    uncommitted = {i: sum(1 for e in b.log[b.hwm:] if e.kind == VOTER_ASSIGNMENT) for i, b in servers}
    return {"L": mask(i for i, b in servers if b.role == LEADER),
            "U1": mask(i for i in uncommitted if uncommitted[i] >= 1),
            "U2": mask(i for i in uncommitted if uncommitted[i] >= 2),
            "ok": mask(i for i, b in servers if _single_member_changes(b.log)),
            "V": pack(voters_of(b.log) for _, b in servers), "T": pack(target_of(b.log) for _, b in servers),
            "reassignments": state.budget.reassignments, "cancels": state.budget.cancels,
            "disk_losses": state.budget.disk_losses}


# ============================================================================ properties and lemmas

def prop_single_member_changes(s):
    return s["ok"] == all_mask(s["n"])


def prop_at_most_one_uncommitted(s):
    return s["U2"] & s["L"] == 0


def lemma_every_log_at_most_one_uncommitted(s):
    """Every server, leader or not, has at most one uncommitted VoterAssignment (so a new leader has)."""
    return s["U2"] == 0


PROPERTIES = {
    "SingleMemberChanges": prop_single_member_changes,
    "AtMostOneUncommittedVoterChange": prop_at_most_one_uncommitted,
}
LEMMAS = {
    "LemmaEveryLogAtMostOneUncommitted": lemma_every_log_at_most_one_uncommitted,
}
