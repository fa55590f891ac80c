"""The zk model's brokers: receiving controller requests (`ReplicaManager`), fetching, the leader's HWM,
produce, and ISR changes (`Partition`).

Citations as in `specs.zk`: Kafka class and method names refer to Apache Kafka 3.9.0.
"""

from __future__ import annotations

from harness.bitset import bit, size
from specs.zk import spec
from specs.zk.logic import brokers, kafka, may_disrupt, spend, with_broker
from specs.zk.state import (FOLLOWER, LEADER, LEADER_AND_ISR, NO_LEADER, NONE, STOP_REPLICA, STOPPED, Broker,
                            Request, State)


def channel_heads(b: Broker) -> tuple[int, ...]:
    """Positions of requests that may be delivered next: the first of each sending controller (one
    controller's requests arrive in order; different controllers' connections are independent)."""
    seen, heads = set(), []
    for i, r in enumerate(b.inbox):
        if r.ctrl_epoch not in seen:
            seen.add(r.ctrl_epoch)
            heads.append(i)
    return tuple(heads)


def apply_leader_and_isr(cfg, me: int, b: Broker, req: Request) -> Broker | None:
    """`ReplicaManager.becomeLeaderOrFollower`: applied only with a newer leader epoch than the replica holds
    (or when the broker holds no replica); makes it leader or follower."""
    if b.role != NONE and req.leader_epoch <= b.leader_epoch or not req.replicas >> me & 1:
        return None  # not newer, or "itself is not in assigned replica list": ignored
    zeros = (0,) * len(b.follower_leo)
    if req.leader == me:
        if b.role == LEADER:  # re-elected in a newer epoch: it keeps what it knows of its followers
            return b._replace(leader_epoch=req.leader_epoch, version=req.version, replicas=req.replicas,
                              isr=req.isr, leso=len(b.log), alter=0)
        return b._replace(role=LEADER, leader=me, leader_epoch=req.leader_epoch, version=req.version,
                          replicas=req.replicas, isr=req.isr, leso=len(b.log), follower_leo=zeros, alter=0)
    # A follower keeps only what it fetches by: leader and epoch (its HWM, ISR and replica list serve no
    # rule here, so they are not kept: fewer states that differ in nothing that matters).
    return b._replace(role=FOLLOWER, leader=req.leader, leader_epoch=req.leader_epoch, version=0, replicas=0,
                      isr=0, hwm=0, leso=0, follower_leo=zeros, alter=0)


@spec.rule(broker=brokers, channel=lambda cfg: range(2), fair=True,
           format={"channel": lambda cfg, ch: "first" if not ch else "other controller's first"})
def deliver(cfg, s, broker, channel):
    """Broker: receives a controller request (`ReplicaManager`).

    Who acts: the broker.
    Enabled when: it is live with a request in flight (`channel` 1: the first request of a second
    controller, when two have requests in flight to it).
    Next: a request of a controller epoch older than the broker has seen is rejected
    (STALE_CONTROLLER_EPOCH). LeaderAndIsr needs a newer leader epoch; StopReplica one that is not
    older: delete=false stops fetching and leading, delete=true also deletes the log.
    """
    b = s.brokers[broker - 1]
    if not b.alive or not b.inbox:
        return None
    heads = channel_heads(b)
    if channel >= len(heads):
        return None
    i = heads[channel]
    req = b.inbox[i]
    b = b._replace(inbox=b.inbox[:i] + b.inbox[i + 1:])
    stale = req.ctrl_epoch < b.ctrl_epoch
    if stale and not cfg.mutated.accept_stale_controller_epoch:
        return with_broker(s, broker, b)
    b = b._replace(ctrl_epoch=max(b.ctrl_epoch, req.ctrl_epoch))
    if req.kind == LEADER_AND_ISR:
        new = apply_leader_and_isr(cfg, broker, b, req)
    elif b.role != NONE and req.leader_epoch < b.leader_epoch:
        new = None  # FENCED_LEADER_EPOCH
    elif req.kind == STOP_REPLICA:
        new = b._replace(role=STOPPED if b.role != NONE else NONE, alter=0)
    else:
        new = b._replace(role=NONE, leader=NO_LEADER, leader_epoch=0, version=0, replicas=0, isr=0, log=(),
                         hwm=0, leso=0, alter=0)
        if s.zk.isr >> broker & 1:
            s = s._replace(deleted_in_use=True)
    if new is None:
        return with_broker(s, broker, b)
    if stale:
        s = s._replace(stale_applied=True)
    return with_broker(s, broker, new)


def leader_broker(s: State, leader: int) -> Broker | None:
    b = s.brokers[leader - 1]
    return b if b.alive and b.role == LEADER else None


