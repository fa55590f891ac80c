"""The kraft model's protocol logic, as pure functions the rules share (no rule is registered here).

Citations as in `specs.kraft`: [kafka-tlaplus kip-966 §4.x] is the Kafka replication protocol
description (kafka-tlaplus, kip-966), ch. 4 §4.x (partition reassignment); [kafka-tlaplus v3.5 §2.x]
the same description (kafka-tlaplus, v3.5), ch. 2 §2.x (the replication algorithm). Kafka class and
method names refer to apache/kafka at 1eb76443 (metadata module, package org.apache.kafka.controller).

Three parts: the controller's partition-change logic, in two protocols; what a broker becomes when it
learns metadata or fetches; and the helpers over a whole state the rules and the liveness goals use.

The controller's partition changes follow one of two protocols, selected by the `completion` variant:

* `seed` (default) follows the protocol description, ch. 4 (kip-966) for reassignment and ch. 2
  (v3.5) for replication: growth keeps the current replica order and appends the added
  replicas; completion needs "every `adding` replica in the final ISR and the final ISR >= MinISR";
  completion trims `removing` replicas from the ISR and the ELR and bumps the leader epoch every
  time; where the description lets the controller pick any member of the new ISR as leader, the
  pick is a parameter of the rule (`choice`), so every legal pick is explored.
* `kafka` follows Kafka's controller exactly: `PartitionChangeBuilder.build()` in its order
  (complete reassignment -> populate ELR -> elect -> leader-epoch triggers -> write ELR/ISR ->
  last-known-leader -> record), the merged replica order `target ++ removing` of
  `PartitionReassignmentReplicas`, the revert order `merged - adding` of
  `PartitionReassignmentRevert`, the deterministic election order of `electAnyLeader`, the
  effective MinISR `min(minISR, |replicas|)` of `ReplicationControlManager.getTopicEffectiveMinIsr`,
  and the leader epoch bumped only on a leader change or a replica set that is not a superset.
  That is Kafka 4.0's controller; `kafka-4.4` is Kafka 4.4.0's, which differs in two places:
  KAFKA-19975's completion rule (`kafka_completes`) and the last known leader elected only if acceptable.

Broker sets are bitmasks (bit b = broker b). ISR order is not kept: Kafka's ISR order has no
effect on any rule modelled here (elections iterate the replica list).
Every partition-change function returns the new `Partition`, or None when the change is refused or
is a no-op (Kafka's `build()` returning no record). Being pure, the rules' entry points are memoized
(`specs.kraft.speed`; the rules call those): a search meets the same partition in many states.
"""

from __future__ import annotations

from typing import NamedTuple

from harness.bitset import bit, mask, members, size
from specs.kraft.state import (ACCEPTED, AWAITING_METADATA, FENCED, GONE, INELIGIBLE_REPLICA, NO_LEADER, NO_RESPONSE,
                               STALE_REQUEST, UNFENCED, AlterPartition, Broker, Budget, Partition, Rules, State,
                               NO_REQUEST, brokers, follows_kafka)

# -------------------------------------------------------------------------------------- helpers


def in_progress(p: Partition) -> bool:
    """A reassignment is ongoing iff `adding` or `removing` is non-empty [kafka-tlaplus kip-966 §4.2]."""
    return bool(p.adding or p.removing)


# ============================================================================================
# The `seed` variant: the protocol description (kafka-tlaplus, kip-966 ch. 4 and v3.5 ch. 2)
# ============================================================================================


def seed_isr_change(p: Partition, new_isr: int, rules: Rules, unclean_shutdown: int = 0) -> tuple[int, int]:
    """ISR and ELR after the ISR becomes `new_isr` [kafka-tlaplus v3.5 §2.8], with KIP-966's ELR.

    With ELR: replicas leaving the ISR while it is below MinISR become eligible leaders; once the
    ISR is back at MinISR the ELR is emptied. Without ELR the ISR never shrinks to empty: the
    last replica standing stays in it [kafka-tlaplus v3.5 §2.8].
    """
    if not rules.elr:
        return (new_isr or p.isr), 0
    if size(new_isr) >= rules.min_isr:
        return new_isr, 0
    leaving = 0 if rules.mutated.elr_not_populated else p.isr
    return new_isr, (p.elr | leaving) & ~new_isr & ~unclean_shutdown


