"""The model interface: the only thing engines know about a protocol.

A protocol is written once, as a `Spec`:

* a frozen `Config` dataclass with named presets, variant fields and a `mutation` field;
* an immutable state: a `typing.NamedTuple` whose fields hold ints, bools, nested tuples and
  NamedTuples (never None, str or negative ints: see `fingerprint`);
* rules: functions `(cfg, state, *params) -> next state | None`, each parameter drawn from a
  finite domain computed from the config;
* invariants: functions `(cfg, state) -> bool`; liveness properties and fair rules for the
  graph engine.

`Spec.bind(config)` gives a `Model`, the object every engine receives. Engines never import a
spec module; they see init states, labelled successors, named invariants, fingerprints and the
ITF conversion.

Configs (their fields, bounds, parsing and digest) are harness.config's; the names specs use are
re-exported here. Checking a spec's declarations when it loads is harness.registry's, sharding by
fingerprint the Spark exchange's, and the symmetry reduction's permuting harness/symmetry.py's.
"""

from __future__ import annotations

import dataclasses
import itertools
import keyword
import sys
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, NamedTuple

import msgpack

from harness.config import (MAX_BUDGET, NO_MUTATION, Config, _check_value, _parse_text, _show, budget, config_digest,
                             config_to_dict, distinct_ids, ids, param, parse_setting, preset_of, range_text, variant,
                             without_defaults)
from harness.errors import BadInput, known_names
from harness.itf import ItfType, Record, type_of_annotation

# What specs and engines import from here; the config part is harness.config's.
__all__ = ["MAX_BUDGET", "NO_MUTATION", "UNMUTATED", "Action", "Config", "Model", "Mutation", "Property", "Rule",
           "Spec", "Violated", "budget", "config_digest", "config_to_dict", "distinct_ids",
           "fingerprint", "ids", "param", "preset_of", "range_text", "variant", "variant_of", "without_defaults"]

# What a search keeps under a view, of the states with one view that the first level reaching it holds:
# "tie", the one with the smallest `Model.tie` (whatever the search order); "first", the first found in
# TLC's exploration order (`Model.successors_in_tlc_order`), as TLC does.
VIEW_KEEP = ("tie", "first")


def fingerprint(state: tuple) -> int:
    """64-bit fingerprint of a state: CPython's structural tuple hash (a signed 64-bit int).

    It is xxHash rounds over the items' hashes, recursively, computed in C (about 0.1 us), and the
    same in every process and on every machine running 64-bit CPython >= 3.8, because states hold
    only ints and int hashing is not salted (unlike str and bytes). Two tuples of the same shape
    that differ in one item never collide (each round is a bijection of the accumulator). Ints
    must lie in [0, 2**61-2]: hash(-1) == hash(-2) and hash(int) is taken mod 2**61-1.
    Engines that shard by fingerprint mix it first (the Spark exchange's `owner`); a bijective mix
    cannot change the collision probability, which is what the BFS estimate reports.
    """
    return hash(state)


class Action(NamedTuple):
    """A rule with its parameters: the label of one transition."""

    rule: str
    params: tuple[tuple[str, int], ...] = ()

    def __str__(self) -> str:
        return f"{self.rule}({', '.join(f'{k}={v}' for k, v in self.params)})"

    def to_json(self) -> dict:
        return {"rule": self.rule, "params": dict(self.params)}

    @staticmethod
    def from_json(obj: Any) -> "Action":
        if not isinstance(obj, dict) or not isinstance(obj.get("rule"), str) or not isinstance(obj.get("params", {}), dict):
            raise BadInput(f"malformed action label: {obj!r}")
        params = obj.get("params", {})
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in params.values()):
            raise BadInput(f"malformed action parameters: {params!r}")
        return Action(obj["rule"], tuple(params.items()))


# --------------------------------------------------------------------------------------------
# Specs
# --------------------------------------------------------------------------------------------


@dataclass
class Rule:
    name: str
    fn: Callable
    domains: dict[str, Callable[[Any], Iterable[int]]]
    fair: bool
    doc: str
    precondition: Callable | None = None  # (cfg, state) -> bool, checked once for all parameters
    applies: Callable | None = None  # (cfg) -> bool: False leaves the rule out of this config's model
    formats: dict[str, Callable[[Any, int], str]] = field(default_factory=dict)  # param -> (cfg, value) -> text
    candidates: Callable | None = None  # (cfg, state) -> argument prefixes that may be enabled (a speed hint)


