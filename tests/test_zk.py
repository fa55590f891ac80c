"""The `zk` model: the seed's transition table and Kafka 3.9's leader-epoch accounting driven through the
rules, controller fail-over after every phase step, cancellation, replacement, an offline target,
the mutations, and every engine on the model."""

import pytest

from harness.bitset import mask, members
from harness.engines import bfs
from harness.model import Action
from harness.registry import load_spec
from specs.zk.logic import origin_of
from specs.zk.state import CANCELLED, DONE, IDLE, IN_PROGRESS, NONE, STEP

SPEC = load_spec("zk")

# Rules that run by themselves (fair) and change nothing the user asked for: what `settle` fires.
PROGRESS = {"deliver", "fetch", "advance_hwm", "handle_reassign_znode_creation", "handle_isr_change_notification",
            "handle_alter_partition", "handle_broker_change", "controller_failover", "resume_reassignments",
            "u1_write_assignment", "u3_stop_unneeded_replicas", "u3_delete_unneeded_replicas", "a0_expand_replicas",
            "a1_bump_leader_epoch", "a2_start_new_replicas", "b1_online_new_replicas", "b2_set_replicas_in_memory",
            "b3_move_leader", "b4_offline_removed_replicas", "b5_delete_removed_replicas", "b6_write_target_replicas",
            "b7_clear_admin_znode", "b8_send_update_metadata", "broker_start", "zombie_step"}


def model(preset="tiny", mutation=None, **settings):
    values = {**SPEC.presets[preset], **settings, **({"mutation": mutation} if mutation else {})}
    return SPEC.bind(SPEC.config_from_dict(values, preset=preset))


def step(m, s, rule, check=True, **params):
    nxt = m.apply(s, Action(rule, tuple(params.items())))
    assert nxt is not None, f"{rule}{params} is not enabled"
    if check:
        assert not m.violated(nxt), m.violated(nxt)
    return nxt


def settle(m, s, stop=None, allowed=PROGRESS, limit=2000, check=True):
    """Fire enabled progress rules (first enabled in the model's order) until none is enabled or `stop(s)`."""
    for _ in range(limit):
        if stop is not None and stop(s):
            return s
        for index, nxt in m.successors(s):
            if m.describe_action(index).rule in allowed:
                if check:
                    assert not m.violated(nxt), (m.describe_action(index), m.violated(nxt))
                s = nxt
                break
        else:
            return s
    raise AssertionError("no quiescence")


def at_step(name):
    return lambda s: s.controller.step == STEP.codes[name]


def row(s, admin_target=None):
    """(RS, AR, RR, leader, ISR) as the seed's table lists them; AR/RR from the topic znode (kafka) or, for
    the seed reading (pre-KIP-455 topic znode), from RS and the target named in /admin/reassign_partitions."""
    zk = s.zk
    adding, removing = zk.adding, zk.removing
    if not (adding | removing) and admin_target and zk.admin:
        target = mask(zk.admin)
        adding, removing = target & ~s.ors, mask(zk.rs) & ~target
    return list(zk.rs), members(adding), members(removing), zk.leader, members(zk.isr)


# ------------------------------------------------------------ the seed's table, {1,2,3} -> {4,5,6}

EXAMPLE = dict(brokers=6, replicas=[1, 2, 3], targets=[[4, 5, 6]], max_records=0, max_failovers=0,
               max_broker_crashes=0)


