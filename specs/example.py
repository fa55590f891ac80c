"""A toy replicated log: the example model of docs/ARCHITECTURE.md and of the harness's own tests.

Broker 1 leads a partition; followers fetch its records; the leader advances the high watermark
(HWM) once every ISR member has a record, and may shrink or expand the ISR. Small enough to read in
one sitting, rich enough to show rules, parameters, invariants, presets and mutations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, NamedTuple

from harness.itf import ById, IdSet, Int
from harness.model import Config, Spec, budget, param

LEADER = 1


MAX_BROKERS = 60  # broker b is bit b of the ISR bitmask, and state ints stay below 2**61-1


@dataclass(frozen=True)
class ExampleConfig(Config):
    brokers: int = param(2, "number of brokers; broker 1 leads", lo=1, hi=MAX_BROKERS)
    max_records: int = budget(2, "records the leader may write")
    min_isr: int = param(2, "acks=all needs this many ISR members", lo=1, hi=MAX_BROKERS)


class State(NamedTuple):
    log: Annotated[tuple, ById(Int())]  # records held by each broker (log end offset)
    isr: Annotated[int, IdSet()]
    hwm: int


spec = Spec(
    "example",
    ExampleConfig,
    State,
    doc=__doc__,
    presets={"tiny": {}, "ci": {"brokers": 3, "max_records": 3}},
    deadlock=False,  # a bounded workload ends in a quiescent state
)
spec.mutation("hwm_ignores_isr", rule="advance_hwm",
              removes="the HWM moves to the leader's log end without waiting for the ISR")
spec.mutation("expand_lagging", rule="expand_isr",
              removes="a follower joins the ISR before it holds the committed records")


def followers(cfg):
    return range(2, cfg.brokers + 1)


@spec.init
def init(cfg):
    yield State(log=(0,) * cfg.brokers, isr=sum(1 << b for b in range(1, cfg.brokers + 1)), hwm=0)


@spec.rule()
def produce(cfg, s):
    """Leader: append a record, if the workload bound allows."""
    if s.log[0] >= cfg.max_records:
        return None
    return s._replace(log=(s.log[0] + 1,) + s.log[1:])


@spec.rule(follower=followers, fair=True)
def fetch(cfg, s, follower):
    """Follower: copy the leader's next record."""
    i = follower - 1
    if s.log[i] >= s.log[0]:
        return None
    return s._replace(log=s.log[:i] + (s.log[i] + 1,) + s.log[i + 1:])


@spec.rule(fair=True)
def advance_hwm(cfg, s):
    """Leader: with at least MinISR members in the ISR, the HWM becomes their smallest log end."""
    if cfg.mutated.hwm_ignores_isr:
        new = s.log[0]
    elif s.isr.bit_count() < cfg.min_isr:
        return None
    else:
        new = min(s.log[b - 1] for b in range(1, cfg.brokers + 1) if s.isr >> b & 1)
    return s._replace(hwm=new) if new > s.hwm else None


@spec.rule(follower=followers)
def shrink_isr(cfg, s, follower):
    """Leader: drop a lagging follower from the ISR."""
    if not s.isr >> follower & 1 or s.log[follower - 1] >= s.log[0]:
        return None
    return s._replace(isr=s.isr & ~(1 << follower))


@spec.rule(follower=followers, fair=True)
def expand_isr(cfg, s, follower):
    """Leader: re-admit a follower that has caught up to the HWM."""
    caught_up = cfg.mutated.expand_lagging or s.log[follower - 1] >= s.hwm
    if s.isr >> follower & 1 or not caught_up:
        return None
    return s._replace(isr=s.isr | 1 << follower)


spec.eventually("AllReplicated", goal=lambda cfg, s: all(n == s.log[0] for n in s.log),
                doc="every follower eventually holds every record")


# Symmetry: broker 1 leads; the followers start alike (empty logs, all in the ISR) and every rule treats them alike.
spec.symmetry(lambda cfg: [tuple(followers(cfg))])
