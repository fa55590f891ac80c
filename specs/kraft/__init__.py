"""KRaft partition reassignment (seed 000) on the replication core (seed 003), with ELR.

Who acts: the controller (reassignment, cancellation, AlterPartition handling, fencing, elections)
and the brokers (producing, fetching, advancing the high watermark, proposing ISR changes,
learning metadata, crashing and restarting). One partition; brokers 1..N.

Abstractions (see docs/ARCHITECTURE.md, "The kraft model"):
* Records are identified by (offset, leader epoch); a log is the tuple of the epochs its records
  were written in. Values and producer ids are abstracted away.
* The metadata log is abstracted to "a broker learns the controller's current partition state":
  a broker can skip intermediate states, as the materialised snapshots of seed 003 §2.3.2 do.
* A fetch is one request/response step: the follower reports its fetch offset, the leader
  records it and returns the next record (or the follower truncates on divergence).
* An AlterPartition request is in flight from `propose_*` until `handle_alter_partition`; its
  response is in flight until `handle_alter_partition_response`.
* An unclean shutdown loses the unflushed suffix of the log when the broker restarts (the
  `keep` parameter of `restart_after_unclean_shutdown` is how much was flushed).

The controller's partition-change logic is in `specs.kraft.controller` as pure functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, NamedTuple

from harness.itf import Bool, ById, IdSet, Int, OptId, Seq
from harness.model import Config, Spec, budget, distinct_ids, ids, param, variant
from harness.speed import fast_replace, memoized, per_state, setter
from specs.kraft import controller as ctl
from specs.kraft.controller import NO_LEADER, Partition, Rules, bit, mask, size

# Broker status, as the controller sees it and as the process is.
OFFLINE = 0  # shut down cleanly (controlled shutdown): log flushed
CRASHED = 1  # shut down uncleanly: the unflushed suffix is lost at restart
FENCED = 2  # running and registered, fenced (no heartbeat yet, or missed heartbeats)
UNFENCED = 3  # running and unfenced: may lead and join the ISR


# Static bounds of the config (relations between fields are `validate`).
MAX_BROKERS = 8  # as validate() had it: `prove` proves the Z3 properties for 1..8 brokers by default
MAX_TARGETS = 64  # each target is an action per leader choice
MAX_RECORDS = 100  # restart_after_unclean_shutdown has an action per (broker, flushed length 0..max_records)


@dataclass(frozen=True)
class KraftConfig(Config):
    completion: str = variant("seed", "completion rule and controller logic: seed 000, or Kafka 3.x controllers "
                                      "(reference/kafka-controller-semantics.md)", ("seed", "kafka"))
    elr: bool = variant(True, "KIP-966 Eligible Leader Replicas")
    unclean: bool = variant(False, "unclean.leader.election.enable")
    brokers: int = param(3, "brokers 1..N", lo=1, hi=MAX_BROKERS)
    replicas: tuple[int, ...] = ids((1, 2), "initial replica assignment (ordered)", most=MAX_BROKERS)
    isr: tuple[int, ...] = ids((1, 2), "initial ISR", most=MAX_BROKERS)
    leader: int = param(1, "initial leader", lo=1, hi=MAX_BROKERS)
    min_isr: int = param(2, "min.insync.replicas", lo=1, hi=MAX_BROKERS)
    targets: tuple[tuple[int, ...], ...] = ids(((2, 3),), "assignments AlterPartitionReassignments may request",
                                               most=MAX_BROKERS, lists=MAX_TARGETS)
    max_records: int = param(1, "records producers may write", lo=0, hi=MAX_RECORDS)
    max_reassignments: int = budget(1, "AlterPartitionReassignments requests")
    max_cancels: int = budget(1, "cancellations")
    max_faults: int = budget(1, "fencings and clean shutdowns")
    max_unclean_shutdowns: int = budget(0, "unclean shutdowns (power loss)")
    max_shrinks: int = budget(0, "ISR shrinks proposed by the leader")
    max_disruptions: int = budget(-1, "fencings, clean and unclean shutdowns and ISR shrinks together, in one run "
                                      "(-1: only the limits above)", least=-1)

    def validate(self) -> str | None:
        for name, group in [("replicas", self.replicas), ("isr", self.isr)] + [("targets", t) for t in self.targets]:
            if not distinct_ids(group, self.brokers):
                return f"{name} must be non-empty lists of distinct brokers in 1..{self.brokers}"
        if not set(self.isr) <= set(self.replicas) or self.leader not in self.isr:
            return "isr must be a subset of replicas and contain the leader"
        return None


class AlterPartition(NamedTuple):
    """An AlterPartition request in flight (seed 003 §2.9.2); isr 0 = none."""

    isr: Annotated[int, IdSet()]
    leader_epoch: int
    partition_epoch: int
    added_epochs: Annotated[tuple, ById(Int())]  # broker epochs of replicas being added (0 = not added)


# AlterPartition response status (reference §7)
NO_RESPONSE_YET = 0  # the request (if any) is still in flight to the controller
ACCEPTED = 1
INELIGIBLE_REPLICA = 2  # the leader rolls its Maximal ISR back to the ISR
STALE_REQUEST = 3  # FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, INVALID_REQUEST: wait for metadata
AWAITING_METADATA = 4  # answered; the leader keeps its pending state until it learns new metadata


class Response(NamedTuple):
    """The controller's AlterPartition response to a broker (status: see the constants above)."""

    status: int
    isr: Annotated[int, IdSet()]
    leader_epoch: int
    partition_epoch: int