@pytest.mark.parametrize("controller", ["seed", "kafka"])
def test_seed_transition_table_123_to_456(controller):
    m = model("tiny", controller=controller, **EXAMPLE)
    s = m.init_states()[0]
    assert row(s) == ([1, 2, 3], [], [], 1, [1, 2, 3])  # (initial state)
    e = s.zk.leader_epoch
    s = step(m, s, "create_reassign_znode", target=0)
    s = settle(m, s, stop=lambda s: s.controller.step == IDLE and s.zk.leader_epoch > e)  # through A2
    assert row(s, True) == ([4, 5, 6, 1, 2, 3], [4, 5, 6], [1, 2, 3], 1, [1, 2, 3])  # (step A2)
    assert s.zk.leader_epoch == e + 1  # A1's bump
    s = settle(m, s, stop=at_step("B1"))
    assert row(s, True) == ([4, 5, 6, 1, 2, 3], [4, 5, 6], [1, 2, 3], 1, [1, 2, 3, 4, 5, 6])  # (phase B)
    assert s.zk.leader_epoch == e + 1  # ISR expansions keep it (only the zkVersion moves)
    for rule in ("b1_online_new_replicas", "b2_set_replicas_in_memory", "b3_move_leader"):
        s = step(m, s, rule)
    assert row(s, True) == ([4, 5, 6, 1, 2, 3], [4, 5, 6], [1, 2, 3], 4, [1, 2, 3, 4, 5, 6])  # (step B3)
    assert s.zk.leader_epoch == e + 2
    s = step(m, s, "b4_offline_removed_replicas")
    assert row(s, True) == ([4, 5, 6, 1, 2, 3], [4, 5, 6], [1, 2, 3], 4, [4, 5, 6])  # (step B4)
    # Kafka: one write and one bump per removed in-sync replica (the table's one row is three); seed: one
    assert s.zk.leader_epoch == e + (5 if controller == "kafka" else 3)
    s = step(m, s, "b5_delete_removed_replicas")
    s = step(m, s, "b6_write_target_replicas")
    assert row(s) == ([4, 5, 6], [], [], 4, [4, 5, 6])  # (step B6)
    s = settle(m, s)
    assert s.status == DONE and not s.zk.admin
    for b in (1, 2, 3):
        assert s.brokers[b - 1].role == NONE and not s.brokers[b - 1].log  # deleted (B5)


# ---------------------------------------------- Kafka 3.9's leader-epoch accounting (reference §6)


def kafka_model(preset="tiny", **settings):
    return model(preset, controller="kafka", **{"max_failovers": 0, "max_broker_crashes": 0, "max_records": 0,
                                                **settings})


def test_kafka_move_c_to_o_adds_three_epochs():
    """[C] -> [O] through the znode: A1 +1, B3 +1 (election), B4 +1 (C left the ISR) (testPartitionReassignment)."""
    m = kafka_model()
    s = m.init_states()[0]
    s = settle(m, step(m, s, "create_reassign_znode", target=0))
    assert s.status == DONE and s.zk.leader == 2 and s.zk.leader_epoch == 3 and list(s.zk.rs) == [2]


def test_kafka_offline_target_waits_then_resumes_on_start_adding_four_epochs():
    """The target broker is down: the znode submission is accepted, A1 +1, and the reassignment waits
    (...HaltingProgress: +1); when it starts, A1 again, then B3 and B4: +4 in all (...ResumesAfterReplicaComesOnline)."""
    m = kafka_model(max_broker_crashes=1)
    s = m.init_states()[0]
    s = step(m, s, "broker_crash", broker=2)
    s = step(m, s, "handle_broker_change")
    s = step(m, s, "create_reassign_znode", target=0)
    s = settle(m, s, allowed=PROGRESS - {"broker_start"})
    assert s.status == IN_PROGRESS and s.zk.leader == 1 and s.zk.leader_epoch == 1 and s.zk.admin == (2,)
    s = settle(m, s)  # broker 2 starts: onBrokerStartup resumes the reassignment
    assert s.status == DONE and s.zk.leader == 2 and s.zk.leader_epoch == 4


def test_kafka_api_refuses_an_offline_target_that_the_znode_accepts():
    m = kafka_model(max_broker_crashes=1)
    s = step(m, step(m, m.init_states()[0], "broker_crash", broker=2), "handle_broker_change")
    assert m.apply(s, Action("alter_partition_reassignments", (("target", 0),))) is None  # INVALID_REPLICA_ASSIGNMENT
    assert m.apply(s, Action("create_reassign_znode", (("target", 0),))) is not None


def test_seed_variant_stays_stuck_when_the_target_was_down_at_a2():
    """The seed reading has no resumption on a target broker's start (only Kafka 3.9's onBrokerStartup re-runs
    A1): the A2 LeaderAndIsr was dropped, and NewReplica -> OnlineReplica sends nothing, so the started
    broker never hosts the replica."""
    m = model("tiny", max_failovers=0, max_broker_crashes=1, max_records=0)  # [1] -> [2]
    s = step(m, step(m, m.init_states()[0], "broker_crash", broker=2), "handle_broker_change")
    s = settle(m, step(m, s, "create_reassign_znode", target=0))
    assert s.status == IN_PROGRESS and s.brokers[1].alive and s.brokers[1].role == NONE and s.zk.leader_epoch == 1


