"""The `kip642` model: KIP-642's worked example (Quorum Change Protocol) through the rules, properties, mutations."""

from harness.engines import bfs
from harness.model import Action
from harness.registry import load_spec
from specs.kip642.logic import target_of, voters_of
from specs.kip642.state import LEADER, RESIGNED

SPEC = load_spec("kip642")


def members(m):
    return [i for i in range(m.bit_length()) if m >> i & 1]


def step(m, s, rule, **params):
    nxt = m.apply(s, Action(rule, tuple(params.items())))
    assert nxt is not None, f"{rule}{params} is not enabled"
    assert not m.violated(nxt), m.violated(nxt)
    return nxt


def commit_all(m, s, leader):
    """Every other server fetches from the leader, then the leader advances its HWM."""
    for f in range(1, m.config.servers + 1):
        if f != leader:
            nxt = m.apply(s, Action("fetch", (("follower", f), ("leader", leader))))
            s = nxt if nxt is not None else s
    for f in range(1, m.config.servers + 1):  # a second round reports the new fetch offsets
        if f != leader:
            nxt = m.apply(s, Action("fetch", (("follower", f), ("leader", leader))))
            s = nxt if nxt is not None else s
    nxt = m.apply(s, Action("advance_hwm", (("leader", leader),)))
    s = nxt if nxt is not None else s
    b = s.servers[leader - 1]
    assert b.hwm == len(b.log), "not everything committed"
    return s


def config(s, server):
    log = s.servers[server - 1].log
    return members(voters_of(log)), members(target_of(log))


def test_worked_example_123_to_456_with_replica_1_leading():
    m = SPEC.bind(SPEC.config("worked-example"))
    s = m.init_states()[0]
    seen = []
    s = step(m, s, "alter_partition_reassignments", leader=1, target=0)
    seen.append(config(s, 1))
    s = commit_all(m, s, 1)
    for member in (4, 3, 5, 2, 6):  # add 4, remove 3 (not the leader), add 5, remove 2, add 6
        s = step(m, s, "leader_step", leader=1, member=member)
        seen.append(config(s, 1))
        s = commit_all(m, s, 1)
    assert seen == [([1, 2, 3], [4, 5, 6]), ([1, 2, 3, 4], [4, 5, 6]), ([1, 2, 4], [4, 5, 6]),
                    ([1, 2, 4, 5], [4, 5, 6]), ([1, 4, 5], [4, 5, 6]), ([1, 4, 5, 6], [4, 5, 6])]
    # the leader is the last removing voter: it may not remove itself, it resigns
    assert all(m.apply(s, Action("leader_step", (("leader", 1), ("member", x)))) is None for x in range(1, 7))
    s = step(m, s, "resign", leader=1)
    assert s.servers[0].role == RESIGNED and 1 in config(s, 1)[0]
    # a new leader among the remaining voters finishes the change
    s = step(m, s, "become_candidate", server=4)
    for v in (5, 6):
        s = step(m, s, "handle_vote_request", voter=v, candidate=4)
    s = step(m, s, "become_leader", candidate=4)
    assert s.servers[3].role == LEADER
    s = commit_all(m, s, 4)  # the LeaderChange record of epoch 2
    s = step(m, s, "leader_step", leader=4, member=1)
    assert config(s, 4) == ([4, 5, 6], [4, 5, 6])
    s = commit_all(m, s, 4)
    s = step(m, s, "complete_reassignment", leader=4)
    assert config(s, 4) == ([4, 5, 6], [])


def test_ci_exhausts_without_violation():
    r = bfs.explore(SPEC.bind(SPEC.config("tiny")))
    assert r.complete and not r.violations and r.stats["distinct"] > 1000


def test_two_uncommitted_changes_is_caught():
    r = bfs.explore(SPEC.bind(SPEC.config("ci", mutation="two_uncommitted_changes")))
    assert r.violations[0].outcome.property == "AtMostOneUncommittedVoterChange"


def test_each_mutation_has_a_committed_replaying_trace(cli):
    from tests.conftest import ROOT

    for mutation in SPEC.mutations:
        [path] = (ROOT / "counterexamples").glob(f"kip642-*-{mutation}-*.itf.json")
        assert cli("replay", path)[0] == 0