def seed_pick_leader(current: int, candidates: int, choice: int) -> int | None:
    """The controller keeps a leader that stays a candidate; otherwise it may pick any candidate.

    `choice` 0 means "keep the current leader, or no leader when there is no candidate".
    Returns the leader, or None when `choice` is not a legal pick.
    """
    if current and candidates & bit(current):
        return current if choice == 0 else None
    if not candidates:
        return NO_LEADER if choice == 0 else None
    return choice if choice and candidates & bit(choice) else None


def seed_final_isr(p: Partition, new_isr: int, rules: Rules) -> int | None:
    """The final ISR if the completion rules of [kafka-tlaplus kip-966 §4.2] hold, else None.

    Rules: (1) the final ISR >= MinISR; (2) every `adding` replica is in the final ISR.
    """
    final_isr = new_isr if rules.mutated.keep_removing_in_isr else new_isr & ~p.removing
    if p.adding & ~final_isr:
        return None
    if size(final_isr & ~p.removing) < rules.min_isr and not rules.mutated.completion_ignores_min_isr:
        return None
    return final_isr


def seed_complete(p: Partition, final_isr: int, rules: Rules, acceptable: int, choice: int) -> Partition | None:
    """The completion partition change [kafka-tlaplus kip-966 §4.2, step 3]: replicas become the target, the ISR
    and ELR lose the `removing` replicas, a removed leader is replaced by a member of the new ISR,
    both epochs are bumped. None if `choice` is not a legal leader pick."""
    replicas = tuple(r for r in p.replicas if not p.removing >> r & 1)
    elr = 0 if size(final_isr) >= rules.min_isr or not rules.elr else p.elr & ~p.removing & ~final_isr
    leader = seed_pick_leader(p.leader, final_isr & acceptable, choice)
    if leader is None:
        return None
    bump = leader != p.leader or not rules.mutated.completion_no_epoch_bump
    return Partition(replicas, final_isr, elr, 0, leader, p.leader_epoch + bump, p.partition_epoch + 1, 0, 0,
                     p.recovering)


def seed_reassign(p: Partition, target: tuple, rules: Rules, acceptable: int, choice: int) -> Partition | None:
    """AlterPartitionReassignments [kafka-tlaplus kip-966 §4.2]: growth, or immediate completion when
    nothing is added."""
    if in_progress(p):
        return None  # the description reassigns from a settled assignment; replacing one is Kafka's (variant kafka)
    current, wanted = mask(p.replicas), mask(target)
    adding, removing = wanted & ~current, current & ~wanted
    if not adding and not removing:
        return None
    if not adding:  # only removing [kafka-tlaplus kip-966 §4.1.2]: complete at once if the rules allow
        started = p._replace(removing=removing)
        final_isr = seed_final_isr(started, p.isr, rules)
        if final_isr is not None:
            return seed_complete(started, final_isr, rules, acceptable, choice)
        return None if choice else started._replace(partition_epoch=p.partition_epoch + 1)
    if choice:
        return None
    # Growth partition change: replicas = current ++ added (in target order); ISR, leader, LE unchanged.
    replicas = p.replicas + tuple(r for r in target if adding >> r & 1)
    return p._replace(replicas=replicas, adding=adding, removing=removing, partition_epoch=p.partition_epoch + 1)


def seed_alter_isr(p: Partition, new_isr: int, rules: Rules, acceptable: int, choice: int) -> Partition | None:
    """An accepted AlterPartition [kafka-tlaplus v3.5 §2.9.2]: the catch-up change, and completion in the same
    atomic change [kafka-tlaplus kip-966 §4.2].
    None if `choice` is not a legal leader pick, or if nothing changes."""
    isr, elr = seed_isr_change(p, new_isr, rules)
    caught_up = p._replace(isr=isr, elr=elr, recovering=False)
    if in_progress(p):
        final_isr = seed_final_isr(caught_up, isr, rules)
        if final_isr is not None:
            return seed_complete(caught_up, final_isr, rules, acceptable, choice)
    if choice or caught_up == p:
        return None
    return caught_up._replace(partition_epoch=p.partition_epoch + 1)