@spec.rule(follower=brokers, fair=True)
def fetch(cfg, s, follower):
    """Follower: fetches from the leader it knows, in the same leader epoch; the leader may then add it
    to the ISR (`Partition.updateFollowerFetchState`, `maybeExpandIsr`: expansion happens on a fetch).

    Who acts: the follower, and the leader answering its fetch in the same step.
    Enabled when: the follower is live, and its leader is live, leads in the same epoch and lists it as a
    replica.
    Next: a diverging follower truncates to the common prefix; otherwise it takes the next record and
    the leader records its fetch offset. If that offset reached the leader's HWM and leader-epoch start
    offset, the follower is outside the ISR and no ISR change is in flight, `change_isr` adds it.
    (A follower's HWM is not kept: no rule or property reads it; a new leader starts from HWM 0, and
    the LESO condition keeps its ISR safe.)
    """
    f = s.brokers[follower - 1]
    if not f.alive or f.role != FOLLOWER or not f.leader:
        return None
    lid = f.leader
    ld = leader_broker(s, lid)
    if ld is None or ld.leader_epoch != f.leader_epoch or not ld.replicas >> follower & 1:
        return None
    flog, llog = f.log, ld.log
    offset = len(flog)
    if llog[:offset] != flog:
        common = 0
        for x, y in zip(flog, llog):
            if x != y:
                break
            common += 1
        return with_broker(s, follower, f._replace(log=flog[:common]))
    grows = offset < len(llog)
    i = follower - 1
    expands = (not ld.alter and not ld.isr >> follower & 1 and offset >= ld.hwm and offset >= ld.leso)
    if not grows and ld.follower_leo[i] == offset and not expands:
        return None
    if grows:
        s = with_broker(s, follower, f._replace(log=flog + (llog[offset],)))
    ld = ld._replace(follower_leo=ld.follower_leo[:i] + (offset,) + ld.follower_leo[i + 1:])
    s = with_broker(s, lid, ld)
    if expands:
        return change_isr(cfg, s, lid, ld, ld.isr | bit(follower)) or s
    return s


@spec.rule(leader=brokers, fair=True)
def advance_hwm(cfg, s, leader):
    """Leader: advances its HWM to the smallest fetch offset in the ISR (with its pending additions).

    Who acts: the leader.
    Enabled when: it is live, and its log end and its in-sync followers' fetch offsets are above its HWM.
    Next: the records below are committed, and acknowledged if the ISR >= MinISR.
    """
    b = leader_broker(s, leader)
    if b is None or b.hwm >= len(b.log):
        return None
    hwm = len(b.log)
    for f, leo in enumerate(b.follower_leo, 1):
        if f != leader and (b.isr | b.alter) >> f & 1 and leo < hwm:
            hwm = leo
    if hwm <= b.hwm:
        return None
    prefix = b.log[:hwm]
    committed = prefix if hwm > len(s.committed) else s.committed
    acked = prefix if size(b.isr) >= cfg.min_isr and hwm > len(s.acked) else s.acked
    return with_broker(s, leader, b._replace(hwm=hwm))._replace(committed=committed, acked=acked)


@spec.rule(leader=brokers, precondition=lambda cfg, s: s.budget.records > 0)
def produce(cfg, s, leader):
    """Leader: appends an acks=all record in its leader epoch.

    Who acts: a producer, and the leader appending its record.
    Enabled when: the leader is live with ISR >= MinISR, while the record budget allows.
    Next: its log grows by one record.
    """
    b = leader_broker(s, leader)
    if b is None or size(b.isr) < cfg.min_isr:
        return None
    s = with_broker(s, leader, b._replace(log=b.log + (b.leader_epoch,)))
    return s._replace(budget=spend(s, records=1))


def change_isr(cfg, s: State, leader: int, b: Broker, isr: int) -> State | None:
    """The leader's ISR change. Kafka: an AlterPartition request to the controller. Seed: a conditional
    write of the state znode (zkVersion) and an ISR change notification; a stale zkVersion fails."""
    if kafka(cfg):
        return with_broker(s, leader, b._replace(alter=isr))
    zk = s.zk
    if b.version != zk.version:
        return None
    zk = zk._replace(isr=isr, version=zk.version + 1, isr_notice=True)
    return with_broker(s, leader, b._replace(isr=isr, version=zk.version))._replace(zk=zk)


@spec.rule(leader=brokers, follower=brokers, precondition=lambda cfg, s: may_disrupt(cfg, s, "shrinks"),
           applies=lambda cfg: cfg.max_shrinks > 0)
def shrink_isr(cfg, s, leader, follower):
    """Leader: removes a follower that stopped fetching from the ISR (`Partition.maybeShrinkIsr`).

    Who acts: the leader.
    Enabled when: it is live with no ISR change in flight and another ISR member, while the budget allows.
    Next: `change_isr` with the follower removed.
    """
    b = leader_broker(s, leader)
    if b is None or b.alter or leader == follower or not b.isr >> follower & 1:
        return None
    new = change_isr(cfg, s, leader, b, b.isr & ~bit(follower))
    return None if new is None else new._replace(budget=spend(new, shrinks=1))