@dataclass(frozen=True)
class Mutation:
    """A named removal of one safety rule: which rule it weakens, what it removes, where it is caught."""

    name: str
    rule: str
    removes: str
    caught_at: str  # the preset at which some invariant must catch it
    caught_by: str = "bfs"  # "graph": its loss shows only as a liveness failure (a lasso), found by the graph engine
    # Not empty: no search at the configs this machine can exhaust catches it; the text gives that evidence
    # (configs, state counts), and `caught_at` names the largest config exhausted. The corpus and the gate's
    # mutation adequacy leave such a mutation out; `check --mutation` still runs it.
    survives: str = ""

    def __str__(self) -> str:
        return f"{self.rule}: {self.removes}"


class _Unmutated:
    """`mutated` where no spec config is at hand (unit tests of a spec's pure functions): every flag false."""

    def __getattr__(self, name: str) -> bool:
        if name.startswith("__"):
            raise AttributeError(name)
        return False


UNMUTATED = _Unmutated()


class Violated:
    """What a property returns when it fails and can say why: false, with a reason naming the part
    that fails (`return Violated(f"broker {b} leads without offset {o}")`). Engines test truth only."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"Violated({self.reason!r})"


@dataclass
class Property:
    """A liveness property: `leads_to(trigger, goal)`; `eventually(goal)` has trigger = True."""

    name: str
    goal: Callable
    trigger: Callable | None
    doc: str


REPOSITORY = Path(sys.modules["harness"].__file__).resolve().parents[1]  # not this module's: it may be compiled


def repository_path(filename: str) -> str:
    """A source file's path as a reader of the repository finds it: relative to its root when inside it."""
    try:
        return Path(filename).resolve().relative_to(REPOSITORY).as_posix()
    except ValueError:
        return filename


