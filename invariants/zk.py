"""Properties of the `zk` model.

Short citations as in `specs.zk`: [seed] is the comment on KafkaController.onPartitionReassignment
(Kafka 2.4-3.x); Kafka class names refer to Apache Kafka 3.9.0. A property's docstring is what it
states (traces carry it); each returns True at once when it holds, and only when it fails builds a
`Violated` reason naming what breaks it.
"""

from harness.bitset import as_list, as_set, mask
from harness.model import Violated
from specs.zk import spec
from specs.zk.logic import alive, target_of
from specs.zk.state import CANCELLED, CANCELLING, DONE, FOLLOWER, IDLE, IN_PROGRESS, LEADER, State


def has_prefix(log: tuple, prefix: tuple) -> bool:
    return log[:len(prefix)] == prefix


# ------------------------------------------------------------------- the state znode, the topic znode


@spec.invariant(name="IsrSubsetOfReplicas", reads=("zk", "controller"))
def isr_subset_of_replicas(cfg, s: State):
    """Between controller events, every ISR member in the partition state znode is a replica in the
    topic znode (ISR ⊆ RS). (Inside an event Kafka's controller may break it for a moment: a
    cancellation writes RS = ORS at U1 and takes the adding replicas out of the ISR at U3.)"""
    zk = s.zk
    outside = zk.isr & ~mask(zk.rs)
    if not outside or s.controller.step != IDLE:
        return True
    return Violated(f"ISR members {as_set(outside)} are not replicas {as_list(zk.rs)}")


@spec.invariant(name="LeaderInIsr", reads=("zk",))
def leader_in_isr(cfg, s: State):
    """The leader in the state znode, if any, is in the ISR."""
    zk = s.zk
    if not zk.leader or zk.isr >> zk.leader & 1:
        return True
    return Violated(f"leader {zk.leader} is not in the ISR {as_set(zk.isr)}")


@spec.invariant(name="IsrNonEmpty", reads=("zk",))
def isr_non_empty(cfg, s: State):
    """The ISR in the state znode is never empty (Kafka keeps its last member)."""
    return True if s.zk.isr else Violated("the ISR is empty")


@spec.invariant(name="ReassignmentWellFormed", reads=("zk",))
def reassignment_well_formed(cfg, s: State):
    """The topic znode's replicas are distinct; AR and RR are disjoint subsets of them; some replica is
    not being removed."""
    zk = s.zk
    rs = mask(zk.rs)
    if len(set(zk.rs)) != len(zk.rs):
        return Violated(f"RS {as_list(zk.rs)} repeats a broker")
    if (zk.adding | zk.removing) & ~rs or zk.adding & zk.removing:
        return Violated(f"AR {as_set(zk.adding)} / RR {as_set(zk.removing)} are not disjoint subsets of "
                        f"RS {as_list(zk.rs)}")
    if not rs & ~zk.removing:
        return Violated(f"every replica of {as_list(zk.rs)} is being removed")
    return True


# ------------------------------------------------------------------- the reassignment, end to end


def names_target(cfg, s: State) -> bool:
    """ZooKeeper names the submitted target: in /admin/reassign_partitions, in the topic znode's AR/RR, or
    as the topic znode's plain RS (a target the assignment already has, as a set: a reorder)."""
    zk = s.zk
    if zk.admin == s.trs:
        return True
    if zk.adding | zk.removing:
        return target_of(zk) == s.trs
    return mask(zk.rs) == mask(s.trs)


@spec.invariant(name="AssignmentRecoverable", reads=("zk", "status", "ors", "trs"))
def assignment_recoverable(cfg, s: State):
    """While a reassignment is in progress, ZooKeeper alone still holds its original replicas (in the
    topic znode's RS) and names its target, so that a new controller can finish it ([seed]: "we have
    to update RS in ZK with TRS last since it's the only place where we store ORS persistently.
    This way, if the controller crashes before that step, we can still recover"); while a
    cancellation is in progress, RS holds the original replicas."""
    zk = s.zk
    if s.status == IN_PROGRESS:
        lost = s.ors & ~mask(zk.rs)
        if lost:
            return Violated(f"original replicas {as_set(lost)} are gone from RS {as_list(zk.rs)} before the "
                            f"reassignment to {as_list(s.trs)} completed")
        if not names_target(cfg, s):
            return Violated(f"ZooKeeper no longer names the target {as_list(s.trs)} (RS {as_list(zk.rs)}, "
                            f"admin znode {as_list(zk.admin) if zk.admin else 'absent'})")
    elif s.status == CANCELLING and s.ors & ~mask(zk.rs):
        return Violated(f"original replicas {as_set(s.ors & ~mask(zk.rs))} are gone from RS {as_list(zk.rs)} "
                        f"during the cancellation")
    return True


