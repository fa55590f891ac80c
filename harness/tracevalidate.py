"""Trace validation: is what a real KRaft controller wrote a behaviour of the kraft model? (issue 40)

The metadata log (`harness.cluster.metadata`) is read batch by batch; the controller commits a batch
atomically, so one batch is one model step. What the log shows of the model is its controller
projection: the partition's registration (replicas, ISR, ELR, last known ELR, leader, both epochs,
adding, removing, leader recovery) and each broker's registration (epoch, and whether it may lead and
join the ISR: unfenced and not in controlled shutdown). Everything else in the model (logs, HWMs,
fetches, AlterPartition requests in flight, what each broker has learned) is unobserved.

The search keeps, at each observed batch, every model state consistent with the observations so far,
closed under unobserved steps (steps that leave the projection as it is); a batch is explained when
one model step from that set yields the projection the batch leaves. A batch that changes nothing the
model has (a NoOpRecord, another topic, the fencing that ends a controlled shutdown) needs no step.
The answer is the matching model trace (ITF, replayable with `harness replay`) or the first batch no
model step explains, with the model states possible just before it.

The model's config comes from the log itself: the brokers registered (mapped in id order to 1..N), the
partition's first registration (replicas, ISR, leader), the topic's min.insync.replicas and
unclean.leader.election.enable (else the cluster's defaults), ELR from the eligible.leader.replicas.version
feature, the kafka variant (Kafka's controller logic), no records produced (the model's data log is
unobserved), and budgets large enough never to bind. Kafka's epochs start at 0, the model's at 1; a
broker's epoch is mapped to the count of its registrations since the topic was created.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.bitset import as_list, as_set, mask
from harness.cluster.metadata import Batch, Record
from harness.errors import BadInput
from harness.model import Action, Model

OBSERVED_BUDGET = 1000  # far beyond the faults and requests of any observed log
MAX_STATES_SHOWN = 5  # model states possible before an unexplained record, in the JSON answer
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state")
BROKER_RECORDS = ("RegisterBrokerRecord", "BrokerRegistrationChangeRecord", "FenceBrokerRecord",
                  "UnfenceBrokerRecord", "UnregisterBrokerRecord")


@dataclass
class Registration:
    """A broker as the controller's records leave it."""

    epochs: int = 0  # registrations seen (since the topic was created, once it is)
    fenced: bool = True
    in_controlled_shutdown: bool = False

    @property
    def eligible(self) -> bool:
        return self.epochs > 0 and not self.fenced and not self.in_controlled_shutdown


