"""The kraft model's broker rules: a broker learning metadata, a leader producing, advancing its HWM
and proposing ISR changes, a follower fetching, and a broker restarting after a shutdown (Kafka's
`Partition`, `ReplicaManager`). What a broker becomes is in `specs.kraft.logic`.

Citations as in `specs.kraft`: [kafka-tlaplus v3.5 §2.x], and KIP-966 for the ELR.
"""

from __future__ import annotations

from harness.bitset import bit, size
from specs.kraft import spec
from specs.kraft.logic import acts_as_leader, commit_partition, fresh_broker, with_broker
from specs.kraft.speed import (acceptable, after_fetch, broker_after_learning, broker_facts, disruption_room,
                               kafka_build, rules_of, set_brokers, set_request, some_broker_is, update_broker)
from specs.kraft.state import (ACCEPTED, AWAITING_METADATA, CRASHED, FENCED, INELIGIBLE_REPLICA, NO_REQUEST,
                               NO_RESPONSE, NO_RESPONSE_YET, OFFLINE, AlterPartition, Response, State, brokers,
                               follows_kafka)


@spec.rule(broker=brokers, fair=True)
def learn_metadata(cfg, s, broker):
    """Broker: `broker` catches up with the metadata log and acts on the partition's state
    [kafka-tlaplus v3.5 §2.10]. TLA+: ReceiveMetadataUpdate.

    Who acts: a running broker (its metadata listener).
    Enabled when: its partition epoch is behind the controller's, and it is a replica or holds
    something of the partition.
    Next: see `broker_after_learning` (`specs.kraft.logic`).
    """
    b = s.brokers[broker - 1]
    p = s.partition
    if b.status < FENCED or b.known_partition_epoch == p.partition_epoch:
        return None
    if not b.known_partition_epoch and not b.log and broker not in p.replicas:
        return None  # not a replica and holds nothing: nothing to learn
    m = cfg.mutated
    return update_broker(s, broker, broker_after_learning(cfg.brokers, broker, b, p, m.truncate_to_hwm,
                                                          m.keep_removed_log))


@spec.rule(leader=brokers, precondition=lambda cfg, s: s.budget.records > 0)
def produce(cfg, s, leader):
    """Leader: `leader` appends an acks=all record in its leader epoch [kafka-tlaplus v3.5 §2.5, §2.6].
    TLA+: WriteRecordToLeader.

    Who acts: a broker that believes it leads, on a producer's request.
    Enabled when: it is running and believes it leads, with ISR >= MinISR (it refuses writes
    below), while the record budget allows.
    Next: its log grows by one record of its leader epoch.
    """
    b = acts_as_leader(s, leader)
    if b is None or size(b.known_isr) < cfg.min_isr:
        return None
    return s._replace(brokers=with_broker(s, leader, b._replace(log=b.log + (b.known_leader_epoch,))),
                      budget=s.budget._replace(records=s.budget.records - 1))


@spec.rule(follower=brokers, fair=True)
def fetch(cfg, s, follower):
    """Follower: `follower` fetches from the leader it knows, in the same leader epoch
    [kafka-tlaplus v3.5 §2.2.2]. TLA+: SendFetchRequest, ReceiveFetchRequest, ReceiveFetchResponse (one step here).

    Who acts: a follower, and its leader answering the fetch.
    Enabled when: the follower runs, its leader runs, believes it leads in the same epoch and knows
    the follower as a replica; and unless the follower is caught up and the leader already knows
    it (and has the fetch still to act on, or has the follower in its Maximal ISR: a caught-up
    follower outside it fetches again, which prompts another ISR expansion).
    Next: a diverging follower truncates to the common prefix; otherwise it appends the next record
    and takes min(leader HWM, its LEO) as its HWM, and the leader records the fetch offset, broker
    epoch and "fetched in this leader epoch" (`after_fetch`).
    """
    f = s.brokers[follower - 1]
    lid = f.known_leader
    if f.status < FENCED or not lid or lid == follower:
        return None
    ld = s.brokers[lid - 1]
    if ld.status < FENCED or ld.known_leader != lid or ld.known_leader_epoch != f.known_leader_epoch \
            or not ld.known_replicas & bit(follower):
        return None
    flog, llog = f.log, ld.log
    offset = len(flog)
    if llog[:offset] != flog:  # divergence: truncate to the last common offset
        common = 0
        for x, y in zip(flog, llog):
            if x != y:
                break
            common += 1
        return update_broker(s, follower, f._replace(log=flog[:common], hwm=min(f.hwm, common)))
    grows = offset < len(llog)
    hwm = min(ld.hwm, offset + grows)
    i = follower - 1
    if not grows and hwm == f.hwm and ld.follower_leo[i] == offset and ld.follower_epoch[i] == f.epoch \
            and (ld.fetched | ld.maximal_isr) & bit(follower):
        return None  # caught up, and the leader already knows it: nothing changes
    brs = list(s.brokers)
    brs[i], brs[lid - 1] = after_fetch(follower, f, ld, hwm)
    return set_brokers(s, tuple(brs))