def state_znode(s):
    """(writer's controller epoch, leader, leader epoch) of the state znode, as Kafka's tests read it."""
    return s.zk.state_ctrl_epoch, s.zk.leader, s.zk.leader_epoch


def test_kafka_api_noop_is_a_submission_that_bumps_the_epoch_once():
    """testTopicIdUpgradeAfterReassigningPartitions: [1] -> [1] through the API after two controller restarts
    (which leave the state znode alone): phase U skipped, complete at once, B3 +1; the state znode then reads
    (controller epoch 3, leader 1, leader epoch 1)."""
    m = kafka_model(brokers=1, replicas=[1], targets=[[1]], max_failovers=2)
    s = m.init_states()[0]
    for _ in range(2):
        s = settle(m, step(m, step(m, s, "controller_crash", zombie=0), "controller_failover"))
    assert s.zk.controller_epoch == 3 and state_znode(s) == (1, 1, 0)
    s = step(m, s, "alter_partition_reassignments", target=0)
    assert s.controller.step == STEP.codes["B1"] and s.budget.reassignments == 0  # no U1: RS is unchanged
    s = settle(m, s)
    assert s.status == DONE and list(s.zk.rs) == [1] and s.controller.step == IDLE
    assert s.zk.controller_epoch == 3 and state_znode(s) == (3, 1, 1)


@pytest.mark.parametrize("crash_after_b3", [False, True])
def test_kafka_znode_noop_is_a_submission_and_its_entry_is_removed(crash_after_b3):
    """[1,2] -> [1,2] through /admin/reassign_partitions: phase B at once (B3 +1), and B7 removes the entry (its
    target is TRS exactly). A controller crash after B3 leaves the entry: the next controller (epoch 2)
    re-applies it as a no-op, B3 +1 again (reference §9, "After B6 but before B7")."""
    m = kafka_model(brokers=2, replicas=[1, 2], targets=[[1, 2]], max_failovers=int(crash_after_b3))
    s = step(m, m.init_states()[0], "create_reassign_znode", target=0)
    s = step(m, s, "handle_reassign_znode_creation")
    assert s.controller.step == STEP.codes["B1"]
    if crash_after_b3:
        s = settle(m, s, stop=at_step("B4"))
        assert state_znode(s) == (1, 1, 1)
        s = step(m, step(m, s, "controller_crash", zombie=0), "controller_failover")
    s = settle(m, s)
    assert s.status == DONE and not s.zk.admin and list(s.zk.rs) == [1, 2] and s.zk.isr == mask([1, 2])
    epochs = 2 if crash_after_b3 else 1
    assert s.zk.controller_epoch == epochs and state_znode(s) == (epochs, 1, epochs)


def test_kafka_api_resubmission_of_the_running_target_runs_a1_again():
    """[1] -> [2], then [2] again while 2 is not yet in the ISR: the same assignment (no U1, the topic znode is
    not written), incomplete, so A1 bumps again (D4) and A2 sends nothing (2 is already a NewReplica). In all
    A1, A1, B3 (2 elected), B4 (1 leaves the ISR): +4, all by controller epoch 1."""
    m = kafka_model(max_reassignments=2)
    s = step(m, m.init_states()[0], "alter_partition_reassignments", target=0)
    s = settle(m, s, stop=lambda s: s.controller.step == IDLE)
    assert state_znode(s) == (1, 1, 1) and s.zk.isr == mask([1]) and s.zk.adding == mask([2])
    topic = (s.zk.rs, s.zk.adding, s.zk.removing)
    s = step(m, s, "alter_partition_reassignments", target=0)
    assert s.controller.step == STEP.codes["A1"] and (s.zk.rs, s.zk.adding, s.zk.removing) == topic
    s = step(m, s, "a1_bump_leader_epoch")
    assert state_znode(s) == (1, 1, 2)
    inboxes = [b.inbox for b in s.brokers]
    s = step(m, s, "a2_start_new_replicas")
    assert [b.inbox for b in s.brokers] == inboxes
    s = settle(m, s)
    assert s.status == DONE and list(s.zk.rs) == [2] and s.zk.controller_epoch == 1 and state_znode(s) == (1, 2, 4)


