"""The kraft model's speed measures, in one place. Nothing here changes what the model does.

Each was kept because a profile of BFS on `kraft --config ci` showed its cost, and each was measured:
the figures are in docs/PERFORMANCE.md, "BFS throughput (kraft ci)" (sessions 13-15). The rules import
the fast forms from here (the memoized controller and broker functions of `specs.kraft.logic`, the
positional setters, the per-state broker facts), so each is a module global where it is called. One
measure is a constant of `specs.kraft.state`, where the pure logic reaches it too: `NO_REQUEST`, the empty
AlterPartition request shared per broker count.
"""

from __future__ import annotations

from typing import NamedTuple

from harness.speed import fast_replace, memoized, per_state, setter
from specs.kraft import logic
from specs.kraft.logic import with_broker
from specs.kraft.state import (AWAITING_METADATA, FENCED, UNFENCED, AlterPartition, Broker, Budget, KraftConfig,
                               Partition, Response, Rules, State)

# Rules call `_replace` on nearly every step: a `_replace` twice as fast as the stdlib's.
fast_replace(Partition, AlterPartition, Response, Broker, Budget, State)
# Every broker-level step replaces the brokers of a state (update_broker, fetch).
set_brokers = setter(State, "brokers")
# handle_alter_partition_response clears a request and its response on about 15% of all successors.
set_request = setter(Broker, "pending", "response")
# 98% of learn_metadata steps meet a (broker, partition) pair seen before: computed once per pair.
broker_after_learning = memoized(logic.broker_after_learning)
# Most non-diverging fetches repeat a (follower, leader) exchange seen before.
after_fetch = memoized(logic.after_fetch)

# A search meets the same partition in many states: each controller entry point computes its change
# once per distinct input (session 13; a bounded cache, and the functions are pure).
seed_reassign = memoized(logic.seed_reassign)
seed_alter_isr = memoized(logic.seed_alter_isr)
seed_remove_broker = memoized(logic.seed_remove_broker)
seed_clean_election = memoized(logic.seed_clean_election)
seed_unclean_election = memoized(logic.seed_unclean_election)
seed_cancel = memoized(logic.seed_cancel)
kafka_build = memoized(logic.kafka_build)
kafka_reassign = memoized(logic.kafka_reassign)
kafka_cancel = memoized(logic.kafka_cancel)

# Five rules' preconditions ask which disruptions a state's budgets allow (the joint limit counts the
# GONE brokers): computed once per state, not once per rule (issue 42: 1.34x slower whole kraft ci).
disruption_room = per_state(logic.disruption_room)


@per_state
def removals(cfg: KraftConfig, s: State) -> dict:
    """The controller's partition change when a broker leaves, by (broker, leader pick), for one state:
    fence and the three shutdowns ask it for the same pairs (12 each at 3 brokers)."""
    return {}


def update_broker(s: State, broker: int, new: Broker) -> State:
    """`s` with broker `broker` replaced by `new`."""
    return set_brokers(s, with_broker(s, broker, new))


def rules_of(cfg: KraftConfig) -> Rules:
    """The controller switches of a config, one object per config: every controller rule passes it
    to a memoized controller function above, whose cache then compares it by identity."""
    rules = cfg.__dict__.get("_rules")
    if rules is None:
        rules = Rules(cfg.min_isr, cfg.elr, cfg.unclean, cfg.mutated, cfg.completion == "kafka-4.4")
        object.__setattr__(cfg, "_rules", rules)
    return rules


class BrokerFacts(NamedTuple):
    """What rules and their preconditions ask about the brokers as a whole."""

    unfenced: int  # the running, unfenced brokers
    statuses: int  # the statuses some broker has (a set of status codes)
    unreplicated: bool  # some running self-believed leader has records above its HWM
    idle: bool  # some running self-believed leader has no AlterPartition pending
    answered: bool  # some broker has an AlterPartition response to act on
    unanswered: bool  # some broker has an AlterPartition the controller has not answered


@per_state
def broker_facts(brs: tuple) -> BrokerFacts:
    """One pass over the brokers, once per state: `successors` asks every rule's precondition in
    turn, and six of them ask about the brokers as a whole."""
    unfenced = statuses = 0
    unreplicated = idle = answered = unanswered = False
    for i, b in enumerate(brs, 1):
        status = b.status
        statuses |= 1 << status
        if status == UNFENCED:
            unfenced |= 1 << i
        requested = b.pending.isr
        if b.known_leader == i and status >= FENCED:
            if b.hwm < len(b.log):
                unreplicated = True
            if not requested:
                idle = True
        response = b.response.status
        if response:
            if response < AWAITING_METADATA:
                answered = True
        elif requested:
            unanswered = True
    return BrokerFacts(unfenced, statuses, unreplicated, idle, answered, unanswered)


def acceptable(s: State) -> int:
    """Brokers that may lead or join the ISR: running and unfenced."""
    return broker_facts(s.brokers).unfenced


def some_broker_is(s: State, status: int) -> bool:
    return bool(broker_facts(s.brokers).statuses >> status & 1)
