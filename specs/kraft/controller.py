"""The kraft model's controller rules: reassignment and its cancellation, AlterPartition handling,
fencing and unfencing, elections (Kafka's `ReplicationControlManager`). The partition changes
themselves are the pure functions of `specs.kraft.logic`, called in their memoized form.

Citations as in `specs.kraft`: [kafka-tlaplus kip-966 §4.x] and [kafka-tlaplus v3.5 §2.x].
"""

from __future__ import annotations

from harness.bitset import bit
from specs.kraft import spec
from specs.kraft.logic import alter_partition_verdict, commit_partition, in_progress, seed_cancel_refused, with_broker
from specs.kraft.speed import (acceptable, broker_facts, disruption_room, kafka_build, kafka_cancel, kafka_reassign,
                               removals, rules_of, seed_alter_isr, seed_cancel, seed_clean_election, seed_reassign,
                               seed_remove_broker, seed_unclean_election, some_broker_is, update_broker)
from specs.kraft.state import (ACCEPTED, FENCED, NO_RESPONSE_YET, PICK, UNFENCED, Partition, Response, State, brokers,
                               follows_kafka, leader_choices, target_text, targets)


@spec.rule(target=targets, new_leader=leader_choices, format={"target": target_text, **PICK},
           precondition=lambda cfg, s: s.budget.reassignments > 0, applies=lambda cfg: cfg.max_reassignments > 0)
def alter_partition_reassignments(cfg, s, target, new_leader):
    """Controller: an AlterPartitionReassignments request moves the partition to `target`
    [kafka-tlaplus kip-966 §4.1, §4.2] (Kafka: `ReplicationControlManager.changePartitionReassignment`).
    TLA+: PerformPartitionReassignment.

    Who acts: the controller, on an admin client's AlterPartitionReassignments request.
    Enabled when: the budget allows a reassignment and the change is not a no-op; the seed variant
    starts only from a settled assignment.
    Next: growth (replicas = current ++ added, `adding`/`removing` set, partition epoch + 1); with
    nothing to add, the completion change at once if the completion rules hold.
    """
    p, rules = s.partition, rules_of(cfg)
    if follows_kafka(cfg):
        new = kafka_reassign(p, cfg.targets[target], rules, acceptable(s)) if not new_leader else None
    else:
        new = seed_reassign(p, cfg.targets[target], rules, acceptable(s), new_leader)
    if new is None:
        return None
    return commit_partition(cfg, s, p, new, budget=s.budget._replace(reassignments=s.budget.reassignments - 1))


def cancellable(cfg, s: State) -> bool:
    """A cancellation is left in the budget and a reassignment is in progress; in the seed variant,
    also one the controller would not refuse as unsafe (so the refused ones cost one test, not one
    per leader choice)."""
    p = s.partition
    return (s.budget.cancels > 0 and in_progress(p)
            and (follows_kafka(cfg) or not seed_cancel_refused(p, rules_of(cfg))))


@spec.rule(new_leader=leader_choices, format=PICK, precondition=cancellable, applies=lambda cfg: cfg.max_cancels > 0)
def cancel_reassignment(cfg, s, new_leader):
    """Controller: a cancellation reverts the ongoing reassignment [kafka-tlaplus kip-966 §4.5] (Kafka:
    `ReplicationControlManager.cancelPartitionReassignment`, `PartitionReassignmentRevert`).

    Who acts: the controller, on an admin client's cancellation (an AlterPartitionReassignments
    request with no target).
    Enabled when: a reassignment is in progress and the budget allows a cancellation; refused when
    the reverted ISR would be below MinISR (Kafka: when it would be empty), unless unclean leader
    election is enabled.
    Next: the original replicas, the ISR without the `adding` replicas, a leader among them.
    """
    p, rules = s.partition, rules_of(cfg)
    if follows_kafka(cfg):
        new = kafka_cancel(p, rules, acceptable(s)) if not new_leader else None
    else:
        new = seed_cancel(p, rules, acceptable(s), new_leader)
    if new is None:
        return None
    return s._replace(partition=new, budget=s.budget._replace(cancels=s.budget.cancels - 1))


def unanswered(cfg, s: State) -> bool:
    """Some broker has an AlterPartition request the controller has not answered."""
    return broker_facts(s.brokers).unanswered


@spec.rule(leader=brokers, new_leader=leader_choices, format=PICK, fair=True, precondition=unanswered)
def handle_alter_partition(cfg, s, leader, new_leader):
    """Controller: handles the AlterPartition request `leader` sent [kafka-tlaplus v3.5 §2.9.2] (Kafka:
    `ReplicationControlManager.alterPartition`). TLA+: ReceiveAlterPartitionRequest.

    Who acts: the controller, on a leader's request.
    Enabled when: `leader`'s request is unanswered.
    Next: accepted only if the sender leads in the current leader epoch, the partition epoch
    matches, the new ISR is made of replicas and contains the leader, and every member is eligible
    (unfenced; an added replica with the broker epoch the leader saw: `alter_partition_verdict`).
    Then catch-up and completion are one atomic partition change [kafka-tlaplus kip-966 §4.2], with
    `new_leader` the controller's pick if completion removes the leader, and the response carries
    the new ISR and epochs. Otherwise the response carries the error and nothing else changes.
    """
    b = s.brokers[leader - 1]
    req = b.pending
    if not req.isr or b.response.status != NO_RESPONSE_YET:
        return None
    p, rules = s.partition, rules_of(cfg)
    live = acceptable(s)
    verdict = alter_partition_verdict(cfg, s, leader, req, live)
    if verdict != ACCEPTED:
        if new_leader:
            return None  # no partition change, so no leader pick
        return update_broker(s, leader, b._replace(response=Response(verdict, 0, 0, 0)))
    if follows_kafka(cfg):
        if new_leader:
            return None
        new = kafka_build(p, rules, live, target_isr=req.isr, recovered=True)
    else:
        new = seed_alter_isr(p, req.isr, rules, live, new_leader)
        if new is None and (new_leader or req.isr != p.isr or p.recovering):
            return None  # not a legal leader pick
    after = new or p  # None: accepted, and the partition already is what the leader asks for
    s = update_broker(s, leader, b._replace(response=Response(ACCEPTED, after.isr, after.leader_epoch,
                                                               after.partition_epoch)))
    return commit_partition(cfg, s, p, new) if new is not None else s


