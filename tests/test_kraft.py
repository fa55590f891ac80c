"""The `kraft` model: the worked examples of the Kafka replication protocol description
(kafka-tlaplus, kip-966), ch. 4 §4.4 through the rules, Kafka's controller logic case by case against
the behaviour of `PartitionChangeBuilder`, `PartitionReassignmentReplicas`, `PartitionReassignmentRevert`
and `ReplicationControlManager` (apache/kafka 1eb76443) and their unit tests, variants, mutations and
the corpus."""

import inspect

import pytest

from harness.bitset import mask
from harness.engines import bfs, graph
from harness.model import Action
from harness.registry import load_spec
from harness.trace import read_trace
from specs.kraft import logic
from specs.kraft.state import FENCED, Partition, Rules
from tests.conftest import ROOT

SPEC = load_spec("kraft")


def model(preset="tiny", settings=(), variants=(), mutation=None):
    return SPEC.bind(SPEC.config(preset, settings, variants, mutation))


def step(m, s, rule, **params):
    """Apply one rule through the model (as an engine would); fail if it is not enabled."""
    action = Action(rule, tuple(params.items()))
    assert action in m.action_index, f"unknown action {action}"
    nxt = m.apply(s, action)
    assert nxt is not None, f"{action} is not enabled"
    assert not m.violated(nxt), m.violated(nxt)
    return nxt


def with_epochs(s, leader_epoch, partition_epoch):
    """The documents start from LeaderEpoch=1, PartitionEpoch=2: set it, and let the brokers know."""
    p = s.partition._replace(leader_epoch=leader_epoch, partition_epoch=partition_epoch)
    brokers = tuple(b._replace(known_leader_epoch=leader_epoch, known_partition_epoch=partition_epoch)
                    if b.known_partition_epoch else b for b in s.brokers)
    return s._replace(partition=p, brokers=brokers)


def shape(p: Partition) -> dict:
    """The fields the description's examples list (ch. 4 §4.4)."""
    return {"Replicas": list(p.replicas), "ISR": logic.members(p.isr), "Leader": p.leader or -1,
            "LeaderEpoch": p.leader_epoch, "PartitionEpoch": p.partition_epoch,
            "Adding": logic.members(p.adding), "Removing": logic.members(p.removing)}


def catch_up_and_add(m, s, leader, follower, new_leader=0):
    """Replica `follower` learns, fetches in this leader epoch, and the leader's AlterPartition adds it."""
    s = step(m, s, "learn_metadata", broker=follower) if s.brokers[follower - 1].known_partition_epoch != s.partition.partition_epoch else s
    s = step(m, s, "fetch", follower=follower)
    s = step(m, s, "propose_isr_expansion", leader=leader, follower=follower)
    return s, step(m, s, "handle_alter_partition", leader=leader, new_leader=new_leader)


def test_seed_example_1_moving_one_replica():
    """Ch. 4 §4.4.1, example 1: [1,2,3] -> [1,2,4] while broker 3 is impaired."""
    m = model(settings=["brokers=4", "replicas=[1,2,3]", "isr=[1,2]", "leader=1", "targets=[[1,2,4]]"])
    s = with_epochs(m.init_states()[0], 1, 2)
    assert shape(s.partition) == {"Replicas": [1, 2, 3], "ISR": [1, 2], "Leader": 1, "LeaderEpoch": 1,
                                  "PartitionEpoch": 2, "Adding": [], "Removing": []}
    s = step(m, s, "alter_partition_reassignments", target=0, new_leader=0)
    assert shape(s.partition) == {"Replicas": [1, 2, 3, 4], "ISR": [1, 2], "Leader": 1, "LeaderEpoch": 1,
                                  "PartitionEpoch": 3, "Adding": [4], "Removing": [3]}
    s = step(m, s, "learn_metadata", broker=1)
    before, s = catch_up_and_add(m, s, leader=1, follower=4)
    # catch-up and completion in one atomic change: one partition-epoch bump, one leader-epoch bump
    assert shape(s.partition) == {"Replicas": [1, 2, 4], "ISR": [1, 2, 4], "Leader": 1, "LeaderEpoch": 2,
                                  "PartitionEpoch": 4, "Adding": [], "Removing": []}
    # the leader stays, so no other leader pick is legal
    picks = {m.actions[i].params: t.partition.leader for i, t in m.successors(before)
             if m.actions[i].rule == "handle_alter_partition"}
    assert set(picks.values()) == {1}