class Broker(NamedTuple):
    status: int  # OFFLINE, CRASHED, FENCED, UNFENCED
    epoch: int  # broker epoch: a new one at every registration (restart)
    log: Annotated[tuple, Seq(Int())]  # the leader epoch of each record
    hwm: int  # local high watermark
    # the partition metadata this broker has learned
    known_leader: Annotated[int, OptId()]
    known_leader_epoch: int
    known_partition_epoch: int
    known_isr: Annotated[int, IdSet()]
    known_replicas: Annotated[int, IdSet()]
    # leader state (seed 003 §2.7, §2.9, §2.10)
    maximal_isr: Annotated[int, IdSet()]
    leso: int  # Leader Epoch Start Offset
    follower_leo: Annotated[tuple, ById(Int())]  # last fetch offset of each follower
    follower_epoch: Annotated[tuple, ById(Int())]  # broker epoch of each follower's last fetch
    fetched: Annotated[int, IdSet()]  # followers that fetched in the current leader epoch
    pending: AlterPartition
    response: Response


class Budget(NamedTuple):
    """Perturbations left (healing is never bounded)."""

    reassignments: int
    cancels: int
    faults: int
    unclean_shutdowns: int
    shrinks: int
    records: int


class State(NamedTuple):
    partition: Partition
    brokers: Annotated[tuple, ById(Broker)]
    budget: Budget
    # history, for properties
    committed: Annotated[tuple, Seq(Int())]  # the true committed log (epochs), up to the true HWM
    acked: Annotated[tuple, Seq(Int())]  # records acknowledged to acks=all producers
    committed_overwritten: Annotated[bool, Bool()]  # a leader committed a log that contradicts `committed`
    completed_below_min_isr: Annotated[bool, Bool()]  # a completion left ISR < MinISR


PRESETS = {
    # A move [1,2] -> [2,3] that removes the leader, with a cancellation and one record: no faults.
    "tiny": {"max_faults": 0},
    # Exhausted by BFS in about a minute, every rule fires: the move of an under-replicated partition
    # (follower 2 not yet in the ISR), a record, a cancellation, and one disruption of any kind.
    "ci": {"isr": [1], "max_records": 1, "max_unclean_shutdowns": 1, "max_shrinks": 1, "max_disruptions": 1},
    # The mutations' config: the move, two records, a cancellation, one unclean shutdown.
    "small": {"max_faults": 0, "max_unclean_shutdowns": 1, "max_records": 2},
    # Two brokers, the follower outside the ISR, Kafka's default MinISR 1, no reassignment: the smallest
    # config of the ISR-expansion bugs of seed 003 §2.9 (the config of expand_without_fetch_in_epoch).
    "lagging": {"brokers": 2, "replicas": [1, 2], "isr": [1], "min_isr": 1, "targets": [[1, 2]],
                "max_reassignments": 0, "max_cancels": 0, "max_faults": 0, "max_unclean_shutdowns": 1,
                "max_records": 2},
    # Faults of every kind together (for the Spark engine): fencing or clean shutdown, power loss, ISR shrink.
    "faults": {"max_unclean_shutdowns": 1, "max_shrinks": 1},
    # Known-unsafe configurations (expected counterexamples, see `expected` below).
    "unclean-election-loss": {"unclean": True, "max_faults": 2},
    "last-replica-standing": {"elr": False, "max_unclean_shutdowns": 2},
    "kafka-cancel-without-elr": {"completion": "kafka", "elr": False, "isr": [1], "max_records": 1,
                                 "max_unclean_shutdowns": 1, "max_disruptions": 1},
    # Beyond BFS reach, for the Hypothesis engine: 6 brokers, RF 5, two reassignments and faults.
    "large": {"brokers": 6, "replicas": [1, 2, 3, 4, 5], "isr": [1, 2, 3, 4, 5], "min_isr": 3,
              "targets": [[1, 2, 3, 4, 6], [2, 3, 4, 5, 6]], "max_reassignments": 2, "max_records": 3, "max_faults": 2,
              "max_unclean_shutdowns": 1, "max_shrinks": 1},
    "nightly": {"brokers": 4, "replicas": [1, 2, 3], "isr": [1, 2, 3], "targets": [[1, 2, 4], [3, 4]],
                "max_records": 2, "max_unclean_shutdowns": 1, "max_shrinks": 1},
}