def test_ongaro_scenario_is_blocked_without_the_mutation():
    """The correct protocol refuses the voter change of the new leader before its epoch commits."""
    from specs.kip642.presets import ONGARO_SCENARIO

    m = SPEC.bind(SPEC.config("ongaro"))
    s = m.init_states()[0]
    for rule, params in ONGARO_SCENARIO:
        nxt = m.apply(s, Action(rule, tuple(params.items())))
        if nxt is None:
            assert (rule, params) == ("leader_step", {"leader": 3, "member": 4})
            return
        s = nxt
        assert not m.violated(s)
    raise AssertionError("the scenario ran to the end without the mutation")


def test_each_property_names_what_fails():
    """On a crafted violating state, each property fails with a reason naming servers, offsets and voter sets."""
    from specs.kip642.state import DATA, VOTER_ASSIGNMENT, Entry

    m = SPEC.bind(SPEC.config("tiny"))
    s = m.init_states()[0]
    boot = s.committed[0]
    data = Entry(epoch=1, kind=DATA, voters=0, target=0)
    grow = Entry(epoch=1, kind=VOTER_ASSIGNMENT, voters=0b1110, target=0b1110)  # {1,2} -> {1,2,3}
    jump = Entry(epoch=1, kind=VOTER_ASSIGNMENT, voters=0b11000, target=0)  # {1,2} -> {3,4}

    def with_server(state, i, **changes):
        srv = list(state.servers)
        srv[i - 1] = srv[i - 1]._replace(**changes)
        return state._replace(servers=tuple(srv))

    cases = {
        "OneLeaderPerEpoch": (with_server(s, 2, role=LEADER), "servers 1 and 2 both lead epoch 1"),
        "LogMatching": (with_server(with_server(s, 2, log=(boot, data)), 3, log=(data, data)),
                        "servers 2 and 3 both hold an entry of epoch 1 at offset 1 but differ at offset 0"),
        "LeaderCompleteness": (s._replace(committed=(boot, data)), "leader 1 of epoch 1 lacks the committed entry "
                               "at offset 1 (last commit in epoch 1), DATA of epoch 1; its log ends before it"),
        "StateMachineSafety": (with_server(s, 2, hwm=2, log=(boot, data)), "server 2 has HWM 2, beyond the 1 committed"),
        "AtMostOneUncommittedVoterChange": (with_server(s, 1, log=(boot, grow, grow)),
                                            "(offset 1: voters {1,2,3}; offset 2: voters {1,2,3})"),
        "SingleMemberChanges": (with_server(s, 3, log=(boot, jump)),
                                "server 3's log changes the voters from {1,2} to {3,4} at offset 1"),
    }
    assert set(cases) == set(m.invariant_names)
    for name, (state, reason) in cases.items():
        assert not m.holds(name, state), name
        assert reason in m.explain(name, state), (name, m.explain(name, state))
    assert "epoch 1: 1" in m.explain("OneLeaderPerEpoch", s._replace(two_leaders_in_an_epoch=True))


# The rules by the module of who acts (issue 38), in the order the single module registered them: the order
# decides BFS's successor order, first-found states and the committed traces.
RULES_BY_ACTOR = [
    ("admin", ["alter_partition_reassignments", "cancel_reassignment"]),
    ("leaders", ["leader_step", "complete_reassignment", "resign", "client_write", "advance_hwm"]),
    ("followers", ["fetch"]),
    ("voters", ["become_candidate", "handle_vote_request", "stand_against_nonvoter", "become_leader", "win_election"]),
    ("faults", ["crash_restart", "restart_without_log"]),
]


def test_rules_sit_in_their_actors_modules_in_the_original_order():
    """Issue 38's layout: each rule in the module of who acts, tried in the order of the single module before
    the split, each docstring's summary naming who acts (tests/test_spec_api.py checks what every package
    shares)."""
    assert [r.name for r in SPEC.rules] == [name for _, names in RULES_BY_ACTOR for name in names]
    assert {r.name: r.fn.__module__ for r in SPEC.rules} == {
        name: f"specs.kip642.{actor}" for actor, names in RULES_BY_ACTOR for name in names}
    for r in SPEC.rules:
        summary = r.doc.partition("\n\n")[0]
        assert summary.split(":")[0] in ("Admin", "Leader", "Follower or observer", "Voter", "Candidate", "Fault"), r.name