def seed_remove_broker(p: Partition, broker: int, rules: Rules, acceptable: int, choice: int,
                       unclean_shutdown: int = 0) -> Partition | None:
    """Fencing or shutdown of `broker` [kafka-tlaplus v3.5 §2.8, §2.9.1]: leave the ISR; re-elect if it led."""
    new_isr, elr = seed_isr_change(p, p.isr & ~bit(broker), rules, unclean_shutdown)
    elr &= ~unclean_shutdown
    candidates = new_isr & acceptable & ~bit(broker)
    current = p.leader if p.leader != broker else NO_LEADER
    leader = seed_pick_leader(current, candidates, choice)
    if leader is None:
        return None
    if (new_isr, elr, leader) == (p.isr, p.elr, p.leader):
        return None
    le = p.leader_epoch + (leader != p.leader)
    return p._replace(isr=new_isr, elr=elr, leader=leader, leader_epoch=le, partition_epoch=p.partition_epoch + 1)


def seed_clean_election(p: Partition, candidate: int, rules: Rules, acceptable: int) -> Partition | None:
    """Leaderless partition: elect an ISR member [kafka-tlaplus v3.5 §2.8], or an ELR member when the ISR is
    empty (KIP-966)."""
    if p.leader or not acceptable & bit(candidate):
        return None
    if p.isr & bit(candidate):
        return p._replace(leader=candidate, leader_epoch=p.leader_epoch + 1, partition_epoch=p.partition_epoch + 1)
    if p.isr or not p.elr & bit(candidate):
        return None
    isr = bit(candidate)
    elr = 0 if size(isr) >= rules.min_isr else p.elr & ~isr
    return p._replace(isr=isr, elr=elr, leader=candidate, leader_epoch=p.leader_epoch + 1,
                      partition_epoch=p.partition_epoch + 1)


def seed_unclean_election(p: Partition, candidate: int, rules: Rules, acceptable: int) -> Partition | None:
    """Leaderless with no clean candidate and unclean election enabled: any live replica leads
    [kafka-tlaplus v3.5 §2.8]."""
    if not rules.unclean or p.leader or not acceptable & bit(candidate) or candidate not in p.replicas:
        return None
    clean = p.isr if p.isr else p.elr
    if clean & acceptable:
        return None
    return p._replace(isr=bit(candidate), elr=0, leader=candidate, leader_epoch=p.leader_epoch + 1,
                      partition_epoch=p.partition_epoch + 1, recovering=True)


def seed_cancel_refused(p: Partition, rules: Rules) -> bool:
    """The controller refuses to cancel when the reverted ISR would be below MinISR, unless unclean
    leader election is enabled [kafka-tlaplus kip-966 §4.5]."""
    return size(p.isr & ~p.adding) < rules.min_isr and not rules.unclean


def seed_cancel(p: Partition, rules: Rules, acceptable: int, choice: int) -> Partition | None:
    """Cancellation [kafka-tlaplus kip-966 §4.5]: revert to the original replicas and drop `adding` from the ISR.

    Refused when the reverted ISR would be below MinISR, unless unclean leader election is
    enabled: then the revert happens anyway, electing an ISR member, or, if the ISR is empty, any
    live original replica (an unclean election: the partition enters leader recovery).
    """
    if not in_progress(p) or seed_cancel_refused(p, rules):
        return None
    isr = p.isr & ~p.adding
    safe = size(isr) >= rules.min_isr
    if choice and (isr & acceptable & bit(p.leader) or not acceptable & bit(choice)):
        return None  # the leader stays, or the pick cannot lead: not a legal choice
    replicas = tuple(r for r in p.replicas if not p.adding >> r & 1)
    if not replicas:
        return None  # nothing to revert to (unreachable: a reassignment starts from a non-empty assignment)
    elr = 0 if safe or not rules.elr else (p.elr | p.isr) & ~p.adding & ~isr
    recovering = p.recovering
    if isr:
        leader = seed_pick_leader(p.leader, isr & acceptable, choice)
    else:
        leader = seed_pick_leader(NO_LEADER, mask(replicas) & acceptable, choice)
        if leader:
            isr, elr, recovering = bit(leader), 0, True
        elif not rules.elr:
            isr = bit(replicas[0])  # without ELR the ISR is never empty
    if leader is None:
        return None
    le = p.leader_epoch + (bool(p.adding) or leader != p.leader)
    return Partition(replicas, isr, elr, 0, leader, le, p.partition_epoch + 1, 0, 0, recovering)