def test_seed_example_2_reducing_replication_factor():
    """Ch. 4 §4.4.1, example 2 (numbered 4.4.1 again in the description): RF 5 -> 3 with MinISR 2,
    while the ISR is [4,5] and 5 leads."""
    m = model(settings=["brokers=5", "replicas=[1,2,3,4,5]", "isr=[4,5]", "leader=5", "targets=[[1,2,3]]",
                        "min_isr=2"])
    s = with_epochs(m.init_states()[0], 1, 2)
    s = step(m, s, "alter_partition_reassignments", target=0, new_leader=0)
    # the final ISR would be empty: started, not completed
    assert shape(s.partition) == {"Replicas": [1, 2, 3, 4, 5], "ISR": [4, 5], "Leader": 5, "LeaderEpoch": 1,
                                  "PartitionEpoch": 3, "Adding": [], "Removing": [4, 5]}
    s = step(m, s, "learn_metadata", broker=5)
    _, s = catch_up_and_add(m, s, leader=5, follower=1)
    assert shape(s.partition) == {"Replicas": [1, 2, 3, 4, 5], "ISR": [1, 4, 5], "Leader": 5, "LeaderEpoch": 1,
                                  "PartitionEpoch": 4, "Adding": [], "Removing": [4, 5]}
    s = step(m, s, "handle_alter_partition_response", leader=5)
    before, _ = catch_up_and_add(m, s, leader=5, follower=2, new_leader=2)
    outcomes = {m.actions[i].params: t.partition for i, t in m.successors(before)
                if m.actions[i].rule == "handle_alter_partition"}
    leaders = {p.leader for p in outcomes.values()}
    assert leaders == {1, 2}, "any member of the new ISR [1,2] may lead, and nothing else"
    final = outcomes[(("leader", 5), ("new_leader", 2))]
    assert shape(final) == {"Replicas": [1, 2, 3], "ISR": [1, 2], "Leader": 2, "LeaderEpoch": 2,
                            "PartitionEpoch": 5, "Adding": [], "Removing": []}


# ------------------------------------------------------------- Kafka controller, case by case

ELR_OFF = Rules(min_isr=1, elr=False, unclean=False)
ALL = mask(range(0, 12))


def part(replicas, isr, leader, adding=(), removing=(), le=1, pe=1, elr=(), lkl=()):
    return Partition(tuple(replicas), mask(isr), mask(elr), mask(lkl), leader, le, pe, mask(adding), mask(removing), False)


@pytest.mark.parametrize("current, target, merged, adding, removing", [
    ([3, 2, 1, 10], [7, 3, 1, 9], [7, 3, 1, 9, 2, 10], [7, 9], [2, 10]),  # (ids shifted: 0 -> 10)
    ([3, 2, 1, 10], [3, 1], [3, 1, 2, 10], [], [2, 10]),
    ([2, 3, 10, 1], [4, 5], [4, 5, 1, 2, 3, 10], [4, 5], [1, 2, 3, 10]),  # previously-adding become removing
])
def test_kafka_growth_merges_target_then_removing(current, target, merged, adding, removing):
    p = part(current, [current[0]], current[0])
    new = logic.kafka_reassign(p, tuple(target), ELR_OFF, ALL)
    assert list(new.replicas) == merged
    assert logic.members(new.adding) == sorted(adding) and logic.members(new.removing) == sorted(removing)
    assert new.leader == p.leader and new.isr == p.isr
    assert new.leader_epoch == p.leader_epoch and new.partition_epoch == p.partition_epoch + 1