@pytest.mark.parametrize("crash_after_a1", [False, True])
def test_kafka_znode_resubmission_of_the_running_target_runs_a1_again(crash_after_a1):
    """[1] -> [1,2] through the API (RS [1,2] = the target), then the same target through a new
    /admin/reassign_partitions: A1 again (+1), and B7 removes the entry. In all A1, A1, B3 (1 stays): +3.
    A controller crash after the second A1: the next controller (epoch 2) re-applies the entry, A1 once more:
    +4, the state znode last written by controller epoch 2."""
    m = kafka_model(targets=[[1, 2]], max_reassignments=2, max_failovers=int(crash_after_a1))
    s = step(m, m.init_states()[0], "alter_partition_reassignments", target=0)
    s = settle(m, s, stop=lambda s: s.controller.step == IDLE)
    assert list(s.zk.rs) == [1, 2] and s.zk.adding == mask([2]) and state_znode(s) == (1, 1, 1)
    s = step(m, s, "create_reassign_znode", target=0)
    s = step(m, s, "handle_reassign_znode_creation")
    assert s.controller.step == STEP.codes["A1"]
    s = step(m, s, "a1_bump_leader_epoch")
    assert state_znode(s) == (1, 1, 2) and s.zk.isr == mask([1])
    if crash_after_a1:
        s = step(m, step(m, s, "controller_crash", zombie=0), "controller_failover")
    s = settle(m, s)
    assert s.status == DONE and not s.zk.admin and list(s.zk.rs) == [1, 2] and not s.zk.adding
    assert s.zk.controller_epoch == (2 if crash_after_a1 else 1)
    assert state_znode(s) == ((2, 1, 4) if crash_after_a1 else (1, 1, 3))


def test_kafka_api_resubmission_is_refused_once_its_adding_replica_died():
    """`validateReplicas` checks the adding replicas of `reassignTo(target)`, which for a re-submission are those
    of the running reassignment: dead since, they make it INVALID_REPLICA_ASSIGNMENT; the znode accepts it."""
    m = kafka_model(max_reassignments=2, max_broker_crashes=1)
    s = step(m, m.init_states()[0], "alter_partition_reassignments", target=0)
    s = settle(m, s, stop=lambda s: s.controller.step == IDLE)
    s = step(m, step(m, s, "broker_crash", broker=2), "handle_broker_change")
    assert s.zk.adding == mask([2])
    assert m.apply(s, Action("alter_partition_reassignments", (("target", 0),))) is None
    assert m.apply(s, Action("create_reassign_znode", (("target", 0),))) is not None


def test_kafka_noops_and_resubmissions_complete_under_a_controller_crash():
    """[1] -> [1,2], submitted twice in any order through the API and the znode (a re-submission while it runs,
    a no-op once it is done), a controller crash anywhere: safe, and every submission completes. Two
    submissions are no more in progress than their ZooKeeper state says: an API no-op is done at once (a
    crash before its B6 leaves nothing to resume), and a znode no-op created between B6 and B7 of the
    reassignment it repeats is removed, and done, by that B7."""
    from harness.engines import graph

    result, _ = graph.explore(kafka_model(targets=[[1, 2]], max_reassignments=2, max_failovers=1))
    assert result.stats["distinct"] > 10_000 and not result.violations


def test_seed_still_refuses_a_znode_target_equal_to_rs():
    """The seed reading has no such submission: [seed] describes a move from ORS to a different TRS."""
    m = model("tiny", targets=[[1]], max_failovers=0, max_broker_crashes=0)
    assert m.apply(m.init_states()[0], Action("create_reassign_znode", (("target", 0),))) is None


def test_kafka_reorder_is_complete_within_its_event():
    """A reorder completes in the submitting event: B3 +1 only (D3)."""
    m = kafka_model(brokers=2, replicas=[1, 2], targets=[[2, 1]])
    s = step(m, m.init_states()[0], "alter_partition_reassignments", target=0)
    assert s.controller.step == STEP.codes["B1"]  # phase A skipped
    s = settle(m, s)
    assert list(s.zk.rs) == [2, 1] and s.zk.leader_epoch == 1 and s.zk.leader == 1