fast_replace(Partition, AlterPartition, Response, Broker, Budget, State)
# Positional setters for the updates made on nearly every step (twice as fast as `_replace`).
set_brokers = setter(State, "brokers")
set_status = setter(Broker, "status")
set_log = setter(Broker, "log")
set_hwm = setter(Broker, "hwm")
set_log_and_hwm = setter(Broker, "log", "hwm")
set_known = setter(Broker, "known_leader", "known_leader_epoch", "known_partition_epoch", "known_isr", "known_replicas")
set_leader_state = setter(Broker, "maximal_isr", "leso", "follower_leo", "follower_epoch", "fetched")
set_follower_view = setter(Broker, "follower_leo", "follower_epoch", "fetched")
set_request = setter(Broker, "pending", "response")

EXPECTED = {
    "unclean-election-loss": "unclean leader election (enabled) elects a replica without the committed log: acknowledged data is lost",
    "last-replica-standing": "without ELR, the last ISR member loses its unflushed suffix in an unclean shutdown and stays "
                             "the only leader candidate (seed 003 §2.4.1, fixed by KIP-966)",
    "kafka-cancel-without-elr": "Kafka's controller refuses a cancellation only when the reverted ISR is empty (reference "
                                "§5), not below MinISR as seed 000 §4.5 does; without ELR the leader then commits with "
                                "ISR < MinISR and one unclean shutdown loses the committed record",
}

spec = Spec("kraft", KraftConfig, State, doc=__doc__, presets=PRESETS, deadlock=False, expected=EXPECTED,
            mutation_preset="small")
spec.mutation("completion_ignores_min_isr", rule="alter_partition_reassignments",
              removes="complete although the final ISR < MinISR (seed 000 §4.2 rule 1)")
spec.mutation("keep_removing_in_isr", rule="alter_partition_reassignments",
              removes="`removing` replicas stay in the ISR at completion (seed 000 §4.2 step 3)")
spec.mutation("stale_partition_epoch", rule="handle_alter_partition",
              removes="the partition-epoch check: accept a request based on a stale partition epoch (seed 003 §2.9.2)")
spec.mutation("ignore_added_broker_epoch", rule="handle_alter_partition",
              removes="the broker-epoch check of added replicas (seed 003 §2.9.2)")
spec.mutation("expand_below_hwm", rule="propose_isr_expansion",
              removes="the HWM condition: add a follower that has not reached the HWM (seed 003 §2.9)")
spec.mutation("expand_below_leso", rule="propose_isr_expansion",
              removes="the LESO condition: add a follower that has not reached the LESO (seed 003 §2.9)")
spec.mutation("expand_without_fetch_in_epoch", rule="propose_isr_expansion", caught_at="lagging",
              removes="the fetch-in-epoch condition: add a follower with no fetch in the current leader epoch (seed 003 §2.9)")
spec.mutation("hwm_below_min_isr", rule="advance_hwm",
              removes="the MinISR condition: advance the HWM while ISR < MinISR with ELR on (KIP-966)")
spec.mutation("keep_unclean_in_elr", rule="restart_after_unclean_shutdown",
              removes="the ELR removal: a broker restarting after an unclean shutdown stays in the ELR (KIP-966)")


# ------------------------------------------------------------------------------------- helpers


def rules_of(cfg: KraftConfig) -> Rules:
    """The controller switches of a config (computed once per config object)."""
    rules = cfg.__dict__.get("_rules")
    if rules is None:
        rules = Rules(cfg.min_isr, cfg.elr, cfg.unclean, cfg.mutated)
        object.__setattr__(cfg, "_rules", rules)
    return rules


def brokers(cfg):
    return range(1, cfg.brokers + 1)


def leader_choices(cfg):
    """0 = keep the leader / let the rule decide; b = the controller picks broker b (seed variant:
    seed 000 lets it pick any member of the new ISR; Kafka's election is deterministic)."""
    return range(0, cfg.brokers + 1) if cfg.completion == "seed" else range(1)


def acceptable(s: State) -> int:
    """Brokers that may lead or join the ISR: running and unfenced."""
    return broker_facts(s.brokers).unfenced


def some_broker_is(s: State, status: int) -> bool:
    return bool(broker_facts(s.brokers).statuses >> status & 1)


class BrokerFacts(NamedTuple):
    """What rules and their preconditions ask about the brokers as a whole."""

    unfenced: int  # the running, unfenced brokers
    statuses: int  # the statuses some broker has (a set of status values)
    unreplicated: bool  # some running self-believed leader has records above its HWM
    idle: bool  # some running self-believed leader has no AlterPartition pending
    answered: bool  # some broker has an AlterPartition response to act on
    unanswered: bool  # some broker has an AlterPartition the controller has not answered


