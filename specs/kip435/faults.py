"""The faults of `kip435`: a broker fails (budgeted) and recovers. The controller does not fail (not
modelled: docs/models/kip435.md)."""

from __future__ import annotations

from specs.kip435 import spec
from specs.kip435.logic import brokers, elect
from specs.kip435.state import NO_LEADER


@spec.rule(broker=brokers, precondition=lambda cfg, s: s.failures > 0)
def fail(cfg, s, broker):
    """Broker: fails, leaving every ISR where it is not the last member.

    Who acts: broker `broker` (a fault), with the budget `max_failures`.
    Enabled when: it is live and failures are left.
    Next: it is down; it leaves every ISR where it is not the last member (Kafka keeps the last one), and
    where it led, leadership moves to another live in-sync replica (none: the partition is offline)."""
    if not s.alive >> broker & 1:
        return None
    alive = s.alive & ~(1 << broker)
    parts = []
    for p in s.partitions:
        if p.isr >> broker & 1 and p.isr != 1 << broker:
            p = p._replace(isr=p.isr & ~(1 << broker))
        if p.leader == broker:
            p = p._replace(leader=elect(p, alive, p.replicas))
        parts.append(p)
    return s._replace(partitions=tuple(parts), alive=alive, failures=s.failures - 1)


@spec.rule(broker=brokers, fair=True)
def recover(cfg, s, broker):
    """Broker: recovers, and leads the partitions left offline whose ISR is it.

    Who acts: broker `broker`.
    Enabled when: it is down.
    Next: it is live; every offline partition with it in the ISR gets it as leader."""
    if s.alive >> broker & 1:
        return None
    alive = s.alive | 1 << broker
    parts = tuple(p._replace(leader=broker) if p.leader == NO_LEADER and p.isr >> broker & 1 else p
                  for p in s.partitions)
    return s._replace(partitions=parts, alive=alive)