# ============================================================================================
# The `kafka` variant: Kafka's controller (ReplicationControlManager, PartitionChangeBuilder)
# ============================================================================================

ONLINE, UNCLEAN = "online", "unclean"


def kafka_completes(isr: int, replicas: tuple, adding: int, removing: int, rules: Rules) -> bool:
    """`PartitionReassignmentReplicas.maybeCompleteReassignment`'s rule, given the ISR and replicas without the
    `removing` replicas (neither empty): Kafka 4.0 completes only with every target replica in that ISR.
    Kafka 4.4 (`completion=kafka-4.4`; KAFKA-19975, apache/kafka#21114) completes once every `adding` replica is
    in it, a target replica that was already a replica may be out of it, unless the target is smaller than the
    current assignment (fewer adding than removing): then every target replica must be in it, so that completing
    does not shrink the ISR. It may still leave the ISR below MinISR (preset `kafka-4.4-completion-below-min-isr`)."""
    if not rules.kafka_4_4 or size(adding) < size(removing):
        return not mask(replicas) & ~isr
    return not adding & ~isr


def kafka_build(
    p: Partition,
    rules: Rules,
    acceptable: int,
    *,
    target_isr: int,
    target_replicas: tuple | None = None,
    target_adding: int | None = None,
    target_removing: int | None = None,
    unclean_shutdown: int = 0,
    recovered: bool = False,
    election: str | None = None,
) -> Partition | None:
    """`PartitionChangeBuilder.build()`; None when the record would be a no-op. The election is UNCLEAN
    when the topic allows it, unless the caller names one (a reassignment: always ONLINE)."""
    election = election or (UNCLEAN if rules.unclean else ONLINE)
    replicas = p.replicas if target_replicas is None else target_replicas
    adding = p.adding if target_adding is None else target_adding
    removing = p.removing if target_removing is None else target_removing
    isr = target_isr

    # 1. completeReassignmentIfNeeded (PartitionReassignmentReplicas.maybeCompleteReassignment)
    if adding or removing:
        trim = 0 if rules.mutated.keep_removing_in_isr else removing
        new_isr = isr & ~trim
        new_replicas = tuple(r for r in replicas if not removing >> r & 1)
        complete = (bool(new_isr) and bool(new_replicas)
                    and kafka_completes(new_isr & ~removing, new_replicas, adding, removing, rules))
        if complete:
            isr, replicas, adding, removing = new_isr, new_replicas, 0, 0

    # 2. maybePopulateTargetElr (effective MinISR = min(minISR, |replicas| before the change))
    min_isr = min(rules.min_isr, len(p.replicas))
    if not rules.elr:
        elr = 0
    elif size(isr) >= min_isr:
        elr = 0
    else:
        elr = (p.elr | p.isr) & ~isr & ~unclean_shutdown

    # 3. electLeader (electAnyLeader): current leader, first valid replica, last known leader, unclean
    def valid(r: int) -> bool:
        return bool((isr & bit(r) or (not isr and elr & bit(r))) and acceptable & bit(r))

    leader, unclean_pick = NO_LEADER, False
    if p.leader and valid(p.leader):
        leader = p.leader
    else:
        for r in replicas:
            if valid(r):
                leader = r
                break
        else:
            if rules.elr and not isr and not elr and size(p.last_known_elr) == 1 and (
                    not rules.kafka_4_4 or acceptable & p.last_known_elr):
                # canElectLastKnownLeader: 4.0 logs an unacceptable last known leader and elects it anyway;
                # 4.4 refuses it (a broker re-registering after an unclean shutdown is elected when it unfences)
                leader, unclean_pick = members(p.last_known_elr)[0], True
            elif election == UNCLEAN:
                for r in replicas:
                    if acceptable & bit(r):
                        leader, unclean_pick = r, True
                        break
    recovering = False if recovered else p.recovering
    lkl = p.last_known_elr
    if leader != p.leader:  # tryElection
        if leader and elr & bit(leader):
            isr, elr = bit(leader), elr & ~bit(leader)
        if unclean_pick:
            isr, elr, lkl = bit(leader), 0, 0
            recovering = True

    # 4. leader-epoch triggers: a leader change, or a replica set that is not a superset
    bump = leader != p.leader or bool(mask(p.replicas) & ~mask(replicas)) and not rules.mutated.completion_no_epoch_bump

    # 5. ISR write: without ELR an empty ISR is not written (the last replica stays)
    if not isr and not rules.elr:
        isr = p.isr
    if size(isr) >= min_isr and rules.elr:
        lkl = 0
    # 6. maybeUpdateLastKnownLeader (useLastKnownLeaderInBalancedRecovery)
    if rules.elr and not isr and p.leader and lkl != bit(p.leader):
        lkl = bit(p.leader)
    if leader:
        lkl = 0
    if not rules.elr:
        lkl = 0

    new = Partition(replicas, isr, elr, lkl, leader, p.leader_epoch + bump, p.partition_epoch, adding, removing,
                    recovering)
    if new == p:
        return None
    return new._replace(partition_epoch=p.partition_epoch + 1)