@per_state
def broker_facts(brs: tuple) -> BrokerFacts:
    """One pass over the brokers, once per state (`successors` asks every rule in turn)."""
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


def running(b: Broker) -> bool:
    return b.status >= FENCED


def acts_as_leader(s: State, leader: int) -> Broker | None:
    """The broker if it is running and believes it leads (it may be stale)."""
    b = s.brokers[leader - 1]
    return b if b.status >= FENCED and b.known_leader == leader else None


def with_broker(s: State, broker: int, new: Broker) -> tuple:
    i = broker - 1
    return s.brokers[:i] + (new,) + s.brokers[i + 1:]


def update_broker(s: State, broker: int, new: Broker) -> State:
    """`s` with broker `broker` replaced by `new`."""
    return set_brokers(s, with_broker(s, broker, new))


NO_REQUEST_CACHE: dict[int, AlterPartition] = {}


def no_request(n: int) -> AlterPartition:
    r = NO_REQUEST_CACHE.get(n)
    if r is None:
        r = NO_REQUEST_CACHE[n] = AlterPartition(0, 0, 0, (0,) * n)
    return r


NO_RESPONSE = Response(0, 0, 0, 0)


def fresh_broker(n: int, status: int, epoch: int, log: tuple, hwm: int) -> Broker:
    """A broker that knows no metadata and holds no leader state."""
    zeros = (0,) * n
    return Broker(status, epoch, log, hwm, NO_LEADER, 0, 0, 0, 0, 0, 0, zeros, zeros, 0, no_request(n), NO_RESPONSE)


def forgotten(n: int, b: Broker) -> Broker:
    """A broker that is not a replica: no log, no metadata for the partition, no leader state.
    An AlterPartition it sent may still be in flight."""
    new = fresh_broker(n, b.status, b.epoch, (), 0)
    if b.response.status == AWAITING_METADATA:
        return new
    return new._replace(pending=b.pending, response=b.response)


def learned(b: Broker, p: Partition) -> Broker:
    return set_known(b, p.leader, p.leader_epoch, p.partition_epoch, p.isr, mask(p.replicas))


def effective_min_isr(cfg, p: Partition) -> int:
    return min(cfg.min_isr, len(p.replicas)) if cfg.completion == "kafka" else cfg.min_isr


# ---------------------------------------------------------------------------------- init state


@spec.init
def init(cfg):
    """A settled partition: every replica in sync with an empty log; every broker knows the metadata."""
    n = cfg.brokers
    p = Partition(tuple(cfg.replicas), mask(cfg.isr), 0, 0, cfg.leader, 1, 1, 0, 0, False)
    bs = []
    for b in brokers(cfg):
        br = fresh_broker(n, UNFENCED, 1, (), 0)
        if b in cfg.replicas:
            br = learned(br, p)
        if b == cfg.leader:
            br = br._replace(maximal_isr=p.isr, fetched=p.isr & ~bit(b),
                             follower_epoch=tuple(1 if p.isr >> f & 1 else 0 for f in brokers(cfg)))
        bs.append(br)
    budget = Budget(cfg.max_reassignments, cfg.max_cancels, cfg.max_faults, cfg.max_unclean_shutdowns, cfg.max_shrinks,
                    cfg.max_records)
    yield State(p, tuple(bs), budget, (), (), False, False)


# =========================================================================== controller rules


def commit_partition(cfg, s: State, old: Partition, new: Partition, **changes) -> State:
    """Apply a partition change; record whether it completed a reassignment below MinISR."""
    below = s.completed_below_min_isr
    if ctl.in_progress(old) and not ctl.in_progress(new):
        below = below or size(new.isr) < effective_min_isr(cfg, new)
    return s._replace(partition=new, completed_below_min_isr=below, **changes)


@spec.rule(target=lambda cfg: range(len(cfg.targets)), new_leader=leader_choices,
           precondition=lambda cfg, s: s.budget.reassignments > 0, applies=lambda cfg: cfg.max_reassignments > 0)
def alter_partition_reassignments(cfg, s, target, new_leader):
    """Controller, on an AlterPartitionReassignments request (seed 000 §4.2).

    Growth: replicas become the union of current and target, `adding`/`removing` are set and the
    partition epoch is bumped; with nothing to add, the completion change is applied at once if
    the completion rules allow it.
    """
    p, rules = s.partition, rules_of(cfg)
    if cfg.completion == "kafka":
        new = ctl.kafka_reassign(p, cfg.targets[target], rules, acceptable(s)) if not new_leader else None
    else:
        new = ctl.seed_reassign(p, cfg.targets[target], rules, acceptable(s), new_leader)
    if new is None:
        return None
    return commit_partition(cfg, s, p, new, budget=s.budget._replace(reassignments=s.budget.reassignments - 1))