def test_kafka_cancel_keeps_merged_order():
    """Kafka's testCancelReassignPartitions: bar [4,3,2] reassigned to [1,2,3,4,10] then cancelled gives [2,3,4]."""
    p = part([4, 3, 2], [4, 3, 2], 4)
    grown = logic.kafka_reassign(p, (1, 2, 3, 4, 10), ELR_OFF, ALL)
    reverted = logic.kafka_cancel(grown, ELR_OFF, ALL)
    assert list(reverted.replicas) == [2, 3, 4] and reverted.adding == reverted.removing == 0
    assert reverted.leader_epoch == grown.leader_epoch + 1


def test_kafka_code_derived_behaviours():
    """Behaviours that follow from the PartitionChangeBuilder / PartitionReassignmentReplicas /
    PartitionReassignmentRevert code with the builder calls ReplicationControlManager makes, with no
    Kafka unit test of their own."""
    unclean = Rules(min_isr=1, elr=False, unclean=True)
    # cancel needing an unclean revert, replicas[0] alive: a clean pick of 3, no recovery
    p = part([4, 5, 3, 2, 1], [4, 5], 4, adding=[4, 5], removing=[2])
    r = logic.kafka_cancel(p, unclean, ALL)
    assert (list(r.replicas), logic.members(r.isr), r.leader, r.recovering) == ([3, 2, 1], [3], 3, False)
    # same with broker 3 dead: a real unclean election of 2
    r = logic.kafka_cancel(p, unclean, ALL & ~(1 << 3))
    assert (logic.members(r.isr), r.leader, r.recovering) == ([2], 2, True)
    # without unclean election the revert is refused
    assert logic.kafka_cancel(p, ELR_OFF, ALL) is None
    # cancel while the leader is an adding replica
    p = part([2, 3, 10, 1], [10, 1, 2], 2, adding=[2, 3], removing=[10, 1])
    r = logic.kafka_cancel(p, ELR_OFF, ALL)
    assert (list(r.replicas), logic.members(r.isr), r.leader, r.leader_epoch) == ([10, 1], [1, 10], 10, 2)
    # AlterPartition completes and the leader survives: same leader, LE+1
    p = part([1, 2, 3, 4], [1, 2, 3], 2, adding=[4], removing=[1])
    r = logic.kafka_build(p, ELR_OFF, ALL, target_isr=mask([1, 2, 3, 4]))
    assert (list(r.replicas), logic.members(r.isr), r.leader, r.leader_epoch) == ([2, 3, 4], [2, 3, 4], 2, 2)
    # a new reassignment back to the original while one is ongoing
    p = part([10, 2, 1, 3], [3, 2, 1], 3, adding=[10], removing=[3])
    r = logic.kafka_reassign(p, (3, 2, 1), ELR_OFF, ALL)
    assert (list(r.replicas), r.adding, r.removing, r.leader_epoch) == ([3, 2, 1], 0, 0, 2)
    p = part([10, 2, 1, 3], [3, 2], 3, adding=[10], removing=[3])
    r = logic.kafka_reassign(p, (3, 2, 1), ELR_OFF, ALL)
    assert (list(r.replicas), logic.members(r.removing), logic.members(r.adding)) == ([3, 2, 1, 10], [10], [10])
    # ELR on, completion leaves |ISR| < minIsr: ELR keeps replicas that are no longer replicas
    elr3 = Rules(min_isr=3, elr=True, unclean=False)
    p = part([3, 4, 1, 2], [1, 2, 3], 3, adding=[4], removing=[1, 2])
    r = logic.kafka_build(p, elr3, ALL, target_isr=mask([1, 2, 3, 4]))
    assert (list(r.replicas), logic.members(r.isr), r.leader, logic.members(r.elr)) == ([3, 4], [3, 4], 3, [1, 2])
    r = logic.kafka_build(p, Rules(min_isr=2, elr=True, unclean=False), ALL, target_isr=mask([1, 2, 3, 4]))
    assert r.elr == 0