def kafka_reassign(p: Partition, target: tuple, rules: Rules, acceptable: int) -> Partition | None:
    """`ReplicationControlManager.changePartitionReassignment`: diff against the current (possibly merged) replicas.
    Its builder keeps the default ONLINE election whatever the topic's unclean setting: a reassignment never
    elects an unclean leader (a leaderless partition waits for the controller's unclean-election rule)."""
    current, wanted = mask(p.replicas), mask(target)
    removing, adding = current & ~wanted, wanted & ~current
    merged = tuple(target) + tuple(members(removing))
    return kafka_build(
        p, rules, acceptable, target_isr=p.isr,
        target_replicas=merged if merged != p.replicas else None,
        target_removing=removing or None,
        target_adding=adding or None,
        election=ONLINE,
    )


def kafka_cancel(p: Partition, rules: Rules, acceptable: int) -> Partition | None:
    """`ReplicationControlManager.cancelPartitionReassignment` with `PartitionReassignmentRevert`."""
    if not in_progress(p):
        return None
    replicas = tuple(r for r in p.replicas if not p.adding >> r & 1)
    isr = p.isr & ~p.adding
    if not isr:
        isr = bit(replicas[0])
        if not rules.unclean:
            return None  # INVALID_REPLICA_ASSIGNMENT: would require an unclean leader election
    return kafka_build(p, rules, acceptable, target_isr=isr, target_replicas=replicas, target_adding=0,
                       target_removing=0)


# ============================================================================================
# Both variants: the controller's checks of an AlterPartition request
# ============================================================================================


def alter_partition_verdict(cfg, s: State, leader: int, req: AlterPartition, live: int) -> int:
    """The controller's verdict on `leader`'s request: ACCEPTED, or the error of the first check
    that fails, in the order of `ReplicationControlManager.validateAlterPartitionData` [kafka-tlaplus v3.5 §2.9.2]."""
    p = s.partition
    if req.leader_epoch != p.leader_epoch or p.leader != leader:
        return STALE_REQUEST  # FENCED_LEADER_EPOCH / INVALID_REQUEST (not the leader)
    if req.partition_epoch != p.partition_epoch and not cfg.mutated.stale_partition_epoch:
        return STALE_REQUEST  # INVALID_UPDATE_VERSION
    if req.isr & ~mask(p.replicas) or not req.isr & bit(leader):
        return STALE_REQUEST  # INVALID_REQUEST: a member is not a replica, or the leader is missing
    if req.isr & ~live and not cfg.mutated.accept_ineligible_replica:
        return INELIGIBLE_REPLICA  # fenced or shutting down (KIP-841)
    if not cfg.mutated.ignore_added_broker_epoch and any(
            sent and s.brokers[f - 1].epoch != sent for f, sent in enumerate(req.added_epochs, 1)):
        return INELIGIBLE_REPLICA  # broker epoch mismatch: the added replica restarted since the leader saw it
    return ACCEPTED


# ============================================================================================
# The brokers: what a broker becomes [kafka-tlaplus v3.5 §2.2, §2.10]
# ============================================================================================