def cancellable(cfg, s: State) -> bool:
    """A cancellation is left in the budget and a reassignment is in progress; in the seed variant,
    also one the controller would not refuse as unsafe (so the refused ones cost one test, not one
    per leader choice)."""
    p = s.partition
    return (s.budget.cancels > 0 and ctl.in_progress(p)
            and (cfg.completion == "kafka" or not ctl.seed_cancel_refused(p, rules_of(cfg))))


@spec.rule(new_leader=leader_choices, precondition=cancellable, applies=lambda cfg: cfg.max_cancels > 0)
def cancel_reassignment(cfg, s, new_leader):
    """Controller: revert an ongoing reassignment (seed 000 §4.5); refused when the reverted ISR
    would be below MinISR, unless unclean leader election is enabled."""
    p, rules = s.partition, rules_of(cfg)
    if cfg.completion == "kafka":
        new = ctl.kafka_cancel(p, rules, acceptable(s)) if not new_leader else None
    else:
        new = ctl.seed_cancel(p, rules, acceptable(s), new_leader)
    if new is None:
        return None
    return s._replace(partition=new, budget=s.budget._replace(cancels=s.budget.cancels - 1))


@spec.rule(leader=brokers, new_leader=leader_choices, fair=True,
           precondition=lambda cfg, s: broker_facts(s.brokers).unanswered)
def handle_alter_partition(cfg, s, leader, new_leader):
    """Controller, on an AlterPartition request from `leader` (seed 003 §2.9.2, reference §7).

    Accepted only if the sender leads in the current leader epoch, the partition epoch matches,
    the new ISR is made of replicas and contains the leader, and every member is eligible
    (unfenced, and added replicas with their current broker epoch). Catch-up and completion are
    one atomic partition change (seed 000 §4.2).
    """
    b = s.brokers[leader - 1]
    req = b.pending
    if not req.isr or b.response.status:
        return None
    p, rules = s.partition, rules_of(cfg)
    live = acceptable(s)
    error = NO_RESPONSE_YET
    if req.leader_epoch != p.leader_epoch or p.leader != leader:
        error = STALE_REQUEST  # FENCED_LEADER_EPOCH / INVALID_REQUEST
    elif req.partition_epoch != p.partition_epoch and not cfg.mutated.stale_partition_epoch:
        error = STALE_REQUEST  # INVALID_UPDATE_VERSION
    elif req.isr & ~mask(p.replicas) or not req.isr & bit(leader):
        error = STALE_REQUEST  # INVALID_REQUEST
    elif req.isr & ~live:
        error = INELIGIBLE_REPLICA  # fenced or shutting down
    elif not cfg.mutated.ignore_added_broker_epoch and any(
            sent and s.brokers[f - 1].epoch != sent for f, sent in enumerate(req.added_epochs, 1)):
        error = INELIGIBLE_REPLICA  # broker epoch mismatch: the replica restarted
    ok = not error
    new = None
    if ok:
        if cfg.completion == "kafka":
            new = None if new_leader else ctl.kafka_build(p, rules, live, target_isr=req.isr, recovered=True)
            if new is None and new_leader:
                return None
        else:
            new = ctl.seed_alter_isr(p, req.isr, rules, live, new_leader)
            if new is None and (new_leader or req.isr != p.isr or p.recovering):
                return None
    elif new_leader:
        return None
    after = new or p
    response = Response(ACCEPTED, after.isr, after.leader_epoch, after.partition_epoch) if ok else Response(error, 0, 0, 0)
    s = update_broker(s, leader, b._replace(response=response))
    return commit_partition(cfg, s, p, new) if new is not None else s


def remove_broker(cfg, s: State, broker: int, new_leader: int, unclean_shutdown: int = 0) -> Partition | None:
    """The controller takes `broker` out of the ISR (fencing, shutdown); re-elects if it led."""
    p, rules = s.partition, rules_of(cfg)
    live = acceptable(s) & ~bit(broker)
    if cfg.completion == "kafka":
        if new_leader:
            return None
        return ctl.kafka_build(p, rules, live, target_isr=p.isr & ~bit(broker), unclean_shutdown=unclean_shutdown) or p
    new = ctl.seed_remove_broker(p, broker, rules, live, new_leader, unclean_shutdown)
    if new is None:
        unaffected = not (p.isr | p.elr) & bit(broker) and p.leader != broker
        return p if unaffected and not new_leader else None
    return new


def may_disrupt(cfg, s: State, budget: str) -> bool:
    """A disruption of this kind (fault, unclean_shutdown, shrink) is left in its budget, and in the
    joint one if the config sets it."""
    b = s.budget
    if not getattr(b, budget):
        return False
    if cfg.max_disruptions < 0:
        return True
    used = cfg.max_faults - b.faults + cfg.max_unclean_shutdowns - b.unclean_shutdowns + cfg.max_shrinks - b.shrinks
    return used < cfg.max_disruptions