def test_kafka_election_order_and_elr():
    elr = Rules(min_isr=2, elr=True, unclean=False)
    # fencing the leader: the first valid replica in replica order, not the lowest id
    p = part([3, 1, 2], [1, 2, 3], 2)
    r = logic.kafka_build(p, elr, ALL & ~(1 << 2), target_isr=mask([1, 3]))
    assert r.leader == 3 and r.leader_epoch == 2
    # the ISR drops below MinISR: the leaver joins the ELR; an empty ISR elects from the ELR
    p = part([1, 2], [1, 2], 1)
    r = logic.kafka_build(p, elr, ALL & ~(1 << 2), target_isr=mask([1]))
    assert (logic.members(r.isr), logic.members(r.elr), r.leader) == ([1], [2], 1)
    r2 = logic.kafka_build(r, elr, ALL & ~(1 << 2) & ~(1 << 1), target_isr=0)
    assert (r2.isr, logic.members(r2.elr), r2.leader, logic.members(r2.last_known_elr)) == (0, [1, 2], 0, [1])
    r3 = logic.kafka_build(r2, elr, ALL & ~(1 << 1), target_isr=0)  # broker 2 unfenced: an ELR election
    assert (logic.members(r3.isr), logic.members(r3.elr), r3.leader) == ([2], [1], 2)
    # without ELR an empty ISR is not written: the last replica stays
    r = logic.kafka_build(part([1, 2], [1], 1), ELR_OFF, ALL & ~(1 << 1), target_isr=0)
    assert (logic.members(r.isr), r.leader) == ([1], 0)


KAFKA_4_4 = Rules(min_isr=2, elr=True, unclean=False, kafka_4_4=True)
KAFKA_4_0 = KAFKA_4_4._replace(kafka_4_4=False)


def test_kafka_4_4_completes_with_an_old_target_replica_out_of_the_isr():
    """KAFKA-19975 (PartitionReassignmentReplicas in 4.4.0): [1,2] -> [2,3] with 2 out of the ISR completes once
    the adding 3 is in it; 4.0 waits for 2. A smaller target ([1,2,3] -> [1,3]) still waits for every target
    replica, and an adding replica out of the ISR still blocks."""
    p = part([2, 3, 1], [1], 1, adding=[3], removing=[1], elr=[2])  # 2 was fenced out of ISR {1,2}
    r = logic.kafka_build(p, KAFKA_4_4, ALL, target_isr=mask([1, 3]))
    assert (list(r.replicas), logic.members(r.isr), r.leader, r.adding, r.removing) == ([2, 3], [3], 3, 0, 0)
    assert logic.members(r.elr) == [1, 2]  # the ISR stays below MinISR: 1 leaves it for the ELR
    waits = logic.kafka_build(p, KAFKA_4_0, ALL, target_isr=mask([1, 3]))
    assert (list(waits.replicas), logic.members(waits.adding)) == ([2, 3, 1], [3])
    smaller = part([1, 2, 3], [1, 2], 1, removing=[2])
    assert logic.kafka_build(smaller, KAFKA_4_4, ALL, target_isr=smaller.isr) is None  # 3 is out: no change
    done = logic.kafka_build(smaller, KAFKA_4_4, ALL, target_isr=mask([1, 2, 3]))
    assert (list(done.replicas), logic.members(done.isr)) == ([1, 3], [1, 3])
    assert logic.kafka_build(p, KAFKA_4_4, ALL, target_isr=mask([1])) is None  # 3 not in the ISR: no change


def test_kafka_4_4_elects_the_last_known_leader_only_if_acceptable():
    """PartitionChangeBuilder.canElectLastKnownLeader: with ISR and ELR empty, 4.0 elects the last known leader
    even if it is fenced (it only logs that); 4.4 leaves the partition leaderless until it is acceptable."""
    p = part([1, 2], [], 0, lkl=[1])._replace(isr=0)
    fenced_1 = ALL & ~(1 << 1)
    assert logic.kafka_build(p, KAFKA_4_0, fenced_1, target_isr=0).leader == 1
    assert logic.kafka_build(p, KAFKA_4_4, fenced_1, target_isr=0) is None
    r = logic.kafka_build(p, KAFKA_4_4, ALL, target_isr=0)
    assert (r.leader, logic.members(r.isr), r.recovering) == (1, [1], True)