@spec.invariant(name="CompletionPostcondition", reads=("zk", "controller", "zombie", "brokers", "status", "ors", "trs"))
def completion_postcondition(cfg, s: State):
    """Once a reassignment is done, RS is its target (a cancellation: its original replicas) as a set, the
    ISR is within RS, and the leader is a replica of RS; an idle controller that has handled every
    broker change leaves it leaderless only if no live replica is in the ISR."""
    if s.status not in (DONE, CANCELLED):
        return True
    zk = s.zk
    goal = mask(s.trs) if s.status == DONE else s.ors
    if mask(zk.rs) != goal:
        return Violated(f"RS {as_list(zk.rs)} is not the goal {as_set(goal)} after completion")
    if zk.isr & ~goal:
        return Violated(f"ISR {as_set(zk.isr)} holds non-replicas after completion to {as_set(goal)}")
    if zk.leader and not goal >> zk.leader & 1:
        return Violated(f"leader {zk.leader} is not a replica of {as_set(goal)} after completion")
    c = s.controller
    if not zk.leader and c.epoch and c.step == IDLE and c.live == alive(s) and not s.zombie.epoch:
        could = zk.isr & c.live
        if could:
            return Violated(f"no leader after completion, although {as_set(could)} are live and in the ISR and "
                            f"the controller is idle with nothing left to handle")
    return True


@spec.invariant(name="DeleteOnlyAfterRemoval", reads=("deleted_in_use",))
def delete_only_after_removal(cfg, s: State):
    """A replica is deleted (StopReplica delete=true) only once it has left the ISR in ZooKeeper ([seed]:
    B4 takes RR out of the ISR, then B5 deletes them)."""
    return True if not s.deleted_in_use else Violated("a replica was deleted while in the ISR")


@spec.invariant(name="NoStaleControllerAction", reads=("stale_applied",))
def no_stale_controller_action(cfg, s: State):
    """No broker acts on a request of a controller older than one it has heard from (controller epochs)."""
    return True if not s.stale_applied else Violated("a broker applied a request of a superseded controller")


@spec.invariant(name="EpochsMonotonic", reads=("epoch_regressed",))
def epochs_monotonic(cfg, s: State):
    """The state znode's leader epoch and controller epoch never decrease."""
    return True if not s.epoch_regressed else Violated("a superseded controller wrote the state znode")


@spec.invariant(name="OneLeaderPerEpoch", reads=("brokers",))
def one_leader_per_epoch(cfg, s: State):
    """No two live brokers lead the partition in the same leader epoch."""
    seen = {}
    for i, b in enumerate(s.brokers, 1):
        if b.alive and b.role == LEADER:
            if b.leader_epoch in seen:
                return Violated(f"brokers {seen[b.leader_epoch]} and {i} both lead in leader epoch {b.leader_epoch}")
            seen[b.leader_epoch] = i
    return True


@spec.invariant(name="NoStrayReplicas", reads=("zk", "controller", "brokers", "status"))
def no_stray_replicas(cfg, s: State):
    """Once the controller is idle with no request in flight and no reassignment in progress, no live
    broker outside RS still serves the partition (leads or fetches)."""
    c = s.controller
    if not c.epoch or c.step != IDLE or s.zombie.epoch or s.status in (IN_PROGRESS, CANCELLING):
        return True
    if any(b.inbox for b in s.brokers):
        return True
    rs = mask(s.zk.rs)
    for i, b in enumerate(s.brokers, 1):
        if b.alive and b.role in (LEADER, FOLLOWER) and not rs >> i & 1:
            return Violated(f"broker {i} still {'leads' if b.role == LEADER else 'follows'} although RS is "
                            f"{as_list(s.zk.rs)}")
    return True


# ------------------------------------------------------------------------------------ the data


@spec.invariant(name="LeaderCompleteness", reads=("zk", "brokers", "committed"))
def leader_completeness(cfg, s: State):
    """The leader named in the state znode holds every committed record."""
    zk = s.zk
    if not zk.leader or not s.committed:
        return True
    log = s.brokers[zk.leader - 1].log
    if has_prefix(log, s.committed):
        return True
    return Violated(f"leader {zk.leader} holds {as_list(log)}, not the committed {as_list(s.committed)}")


@spec.invariant(name="NoAckedRecordLost", reads=("brokers", "committed", "acked"))
def no_acked_record_lost(cfg, s: State):
    """Every record acknowledged to an acks=all producer stays committed and on some broker's disk."""
    if not s.acked:
        return True
    if not has_prefix(s.committed, s.acked):
        return Violated(f"acknowledged {as_list(s.acked)} is not a prefix of the committed {as_list(s.committed)}")
    if any(has_prefix(b.log, s.acked) for b in s.brokers):
        return True
    return Violated(f"no broker holds the acknowledged records {as_list(s.acked)}")


# ------------------------------------------------------------------ Z3 forms (harness prove)
# The controller-level properties, and the lemmas that make them inductive, over specs/zk/symbolic.py.
from specs.zk import symbolic as _sym  # noqa: E402

spec.symbolic = _sym
spec.z3_invariants.update({**_sym.PROPERTIES, **_sym.LEMMAS})