def running(b: Broker) -> bool:
    return b.status >= FENCED


def acts_as_leader(s: State, leader: int) -> Broker | None:
    """The broker if it is running and believes it leads (it may be stale)."""
    b = s.brokers[leader - 1]
    return b if b.status >= FENCED and b.known_leader == leader else None


def fresh_broker(n: int, status: int, epoch: int, log: tuple, hwm: int) -> Broker:
    """A broker that knows no metadata and holds no leader state."""
    zeros = (0,) * n
    return Broker(status, epoch, log, hwm, NO_LEADER, 0, 0, 0, 0, 0, 0, zeros, zeros, 0, NO_REQUEST[n], NO_RESPONSE)


def forgotten(n: int, b: Broker) -> Broker:
    """A broker that is not a replica: no log, no metadata for the partition, no leader state.
    An AlterPartition it sent may still be in flight."""
    new = fresh_broker(n, b.status, b.epoch, (), 0)
    if b.response.status == AWAITING_METADATA:
        return new
    return new._replace(pending=b.pending, response=b.response)


def learned(b: Broker, p: Partition) -> Broker:
    """`b` once it knows partition state `p`."""
    return b._replace(known_leader=p.leader, known_leader_epoch=p.leader_epoch, known_partition_epoch=p.partition_epoch,
                      known_isr=p.isr, known_replicas=mask(p.replicas))


def broker_after_learning(n: int, broker: int, b: Broker, p: Partition, truncate_to_hwm: bool = False,
                          keep_removed_log: bool = False) -> Broker:
    """What `broker` (state `b`) becomes when it learns partition state `p` [kafka-tlaplus v3.5 §2.10]: it
    takes the metadata; a leader waiting for metadata drops its request; a removed replica deletes
    its log; a new leader starts with fresh follower state and its LESO; a leader re-elected in a
    new epoch forgets the fetches of the old one; a demoted leader drops its leader state."""
    was_leader = b.known_leader == broker
    new = learned(b, p)
    if b.response.status == AWAITING_METADATA:
        new = new._replace(pending=NO_REQUEST[n], response=NO_RESPONSE)
    if not new.known_replicas & bit(broker) and not keep_removed_log:  # removed: delete the partition
        return forgotten(n, b)
    zeros = (0,) * n
    if p.leader == broker:
        if not was_leader:  # follower -> leader (§2.10.1): fresh follower state, new LESO
            return new._replace(maximal_isr=p.isr, leso=len(b.log), follower_leo=zeros, follower_epoch=zeros, fetched=0)
        if p.leader_epoch != b.known_leader_epoch:  # leader -> leader, new epoch (§2.10.3)
            return new._replace(maximal_isr=p.isr, leso=len(b.log), fetched=0)  # fetches of the old epoch lapse
        # same epoch (§2.10.2): the committed ISR replaces the maximal one
        return new._replace(maximal_isr=p.isr, fetched=b.fetched & ~p.isr)
    if truncate_to_hwm and p.leader_epoch != b.known_leader_epoch:  # the mutation: pre-KIP-101 truncation
        new = new._replace(log=new.log[:new.hwm])
    if was_leader:  # leader -> follower (§2.10.4)
        return new._replace(maximal_isr=0, leso=0, follower_leo=zeros, follower_epoch=zeros, fetched=0)
    return new


def after_fetch(follower: int, f: Broker, ld: Broker, hwm: int) -> tuple[Broker, Broker]:
    """The follower and its leader after a fetch that does not diverge: the follower takes the
    next record (if any) and `hwm`; the leader records the fetch."""
    i, offset = follower - 1, len(f.log)
    log = f.log + (ld.log[offset],) if offset < len(ld.log) else f.log
    leader_view = ld._replace(follower_leo=ld.follower_leo[:i] + (offset,) + ld.follower_leo[i + 1:],
                              follower_epoch=ld.follower_epoch[:i] + (f.epoch,) + ld.follower_epoch[i + 1:],
                              fetched=ld.fetched | bit(follower) & ~ld.maximal_isr)
    return f._replace(log=log, hwm=hwm), leader_view


# ============================================================================================
# A whole state: the initial state, partition changes, disruptions, the liveness goals
# ============================================================================================