def test_kafka_4_4_variant_completes_sooner_in_the_model():
    """The variant through the rules: at tiny-fence only kafka-4.4 completes [1,2] -> [2,3] with broker 2 fenced,
    below MinISR (the expected violation of its preset, whose committed trace shows it)."""
    r = bfs.explore(model("tiny-fence", variants=["completion=kafka"]))
    assert r.complete and not r.violations
    preset = "kafka-4.4-completion-below-min-isr"
    r = bfs.explore(model(preset))
    [v] = r.violations
    assert v.outcome.property == "CompletionRespectsMinIsr" and len(v.states) - 1 == 7
    assert SPEC.declared_failure(SPEC.config(preset), "invariant", v.outcome.property) is not None
    assert v.states[-1].partition.replicas == (2, 3) and v.states[-1].brokers[1].status == FENCED
    [path] = (ROOT / "counterexamples").glob(f"kraft-{preset}-*.itf.json")
    trace = read_trace(path)
    assert len(trace.states) == len(v.states) and not trace.model.holds("CompletionRespectsMinIsr", trace.states[-1])


# ------------------------------------------------------------------------ variants, mutations

@pytest.mark.parametrize("variants", [[], ["completion=kafka"], ["unclean=true"], ["completion=kafka", "unclean=true"],
                                      ["elr=false"], ["completion=kafka", "elr=false"], ["completion=kafka-4.4"],
                                      ["completion=kafka-4.4", "elr=false"]])
def test_tiny_exhausts_without_violation_for_each_variant(variants):
    r = bfs.explore(model("tiny", variants=variants))
    assert r.complete and not r.violations and r.stats["distinct"] > 500
    # tiny has no faults, so a partition never becomes leaderless: only clean_election may stay idle
    assert [w for w in r.warnings if "clean_election" not in w] == [], r.warnings


@pytest.mark.parametrize("preset", [
    "liveness",  # two brokers, 61,036 states (2 s), and every rule fires
    # `ci`, the gate's coverage config (27 s from source): the gate's step 2 exhausts it and fails on a rule
    # that stops firing, so `make test` checks the same on `liveness` and the nightly's pytest runs this one
    pytest.param("ci", marks=[pytest.mark.gate, pytest.mark.nightly])])
def test_a_coverage_config_exhausts_and_every_rule_fires(preset):
    """BFS exhausts the config with no violation and every rule of the default variant, clean_election
    included, produces a new state somewhere."""
    m = model(preset)
    r = bfs.explore(m)
    assert r.complete and not r.violations and not r.warnings
    assert set(r.coverage) == set(m.rule_names) == {r.name for r in SPEC.rules} - {"unclean_election"}
    assert all(c["distinct"] > 0 for c in r.coverage.values()), r.coverage


def test_the_disruption_budgets_are_read_once_per_state(monkeypatch):
    """Five rules' preconditions ask which disruptions the budgets allow (issue 42: counting the GONE
    brokers for each of them made kraft ci 1.34x slower); `successors` counts them once per state."""
    counted = []
    monkeypatch.setattr(logic, "gone", lambda s, count=logic.gone: counted.append(s) or count(s))
    m = model("ci")
    s = m.init_states()[0]
    fired = {m.rules[m.action_rule[i]].name for i, _ in m.successors(s)}
    assert {"fence", "clean_shutdown", "unclean_shutdown", "fail_permanently"} <= fired  # all budgets open
    assert counted == [s]


def test_fence_and_the_shutdowns_share_a_brokers_removal_in_a_state(monkeypatch):
    """fence, clean_shutdown, unclean_shutdown and fail_permanently take the same partition change for a
    (broker, leader pick) in a state: the controller computes it once."""
    from specs.kraft import controller
    asked = []
    monkeypatch.setattr(controller, "seed_remove_broker",
                        lambda p, broker, *rest, change=controller.seed_remove_broker: asked.append((broker, rest[2]))
                        or change(p, broker, *rest))
    m = model("ci")
    fired = [m.rules[m.action_rule[i]].name for i, _ in m.successors(m.init_states()[0])]
    assert {"fence", "clean_shutdown", "unclean_shutdown", "fail_permanently"} <= set(fired)
    assert sorted(asked) == [(b, pick) for b in (1, 2, 3) for pick in (0, 1, 2, 3)]


