"""The brokers' rule in `kip435`: a replica out of the ISR catches up (fetch abstracted, as in `kraft`'s
controller view: one step from out of sync to in the ISR)."""

from __future__ import annotations

from specs.kip435 import spec
from specs.kip435.logic import brokers, partitions, set_partition
from specs.kip435.state import NO_LEADER


@spec.rule(partition=partitions, broker=brokers, fair=True)
def catch_up(cfg, s, partition, broker):
    """Broker: a replica of a partition fetches from the live leader until it has every record and joins the
    ISR (fetch abstracted).

    Who acts: broker `broker`, a replica of `partition`.
    Enabled when: it is live and out of the ISR, the partition's leader is live, and it is not one of the
    running step's dropped replicas (DR are not brought back).
    Next: it joins the ISR."""
    p = s.partitions[partition]
    if broker not in p.replicas or p.isr >> broker & 1 or not s.alive >> broker & 1:
        return None
    if p.leader == NO_LEADER or not s.alive >> p.leader & 1:
        return None
    if p.removing >> broker & 1:
        return None  # a dropped replica is not brought back
    return s._replace(partitions=set_partition(s, partition, p._replace(isr=p.isr | 1 << broker)))