def test_kafka_b3_bumps_the_epoch_when_the_leader_stays():
    """[1,2] -> [1,3]: the leader is in TRS and live, and B3 still bumps (+1, no leader change); B4 +1 for 2."""
    m = kafka_model("small", targets=[[1, 3]])
    s = step(m, m.init_states()[0], "alter_partition_reassignments", target=0)
    s = settle(m, s, stop=at_step("B3"))
    epoch = s.zk.leader_epoch
    s = step(m, s, "b3_move_leader")
    assert s.zk.leader == 1 and s.zk.leader_epoch == epoch + 1
    s = step(m, s, "b4_offline_removed_replicas")
    assert s.zk.leader_epoch == epoch + 2 and s.zk.isr == mask([1, 3])


def test_kafka_preferred_election_can_elect_an_adding_replica_before_completion():
    """KAFKA-10149: during a reassignment the preferred replica is TRS's first; once it is in the ISR an
    auto-rebalance (or a manual election) makes it leader although the reassignment is incomplete."""
    m = kafka_model("small", brokers=4, targets=[[3, 4]], max_preferred=1, max_broker_crashes=1)
    s = step(m, step(m, m.init_states()[0], "broker_crash", broker=4), "handle_broker_change")
    s = settle(m, step(m, s, "create_reassign_znode", target=0), allowed=PROGRESS - {"broker_start"})
    assert list(s.zk.rs) == [3, 4, 1, 2] and s.zk.isr == mask([1, 2, 3]) and s.status == IN_PROGRESS
    s = step(m, s, "preferred_leader_election")
    assert s.zk.leader == 3 and s.status == IN_PROGRESS
    s = settle(m, s)
    assert s.status == DONE and list(s.zk.rs) == [3, 4] and s.zk.leader == 3


# ------------------------------------------------------------------- cancellation and replacement


CANCEL = dict(targets=[[2, 3]], max_cancels=1)


def test_kafka_cancel_before_the_adding_replica_joined_the_isr():
    m = kafka_model("small", **CANCEL)
    s = m.init_states()[0]
    s = step(m, s, "alter_partition_reassignments", target=0)
    s = settle(m, s, stop=lambda s: s.controller.step == IDLE)
    assert s.zk.isr == mask([1, 2]) and s.zk.adding == mask([3])
    s = settle(m, step(m, s, "cancel_reassignment"), allowed=PROGRESS - {"fetch"})
    assert s.status == CANCELLED and set(s.zk.rs) == {1, 2} and not s.zk.adding | s.zk.removing
    assert s.zk.leader == 1 and s.zk.leader_epoch == 2  # A1 +1, then B3 +1 (3 was not in the ISR: no U3 bump)
    assert s.brokers[2].role == NONE and not s.brokers[2].log  # the adding replica is stopped and deleted


def test_kafka_cancel_after_the_adding_replica_joined_the_isr():
    """TRS [3,1] with 1 down stays incomplete after 3 joins the ISR; the cancel takes 3 out of the ISR (+1 at U3)."""
    m = kafka_model("small", max_cancels=1, targets=[[3, 1]], max_broker_crashes=1)
    s = m.init_states()[0]
    s = step(m, step(m, s, "broker_crash", broker=1), "handle_broker_change")
    s = step(m, s, "alter_partition_reassignments", target=0)
    s = settle(m, s, allowed=PROGRESS - {"broker_start"})
    assert s.zk.isr == mask([2, 3]) and s.status == IN_PROGRESS
    epoch = s.zk.leader_epoch
    s = settle(m, step(m, s, "cancel_reassignment"), allowed=PROGRESS - {"broker_start"})
    assert s.status == CANCELLED and set(s.zk.rs) == {1, 2} and s.zk.isr == mask([2])
    assert s.zk.leader_epoch == epoch + 2  # U3 +1 (3 left the ISR), B3 +1
    assert s.brokers[2].role == NONE and not s.brokers[2].log