@pytest.mark.parametrize("preset, prop", [("unclean-election-loss", "NoAckedRecordLost"),
                                          ("last-replica-standing", "LeaderCandidateCompleteness"),
                                          ("kafka-cancel-without-elr", "LeaderCandidateCompleteness")])
def test_known_unsafe_configurations_lose_data(preset, prop):
    """The committed shortest trace of each known-unsafe configuration ends in a state violating `prop`."""
    [path] = (ROOT / "counterexamples").glob(f"kraft-{preset}-*.itf.json")
    trace = read_trace(path)
    assert trace.meta["preset"] == preset
    assert not trace.model.holds(prop, trace.states[-1])
    assert all(not trace.model.violated(s) for s in trace.states[:-1])


@pytest.mark.slow
def test_every_mutation_is_caught_with_the_committed_shortest_trace():
    corpus = ROOT / "counterexamples"
    from harness.corpus import Case, run_case

    for mutation in SPEC.mutations:
        m, r = run_case(Case("kraft", SPEC.preset_for(mutation), mutation, ""))  # BFS, or graph for liveness
        assert r.violations, f"mutation {mutation} survived"
        v = r.violations[0]
        committed = [read_trace(p) for p in corpus.glob(f"kraft-{SPEC.preset_for(mutation)}-{mutation}-*.itf.json")]
        assert len(committed) == 1, mutation
        assert committed[0].meta["outcome"]["property"] == v.outcome.property
        assert len(committed[0].states) == len(v.states), f"{mutation}: shortest length changed"


@pytest.mark.gate
@pytest.mark.parametrize("path", sorted((ROOT / "counterexamples").glob("*.itf.json")), ids=lambda p: p.name)
def test_committed_counterexamples_replay(cli, path):
    code, out, err = cli("replay", path)
    assert code == 0, out + err


ONLY_REMOVING = ["replicas=[1,2,3]", "isr=[1,2]", "targets=[[1,3]]", "max_records=0", "max_cancels=0"]


def test_a_completion_at_once_below_min_isr_is_flagged():
    """An only-removing reassignment completes in the AlterPartitionReassignments step itself; leaving
    ISR {1} < MinISR 2 there is the same violation as at the end of a reassignment in progress (before,
    only the latter was recorded and this run exhausted 114 states without a violation)."""
    m = model("tiny", ONLY_REMOVING, mutation="completion_ignores_min_isr")
    r = bfs.explore(m)
    v = r.violations[0]
    assert v.depth == 1 and not m.holds("CompletionRespectsMinIsr", v.states[-1])
    assert v.actions[1].rule == "alter_partition_reassignments"
    correct = bfs.explore(model("tiny", ONLY_REMOVING))
    assert correct.complete and not correct.violations


def test_a_removed_replica_that_returns_is_not_trusted_on_stale_fetch_state():
    """remove-readd: without the completion's leader-epoch bump, replica 3 keeps fetching after its removal
    in the same leader epoch, deletes its log when it learns of the removal, and is added back on the
    leader's stale fetch offset."""
    r = bfs.explore(model("remove-readd", mutation="completion_no_epoch_bump"))
    v = r.violations[0]
    assert (v.outcome.property, v.depth) == ("LeaderCandidateCompleteness", 12)
    rules = [a.rule for a in v.actions[1:]]
    assert rules.count("alter_partition_reassignments") == 2 and rules[-1] == "handle_alter_partition"


