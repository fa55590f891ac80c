"""`harness conform`: a model checked against Apache Kafka's own controller code, on every transition.

A spec that can be checked declares a `Conformance` (`spec.conformance`, e.g. `specs/kraft/conform.py`): which
Kafka call each controller-level rule is, the controller's view of a model state (what both sides have), the
model's response to a call, and the divergences it declares (abstractions, Kafka behaviour not reproduced
yet), each with why. The Kafka side (`harness.conform.kafka`) runs the call on Kafka's managers and answers
the same view.

Two walks drive the comparison:

* `walk_bfs`: every transition of the model's state space, in BFS order (so the first divergence has a
  shortest trace). Kafka's answer depends only on the controller's view and the call, so each distinct
  (view, call) pair is run once on Kafka; a later transition with the same pair is compared with that answer.
  To run a pair, Kafka is brought to the state's counterpart by replaying the state's BFS-tree path from a
  snapshot of the initial state (Kafka's own SnapshotRegistry reverts to it), and every new pair of that
  state is run from a snapshot of the counterpart. Broker-side rules have no Kafka call: the controller's
  view must stay as it was (what they change, the requests brokers send, reaches Kafka in later calls).
* `walk_random`: Hypothesis draws walks (a successor per step) at configs too large to exhaust; Kafka follows
  each walk from the initial snapshot.

A divergence that a declaration covers is counted by its class and the walk goes on; after one that changes
the controller's state, the states beyond it are not compared (Kafka's state is no longer the model's). The
first undeclared divergence stops the walk: its model trace (ITF, replayable) plus Kafka's records and
response at that step.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

from harness.errors import BadInput
from harness.model import Action, Model, config_to_dict, preset_of, variant_of


class Call(NamedTuple):
    """One controller-level action as Kafka's code takes it: `op` names an adapter method
    (`harness.conform.kafka.KafkaController.apply`), `args` its arguments (ints and tuples of ints)."""

    op: str
    args: tuple = ()


class ControllerView(NamedTuple):
    """What both sides have: the partition registration and, per broker, its epoch and whether it is fenced.
    Sets are bitmasks (bit b = broker b); the leader is 0 for none (Kafka's -1)."""

    replicas: tuple
    isr: int
    elr: int
    last_known_elr: int
    leader: int
    leader_epoch: int
    partition_epoch: int
    adding: int
    removing: int
    recovering: bool
    brokers: tuple  # ((epoch, fenced), ...) for brokers 1..N


ABSTRACTION, NOT_REPRODUCED = "abstraction", "not reproduced"


@dataclass(frozen=True)
class Declared:
    """A divergence the spec declares, with why: `kind` is "abstraction" (the model abstracts Kafka here on
    purpose) or "not reproduced" (Kafka behaviour the model does not reproduce yet). `matches(call,
    differences, versions)` says whether a divergence is this one: `differences` maps each differing field to
    (model, Kafka); `version` is the Kafka version. `variants` (NAME=VALUE) limits it to the model variant it is
    about, so that it never hides a difference of another variant."""

    name: str
    kind: str
    why: str
    matches: Callable[[Call, dict, str], bool]
    changes_state: bool = False  # the controller's state differs afterwards (the states beyond are not compared)
    variants: tuple[str, ...] = ()

    def about(self, cfg) -> bool:
        """The model runs the variants this declaration is about (any, if it names none)."""
        return all(str(getattr(cfg, name)).lower() == value.lower()
                   for name, value in (v.split("=", 1) for v in self.variants))


@dataclass
class Conformance:
    """What a spec declares for `conform`."""

    applies: Callable[[Any], str | None]  # cfg -> None, or why this config cannot be compared
    call: Callable[[Any, tuple, Action], Call | None]  # (cfg, state, action) -> the Kafka call, None: broker-side
    view: Callable[[Any, tuple], ControllerView]  # (cfg, state) -> what the controller has
    response: Callable[[Any, tuple, tuple, Call], tuple | None]  # (cfg, state, next, call) -> the model's answer
    error_classes: dict[str, str]  # a Kafka error name -> the model's name for that answer
    setup: Callable[[Any], dict]  # cfg -> the Kafka side's topic and brokers (KafkaController's arguments)
    declared: list[Declared] = field(default_factory=list)
    mapping: list[tuple[str, str, str]] = field(default_factory=list)  # (rule, Kafka call, what is compared): docs
    # (first Kafka release "MAJOR.MINOR", NAME=VALUE variants): the variants that match Kafka's controller from that
    # release on, oldest first; `conform` selects those of the version it runs, unless the user names them
    variants: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)

    def variants_for(self, version: str) -> tuple[str, ...]:
        """The variants that match Kafka `version`: those of the newest listed release not after it."""
        chosen: tuple[str, ...] = ()
        for first, variants in self.variants:
            if release(first) <= release(version):
                chosen = variants
        return chosen