@dataclass
class Observed:
    """What the log has said so far, in Kafka's terms."""

    brokers: dict[int, Registration] = field(default_factory=dict)
    cluster_configs: dict[str, str] = field(default_factory=dict)
    topic_configs: dict[str, str] = field(default_factory=dict)
    features: dict[str, int] = field(default_factory=dict)
    topic: str | None = None
    topic_id: str | None = None
    partition: dict[str, Any] | None = None  # PartitionRecord fields, with changes merged in

    def about(self, record: Record) -> bool:
        """A record about the brokers or the validated partition."""
        d = record.data
        return record.type in BROKER_RECORDS or (d.get("topicId") == self.topic_id and d.get("partitionId", 0) == 0)

    def named_brokers(self) -> set[int]:
        """Every broker id the registrations and the partition name."""
        p = self.partition or {}
        named = {b for b, r in self.brokers.items() if r.epochs}
        for key in ("replicas", "isr", "eligibleLeaderReplicas", "lastKnownElr", "addingReplicas", "removingReplicas"):
            named.update(p.get(key) or ())
        return named | ({p["leader"]} if p.get("leader", -1) >= 0 else set())

    def apply(self, record: Record, topic: str | None) -> str | None:
        """Merge one record in; returns why the model cannot follow it (its config is fixed), or None."""
        d, kind = record.data, record.type
        if kind == "FeatureLevelRecord":
            self.features[d["name"]] = d["featureLevel"]
        elif kind == "ConfigRecord" and d["resourceType"] == 4 and d["resourceName"] == "":
            self.cluster_configs[d["name"]] = d["value"]
        elif kind == "ConfigRecord" and d["resourceType"] == 2 and d["resourceName"] == self.topic:
            if self.partition is not None and d["name"] in ("min.insync.replicas", "unclean.leader.election.enable"):
                return f"the topic's {d['name']} changed to {d['value']}: the model's config is fixed at creation"
            self.topic_configs[d["name"]] = d["value"]
        elif kind == "TopicRecord" and self.topic is None and (
                d["name"] == topic if topic else d["name"] not in INTERNAL_TOPICS):
            self.topic, self.topic_id = d["name"], d["topicId"]
        elif kind == "RemoveTopicRecord" and d["topicId"] == self.topic_id:
            return "the topic was deleted"
        elif kind == "PartitionRecord" and d["topicId"] == self.topic_id and d["partitionId"] == 0:
            self.partition = dict(d)
            for b in self.brokers.values():  # the model's epochs count from the topic's creation
                b.epochs = 1 if b.epochs else 0
        elif kind == "PartitionChangeRecord" and d["topicId"] == self.topic_id and d["partitionId"] == 0:
            for key in ("isr", "leader", "replicas", "removingReplicas", "addingReplicas", "eligibleLeaderReplicas",
                        "lastKnownElr", "leaderRecoveryState"):
                if key in d and d[key] is not None and not (key == "leader" and d[key] == -2) \
                        and not (key == "leaderRecoveryState" and d[key] == -1):
                    self.partition[key] = d[key]
            self.partition["partitionEpoch"] = self.partition["partitionEpoch"] + 1
            if d.get("leader", -2) != -2:  # Kafka bumps the leader epoch exactly then (PartitionRegistration.merge)
                self.partition["leaderEpoch"] = self.partition["leaderEpoch"] + 1
        elif kind in BROKER_RECORDS:
            b = self.brokers.setdefault(d["brokerId"], Registration())
            if kind == "RegisterBrokerRecord":
                b.epochs += 1
                b.fenced, b.in_controlled_shutdown = bool(d.get("fenced", True)), bool(d.get("inControlledShutdown"))
            elif kind == "FenceBrokerRecord":
                b.fenced = True
            elif kind == "UnfenceBrokerRecord":
                b.fenced = False
            elif kind == "UnregisterBrokerRecord":
                b.fenced = True
            else:  # BrokerRegistrationChangeRecord: 1 sets, -1 clears, 0 (absent) keeps
                if d.get("fenced", 0):
                    b.fenced = d["fenced"] == 1
                if d.get("inControlledShutdown", 0):
                    b.in_controlled_shutdown = d["inControlledShutdown"] == 1
        return None


@dataclass
class Verdict:
    explained: bool
    records_read: int
    records_validated: int  # records about the partition or the brokers, after the topic's creation
    steps_matched: int
    batches: int
    topic: str | None
    states: list = field(default_factory=list)  # the matching model trace (explained)
    actions: list = field(default_factory=list)
    observed_offsets: list = field(default_factory=list)  # for each model step, the offset of the batch it matches
    unexplained: Record | None = None
    unexplained_batch: list = field(default_factory=list)
    reason: str = ""
    possible_before: list = field(default_factory=list)  # model states (all of them share the projection)
    possible_count: int = 0
    model_next: list = field(default_factory=list)  # what one model step could have written instead
    model: Model | None = None


def model_for(observed: Observed, targets: tuple[tuple[int, ...], ...], ids: dict[int, int],
              completion: str = "kafka") -> Model:
    """The kraft model with the config the log (and the scenario's targets) determine, in the `completion`
    variant of the Kafka version that wrote the log."""
    from harness.registry import load_spec
    spec = load_spec("kraft")
    p = observed.partition

    def setting(name: str, default: str) -> str:
        return observed.topic_configs.get(name, observed.cluster_configs.get(name, default))

    values = dict(
        completion=completion, elr=observed.features.get("eligible.leader.replicas.version", 0) >= 1,
        unclean=setting("unclean.leader.election.enable", "false").lower() == "true",
        brokers=len(ids), replicas=tuple(ids[r] for r in p["replicas"]), isr=tuple(ids[r] for r in p["isr"]),
        leader=ids.get(p["leader"], 1), min_isr=int(setting("min.insync.replicas", "1")),
        targets=tuple(tuple(ids[r] for r in t) for t in targets) or (tuple(ids[r] for r in p["replicas"]),),
        max_records=0, max_reassignments=OBSERVED_BUDGET, max_cancels=OBSERVED_BUDGET, max_faults=OBSERVED_BUDGET,
        max_unclean_shutdowns=OBSERVED_BUDGET, max_shrinks=OBSERVED_BUDGET, max_permanent_failures=0,
        max_disruptions=-1)
    return spec.bind(spec.config_from_dict(values))