@pytest.mark.parametrize("unclean", [False, True])
def test_a_reassignment_never_elects_an_unclean_leader(unclean):
    """Kafka's changePartitionReassignment builds with the ONLINE election whatever the topic's unclean
    setting: a leaderless partition (ISR and ELR empty, replicas 1 and 2 live) moved to [2,3] stays
    leaderless; only the controller's unclean-election rule may then elect one."""
    rules = Rules(2, True, unclean)
    p = Partition((1, 2), 0, 0, 0, 0, 3, 5, 0, 0, False)
    q = logic.kafka_reassign(p, (2, 3), rules, mask((1, 2, 3)))
    assert q is not None and q.leader == 0 and q.isr == 0 and not q.recovering
    assert q.replicas == (2, 3, 1) and q.adding == mask((3,)) and q.removing == mask((1,))
    elected = logic.kafka_build(q, rules, mask((1, 2, 3)), target_isr=q.isr)  # what the unclean rule builds
    assert (elected is not None and elected.leader == 2 and elected.recovering) == unclean


def test_a_leader_proposes_an_isr_expansion_only_on_a_fetch_from_that_follower():
    """Kafka's leader considers an ISR expansion only when the follower fetches (`maybeExpandIsr`). Broker 3
    fetches, then fails for good; the controller refuses the leader's proposal (INELIGIBLE_REPLICA) and
    the leader rolls back. Before the fix it proposed again at once, for ever: a cycle of proposal,
    refusal and rollback (270 of them at `gone-target`) that no real leader produces."""
    m = model("gone-target")
    s = next(iter(m.init_states()))
    s = step(m, s, "alter_partition_reassignments", target=0, new_leader=0)
    s = step(m, s, "learn_metadata", broker=1)
    s = step(m, s, "learn_metadata", broker=3)
    s = step(m, s, "fetch", follower=3)
    s = step(m, s, "fail_permanently", broker=3, new_leader=0)
    s = step(m, s, "propose_isr_expansion", leader=1, follower=3)
    s = step(m, s, "handle_alter_partition", leader=1, new_leader=0)
    s = step(m, s, "handle_alter_partition_response", leader=1)
    assert s.brokers[0].maximal_isr == s.partition.isr  # rolled back
    assert m.apply(s, Action("propose_isr_expansion", (("leader", 1), ("follower", 3)))) is None
    g, _ = graph.build(m, check_safety=False)
    assert graph.summary(g)["nontrivial_sccs"] == 0


# The rules in the order the one-module spec registered them (before issue 38): BFS's successor order,
# first-found states and the committed traces follow it.
RULE_ORDER = ["alter_partition_reassignments", "cancel_reassignment", "handle_alter_partition", "fence", "unfence",
              "clean_shutdown", "unclean_shutdown", "fail_permanently", "restart", "restart_after_unclean_shutdown",
              "clean_election", "unclean_election", "learn_metadata", "produce", "fetch", "advance_hwm",
              "propose_isr_expansion", "propose_isr_shrink", "handle_alter_partition_response"]


def test_the_package_has_one_rule_module_per_actor_and_keeps_the_rule_order():
    """Issue 38's layout: the rules live in controller.py, brokers.py and faults.py by who acts, each
    docstring's summary naming who acts; the rule order is today's (tests/test_spec_api.py checks what
    every package shares)."""
    assert [r.name for r in SPEC.rules] == RULE_ORDER
    by_module = {}
    for r in SPEC.rules:
        by_module.setdefault(r.fn.__module__, []).append(r.name)
    assert by_module == {
        "specs.kraft.controller": ["alter_partition_reassignments", "cancel_reassignment", "handle_alter_partition",
                                   "fence", "unfence", "clean_election", "unclean_election"],
        "specs.kraft.faults": ["clean_shutdown", "unclean_shutdown", "fail_permanently"],
        "specs.kraft.brokers": ["restart", "restart_after_unclean_shutdown", "learn_metadata", "produce", "fetch",
                                "advance_hwm", "propose_isr_expansion", "propose_isr_shrink",
                                "handle_alter_partition_response"]}
    for r in SPEC.rules:
        summary = inspect.cleandoc(r.doc).partition("\n\n")[0]
        assert summary.split(":")[0].split(" (")[0] in ("Controller", "Broker", "Broker and controller", "Leader",
                                                       "Follower"), r.name