@spec.rule(broker=brokers, new_leader=leader_choices, precondition=lambda cfg, s: may_disrupt(cfg, s, "faults"),
           applies=lambda cfg: cfg.max_faults > 0)
def fence(cfg, s, broker, new_leader):
    """Controller: a broker missed its heartbeats; it leaves every ISR and loses leadership
    (seed 003 §1.2.2, §2.8). The broker keeps running, possibly still believing it leads."""
    b = s.brokers[broker - 1]
    if b.status != UNFENCED:
        return None
    new = remove_broker(cfg, s, broker, new_leader)
    if new is None:
        return None
    brs = with_broker(s, broker, set_status(b, FENCED))
    return commit_partition(cfg, s, s.partition, new, brokers=brs, budget=s.budget._replace(faults=s.budget.faults - 1))


@spec.rule(broker=brokers, fair=True, precondition=lambda cfg, s: some_broker_is(s, FENCED),
           applies=lambda cfg: cfg.max_faults + cfg.max_unclean_shutdowns > 0)
def unfence(cfg, s, broker):
    """Controller: a running fenced broker heartbeats again. Kafka then elects a leader for a
    leaderless partition (reference §9); the seed variant does that in `clean_election`."""
    b = s.brokers[broker - 1]
    if b.status != FENCED:
        return None
    s2 = update_broker(s, broker, set_status(b, UNFENCED))
    if cfg.completion == "kafka" and not s.partition.leader:
        new = ctl.kafka_build(s.partition, rules_of(cfg), acceptable(s2), target_isr=s.partition.isr)
        if new is not None:
            return commit_partition(cfg, s2, s.partition, new)
    return s2


@spec.rule(broker=brokers, new_leader=leader_choices, precondition=lambda cfg, s: may_disrupt(cfg, s, "faults"),
           applies=lambda cfg: cfg.max_faults > 0)
def clean_shutdown(cfg, s, broker, new_leader):
    """A broker shuts down cleanly: controlled shutdown takes it out of the ISR (and leadership)
    first; its log is flushed."""
    return shut_down(cfg, s, broker, new_leader, OFFLINE, "faults")


@spec.rule(broker=brokers, new_leader=leader_choices,
           precondition=lambda cfg, s: may_disrupt(cfg, s, "unclean_shutdowns"),
           applies=lambda cfg: cfg.max_unclean_shutdowns > 0)
def unclean_shutdown(cfg, s, broker, new_leader):
    """A broker loses power. The controller fences it (it leaves the ISR; ELR may keep it until it
    re-registers). What it had not flushed is lost at restart."""
    return shut_down(cfg, s, broker, new_leader, CRASHED, "unclean_shutdowns")


def shut_down(cfg, s: State, broker: int, new_leader: int, status: int, budget: str) -> State | None:
    """A running broker stops (OFFLINE or CRASHED): it leaves the ISR and leadership, its process
    state is gone, its log stays on disk; one unit of `budget` is spent."""
    b = s.brokers[broker - 1]
    if not running(b):
        return None
    left = getattr(s.budget, budget)
    new = remove_broker(cfg, s, broker, new_leader)
    if new is None:
        return None
    down = fresh_broker(cfg.brokers, status, b.epoch, b.log, b.hwm)
    return commit_partition(cfg, s, s.partition, new, brokers=with_broker(s, broker, down),
                            budget=s.budget._replace(**{budget: left - 1}))


@spec.rule(broker=brokers, fair=True, precondition=lambda cfg, s: some_broker_is(s, OFFLINE),
           applies=lambda cfg: cfg.max_faults > 0)
def restart(cfg, s, broker):
    """A cleanly shut down broker starts and registers with a new broker epoch (fenced)."""
    b = s.brokers[broker - 1]
    if b.status != OFFLINE:
        return None
    return update_broker(s, broker, fresh_broker(cfg.brokers, FENCED, b.epoch + 1, b.log, b.hwm))


@spec.rule(broker=brokers, keep=lambda cfg: range(cfg.max_records + 1), fair=True,
           precondition=lambda cfg, s: some_broker_is(s, CRASHED),
           applies=lambda cfg: cfg.max_unclean_shutdowns > 0)
def restart_after_unclean_shutdown(cfg, s, broker, keep):
    """A crashed broker restarts with only `keep` records flushed, and registers with a new broker
    epoch and the unclean-shutdown flag: the controller removes it from the ELR (KIP-966)."""
    b = s.brokers[broker - 1]
    if b.status != CRASHED or keep > len(b.log):
        return None
    brs = with_broker(s, broker, fresh_broker(cfg.brokers, FENCED, b.epoch + 1, b.log[:keep], min(b.hwm, keep)))
    p = s.partition
    if cfg.mutated.keep_unclean_in_elr:
        new = p
    elif cfg.completion == "kafka":
        new = ctl.kafka_build(p, rules_of(cfg), acceptable(s), target_isr=p.isr & ~bit(broker),
                              unclean_shutdown=bit(broker)) or p
    elif p.elr & bit(broker):
        new = p._replace(elr=p.elr & ~bit(broker), partition_epoch=p.partition_epoch + 1)
    else:
        new = p
    return commit_partition(cfg, s, p, new, brokers=brs)