def targets_in(batches: list[Batch], topic_id: str) -> tuple[tuple[int, ...], ...]:
    """The reassignment targets a log shows: each replica list it writes, less the replicas being removed."""
    found: dict[tuple[int, ...], None] = {}
    removing: list[int] = []
    for batch in batches:
        for r in batch.records:
            if r.type in ("PartitionRecord", "PartitionChangeRecord") and r.data["topicId"] == topic_id \
                    and r.data["partitionId"] == 0:
                removing = r.data.get("removingReplicas") if r.data.get("removingReplicas") is not None else removing
                if r.data.get("replicas") is not None:
                    found[tuple(x for x in r.data["replicas"] if x not in removing)] = None
    return tuple(found)


def observed_projection(observed: Observed, ids: dict[int, int]):
    """The observed registrations in the model's terms (`specs.kraft.state.Partition`, broker epochs and
    eligibility), comparable with `model_projection`."""
    from specs.kraft.state import NO_LEADER, Partition
    p = observed.partition

    def ids_mask(key: str) -> int:
        return mask(ids[r] for r in (p.get(key) or ()))

    partition = Partition(tuple(ids[r] for r in p["replicas"]), ids_mask("isr"), ids_mask("eligibleLeaderReplicas"),
                          ids_mask("lastKnownElr"), ids.get(p["leader"], NO_LEADER), p["leaderEpoch"] + 1,
                          p["partitionEpoch"] + 1, ids_mask("addingReplicas"), ids_mask("removingReplicas"),
                          p.get("leaderRecoveryState", 0) == 1)
    brokers = tuple((b.epochs, b.eligible) for _, b in sorted(observed.brokers.items(), key=lambda kv: ids[kv[0]]))
    return partition, brokers


def model_projection(s) -> tuple:
    from specs.kraft.state import UNFENCED
    return s.partition, tuple((b.epoch, b.status == UNFENCED) for b in s.brokers)


def _key(s) -> tuple:
    return s._replace(budget=None)  # budgets only count down: two states that differ only there are one


def _closure(model: Model, frontier: dict, projection) -> dict:
    """Every state reachable from `frontier` by steps that keep the projection (unobserved steps), with
    back-pointers: key -> (state, parent key or None, action index or None, whether the parent is in the
    previous batch's set)."""
    seen = dict(frontier)
    todo = deque(frontier.values())  # breadth first: the trace takes the fewest unobserved steps
    while todo:
        state = todo.popleft()[0]
        parent = _key(state)
        for action, nxt in model.successors(state):
            k = _key(nxt)
            if k not in seen and model_projection(nxt) == projection:
                seen[k] = (nxt, parent, action, False)
                todo.append(seen[k])
    return seen