def test_kafka_replace_is_computed_against_the_original_replicas():
    """([1,2] -> [2,3]) replaced by [3,1]: RS = [3,1,2] (reassignTo against ORS), and 3 ... stays adding."""
    m = kafka_model("small", targets=[[2, 3], [1, 3]], max_reassignments=2)
    s = step(m, m.init_states()[0], "alter_partition_reassignments", target=0)
    s = settle(m, s, stop=lambda s: s.controller.step == IDLE)
    s = step(m, s, "alter_partition_reassignments", target=1)
    assert list(s.zk.rs) == [1, 3, 2] and s.zk.adding == mask([3]) and s.zk.removing == mask([2])
    s = settle(m, s)
    assert s.status == DONE and list(s.zk.rs) == [1, 3]
    assert s.brokers[1].role == NONE and not s.brokers[1].log  # 2, removed by the replacement


def test_kafka_replace_by_the_origin_drops_the_adding_replica_at_once():
    """A new target equal to ORS is `reassignTo(ORS)`: a plain assignment, so it acts as a cancellation."""
    m = kafka_model("small", targets=[[2, 3], [1, 2]], max_reassignments=2)
    s = step(m, m.init_states()[0], "alter_partition_reassignments", target=0)
    s = settle(m, s, stop=lambda s: s.controller.step == IDLE)
    s = step(m, s, "alter_partition_reassignments", target=1)
    assert list(s.zk.rs) == [1, 2] and not s.zk.adding | s.zk.removing
    assert s.controller.step == STEP.codes["U3_OFFLINE"] and s.controller.stopping == mask([3])
    s = settle(m, s)
    assert s.status == DONE and s.brokers[2].role == NONE and not s.brokers[2].log


# --------------------------------------------------------- controller fail-over after each step

SEED_STEPS = ["handle_reassign_znode_creation", "a0_expand_replicas", "a1_bump_leader_epoch",
              "a2_start_new_replicas", "b1_online_new_replicas", "b2_set_replicas_in_memory", "b3_move_leader",
              "b4_offline_removed_replicas", "b5_delete_removed_replicas", "b6_write_target_replicas",
              "b7_clear_admin_znode", "b8_send_update_metadata"]


def run_with_crash_after(m, crash_after: str, mutation_checks=True):
    """Submit, run the controller's steps (brokers working between them) and crash it right after
    `crash_after`; the next controller must finish from ZooKeeper alone."""
    s = step(m, m.init_states()[0], "create_reassign_znode", target=0)
    fired = False
    for _ in range(500):
        for index, nxt in m.successors(s):
            rule = m.describe_action(index).rule
            if rule in PROGRESS and rule != "controller_failover":
                s = nxt
                fired = fired or rule == crash_after
                break
        if fired:
            break
    assert fired, crash_after
    s = step(m, s, "controller_crash", check=mutation_checks, zombie=0)
    return s


@pytest.mark.parametrize("crash_after", SEED_STEPS)
@pytest.mark.parametrize("controller", ["seed", "kafka"])
def test_a_controller_crash_after_each_step_is_finished_by_the_next_controller(controller, crash_after):
    if controller == "kafka" and crash_after == "a0_expand_replicas":
        crash_after = "u1_write_assignment"
    m = model("tiny", controller=controller, brokers=3, replicas=[1, 2], targets=[[2, 3]], max_records=1,
              max_broker_crashes=0)
    s = run_with_crash_after(m, crash_after)
    assert not s.controller.epoch
    s = settle(m, s)
    assert s.status == DONE, crash_after
    assert list(s.zk.rs) == [2, 3] and s.zk.leader in (2, 3) and s.zk.isr == mask([2, 3]) and not s.zk.admin
    assert s.zk.controller_epoch == 2
    assert s.brokers[0].role == NONE and not s.brokers[0].log  # the removed replica is stopped and deleted


def test_with_rs_written_first_a_crash_after_b1_loses_the_original_replicas():
    m = model("tiny", mutation="rs_updated_first", brokers=3, replicas=[1, 2], targets=[[2, 3]], max_records=0,
              max_broker_crashes=0)
    s = run_with_crash_after(m, "b1_online_new_replicas", mutation_checks=False)
    assert "AssignmentRecoverable" in m.violated(s)
    assert list(s.zk.rs) == [2, 3]  # ORS {1,2}: 1 is in ZooKeeper nowhere
    s = settle(m, s, check=False)
    # the new controller finds a plain assignment and nothing to do: replica 1 is never deleted
    assert s.brokers[0].role != NONE