def unreplicated_leader(cfg, s: State) -> bool:
    """Some running broker that believes it leads has records above its HWM."""
    return broker_facts(s.brokers).unreplicated


@spec.rule(leader=brokers, fair=True, precondition=unreplicated_leader)
def advance_hwm(cfg, s, leader):
    """Leader: `leader` advances its HWM to the smallest fetch offset in the Maximal ISR
    [kafka-tlaplus v3.5 §2.7].

    Who acts: a broker that believes it leads.
    Enabled when: it is running and believes it leads, and its log end and the fetch offset of
    every other Maximal ISR member are above its HWM; with ELR, only while the ISR >= MinISR (KIP-966).
    Next: the records below the new HWM are committed, and acknowledged to acks=all producers if
    the ISR >= MinISR (the history records both).
    """
    b = acts_as_leader(s, leader)
    if b is None:
        return None
    under_min = size(b.known_isr) < cfg.min_isr - cfg.mutated.leader_min_isr_differs
    if cfg.elr and under_min and not cfg.mutated.hwm_below_min_isr:
        return None
    hwm = len(b.log)
    others = (b.known_isr if cfg.mutated.hwm_over_learned_isr else b.maximal_isr) & ~bit(leader)
    for f, leo in enumerate(b.follower_leo, 1):
        if others >> f & 1 and leo < hwm:
            hwm = leo
    if hwm <= b.hwm:
        return None
    prefix = b.log[:hwm]
    committed, overwritten = s.committed, s.committed_overwritten
    if prefix[:len(committed)] != committed[:hwm]:
        overwritten = True
    if hwm > len(committed):
        committed = prefix
    acked = s.acked
    if not under_min and hwm > len(acked):
        acked = prefix
    return s._replace(brokers=with_broker(s, leader, b._replace(hwm=hwm)), committed=committed, acked=acked,
                      committed_overwritten=overwritten)


def idle_leader(cfg, s: State) -> bool:
    """Some running broker believes it leads and has no AlterPartition pending."""
    return broker_facts(s.brokers).idle


@spec.rule(leader=brokers, follower=brokers, fair=True, precondition=idle_leader)
def propose_isr_expansion(cfg, s, leader, follower):
    """Leader: `leader` sends AlterPartition to add `follower` to the ISR [kafka-tlaplus v3.5 §2.9, §2.9.2].
    TLA+: SendAlterPartitionRequest.

    Who acts: a broker that believes it leads.
    Enabled when: it is running and believes it leads with no AlterPartition pending, and the
    follower is an out-of-sync replica that is in sync: its fetch offset reached the HWM and the
    LESO, and it fetched in the current leader epoch since the leader last proposed adding it
    (Kafka's leader considers an expansion only on a fetch, `Partition.maybeExpandIsr`; so a refused
    proposal is retried only after another fetch, and never for a broker that stopped for good).
    Next: the request (ISR + follower, the leader's epochs, the follower's broker epoch) is in
    flight, the Maximal ISR becomes the union of the ISR and the proposal, and the fetch that
    prompted it is used up.
    """
    if leader == follower:
        return None
    b = acts_as_leader(s, leader)
    if b is None or b.pending.isr or b.response.status:
        return None
    fb = bit(follower)
    if not b.known_replicas & fb or b.maximal_isr & fb:
        return None
    leo = b.follower_leo[follower - 1]
    if leo < b.hwm and not cfg.mutated.expand_below_hwm:
        return None
    if leo < b.leso and not cfg.mutated.expand_below_leso:
        return None
    if not b.fetched & fb and not cfg.mutated.expand_without_fetch_in_epoch:
        return None
    isr = b.known_isr | fb
    epochs = tuple(b.follower_epoch[f - 1] if f == follower else 0 for f in brokers(cfg))
    req = AlterPartition(isr, b.known_leader_epoch, b.known_partition_epoch, epochs)
    return update_broker(s, leader, b._replace(pending=req, maximal_isr=isr, fetched=b.fetched & ~fb))


@spec.rule(leader=brokers, follower=brokers,
           precondition=lambda cfg, s: disruption_room(cfg, s).shrinks and idle_leader(cfg, s),
           applies=lambda cfg: cfg.max_shrinks > 0)
def propose_isr_shrink(cfg, s, leader, follower):
    """Leader: `leader` sends AlterPartition to remove `follower`, which lags or stopped fetching,
    from the ISR [kafka-tlaplus v3.5 §2.9, §2.9.2]. TLA+: SendAlterPartitionRequest (a timed-out follower).

    Who acts: a broker that believes it leads (a disruption: the shrink budget bounds it).
    Enabled when: it is running and believes it leads with no AlterPartition pending, and the
    follower is an ISR member, while the shrink budget allows.
    Next: the request (ISR - follower) is in flight; the Maximal ISR keeps the follower until the
    change is committed.
    """
    if leader == follower:
        return None
    b = acts_as_leader(s, leader)
    if b is None or b.pending.isr or b.response.status or not b.known_isr & bit(follower):
        return None
    req = AlterPartition(b.known_isr & ~bit(follower), b.known_leader_epoch, b.known_partition_epoch,
                         (0,) * cfg.brokers)
    return s._replace(brokers=with_broker(s, leader, b._replace(pending=req)),
                      budget=s.budget._replace(shrinks=s.budget.shrinks - 1))