def validate(batches: list[Batch], topic: str | None = None,
             targets: tuple[tuple[int, ...], ...] | None = None, completion: str = "kafka") -> Verdict:
    """Validate a metadata log's batches against the kraft model (see the module's docstring)."""
    observed = Observed()
    records_read = sum(len(b.records) for b in batches)
    verdict = Verdict(True, records_read, 0, 0, len(batches), None)
    model = ids = frontier = projection = None
    history: list[dict] = []  # the closed state sets, one per matched batch, for the trace
    for batch in batches:
        for record in batch.records:
            reason = observed.apply(record, topic)
            verdict.records_validated += observed.partition is not None and observed.about(record)
            if reason:
                return _unexplained(verdict, model, frontier, record, batch, reason)
            if record.type == "PartitionRecord" and model is None and observed.partition is not None:
                registered = sorted(b for b, r in observed.brokers.items() if r.epochs)
                ids = {b: i for i, b in enumerate(registered, 1)}
                missing = [r for r in observed.partition["replicas"] if r not in ids]
                if missing or len(ids) > 8:
                    return _unexplained(verdict, None, None, record, batch,
                                        f"replica {missing[0]} was never registered" if missing
                                        else f"{len(ids)} brokers: the model has at most 8")
                chosen = targets if targets is not None else targets_in(batches, observed.topic_id)
                model = verdict.model = model_for(observed, chosen, ids, completion)
                verdict.topic = observed.topic
        if model is None:
            continue
        unknown = [b for b in observed.named_brokers() if b not in ids]
        if unknown:
            return _unexplained(verdict, model, frontier, first_relevant(batch, observed), batch,
                                f"broker {unknown[0]} was not registered when the topic was created: the model's "
                                f"brokers are fixed")
        new_projection = observed_projection(observed, ids)
        if frontier is None:  # the batch that created the partition: the model's initial state
            init = model.init_states()[0]
            if model_projection(init) != new_projection:
                return _unexplained(verdict, model, None, first_relevant(batch, observed), batch,
                                    "the partition's creation differs from the model's initial state "
                                    "(every broker registered and unfenced, the partition as created)")
            projection = new_projection
            frontier = _closure(model, {_key(init): (init, None, None, False)}, projection)
            history.append(frontier)
            verdict.observed_offsets.append(batch.base_offset)
            continue
        if new_projection == projection:
            continue  # nothing the model has changed
        matched = {}
        for k, (state, *_) in frontier.items():
            for action, nxt in model.successors(state):
                if model_projection(nxt) == new_projection:
                    matched.setdefault(_key(nxt), (nxt, k, action, True))
        if not matched:
            _unexplained(verdict, model, frontier, first_relevant(batch, observed), batch,
                         "no model step from the states possible before it writes this")
            verdict.unexplained = culprit(batch, observed, new_projection, verdict.model_next)
            return verdict
        projection = new_projection
        frontier = _closure(model, matched, projection)
        history.append(frontier)
        verdict.observed_offsets.append(batch.base_offset)
        verdict.steps_matched += 1
    if model is None:
        raise BadInput(f"the metadata log creates no topic {topic!r}" if topic else
                       "the metadata log creates no topic to validate (only internal ones, or none)")
    verdict.states, verdict.actions = _trace(model, history)
    return verdict


def first_relevant(batch: Batch, observed: Observed) -> Record:
    for r in batch.records:
        if observed.about(r):
            return r
    return batch.records[0]


def _trace(model: Model, history: list[dict]) -> tuple[list, list]:
    """One model trace through every matched batch: the back-pointers from a state of the last set."""
    states: list = []
    actions: list = []
    level, key = len(history) - 1, next(iter(history[-1]))
    while key is not None:
        state, parent, action, from_previous = history[level][key]
        states.append(state)
        actions.append(None if action is None else model.actions[action])
        key, level = parent, level - from_previous
    states.reverse()
    actions.reverse()
    return states, actions


def culprit(batch: Batch, observed: Observed, projection, model_next: list) -> Record:
    """The record of an unexplained batch to name: when some model step writes the brokers' part as
    observed, the partition's record is at fault; when one writes the partition's part, the brokers'."""
    partition_records = [r for r in batch.records if observed.about(r) and r.type not in BROKER_RECORDS]
    broker_records = [r for r in batch.records if r.type in BROKER_RECORDS]
    if partition_records and any(p[1] == projection[1] for p in model_next):
        return partition_records[0]
    if broker_records and any(p[0] == projection[0] for p in model_next):
        return broker_records[0]
    return first_relevant(batch, observed)


def _unexplained(verdict: Verdict, model: Model | None, frontier: dict | None, record: Record, batch: Batch,
                 reason: str) -> Verdict:
    verdict.explained = False
    verdict.unexplained = record
    verdict.unexplained_batch = list(batch.records)
    verdict.reason = reason
    if frontier:
        states = [entry[0] for entry in frontier.values()]
        verdict.possible_count = len(states)
        verdict.possible_before = states[:MAX_STATES_SHOWN]
        nexts = {}
        for s in states:
            for _, nxt in model.successors(s):
                proj = model_projection(nxt)
                if proj != model_projection(s):
                    nexts.setdefault(proj, None)
        verdict.model_next = list(nexts)
    return verdict