def release(version: str) -> tuple:
    """A Kafka version's (major, minor): 4.4.0 -> (4, 4)."""
    return tuple(int(part) for part in version.split(".")[:2])


FIELDS = ControllerView._fields
BROKER_SIDE_BUG = "model bug: a broker-side rule changed the controller's state"


@dataclass
class Divergence:
    states: list
    actions: list
    call: Call
    differences: dict  # field -> (model, Kafka)
    kafka_records: list[str]
    kafka_response: str
    classification: str
    declared: str | None = None
    trace_path: str | None = None

    def to_json(self) -> dict:
        return {"step": len(self.states) - 1, "call": {"op": self.call.op, "args": _plain(self.call.args)},
                "differences": {k: {"model": _plain(m), "kafka": _plain(k2)} for k, (m, k2) in self.differences.items()},
                "kafka_records": self.kafka_records, "kafka_response": self.kafka_response,
                "classification": self.classification, "declared": self.declared, "trace": self.trace_path}


@dataclass
class ConformResult:
    engine: str
    kafka_version: str
    complete: bool = False
    states: int = 0
    transitions: int = 0  # transitions compared (controller-level and broker-side)
    controller_transitions: int = 0  # of those, the ones with a Kafka call
    kafka_calls: int = 0  # distinct (view, call) pairs run on Kafka
    not_compared: int = 0  # transitions beyond a declared divergence that changed the state
    declared: dict = field(default_factory=dict)  # declared name -> count
    divergence: Divergence | None = None  # the first undeclared one: the walk stops there
    not_reproduced: Divergence | None = None  # the first declared Kafka behaviour the model does not reproduce
    stopped_by: str | None = None
    seconds: float = 0.0
    kafka: dict = field(default_factory=dict)  # the Kafka side's metadata version, ELR, unstable features
    walks: int = 0

    @property
    def outcome(self) -> str:
        if self.divergence is not None:
            return "divergence"
        if self.not_reproduced is not None:
            return "declared divergence"
        return "conformant" if self.complete else "incomplete"


def conformance_of(model: Model) -> Conformance:
    conf = model.spec.conformance
    if conf is None:
        raise BadInput(f"{model.name} declares no conformance with Kafka (specs/<name>/conform.py); kraft does")
    why = conf.applies(model.config)
    if why:
        raise BadInput(why)
    return conf


class Comparer:
    """Compares one transition: the model's view and answer against Kafka's, and classifies a difference."""

    def __init__(self, model: Model, conf: Conformance, kafka) -> None:
        self.model, self.conf, self.kafka = model, conf, kafka
        self.cfg = model.config

    def expected(self, state: tuple, nxt: tuple, call: Call) -> tuple:
        return self.conf.view(self.cfg, nxt), self.conf.response(self.cfg, state, nxt, call)

    def differences(self, expected: tuple, answer: tuple) -> dict:
        (view, response), (kview, kresponse) = expected, answer
        if kresponse is not None and kresponse[0] in self.conf.error_classes:  # errors the model answers alike
            kresponse = (self.conf.error_classes[kresponse[0]],)
        out = {f: (a, b) for f, a, b in zip(FIELDS, view, kview) if a != b}
        if response is not None and response != kresponse:
            out["response"] = (response, kresponse)
        return out

    def classify(self, call: Call, differences: dict) -> Declared | None:
        return next((d for d in self.conf.declared
                     if d.about(self.cfg) and d.matches(call, differences, self.kafka.version)), None)


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


# ------------------------------------------------------------------------------------------ the BFS walk