def remove_broker(cfg, s: State, broker: int, new_leader: int, unclean_shutdown: int = 0) -> Partition | None:
    """The controller takes `broker` out of the ISR (fencing, shutdown: `fence` and the faults) and
    re-elects if it led [kafka-tlaplus v3.5 §2.8, §2.9.1] (Kafka:
    `ReplicationControlManager.generateLeaderAndIsrUpdates`).
    Returns the partition unchanged if the broker had no part in it, None if `new_leader` is not a legal pick."""
    known = removals(cfg, s)
    key = (broker, new_leader, unclean_shutdown)
    if key not in known:
        known[key] = removed(cfg, s, broker, new_leader, unclean_shutdown)
    return known[key]


def removed(cfg, s: State, broker: int, new_leader: int, unclean_shutdown: int) -> Partition | None:
    """What `remove_broker` says, computed."""
    p, rules = s.partition, rules_of(cfg)
    live = acceptable(s) & ~bit(broker)
    if follows_kafka(cfg):
        if new_leader:
            return None
        return kafka_build(p, rules, live, target_isr=p.isr & ~bit(broker), unclean_shutdown=unclean_shutdown) or p
    new = seed_remove_broker(p, broker, rules, live, new_leader, unclean_shutdown)
    if new is None:
        unaffected = not (p.isr | p.elr) & bit(broker) and p.leader != broker
        return p if unaffected and not new_leader else None
    return new


@spec.rule(broker=brokers, new_leader=leader_choices, format=PICK,
           precondition=lambda cfg, s: disruption_room(cfg, s).faults, applies=lambda cfg: cfg.max_faults > 0)
def fence(cfg, s, broker, new_leader):
    """Controller: fences `broker`, which missed its heartbeats [kafka-tlaplus v3.5 §1.2.2, §2.8]. TLA+: FenceBroker.

    Who acts: the controller, when a broker's heartbeats stop reaching it (the broker keeps running).
    Enabled when: the broker is unfenced and the fault budget allows.
    Next: the broker leaves the ISR and loses leadership; it keeps running, possibly still
    believing it leads.
    """
    b = s.brokers[broker - 1]
    if b.status != UNFENCED:
        return None
    new = remove_broker(cfg, s, broker, new_leader)
    if new is None:
        return None
    brs = with_broker(s, broker, b._replace(status=FENCED))
    return commit_partition(cfg, s, s.partition, new, brokers=brs, budget=s.budget._replace(faults=s.budget.faults - 1))


@spec.rule(broker=brokers, fair=True, precondition=lambda cfg, s: some_broker_is(s, FENCED),
           applies=lambda cfg: cfg.max_faults + cfg.max_unclean_shutdowns > 0)
def unfence(cfg, s, broker):
    """Controller: unfences `broker`, a running fenced broker that heartbeats again. TLA+: UnfenceBroker.

    Who acts: the controller, on the broker's heartbeat.
    Enabled when: the broker is fenced.
    Next: the broker is unfenced (it does not rejoin the ISR). Kafka then elects a leader for a
    leaderless partition (`ReplicationControlManager.generateLeaderAndIsrUpdates`); the seed
    variant does that in `clean_election`.
    """
    b = s.brokers[broker - 1]
    if b.status != FENCED:
        return None
    s2 = update_broker(s, broker, b._replace(status=UNFENCED))
    if follows_kafka(cfg) and not s.partition.leader:
        new = kafka_build(s.partition, rules_of(cfg), acceptable(s2), target_isr=s.partition.isr)
        if new is not None:
            return commit_partition(cfg, s2, s.partition, new)
    return s2


@spec.rule(candidate=brokers, fair=True, precondition=lambda cfg, s: not s.partition.leader,
           applies=lambda cfg: cfg.completion == "seed")
def clean_election(cfg, s, candidate):
    """Controller (seed variant): elects `candidate` to lead a leaderless partition [kafka-tlaplus v3.5 §2.8, KIP-966].

    Who acts: the controller (Kafka's variant elects within the partition change that left the
    partition leaderless, or in `unfence`).
    Enabled when: the partition has no leader, for an unfenced ISR member, or an unfenced ELR
    member when the ISR is empty.
    Next: `candidate` leads (an ELR member becomes the ISR); both epochs are bumped.
    """
    new = seed_clean_election(s.partition, candidate, rules_of(cfg), acceptable(s))
    return None if new is None else s._replace(partition=new)


@spec.rule(candidate=brokers, precondition=lambda cfg, s: not s.partition.leader,
           applies=lambda cfg: cfg.completion == "seed" and cfg.unclean)
def unclean_election(cfg, s, candidate):
    """Controller (seed variant, unclean election enabled): elects any live replica when no clean
    candidate is available [kafka-tlaplus v3.5 §2.8].

    Who acts: the controller.
    Enabled when: the partition has no leader and no unfenced ISR (or ELR) member, for an unfenced
    replica.
    Next: `candidate` leads alone (ISR = {candidate}, ELR empty) and the partition enters leader recovery.
    """
    new = seed_unclean_election(s.partition, candidate, rules_of(cfg), acceptable(s))
    return None if new is None else s._replace(partition=new)