@spec.rule(candidate=brokers, fair=True, precondition=lambda cfg, s: not s.partition.leader,
           applies=lambda cfg: cfg.completion == "seed")
def clean_election(cfg, s, candidate):
    """Controller (seed variant): a leaderless partition elects an unfenced ISR member, or an
    unfenced ELR member when the ISR is empty."""
    new = ctl.seed_clean_election(s.partition, candidate, rules_of(cfg), acceptable(s))
    return None if new is None else s._replace(partition=new)


@spec.rule(candidate=brokers, precondition=lambda cfg, s: not s.partition.leader,
           applies=lambda cfg: cfg.completion == "seed" and cfg.unclean)
def unclean_election(cfg, s, candidate):
    """Controller (seed variant, unclean election enabled): no clean candidate is available, so
    any live replica is elected; the partition enters leader recovery."""
    new = ctl.seed_unclean_election(s.partition, candidate, rules_of(cfg), acceptable(s))
    return None if new is None else s._replace(partition=new)


# =============================================================================== broker rules


@spec.rule(broker=brokers, fair=True)
def learn_metadata(cfg, s, broker):
    """A running broker catches up with the metadata log and acts on the partition's state
    (seed 003 §2.10): leader or follower transitions; a removed replica deletes its log."""
    b = s.brokers[broker - 1]
    p = s.partition
    if b.status < FENCED or b.known_partition_epoch == p.partition_epoch:
        return None
    if not b.known_partition_epoch and not b.log and broker not in p.replicas:
        return None  # not a replica and holds nothing: nothing to learn
    return update_broker(s, broker, broker_after_learning(cfg.brokers, broker, b, p))


@memoized
def broker_after_learning(n: int, broker: int, b: Broker, p: Partition) -> Broker:
    """What `broker` (state `b`) becomes when it learns partition state `p`: pure, so cached (a
    search meets the same broker and partition in many states)."""
    was_leader = b.known_leader == broker
    new = learned(b, p)
    if b.response.status == AWAITING_METADATA:
        new = set_request(new, no_request(n), NO_RESPONSE)
    if not new.known_replicas & bit(broker):
        new = forgotten(n, b)
    elif p.leader == broker:
        if not was_leader:  # follower -> leader (§2.10.1): fresh follower state, new LESO
            zeros = (0,) * n
            new = set_leader_state(new, p.isr, len(b.log), zeros, zeros, 0)
        elif p.leader_epoch != b.known_leader_epoch:  # leader -> leader, new epoch (§2.10.3)
            new = set_leader_state(new, p.isr, len(b.log), b.follower_leo, b.follower_epoch, b.fetched & p.isr)
        else:  # same epoch (§2.10.2): the committed ISR replaces the maximal one
            new = new._replace(maximal_isr=p.isr)
    elif was_leader:  # leader -> follower
        zeros = (0,) * n
        new = set_leader_state(new, 0, 0, zeros, zeros, 0)
    return new


@spec.rule(leader=brokers, precondition=lambda cfg, s: s.budget.records > 0)
def produce(cfg, s, leader):
    """Leader: append an acks=all record in its leader epoch; refused while ISR < MinISR (seed 003 §2.6)."""
    b = acts_as_leader(s, leader)
    if b is None or size(b.known_isr) < cfg.min_isr:
        return None
    new = set_log(b, b.log + (b.known_leader_epoch,))
    return s._replace(brokers=with_broker(s, leader, new), budget=s.budget._replace(records=s.budget.records - 1))