def answered(cfg, s: State) -> bool:
    """Some broker has an AlterPartition response to act on."""
    return broker_facts(s.brokers).answered


@spec.rule(leader=brokers, fair=True, precondition=answered)
def handle_alter_partition_response(cfg, s, leader):
    """Leader: `leader` acts on the controller's AlterPartition response [kafka-tlaplus v3.5 §2.9.2], as
    Kafka's `Partition.handleAlterPartitionError` / `handleAlterPartitionUpdate` do.
    TLA+: ReceiveAlterPartitionResponse.

    Who acts: the broker that sent the request (it may have stopped leading since).
    Enabled when: it holds a response it has not acted on (ACCEPTED, INELIGIBLE_REPLICA,
    STALE_REQUEST).
    Next: the request and response are done. If it no longer leads, or learned newer metadata
    since sending, nothing else. ACCEPTED in its leader epoch: it takes the ISR and partition epoch.
    INELIGIBLE_REPLICA: it rolls the Maximal ISR back to the ISR. Otherwise (accepted in another
    leader epoch, stale epochs) it keeps the pending state, AWAITING_METADATA. The description
    rolls back on every error; that reading is unsafe for a leader that has not yet learned it was
    replaced (docs/models/kraft.md), so the model follows Kafka here.
    """
    b = s.brokers[leader - 1]
    r = b.response
    if not NO_RESPONSE_YET < r.status < AWAITING_METADATA:
        return None
    done = set_request(b, NO_REQUEST[cfg.brokers], NO_RESPONSE)
    if b.status < FENCED or b.known_leader != leader or b.known_partition_epoch != b.pending.partition_epoch:
        new = done  # no longer leads, or learned newer metadata since sending: ignore the response
    elif r.status == ACCEPTED and r.leader_epoch == b.known_leader_epoch:
        new = done._replace(known_isr=r.isr, known_partition_epoch=r.partition_epoch, maximal_isr=r.isr)
    elif r.status == INELIGIBLE_REPLICA:
        new = done._replace(maximal_isr=b.known_isr)
    else:
        new = b._replace(response=Response(AWAITING_METADATA, 0, 0, 0))
    return update_broker(s, leader, new)


# ---------------------------------------------------------------- restarts (the faults: faults.py)


@spec.rule(broker=brokers, fair=True, precondition=lambda cfg, s: some_broker_is(s, OFFLINE),
           applies=lambda cfg: cfg.max_faults > 0)
def restart(cfg, s, broker):
    """Broker: a cleanly shut down `broker` starts and registers [kafka-tlaplus v3.5 §1.2.2]. TLA+:
    BrokerStart, ReceiveBrokerRegRequest, ReceiveBrokerRegResponse (one step here; it is unfenced
    later, by `unfence`).

    Who acts: the broker, starting again after a clean shutdown; the controller registers it.
    Enabled when: the broker is OFFLINE.
    Next: it runs, fenced, with a new broker epoch and its whole log.
    """
    b = s.brokers[broker - 1]
    if b.status != OFFLINE:
        return None
    return update_broker(s, broker, fresh_broker(cfg.brokers, FENCED, b.epoch + 1, b.log, b.hwm))


@spec.rule(broker=brokers, keep=lambda cfg: range(cfg.max_records + 1), fair=True,
           precondition=lambda cfg, s: some_broker_is(s, CRASHED),
           applies=lambda cfg: cfg.max_unclean_shutdowns > 0)
def restart_after_unclean_shutdown(cfg, s, broker, keep):
    """Broker and controller: a crashed `broker` restarts with only `keep` records flushed and
    registers with the unclean-shutdown flag (KIP-966). TLA+: BrokerStart, then
    ReceiveBrokerRegRequest's ProcessUncleanBroker.

    Who acts: the broker, starting again after a power loss; the controller registers it.
    Enabled when: the broker is CRASHED and had at least `keep` records.
    Next: it runs, fenced, with a new broker epoch and the first `keep` records; the controller
    removes it from the ELR (Kafka: `ReplicationControlManager.handleBrokerUncleanShutdown`).
    """
    b = s.brokers[broker - 1]
    if b.status != CRASHED or keep > len(b.log):
        return None
    brs = with_broker(s, broker, fresh_broker(cfg.brokers, FENCED, b.epoch + 1, b.log[:keep], min(b.hwm, keep)))
    p = s.partition
    if cfg.mutated.keep_unclean_in_elr:
        new = p
    elif follows_kafka(cfg):
        new = kafka_build(p, rules_of(cfg), acceptable(s), target_isr=p.isr & ~bit(broker),
                          unclean_shutdown=bit(broker)) or p
    elif p.elr & bit(broker):
        new = p._replace(elr=p.elr & ~bit(broker), partition_epoch=p.partition_epoch + 1)
    else:
        new = p
    return commit_partition(cfg, s, p, new, brokers=brs)