def initial_state(cfg) -> State:
    """A settled partition: every replica in sync with an empty log; every broker knows the metadata."""
    n = cfg.brokers
    p = Partition(tuple(cfg.replicas), mask(cfg.isr), 0, 0, cfg.leader, 1, 1, 0, 0, False)
    bs = []
    for b in brokers(cfg):
        br = fresh_broker(n, UNFENCED, 1, (), 0)
        if b in cfg.replicas:
            br = learned(br, p)
        if b == cfg.leader:
            br = br._replace(maximal_isr=p.isr,
                             follower_epoch=tuple(1 if p.isr >> f & 1 else 0 for f in brokers(cfg)))
        bs.append(br)
    budget = Budget(cfg.max_reassignments, cfg.max_cancels, cfg.max_faults, cfg.max_unclean_shutdowns, cfg.max_shrinks,
                    cfg.max_records)
    return State(p, tuple(bs), budget, (), (), False, False)


def with_broker(s: State, broker: int, new: Broker) -> tuple:
    """The brokers of `s` with broker `broker` replaced by `new`."""
    i = broker - 1
    return s.brokers[:i] + (new,) + s.brokers[i + 1:]


def effective_min_isr(cfg, p: Partition) -> int:
    """MinISR as the controller applies it: Kafka takes min(MinISR, |replicas|)
    (`ReplicationControlManager.getTopicEffectiveMinIsr`)."""
    return min(cfg.min_isr, len(p.replicas)) if follows_kafka(cfg) else cfg.min_isr


def commit_partition(cfg, s: State, old: Partition, new: Partition, **changes) -> State:
    """Apply a partition change; record whether it completed a reassignment below MinISR: one in progress,
    or one that completed at once (an only-removing AlterPartitionReassignments: the replicas change
    with no reassignment in progress before or after)."""
    below = s.completed_below_min_isr
    completes = in_progress(old) or mask(old.replicas) != mask(new.replicas)
    if completes and not in_progress(new):
        below = below or size(new.isr) < effective_min_isr(cfg, new)
    return s._replace(partition=new, completed_below_min_isr=below, **changes)


class DisruptionRoom(NamedTuple):
    """Which disruptions the budgets of a state leave room for: its own budget, and the joint one if the
    config sets it."""

    faults: bool  # a fencing or a clean shutdown
    unclean_shutdowns: bool
    shrinks: bool
    permanent_failures: bool


def disruption_room(cfg, s: State) -> DisruptionRoom:
    """What `DisruptionRoom` says of `s`. The joint count is fencings, shutdowns, ISR shrinks and
    permanent failures so far in this run."""
    b, gone_now = s.budget, gone(s).bit_count()
    if cfg.max_disruptions >= 0:
        spent = (cfg.max_faults - b.faults + cfg.max_unclean_shutdowns - b.unclean_shutdowns + cfg.max_shrinks
                 - b.shrinks + gone_now)
        if spent >= cfg.max_disruptions:
            return NO_ROOM
    return DisruptionRoom(b.faults > 0, b.unclean_shutdowns > 0, b.shrinks > 0, gone_now < cfg.max_permanent_failures)


NO_ROOM = DisruptionRoom(False, False, False, False)


def gone(s: State) -> int:
    """The brokers that stopped for good."""
    return sum(1 << i for i, b in enumerate(s.brokers, 1) if b.status == GONE)


def reassignment_done(cfg, s: State) -> bool:
    """No reassignment is in progress (ReassignmentCompletes's goal)."""
    return not in_progress(s.partition)


def target_brokers(p: Partition) -> int:
    """The brokers of the reassignment's target: the replicas that are not being removed."""
    return mask(p.replicas) & ~p.removing


def available(cfg, s: State) -> bool:
    """The partition has a leader and ISR >= MinISR: producers with acks=all can write."""
    return bool(s.partition.leader) and size(s.partition.isr) >= cfg.min_isr


def stray_replicas(cfg, s: State) -> int:
    """Brokers that are not replicas of the partition but still hold its log (a broker gone for good
    holds nothing anyone can read)."""
    replicas = mask(s.partition.replicas)
    return sum(1 << i for i, b in enumerate(s.brokers, 1) if b.log and not replicas >> i & 1 and b.status != GONE)