@spec.rule(follower=brokers, fair=True)
def fetch(cfg, s, follower):
    """Follower: fetch from the leader it knows, in the same leader epoch (seed 003 §2.2.2).

    The leader records the fetch offset, broker epoch and "fetched in this leader epoch"; a
    diverging follower truncates to the common prefix, otherwise it appends the next record and
    takes min(leader HWM, its LEO) as its HWM.
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
        return update_broker(s, follower, set_log_and_hwm(f, flog[:common], min(f.hwm, common)))
    grows = offset < len(llog)
    hwm = min(ld.hwm, offset + grows)
    i = follower - 1
    if not grows and hwm == f.hwm and ld.follower_leo[i] == offset and ld.follower_epoch[i] == f.epoch \
            and ld.fetched & bit(follower):
        return None  # caught up, and the leader already knows it: nothing changes
    brs = list(s.brokers)
    brs[i], brs[lid - 1] = after_fetch(follower, f, ld, hwm)
    return set_brokers(s, tuple(brs))


@memoized
def after_fetch(follower: int, f: Broker, ld: Broker, hwm: int) -> tuple[Broker, Broker]:
    """The follower and its leader after a fetch that does not diverge: the follower takes the
    next record (if any) and `hwm`; the leader records the fetch. Pure, so cached."""
    i, offset = follower - 1, len(f.log)
    log = f.log + (ld.log[offset],) if offset < len(ld.log) else f.log
    leader_view = set_follower_view(ld, ld.follower_leo[:i] + (offset,) + ld.follower_leo[i + 1:],
                                    ld.follower_epoch[:i] + (f.epoch,) + ld.follower_epoch[i + 1:],
                                    ld.fetched | bit(follower))
    return set_log_and_hwm(f, log, hwm), leader_view


def unreplicated_leader(cfg, s: State) -> bool:
    """Some running broker that believes it leads has records above its HWM."""
    return broker_facts(s.brokers).unreplicated


@spec.rule(leader=brokers, fair=True, precondition=unreplicated_leader)
def advance_hwm(cfg, s, leader):
    """Leader: the HWM advances to the smallest fetch offset in the Maximal ISR (seed 003 §2.7);
    with ELR, only while the ISR >= MinISR (KIP-966). Records below it are committed, and acked to
    acks=all producers if the ISR >= MinISR."""
    b = acts_as_leader(s, leader)
    if b is None:
        return None
    under_min = size(b.known_isr) < cfg.min_isr
    if cfg.elr and under_min and not cfg.mutated.hwm_below_min_isr:
        return None
    hwm = len(b.log)
    others = b.maximal_isr & ~bit(leader)
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
    return s._replace(brokers=with_broker(s, leader, set_hwm(b, hwm)), committed=committed, acked=acked,
                      committed_overwritten=overwritten)


def idle_leader(cfg, s: State) -> bool:
    """Some running broker believes it leads and has no AlterPartition pending."""
    return broker_facts(s.brokers).idle


@spec.rule(leader=brokers, follower=brokers, fair=True, precondition=idle_leader)
def propose_isr_expansion(cfg, s, leader, follower):
    """Leader: send AlterPartition adding an out-of-sync follower that is in sync by seed 003 §2.9:
    its fetch offset reached the HWM and the LESO, and it fetched in the current leader epoch.
    The Maximal ISR becomes the union of the ISR and the proposal."""
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
    return update_broker(s, leader, b._replace(pending=req, maximal_isr=isr))


@spec.rule(leader=brokers, follower=brokers,
           precondition=lambda cfg, s: may_disrupt(cfg, s, "shrinks") and idle_leader(cfg, s),
           applies=lambda cfg: cfg.max_shrinks > 0)
def propose_isr_shrink(cfg, s, leader, follower):
    """Leader: send AlterPartition removing a follower that lags or stopped fetching (seed 003
    §2.9); the Maximal ISR keeps it until the change is committed."""
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
    return broker_facts(s.brokers).answered


@spec.rule(leader=brokers, fair=True, precondition=answered)
def handle_alter_partition_response(cfg, s, leader):
    """Leader: act on the AlterPartition response (seed 003 §2.9.2, as Kafka's Partition does).

    Accepted in its leader epoch and newer than what it knows: commit the ISR and partition
    epoch. INELIGIBLE_REPLICA: roll the Maximal ISR back to the ISR. Otherwise (accepted in a
    newer leader epoch, stale epochs): keep the pending state until the metadata arrives. Seed
    003 rolls back on every error; that reading is unsafe for a leader that has not yet learned
    it was replaced (see docs/ARCHITECTURE.md), so the model follows Kafka here.
    """
    b = s.brokers[leader - 1]
    r = b.response
    if not NO_RESPONSE_YET < r.status < AWAITING_METADATA:
        return None
    done = set_request(b, no_request(cfg.brokers), NO_RESPONSE)
    if b.status < FENCED or b.known_leader != leader or b.known_partition_epoch != b.pending.partition_epoch:
        new = done  # no longer leads, or learned newer metadata since sending: ignore the response
    elif r.status == ACCEPTED and r.leader_epoch == b.known_leader_epoch:
        new = done._replace(known_isr=r.isr, known_partition_epoch=r.partition_epoch, maximal_isr=r.isr)
    elif r.status == INELIGIBLE_REPLICA:
        new = done._replace(maximal_isr=b.known_isr)
    else:
        new = b._replace(response=Response(AWAITING_METADATA, 0, 0, 0))
    return update_broker(s, leader, new)


# ====================================================================================== liveness


def reassignment_done(cfg, s: State) -> bool:
    return not ctl.in_progress(s.partition)


spec.eventually("ReassignmentCompletes", goal=reassignment_done,
                trigger=lambda cfg, s: ctl.in_progress(s.partition),
                doc="a started reassignment eventually completes (or is cancelled) once faults stop")