def walk_bfs(model: Model, kafka, *, max_states: int | None = None, progress: Callable | None = None) -> ConformResult:
    conf = conformance_of(model)
    cfg = model.config
    cmp = Comparer(model, conf, kafka)
    result = ConformResult("bfs", kafka.version, kafka=kafka.describe())
    start = time.monotonic()
    inits = model.init_states()
    if len(inits) != 1:
        raise BadInput(f"{model.name}: conform needs one initial state, this config has {len(inits)}")
    init = inits[0]
    base = kafka.mark()
    answers: dict[tuple, tuple] = {}  # (view, call) -> Kafka's (view, response) after the call
    fp = model.fingerprint
    parent: dict[int, tuple[int, int] | None] = {fp(init): None}  # the BFS tree, to rebuild paths
    off_kafka: set[int] = set()  # states beyond a declared divergence that changed the controller's state
    first = cmp.differences((conf.view(cfg, init), None), (kafka.view(), None))
    if first:
        result.divergence = _divergence(model, [init], [None], Call("initial"), first, kafka, cmp)
        result.seconds = time.monotonic() - start
        return result
    frontier = [init]
    while frontier:
        next_frontier = []
        for state in frontier:
            key_state = fp(state)
            view = conf.view(cfg, state)
            successors = model.successors(state)
            result.states += 1
            moved = False  # Kafka was brought to this state's counterpart (a snapshot is at `here`)
            here = base
            for index, nxt in successors:
                action = model.actions[index]
                nkey = fp(nxt)
                new = nkey not in parent
                if new:
                    parent[nkey] = (key_state, index)
                    next_frontier.append(nxt)
                if key_state in off_kafka:
                    result.not_compared += 1
                    if new:
                        off_kafka.add(nkey)
                    continue
                call = conf.call(cfg, state, action)
                result.transitions += 1
                if call is None:  # broker-side: the controller's view stays
                    after = conf.view(cfg, nxt)
                    if after != view:
                        differences = {f: (b, a) for f, a, b in zip(FIELDS, view, after) if a != b}
                        result.divergence = _divergence_at(model, parent, key_state, index, Call("none"), differences,
                                                           kafka, cmp, BROKER_SIDE_BUG)
                        break
                    continue
                result.controller_transitions += 1
                pair = (view, call)
                answer = answers.get(pair)
                if answer is None:
                    if not moved:
                        kafka.revert(base)
                        _replay_path(model, conf, kafka, parent, key_state)
                        here, moved = kafka.mark(), True
                    else:
                        kafka.revert(here)
                    answer = kafka.apply(call)
                    answers[pair] = answer
                    result.kafka_calls += 1
                differences = cmp.differences(cmp.expected(state, nxt, call), answer)
                if differences:
                    declared = cmp.classify(call, differences)
                    if declared is None:
                        _rerun(model, conf, kafka, base, parent, key_state, call)
                        result.divergence = _divergence_at(model, parent, key_state, index, call, differences, kafka,
                                                           cmp, _unclassified(cfg))
                        break
                    result.declared[declared.name] = result.declared.get(declared.name, 0) + 1
                    if declared.kind != ABSTRACTION and result.not_reproduced is None:  # its trace, Kafka's side
                        _rerun(model, conf, kafka, base, parent, key_state, call)
                        moved = False
                        result.not_reproduced = _divergence_at(model, parent, key_state, index, call, differences,
                                                               kafka, cmp, f"{declared.kind}: {declared.name}")
                    if declared.changes_state and new:
                        off_kafka.add(nkey)
            if result.divergence is not None:
                break
            if progress is not None and result.states % 1000 == 0:  # the progress line keeps its own pace
                progress(result, time.monotonic() - start)
            if max_states is not None and len(parent) > max_states:
                result.stopped_by = "max-states"
                break
        if result.divergence is not None or result.stopped_by:
            break
        frontier = next_frontier
    result.complete = result.divergence is None and result.stopped_by is None
    result.seconds = time.monotonic() - start
    return result


def _unclassified(cfg) -> str:
    if cfg.mutation != "none":
        return f"model bug (the mutation {cfg.mutation} removes a rule Kafka keeps)"
    return ("unclassified: a model bug (fix the model), or declare it in the spec's conformance (an abstraction, "
            "or Kafka behaviour not reproduced yet) with why")


def _path(model: Model, parent: dict, key: int) -> list[int]:
    """The action indices from the initial state to the state with fingerprint `key`, along the BFS tree."""
    out = []
    while parent[key] is not None:
        key, index = parent[key]
        out.append(index)
    return out[::-1]


def _states_along(model: Model, indices: list[int]) -> tuple[list, list]:
    state = model.init_states()[0]
    states, actions = [state], [None]
    for index in indices:
        action = model.actions[index]
        state = model.apply(state, action)
        states.append(state)
        actions.append(action)
    return states, actions


