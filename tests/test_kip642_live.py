"""The `kip642` model's liveness (issue 23): fair elections once the adversarial timeouts are spent,
ReassignmentCompletes over the servers that remain voters, KIP-642's own vote rule as an expected
failure, and a voter that restarts without its log."""

from harness.engines import bfs, graph
from harness.model import Action
from harness.registry import load_spec
from specs.kip642.logic import reassignment_completed, voters_of
from specs.kip642.state import CANDIDATE, FOLLOWER, LEADER
from specs.kip642.voters import election_stalled

SPEC = load_spec("kip642")


def run(m, s, *steps):
    for rule, params in steps:
        nxt = m.apply(s, Action(rule, tuple(params.items())))
        assert nxt is not None, f"{rule}{params} is not enabled"
        s = nxt
    return s


def test_reassignment_completes_at_tiny_with_an_adversarial_timeout():
    r, _ = graph.explore(SPEC.bind(SPEC.config("tiny")), check_safety=True)
    assert r.complete and not r.violations and r.stats["liveness"]["ReassignmentCompletes"]["holds"]
    assert r.stats["states"] > 5000


def test_kip642s_own_vote_rule_deadlocks_after_one_timeout():
    """Under votes=kip642 the lasso ends where no server can win: 3 never learnt it was added."""
    m = SPEC.bind(SPEC.config("literal-votes"))
    r, _ = graph.explore(m, check_safety=False)
    assert not r.stats["liveness"]["ReassignmentCompletes"]["holds"]
    [v] = r.violations
    last = v.states[-1]
    assert not any(b.role == LEADER for b in last.servers)
    assert [voters_of(b.log) for b in last.servers] == [0b1010, 0b1110, 0b0110]  # {1,3}, {1,2,3}, {1,2}
    assert all(m.apply(last, Action("win_election", (("candidate", c),))) is None for c in (1, 2, 3))
    # under KIP-853's vote handling 3 votes for 2 there, and 2 leads
    m853 = SPEC.bind(SPEC.config("literal-votes", ["votes=kip853"]))
    won = run(m853, last, ("handle_vote_request", {"voter": 3, "candidate": 2}), ("become_leader", {"candidate": 2}))
    assert won.servers[1].role == LEADER


def test_win_election_waits_until_the_election_under_way_is_over():
    m = SPEC.bind(SPEC.config("tiny"))
    s = m.init_states()[0]
    assert not election_stalled(m.config, s)  # 1 leads epoch 1
    s = run(m, s, ("become_candidate", {"server": 2}))
    assert not election_stalled(m.config, s)  # 1 has a vote request to handle
    s = run(m, s, ("handle_vote_request", {"voter": 1, "candidate": 2}))
    assert s.servers[1].role == CANDIDATE and not election_stalled(m.config, s)  # 2 can become leader
    s = s._replace(servers=(s.servers[0], s.servers[1]._replace(role=FOLLOWER, votes=0), s.servers[2]))
    assert election_stalled(m.config, s)  # no leader of epoch 2, no election under way
    t = run(m, s, ("win_election", {"candidate": 1}))
    assert t.servers[0].role == LEADER and t.servers[0].epoch == 3 and t.budget == s.budget
    assert t.servers[1].voted_for == 1 and t.leaders == (1, 0, 1)


def test_a_removed_voter_that_never_hears_of_the_completion_does_not_count():
    m = SPEC.bind(SPEC.config("worked-example"))  # voters {1,2,3}, 1 leads
    s = m.init_states()[0]
    pending = s.servers[0].log + (s.servers[0].log[0]._replace(epoch=1, target=0b1110000),)

    def holding(server):
        return s._replace(servers=tuple(b._replace(log=pending) if i == server else b
                                        for i, b in enumerate(s.servers, 1)))

    assert reassignment_completed(m.config, s)
    assert reassignment_completed(m.config, holding(5))  # 5 is no voter of the committed {1,2,3}
    assert not reassignment_completed(m.config, holding(2))  # 2 remains a voter: it must hear of it
    assert not reassignment_completed(m.config, s._replace(committed=pending))
    leaderless = s._replace(servers=(s.servers[0]._replace(role=FOLLOWER),) + s.servers[1:])
    assert not reassignment_completed(m.config, leaderless)


def test_a_voter_that_restarts_without_its_log_neither_votes_nor_counts():
    m = SPEC.bind(SPEC.config("disk-loss"))
    s = run(m, m.init_states()[0], ("alter_partition_reassignments", {"leader": 1, "target": 0}),
            ("restart_without_log", {"server": 2}), ("fetch", {"follower": 2, "leader": 1}),
            ("fetch", {"follower": 2, "leader": 1}))
    assert s.servers[1].log == s.servers[0].log and s.disk_lost == 0b100
    assert m.apply(s, Action("advance_hwm", (("leader", 1),))) is None  # 2's fetch does not commit it
    s = run(m, s, ("become_candidate", {"server": 3}))
    assert m.apply(s, Action("become_candidate", (("server", 2),))) is None
    s = run(m, s, ("handle_vote_request", {"voter": 2, "candidate": 3}))
    assert s.servers[2].votes == 0b1000  # 2 adopted the epoch but did not vote


def test_the_correct_protocol_survives_a_lost_disk_and_the_mutation_is_caught():
    r = bfs.explore(SPEC.bind(SPEC.config("disk-loss")))
    assert r.complete and not r.violations and r.stats["distinct"] > 50_000
    r = bfs.explore(SPEC.bind(SPEC.config("disk-loss", mutation="votes_without_log")))
    assert r.violations[0].outcome.property == "LeaderCompleteness" and r.violations[0].depth == 6


def test_a_leader_that_resigns_ahead_of_its_successor_stands_again():
    """Voter 1 hands over to 2 (`liveness` without the lost disk). Before, 1 could resign holding an
    uncommitted write 2 lacked; 2 could not win (1 refuses a less up-to-date log) and a resigned leader
    never stood again: an 8-step lasso. Now 1 resigns only with an entry of its epoch committed, and
    stands again (Kafka's Resigned -> Candidate) only when no other voter can win."""
    m = SPEC.bind(SPEC.config("liveness", ["max_disk_losses=0"]))
    r, _ = graph.explore(m, check_safety=True)
    assert not r.violations and r.stats["liveness"]["ReassignmentCompletes"]["holds"]
    s = run(m, m.init_states()[0], ("alter_partition_reassignments", {"leader": 1, "target": 0}),
            ("advance_hwm", {"leader": 1}), ("leader_step", {"leader": 1, "member": 2}),
            ("fetch", {"follower": 2, "leader": 1}), ("fetch", {"follower": 2, "leader": 1}),
            ("client_write", {"leader": 1}), ("advance_hwm", {"leader": 1}), ("resign", {"leader": 1}))
    assert m.apply(s, Action("win_election", (("candidate", 2),))) is None  # 2 lacks 1's write
    s = run(m, s, ("win_election", {"candidate": 1}))
    assert m.apply(s, Action("resign", (("leader", 1),))) is None  # not before its LeaderChange commits
    s = run(m, s, ("fetch", {"follower": 2, "leader": 1}), ("fetch", {"follower": 2, "leader": 1}),
            ("advance_hwm", {"leader": 1}), ("resign", {"leader": 1}))
    assert m.apply(s, Action("win_election", (("candidate", 1),))) is None  # 2 can win now: it goes first
    assert run(m, s, ("win_election", {"candidate": 2})).servers[1].role == LEADER