# ------------------------------------------------------------------------- checks and mutations


def test_tiny_exhausts_without_violation_in_both_controller_variants():
    for controller in ("seed", "kafka"):
        r = bfs.explore(model("tiny", controller=controller))
        assert r.complete and not r.violations and r.stats["distinct"] > 10_000


@pytest.mark.parametrize("name", [n for n, mu in SPEC.mutations.items() if mu.caught_by == "bfs"])
def test_each_safety_mutation_is_caught_at_its_config(name):
    m = SPEC.bind(SPEC.config(SPEC.preset_for(name), mutation=name))
    r = bfs.explore(m, max_states=3_000_000)
    assert r.violations, name


def test_a1_without_the_epoch_bump_never_completes():
    from harness.engines import graph

    small = dict(max_failovers=0, max_records=0)
    result, _ = graph.explore(model("tiny", mutation="a1_no_epoch_bump", **small))
    assert [v.outcome.property for v in result.violations] == ["ReassignmentCompletes"]
    result, _ = graph.explore(model("tiny", **small))
    assert not result.violations


def test_literal_phase_b_leaves_the_reassignment_stuck():
    """phase_b=literal: B4 (the only step that takes RR out of the ISR) runs only in phase B, which
    needs ISR = TRS: with RR in sync, it never starts (a liveness failure, not a safety one)."""
    from harness.engines import graph

    m = model("tiny", phase_b="literal", max_failovers=0, max_records=0)
    result, _ = graph.explore(m)
    assert [v.outcome.property for v in result.violations] == ["ReassignmentCompletes"]


def test_origin_of_assignment():
    class A:
        rs, adding = (4, 5, 6, 1, 2, 3), mask([4, 5, 6])
    assert origin_of(A) == (1, 2, 3)


def test_a_replacement_by_the_original_replicas_completes_despite_a_crash_between_u1_and_u3():
    """[1] -> [1,2] through the API, replaced by [1] (its original replicas), the controller crashing between U1
    and U3: ZooKeeper holds [1] alone and nothing is left to resume, so the reassignment is over (the status
    ghost, set at B6, is not). ReassignmentCompletes reads ZooKeeper; the dropped replica that keeps
    following is Kafka's (NoStrayReplicas, the expected failure at `kafka-replace-failover`)."""
    from harness.engines import graph

    spec = load_spec("zk")
    result, _ = graph.explore(spec.bind(spec.config("kafka-replace-failover")), check_safety=False)
    assert {p: r["holds"] for p, r in result.stats["liveness"].items()} == \
        {"ReassignmentCompletes": True, "PartitionLed": True}
    assert result.stats["states"] > 10_000


@pytest.mark.nightly  # 10-20 s; the gate's step 8 checks the same verdicts at this preset
def test_at_the_liveness_preset_every_rule_but_produce_fires_and_the_verdicts_are_the_declared_ones():
    """The preset the gate and the nightly job check liveness at (Kafka's controller: replacement,
    cancellation, preferred election, fail-over, broker crash, ISR shrink): BFS makes every rule of the
    config fire but the two that need a record; the graph engine's verdicts are those declared (none is
    declared: both properties hold), and the only safety failure there is one of Kafka's, declared at
    `kafka-replace-failover`."""
    from harness.corpus import liveness_verdicts
    from harness.engines import graph

    spec = load_spec("zk")
    model = spec.bind(spec.config("liveness"))
    assert set(bfs.explore(model, keep_going=True).never_fired()) == {"produce", "advance_hwm"}
    result, _ = graph.explore(model)
    verdicts = liveness_verdicts(spec, "liveness", result.stats["liveness"])
    assert verdicts == {"ReassignmentCompletes": "holds", "PartitionLed": "holds"}
    assert {v.outcome.property for v in result.violations if v.outcome.kind != "liveness"} <= {"NoStrayReplicas"}
    assert "KAFKA-13972" in spec.expected["kafka-replace-failover"]