def _replay_path(model: Model, conf: Conformance, kafka, parent: dict, key: int) -> None:
    """Bring Kafka from the initial snapshot to the counterpart of the state with fingerprint `key`."""
    states, actions = _states_along(model, _path(model, parent, key))
    for state, action in zip(states, actions[1:]):
        call = conf.call(model.config, state, action)
        if call is not None:
            kafka.apply(call)


def _rerun(model: Model, conf: Conformance, kafka, base: int, parent: dict, key: int, call: Call) -> None:
    """Run `call` again from its state's counterpart, so that Kafka's last records and response are its own (the
    comparison may have used a memoized answer)."""
    kafka.revert(base)
    _replay_path(model, conf, kafka, parent, key)
    kafka.apply(call)


def _divergence_at(model, parent, key, index, call, differences, kafka, cmp, classification) -> Divergence:
    """The divergence of action `index` from the state with fingerprint `key`: its trace is that state's BFS-tree
    path and the action (which need not be the next state's tree edge)."""
    states, actions = _states_along(model, _path(model, parent, key) + [index])
    return _divergence(model, states, actions, call, differences, kafka, cmp, classification)


def _divergence(model, states, actions, call, differences, kafka, cmp, classification=None) -> Divergence:
    return Divergence(states, actions, call, differences, kafka.records(), kafka.response(),
                      classification or _unclassified(model.config))


# ------------------------------------------------------------------------------------- Hypothesis walks