@dataclass
class Spec:
    """A protocol: config, state schema, rules, invariants, presets, mutations."""

    name: str
    config_class: type
    state_class: type
    doc: str = ""
    presets: dict[str, dict] = field(default_factory=dict)
    default_preset: str = "tiny"
    mutations: dict[str, Mutation] = field(default_factory=dict)  # declared with `spec.mutation(...)`
    deadlock: bool = True  # report states without successors (unless quiescent)
    mutation_preset: str = "ci"  # where a mutation is caught unless its declaration says otherwise
    guides: dict[str, list] = field(default_factory=dict)  # mutation -> scenario [(rule, {params})] for guided BFS
    symbolic: Any = None  # module with make_state/type_ok/init/RULES: the Z3 transition relation (prove)
    z3_invariants: dict[str, Callable] = field(default_factory=dict)  # property -> (symbolic state) -> Z3 formula
    expected: dict[str, str] = field(default_factory=dict)  # preset -> the known violation it exhibits
    # (preset, liveness property) -> why it fails there on the unmutated protocol (a known limitation)
    expected_liveness: dict[tuple[str, str], str] = field(default_factory=dict)
    # Where each of those is declared, as a reader finds it: preset or (preset, property) -> "specs/x/presets.py"
    # (filled by `expect_liveness_failure` and, for `expected`, by harness.registry when the spec loads).
    expected_sources: dict[Any, str] = field(default_factory=dict)
    rules: list[Rule] = field(default_factory=list)
    invariants: dict[str, Callable] = field(default_factory=dict)
    invariant_docs: dict[str, str] = field(default_factory=dict)
    invariant_reads: dict[str, tuple[str, ...]] = field(default_factory=dict)  # property -> the state fields it reads
    liveness: dict[str, Property] = field(default_factory=dict)
    init_fn: Callable | None = None
    quiescent_fn: Callable | None = None
    # The state VIEW, as in TLC: `view(state) -> tuple`, the projection that tells states apart. Searches
    # dedupe (fingerprint, exact key, graph node) on it and keep the first state found with each view;
    # traces still hold full states. None: the whole state.
    view: Callable | None = None
    # Optional with a view: the fields it leaves out. Of the states with one view, engines keep the one with
    # the smallest `Model.tie`: the hash of these fields if given (cheaper), else of the whole state.
    hidden: Callable | None = None
    # Optional with a view: the projection the graph engine tells states apart by (default: `view`). A view that
    # drops budget counters (as TLA+ VIEWs do) makes a budgeted fault look repeatable on a cycle: a lasso no run has.
    liveness_view: Callable | None = None
    # Optional with a view: the order TLC generates a state's successors in (its `Next` disjuncts, its
    # quantifier domains in TLC's value order), for a search that keeps the first state found per view as
    # TLC does (`bfs.explore(view_keep="first")`): `tlc_order(model)` returns `order(state, successors)`,
    # the (action index, next state) pairs reordered. None: the action table's order.
    tlc_order: Callable | None = None
    # How the explorer draws a state as the protocol reads (`@spec.protocol_view`): `fn(cfg, state) -> dict`
    # of plain data whose "kind" names a template of harness/explore. Engines never call it. None: a tree.
    protocol_view_fn: Callable | None = None
    # What `harness conform` compares with Kafka's own code (harness.conform.Conformance). None: not comparable.
    conformance: Any = None
    # Symmetry (`spec.symmetry`): `interchangeable(cfg)`, the groups of ids no part of the config tells apart,
    # and the record fields holding ids as plain ints (see harness/symmetry.py). None: no symmetry declared.
    interchangeable: Callable | None = None
    id_fields: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.schema: ItfType = type_of_annotation(self.state_class)
        if not isinstance(self.schema, Record):
            raise TypeError("the state class must be a NamedTuple")

    # -- authoring decorators -----------------------------------------------------------------
    def init(self, fn: Callable) -> Callable:
        """`@spec.init`: `fn(cfg) -> iterable of initial states`."""
        self.init_fn = fn
        return fn

    def expect_liveness_failure(self, preset: str, prop: str, why: str) -> None:
        """Declare that liveness property `prop` fails at `preset` on the unmutated protocol. The corpus
        keeps its lasso; the gate fails when it no longer reproduces, the nightly job when a liveness
        property fails where no such declaration says it does."""
        if prop not in self.liveness or preset not in self.presets:
            raise ValueError(f"unknown liveness property {prop!r} or preset {preset!r}")
        self.expected_liveness[(preset, prop)] = why
        caller = sys._getframe(0)
        while caller.f_globals.get("__name__") == __name__:  # compiled, this method has no frame of its own
            caller = caller.f_back
        self.expected_sources[(preset, prop)] = f"{repository_path(caller.f_code.co_filename)}:{caller.f_lineno}"

    def declared_failure(self, cfg, kind: str, prop: str | None) -> dict | None:
        """The declaration that makes a violation (its outcome's `kind` and property) at `cfg` expected, or
        None: a safety violation at a preset of `expected`, a liveness failure declared with
        `expect_liveness_failure`, each only when `cfg` is exactly that preset (other settings, variants or a
        mutation are another protocol). The one decision `check`, the corpus, the gate and the nightly share.
        Returns {"kind", "preset", "property", "why", "source"} (`property` None: any safety property)."""
        preset = getattr(cfg, "_preset", None)
        if kind == "liveness":
            key, why = (preset, prop), self.expected_liveness.get((preset, prop))
        else:
            key, why = preset, self.expected.get(preset)
        if why is None or cfg != self.config(preset):
            return None
        return {"kind": "liveness" if kind == "liveness" else "safety", "preset": preset,
                "property": prop if kind == "liveness" else None, "why": why,
                "source": self.expected_sources.get(key, f"the {self.name} spec's declarations")}

    def expected_liveness_failures(self, cfg) -> dict[str, str]:
        """The declared liveness failures (property -> why) that apply to `cfg` (`declared_failure`)."""
        preset = getattr(cfg, "_preset", None)
        return {prop: why for (p, prop), why in self.expected_liveness.items()
                if p == preset and self.declared_failure(cfg, "liveness", prop)}

    def preset_for(self, mutation: str) -> str:
        """The config at which `mutation` must be caught."""
        return self.mutations[mutation].caught_at

    def mutation(self, name: str, *, rule: str, removes: str, caught_at: str | None = None,
                 liveness: bool = False, survives: str = "") -> Mutation:
        """Declare a mutation: `rule` is the rule it weakens, `removes` the check it takes out (cite the
        document), `caught_at` the preset where an invariant must catch it (`liveness=True`: where a
        liveness property fails, found by the graph engine; `survives="evidence"`: nothing catches it at the
        configs that can be exhausted, `caught_at` being the largest of them). Rule code tests the flag
        `cfg.mutated.<name>`; a name used there but not declared fails when the spec loads."""
        if name in self.mutations or not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
            raise TypeError(f"mutation {name!r}: declared twice, or not a plain identifier")
        m = self.mutations[name] = Mutation(name, rule, removes, caught_at or self.mutation_preset,
                                            "graph" if liveness else "bfs", survives)
        self._flags = None
        return m

    def mutation_flags(self, mutation: str) -> tuple:
        """`cfg.mutated`: one boolean per declared mutation, true for the config's own."""
        if getattr(self, "_flags", None) is None:
            self._flags = NamedTuple("Mutated", [(n, bool) for n in self.mutations])  # type: ignore[misc]
        return self._flags(*(n == mutation for n in self.mutations))

    def rule(self, fair: bool = False, precondition: Callable | None = None, applies: Callable | None = None,
             format: dict[str, Callable[[Any, int], str]] | None = None, candidates: Callable | None = None,
             **domains: Callable[[Any], Iterable[int]]) -> Callable:
        """`@spec.rule(broker=brokers)`: a protocol rule; parameters range over finite domains.

        `precondition(cfg, state)`, if given, is a cheap necessary condition for every parameter
        combination: engines skip the whole rule when it is false, and `Model.apply` (replay) checks
        it too, so the rule body need not repeat it. `applies(cfg)` false removes the rule from the
        model of that config (a rule of another variant), so it is not reported as never firing.
        `format={"param": (cfg, value) -> text}` says how a parameter reads in traces (a target index
        as the replica list it names, 0 as "keep"); traces keep the raw values for replay.
        `candidates(cfg, state)`, a speed hint for a rule whose parameters are mostly disabled (a message
        slot, the broker a message is addressed to), yields the argument prefixes (tuples over the first
        parameters, in declaration order, each at most once) outside which every action of the rule
        returns None; the rest of the parameters range over their whole domains. Successors keep
        action-table order, so states and traces are those of the full enumeration, which
        `Model(use_candidates=False)` performs to test the hint.
        """

        def register(fn: Callable) -> Callable:
            unknown = set(format or ()) - set(domains)
            if unknown:
                raise TypeError(f"rule {fn.__name__}: format names unknown parameters {sorted(unknown)}")
            self.rules.append(Rule(fn.__name__, fn, domains, fair, (fn.__doc__ or "").strip(), precondition, applies,
                                   dict(format or {}), candidates))
            return fn

        return register

    def order_rules(self, *names: str) -> None:
        """The order engines try the rules in, when they are written in several modules (one per actor):
        every rule named exactly once. Successors, hence BFS's first-found states and its traces, follow it,
        so a package keeps the protocol document's order however its rules are laid out."""
        by_name = {r.name: r for r in self.rules}
        if sorted(names) != sorted(by_name):
            missing, unknown = set(by_name) - set(names), set(names) - set(by_name)
            raise TypeError(f"order_rules: every rule exactly once (missing {sorted(missing)}, unknown "
                            f"{sorted(unknown)}, or one named twice)")
        self.rules[:] = [by_name[n] for n in names]

    def invariant(self, fn: Callable | None = None, *, name: str | None = None, reads: tuple[str, ...] = ()) -> Callable:
        """`@spec.invariant`: a safety property `fn(cfg, state) -> bool`.

        `reads`, if given, names the only top-level state fields the property looks at. A search may
        then skip it on a successor whose fields are those of its already checked parent (rules
        `_replace` what they change, so an untouched field is the same object)."""
        unknown = set(reads) - set(self.state_class._fields)
        if unknown:
            raise TypeError(f"invariant reads unknown state field(s): {', '.join(sorted(unknown))}")

        def register(f: Callable) -> Callable:
            key = name or f.__name__
            self.invariants[key] = f
            self.invariant_docs[key] = (f.__doc__ or "").strip()
            if reads:
                self.invariant_reads[key] = tuple(reads)
            return f

        return register(fn) if fn is not None else register

    def eventually(self, name: str, goal: Callable, trigger: Callable | None = None, doc: str = "") -> None:
        """Declare `trigger ~> goal` (or `<>goal`) under weak fairness of the fair rules."""
        self.liveness[name] = Property(name, goal, trigger, doc)

    def quiescent(self, fn: Callable) -> Callable:
        """`@spec.quiescent`: states where having no successor is not a deadlock."""
        self.quiescent_fn = fn
        return fn

    def symmetry(self, interchangeable: Callable, id_fields: Iterable[str] = ()) -> None:
        """Declare the symmetry of the protocol, as TLC's SYMMETRY sets: `interchangeable(cfg)` yields groups of
        ids that nothing in the config tells apart (in no replica list, target, leader or initial set), so a
        permutation of them maps runs to runs and keeps every property's value. `id_fields` names the record
        fields whose plain ints, or sequences of ints, are ids (typed ids, `OptId`, `IdSet`, `ById`, are known)."""
        from harness.symmetry import state_permuter

        state_permuter(self.schema, id_fields)  # a misnamed field is refused now, not in a search
        self.interchangeable, self.id_fields = interchangeable, tuple(id_fields)

    def protocol_view(self, fn: Callable) -> Callable:
        """`@spec.protocol_view`: `fn(cfg, state) -> dict`, the state as plain JSON-ready data for the
        explorer's view of this protocol (`harness explore`): {"kind": <template>, ...}."""
        self.protocol_view_fn = fn
        return fn

    # -- configs --------------------------------------------------------------------------------
    @property
    def config_fields(self) -> dict[str, dataclasses.Field]:
        return {f.name: f for f in dataclasses.fields(self.config_class)}

    @property
    def variants(self) -> dict[str, tuple]:
        return {n: f.metadata["variant"] for n, f in self.config_fields.items() if "variant" in f.metadata}

    def _annotation(self, key: str) -> Any:
        return typing.get_type_hints(self.config_class)[key]

    def config(
        self,
        preset: str | None = None,
        settings: Iterable[str] = (),
        variants: Iterable[str] = (),
        mutation: str | None = None,
    ) -> Config:
        """Resolve a preset plus `key=value` overrides into a config; raise BadInput when wrong."""
        preset = preset or self.default_preset
        if preset not in self.presets:
            raise BadInput(f"unknown config {_show(preset)} for spec {self.name!r} (known: {known_names(self.presets, self.name)})")
        values = dict(self.presets[preset])
        fields = self.config_fields
        for text in settings:
            key, raw = parse_setting(text)
            if key not in fields or key == "mutation":
                raise BadInput(f"unknown config key {_show(key)} for spec {self.name!r} "
                               f"(known: {known_names([k for k in fields if k != 'mutation'], self.name)})")
            values[key] = _parse_text(key, raw, self._annotation(key), fields[key])
        for text in variants:
            key, raw = parse_setting(text) if "=" in text else self._variant_by_value(text)
            if key not in self.variants:
                raise BadInput(f"unknown variant {_show(key)} for spec {self.name!r} (known: {known_names(self.variants, self.name)})")
            values[key] = _parse_text(key, raw, self._annotation(key)) if isinstance(raw, str) else raw
        if mutation is not None:
            values["mutation"] = mutation
        return self.config_from_dict(values, preset=preset)

    def _variant_by_value(self, text: str) -> tuple[str, Any]:
        matches = [(k, c) for k, choices in self.variants.items() for c in choices if str(c) == text]
        if len(matches) != 1:
            raise BadInput(f"unknown variant {_show(text)} for spec {self.name!r}; use name=value with one of: "
                           + ", ".join(f"{k}={'/'.join(map(str, c))}" for k, c in self.variants.items()))
        return matches[0]

    def config_from_dict(self, values: dict, preset: str | None = None) -> Config:
        """Build a config from plain data (a preset or a trace's #meta), checking every value's type and
        bounds before the config exists, then the spec's cross-field `validate()`."""
        if not isinstance(values, dict):
            raise BadInput(f"a config must be a mapping of keys to values, not {_show(values)}")
        fields = self.config_fields
        hints = typing.get_type_hints(self.config_class)
        unknown = [k for k in values if k not in fields]
        if unknown:
            raise BadInput(f"unknown config key(s) {', '.join(_show(k) for k in unknown[:3])} for spec {self.name!r}")
        checked = {k: _check_value(k, v, hints[k], fields[k]) for k, v in values.items()}
        for key, choices in self.variants.items():
            if key in checked and checked[key] not in choices:
                raise BadInput(f"variant {key!r} must be one of {', '.join(map(str, choices))}, not {_show(checked[key])}")
        mutation = checked.get("mutation", NO_MUTATION)
        if mutation != NO_MUTATION and mutation not in self.mutations:
            raise BadInput(f"unknown mutation {_show(mutation)} for spec {self.name!r} (known: {known_names(self.mutations, self.name)})")
        cfg = self.config_class(**checked)
        problem = getattr(cfg, "validate", lambda: None)()
        if problem:
            raise BadInput(f"invalid config for {self.name!r}: {problem}")
        object.__setattr__(cfg, "_preset", preset)
        object.__setattr__(cfg, "mutated", self.mutation_flags(cfg.mutation))
        return cfg

    def bind(self, cfg: Config, symmetry: bool = False) -> "Model":
        return Model(self, cfg, symmetry=symmetry)