def partition_text(p) -> str:
    """A model partition in Kafka's words (epochs as Kafka counts them)."""
    leader = p.leader if p.leader else -1
    text = (f"replicas {as_list(p.replicas)} isr {as_set(p.isr)} elr {as_set(p.elr)} leader {leader} "
            f"leaderEpoch {p.leader_epoch - 1} partitionEpoch {p.partition_epoch - 1}")
    if p.adding or p.removing:
        text += f" adding {as_set(p.adding)} removing {as_set(p.removing)}"
    if p.last_known_elr:
        text += f" lastKnownElr {as_set(p.last_known_elr)}"
    return text + (" recovering" if p.recovering else "")


def projection_text(projection) -> str:
    partition, brokers = projection
    regs = ", ".join(f"{i}: epoch {e} {'eligible' if ok else 'fenced/shutting down'}"
                     for i, (e, ok) in enumerate(brokers, 1))
    return f"{partition_text(partition)}; brokers {regs}"


def verdict_json(verdict: Verdict, trace_path: Path | None) -> dict:
    out: dict[str, Any] = {
        "explained": verdict.explained, "topic": verdict.topic, "records_read": verdict.records_read,
        "records_validated": verdict.records_validated, "batches": verdict.batches,
        "model_steps_matched": verdict.steps_matched, "trace": str(trace_path) if trace_path else None,
        "model_steps": len(verdict.states) - 1 if verdict.states else 0,
    }
    if verdict.model is not None:
        from harness.config import config_to_dict
        out["model_config"] = config_to_dict(verdict.model.config)
    if not verdict.explained:
        r = verdict.unexplained
        out["first_unexplained_record"] = None if r is None else {"offset": r.offset, "type": r.type, "data": r.data}
        out["unexplained_batch"] = [{"offset": x.offset, "type": x.type, "data": x.data} for x in verdict.unexplained_batch]
        out["reason"] = verdict.reason
        out["possible_states_before"] = verdict.possible_count
        out["possible_before"] = [verdict.model.to_itf(s) for s in verdict.possible_before] if verdict.model else []
        out["model_could_write"] = [projection_text(p) for p in verdict.model_next]
    return out


def action_label(model: Model, action: Action | None) -> str:
    return "init" if action is None else model.format_action(action)


def verdict_lines(result: dict) -> list[str]:
    """`verdict_json`'s answer as the text `conform` prints."""
    lines = []
    if "scenario" in result:
        lines.append(f"scenario {result['scenario']} on Kafka {result['kafka']}: cluster started in "
                     f"{result['cluster_start_seconds']:.1f} s, scenario {result['scenario_seconds']:.1f} s, "
                     f"validation {result['validation_seconds']:.1f} s; logs and data in {result['workdir']}")
    lines.append(f"read {result['records_read']} records in {result['batches']} batches; "
                 f"{result['records_validated']} about topic {result['topic']}'s partition 0 and the brokers")
    if result["explained"]:
        lines.append(f"explained: {result['model_steps_matched']} observed changes matched by "
                     f"{result['model_steps']} model steps; trace {result['trace']}")
    else:
        r = result.get("first_unexplained_record")
        if r:
            lines.append(f"unexplained: record at offset {r['offset']} ({r['type']} {json.dumps(r['data'])}): "
                         f"{result['reason']}")
        else:
            lines.append(f"unexplained: {result['reason']}")
        lines.append(f"model states possible just before it: {result['possible_states_before']}; "
                     f"what one model step could write instead:")
        lines.extend(f"  {text}" for text in result["model_could_write"])
    side = result.get("broker_side")
    if side:
        lines.append(f"brokers: describeTopics {side['describe']}, model {side.get('model')}: "
                     f"{'match' if side.get('matches_model') else 'DIFFER'}; end offset {side['end_offset']} of "
                     f"{side['produced_acked']} acked records")
    return lines