def walk_random(model: Model, kafka, *, examples: int, steps: int, seed: int | None = None,
                progress: Callable | None = None) -> ConformResult:
    """Hypothesis draws `examples` walks of up to `steps` steps (each step: one of the enabled transitions);
    Kafka follows each walk. Derandomized unless `seed` is given: the same walks every run."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis import strategies as st

    conf = conformance_of(model)
    cfg = model.config
    cmp = Comparer(model, conf, kafka)
    result = ConformResult("hypothesis", kafka.version, kafka=kafka.describe())
    start = time.monotonic()
    init = model.init_states()[0]
    base = kafka.mark()
    seen: set[int] = set()
    found: list[Divergence] = []

    class Diverged(AssertionError):
        pass

    def walk(data):
        kafka.revert(base)
        states, actions = [init], [None]
        state, off = init, False
        counting = not found  # shrinking replays walks: count the search's walks only
        if counting:
            result.walks += 1
        for _ in range(steps):
            successors = model.successors(state)
            if not successors:
                break
            index, nxt = successors[data.draw(st.integers(0, len(successors) - 1))]
            action = model.actions[index]
            states.append(nxt)
            actions.append(action)
            if counting:
                seen.add(model.fingerprint(nxt))
            call = conf.call(cfg, state, action)
            if off:
                result.not_compared += counting
            elif call is None:
                result.transitions += counting
                if conf.view(cfg, nxt) != conf.view(cfg, state):
                    before, after = conf.view(cfg, state), conf.view(cfg, nxt)
                    differences = {f: (b, a) for f, a, b in zip(FIELDS, before, after) if a != b}
                    found[:] = [_divergence(model, list(states), list(actions), Call("none"), differences, kafka, cmp,
                                            BROKER_SIDE_BUG)]
                    raise Diverged()
            else:
                result.transitions += counting
                result.controller_transitions += counting
                answer = kafka.apply(call)
                result.kafka_calls += counting
                differences = cmp.differences(cmp.expected(state, nxt, call), answer)
                if differences:
                    declared = cmp.classify(call, differences)
                    if declared is None:
                        found[:] = [_divergence(model, list(states), list(actions), call, differences, kafka, cmp)]
                        raise Diverged()
                    if counting:
                        result.declared[declared.name] = result.declared.get(declared.name, 0) + 1
                        if declared.kind != ABSTRACTION and result.not_reproduced is None:
                            result.not_reproduced = _divergence(model, list(states), list(actions), call, differences,
                                                                kafka, cmp, f"{declared.kind}: {declared.name}")
                    off = off or declared.changes_state
            state = nxt
        if progress is not None and counting:
            progress(result, time.monotonic() - start)

    test = given(st.data())(walk)
    if seed is not None:
        test = hypothesis_seed(seed)(test)
    test = settings(max_examples=examples, derandomize=seed is None, database=None, deadline=None,
                    suppress_health_check=list(HealthCheck), phases=(Phase.generate, Phase.shrink), print_blob=False)(test)
    try:
        test()
    except Diverged:
        pass
    if found:
        result.divergence = found[-1]  # the last one is the shrunk walk
    result.states = len(seen) + 1
    result.complete = result.divergence is None
    result.seconds = time.monotonic() - start
    return result


# --------------------------------------------------------------------------------------- reporting


def write_divergences(model: Model, result: ConformResult, out) -> None:
    """The model's trace up to each reported diverging step, in ITF (`replay`, `show`), with Kafka's side in #meta:
    the undeclared divergence, and the first declared Kafka behaviour the model does not reproduce."""
    for d, what in ((result.divergence, "divergence"), (result.not_reproduced, "not-reproduced")):
        if d is not None:
            _write_divergence(model, result, d, what, out)


def _write_divergence(model: Model, result: ConformResult, d: Divergence, what: str, out) -> None:
    from pathlib import Path

    from harness.trace import Outcome, write_trace

    name = f"{model.name}-{preset_of(model.config) or 'custom'}"
    for key in model.spec.variants:  # as check's trace names: the variants that are not the preset's
        value = getattr(model.config, key)
        if value != model.spec.presets.get(preset_of(model.config) or "", {}).get(key, model.spec.config_fields[key].default):
            name += f"-{key}={str(value).lower()}"
    if model.config.mutation != "none":
        name += f"-{model.config.mutation}"
    path = Path(out) / f"{name}-conform-{what}-kafka-{result.kafka_version}.itf.json"
    extra = {"conformance": {"kafka_version": result.kafka_version, "step": len(d.states) - 1,
                             "call": d.call.op + str(_plain(d.call.args)), "classification": d.classification,
                             "differences": {k: f"model {_plain(m)}, kafka {_plain(k2)}"
                                             for k, (m, k2) in d.differences.items()},
                             "kafka_records": d.kafka_records, "kafka_response": d.kafka_response}}
    write_trace(path, model, d.states, d.actions, Outcome("none"), f"conform-{result.engine}", None, None, extra)
    d.trace_path = str(path)


def summary(model: Model, result: ConformResult) -> dict:
    conf = model.spec.conformance
    cfg = model.config
    by_class: dict[str, int] = {}
    for d in conf.declared:
        if d.name in result.declared:
            by_class[d.kind] = by_class.get(d.kind, 0) + result.declared[d.name]
    return {
        "spec": model.name, "preset": preset_of(cfg), "config": config_to_dict(cfg), "variant": variant_of(model.spec, cfg),
        "mutation": cfg.mutation, "engine": result.engine, "kafka_version": result.kafka_version, "kafka": result.kafka,
        "outcome": result.outcome, "complete": result.complete, "stopped_by": result.stopped_by,
        "stats": {"states": result.states, "transitions_compared": result.transitions,
                  "controller_transitions": result.controller_transitions, "kafka_calls": result.kafka_calls,
                  "not_compared": result.not_compared, "walks": result.walks, "seconds": round(result.seconds, 2)},
        "declared": {d.name: {"kind": d.kind, "count": result.declared.get(d.name, 0), "why": d.why,
                              "variants": list(d.variants)} for d in conf.declared},
        "divergences_by_class": by_class,
        "mapping": [{"rule": rule, "kafka": call, "compared": compared} for rule, call, compared in conf.mapping],
        "divergence": result.divergence.to_json() if result.divergence else None,
        "not_reproduced": result.not_reproduced.to_json() if result.not_reproduced else None,
    }


def exit_code(result: ConformResult) -> int:
    """0: every transition agrees (or differs only as a declared abstraction); 1: a divergence, or Kafka behaviour
    the model does not reproduce (declared); 3: a limit stopped the walk."""
    if result.divergence is not None or result.not_reproduced is not None:
        return 1
    return 0 if result.complete else 3


def perturbed_field() -> str | None:
    """Test-only: HARNESS_CONFORM_PERTURB names a field of the Kafka side's view that the adapter reports one
    higher after every call, so a test can show that a wrong adapter value is caught."""
    name = os.environ.get("HARNESS_CONFORM_PERTURB") or None
    if name is not None and name not in FIELDS:
        raise BadInput(f"HARNESS_CONFORM_PERTURB={name!r}: not a field of the controller's view ({', '.join(FIELDS)})")
    return name