def variant_of(spec: Spec, cfg: Config) -> dict:
    return {k: getattr(cfg, k) for k in spec.variants}


# --------------------------------------------------------------------------------------------
# The bound model: what engines receive
# --------------------------------------------------------------------------------------------


class Model:
    """A spec bound to a config. Engines use only this class's methods and attributes."""

    def __init__(self, spec: Spec, cfg: Config, use_candidates: bool = True, symmetry: bool = False) -> None:
        self.spec = spec
        self.name = spec.name
        self.config = cfg
        self.schema = spec.schema
        # The finite action table: every rule with every parameter combination, in declaration
        # order. Successor order, and so BFS order and traces, follow this table: deterministic.
        self.actions: list[Action] = []
        self._steps: list[tuple[int, Callable, tuple]] = []
        # (precondition, arity, actions, candidates): `candidates` is None or (the rule's hint, its
        # actions by argument prefix), for the rules whose `candidates=` hint is used.
        self._groups: list[tuple[Callable | None, int, list[tuple], tuple | None]] = []
        self.rules = [r for r in spec.rules if r.applies is None or r.applies(cfg)]
        self.rule_names = [r.name for r in self.rules]
        self.action_rule: list[int] = []
        for rule_index, rule in enumerate(self.rules):
            names = list(rule.domains)
            domains = [tuple(rule.domains[n](cfg)) for n in names]
            group: list[tuple[int, Callable, tuple]] = []
            for combo in itertools.product(*domains):
                self.actions.append(Action(rule.name, tuple(zip(names, combo))))
                self.action_rule.append(rule_index)
                group.append((len(self.actions) - 1, rule.fn, combo))
            self._steps.extend(group)
            # Rules of one to three parameters get their arguments unpacked here, so `successors` calls
            # them with fixed arity (a star-call builds an argument tuple per call).
            unpacked = [(index, fn, *args) for index, fn, args in group] if len(names) in (1, 2, 3) else group
            hint = None
            if rule.candidates is not None and use_candidates:
                by_prefix: dict[tuple, list] = {}
                for (_, _, args), entry in zip(group, unpacked):
                    for cut in range(len(args) + 1):
                        by_prefix.setdefault(args[:cut], []).append(entry)
                hint = (rule.candidates, by_prefix)
            self._groups.append((rule.precondition, len(names), unpacked, hint))
        self.action_index = {a: i for i, a in enumerate(self.actions)}
        self.fair_rules = [r.name for r in self.rules if r.fair]
        self.invariant_names = list(spec.invariants)
        self._invariants = [(n, f) for n, f in spec.invariants.items()]
        # For searches that know each new state's parent: the properties to check on every state, and
        # the others grouped by the state fields they read (index tuples), checked only if one changed.
        fields = {f: i for i, f in enumerate(spec.state_class._fields)}
        self.invariants_always = [(n, f) for n, f in self._invariants if n not in spec.invariant_reads]
        by_reads: dict[tuple[int, ...], list] = {}
        for n, f in self._invariants:
            if n in spec.invariant_reads:
                by_reads.setdefault(tuple(fields[x] for x in spec.invariant_reads[n]), []).append((n, f))
        self.invariants_by_reads = list(by_reads.items())
        self.liveness = dict(spec.liveness)
        self._formats = {r.name: r.formats for r in self.rules if r.formats}
        self.check_deadlock = spec.deadlock
        self._fast_decode = None
        self.view = spec.view
        self.liveness_view = spec.liveness_view or spec.view
        if self.view is not None:
            view = self.view
            self.fingerprint = lambda s: hash(view(s))  # shadows the class's builtin `hash`
        hidden = spec.hidden
        # `tie(s) == hash(tie_part(s))`: equal parts have equal ties, so an engine that has a kept state's
        # part at hand can compare parts (often the same objects) before hashing one.
        self.tie_part = (lambda s: s) if hidden is None else hidden
        self.tie = hash if hidden is None else (lambda s: hash(hidden(s)))
        # Symmetry reduction: searches dedupe on the canonical form (a view of one value per orbit) and keep
        # real states, of one orbit the one with the smallest hash. Without interchangeable ids, nothing changes.
        self.symmetry: list[tuple[int, ...]] = []  # the groups of interchangeable ids, when reduced
        if symmetry:
            self._reduce_by_symmetry()

    def _reduce_by_symmetry(self) -> None:
        from harness.symmetry import canonical_form, mappings, state_permuter

        if self.spec.interchangeable is None:
            raise BadInput(f"spec {self.name!r} declares no symmetry (spec.symmetry)")
        groups = [tuple(sorted(set(g))) for g in self.spec.interchangeable(self.config)]
        groups = [g for g in groups if len(g) > 1]
        if not groups:
            return
        self.symmetry = groups
        self.permute = state_permuter(self.schema, self.spec.id_fields)
        self.permutations = mappings(groups)
        canonical = self.view = self.liveness_view = canonical_form(self.permute, self.permutations, self.spec.view)
        self.fingerprint = lambda s: hash(canonical(s))
        # Of the states of one orbit, the kept one is the smallest hash of the whole state: two states of an
        # orbit may share what a spec's `hidden` hashes, and which one an engine keeps must not depend on order.
        self.tie_part, self.tie = (lambda s: s), hash

    # -- the transition system --------------------------------------------------------------------
    def init_states(self) -> list[tuple]:
        states = list(dict.fromkeys(self.spec.init_fn(self.config)))  # dedupe, keep order
        for s in states:
            self.schema.validate(s, "init")
        return states

    def successors(self, state: tuple) -> list[tuple[int, tuple]]:
        """All (action index, next state) pairs enabled in `state`, in action-table order."""
        cfg = self.config
        out = []
        for pre, arity, group, hint in self._groups:
            if pre is not None and not pre(cfg, state):
                continue
            if hint is not None:  # the actions of the prefixes the hint names, in action-table order
                candidates, by_prefix = hint
                prefixes = candidates(cfg, state)
                if not prefixes:
                    continue
                if len(prefixes) == 1:
                    group = by_prefix[prefixes[0]]
                else:
                    group = [e for prefix in prefixes for e in by_prefix[prefix]]
                    group.sort()  # the first item, the action index, is unique
            if arity == 1:
                for index, fn, a in group:
                    nxt = fn(cfg, state, a)
                    if nxt is not None:
                        out.append((index, nxt))
            elif arity == 2:
                for index, fn, a, b in group:
                    nxt = fn(cfg, state, a, b)
                    if nxt is not None:
                        out.append((index, nxt))
            elif arity == 3:
                for index, fn, a, b, c in group:
                    nxt = fn(cfg, state, a, b, c)
                    if nxt is not None:
                        out.append((index, nxt))
            else:
                for index, fn, args in group:
                    nxt = fn(cfg, state, *args)
                    if nxt is not None:
                        out.append((index, nxt))
        return out

    def successors_in_tlc_order(self) -> Callable[[tuple], list[tuple[int, tuple]]]:
        """`successors`, in the order TLC generates them if the spec declares it (`Spec.tlc_order`; it may
        refuse a config, BadInput), else in action-table order."""
        if self.spec.tlc_order is None:
            return self.successors
        order, successors = self.spec.tlc_order(self), self.successors
        return lambda state: order(state, successors(state))

    def apply(self, state: tuple, action: Action) -> tuple | None:
        """The next state of one labelled action, or None if it is not enabled (or unknown)."""
        index = self.action_index.get(action)
        if index is None:
            return None
        _, fn, args = self._steps[index]
        pre = self.rules[self.action_rule[index]].precondition
        if pre is not None and not pre(self.config, state):
            return None
        return fn(self.config, state, *args)

    # -- properties -------------------------------------------------------------------------------
    def violated(self, state: tuple) -> list[str]:
        cfg = self.config
        return [name for name, f in self._invariants if not f(cfg, state)]

    def holds(self, name: str, state: tuple) -> bool:
        return bool(self.spec.invariants[name](self.config, state))

    def explain(self, name: str, state: tuple) -> str | None:
        """Why invariant `name` fails in `state`, if the property says (see `Violated`)."""
        verdict = self.spec.invariants[name](self.config, state) if name in self.spec.invariants else True
        return None if verdict else getattr(verdict, "reason", None)

    def statement(self, name: str) -> str | None:
        """What property `name` states (its docstring)."""
        if name == "Deadlock":
            return "Every state that is not quiescent has an enabled action."
        if name in self.spec.invariant_docs:
            return self.spec.invariant_docs[name] or None
        prop = self.spec.liveness.get(name)
        return prop.doc or None if prop else None

    def format_action(self, action: Action) -> str:
        """An action as people read it: each parameter through its rule's format."""
        return f"{action.rule}(" + ", ".join(f"{k}={v}" for k, v in self.format_params(action)) + ")"

    def format_params(self, action: Action) -> list[tuple[str, str]]:
        """Each (parameter, value as people read it) of an action, through its rule's formats."""
        formats = self._formats.get(action.rule, {})
        return [(k, str(formats[k](self.config, v)) if k in formats else str(v)) for k, v in action.params]

    def quiescent(self, state: tuple) -> bool:
        q = self.spec.quiescent_fn
        return bool(q and q(self.config, state))

    # -- encodings --------------------------------------------------------------------------------
    fingerprint = staticmethod(hash)  # see fingerprint() above; of the view, if the spec has one

    def fingerprints(self, states: Iterable[tuple]) -> list[int]:
        """`fingerprint` of each state, in C (no Python frame per state): for a search's whole batch."""
        return list(map(hash, states if self.view is None else map(self.view, states)))

    def identity(self, state: tuple) -> tuple:
        """What tells `state` apart from others: its view, or the whole state (exact searches, graph nodes)."""
        return state if self.view is None else self.view(state)

    def encode(self, state: tuple) -> bytes:
        """Canonical bytes of a state: MessagePack of the nested tuples (data only; 4x faster than
        JSON to write and, with `decode_trusted`, 3x faster to read back)."""
        return msgpack.packb(state)

    def decode(self, blob: bytes) -> tuple:
        """`encode` reversed, validating every value against the state schema."""
        try:
            plain = msgpack.unpackb(blob)
        except (ValueError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError) as exc:
            raise BadInput(f"corrupt state encoding: {exc}") from None
        return self.schema.from_plain(plain, "state")

    def decode_trusted(self, blob: bytes) -> tuple:
        """`decode` without per-value validation, for an engine's own encodings (5-10x faster)."""
        if self._fast_decode is None:
            from harness.itf import fast_decoder

            self._fast_decode = fast_decoder(self.schema)
        try:
            return self._fast_decode(msgpack.unpackb(blob, use_list=False))
        except (ValueError, TypeError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError) as exc:
            raise BadInput(f"corrupt state encoding: {exc}") from None

    def to_itf(self, state: tuple) -> dict:
        return self.schema.to_itf(state)

    def from_itf(self, obj: Any, where: str = "state") -> tuple:
        return self.schema.from_itf(obj, where)

    def describe_action(self, index: int) -> Action:
        return self.actions[index]
