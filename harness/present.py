"""How counterexamples and specs read: what `check` prints for a violation, `show`, `diff` and `describe`.

A run (a trace file, or a violation an engine has just found) becomes a `View`: a header naming what
was checked, one `Step` per state (the action as people read it, the state's fields, what the action
changed) and closing lines (the lasso, the corpus's note, the property's statement and the reason it
gives). A prover's counterexample to induction becomes a view of two steps, pre and post. A view is
rendered as plain lines, which never cut a field path or a value whatever the terminal's width, as a
rich table when stdout is a terminal and the table fits, or as JSON (the same content).

Every string may come from a file: the CLI prints what these functions return as rich `Text` (or
plain text), never as markup. Nothing here runs code from a file: traces are read by harness/trace.py.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from rich.cells import cell_len
from rich.table import Column, Table
from rich.text import Text

from harness.changes import Change, by_path, changes
from harness.errors import BadInput
from harness.itf import ById, ItfType, Offset, Record, Seq, Tup, counted, shown, spelled
from harness.model import Model, Spec, config_digest, config_to_dict, range_text, variant_of
from harness.trace import Cti, Trace, outcome_document

REPOSITORY = Path(__file__).resolve().parents[1]  # docs/ beside the packages (an editable install, a clone)


@dataclass
class Step:
    index: int
    label: str  # "init", or the action through its rule's formats
    rule: str | None = None
    params: dict = field(default_factory=dict)  # raw parameters, as replay reads them
    fields: dict[str, str] = field(default_factory=dict)  # every field of the state: path -> value as shown
    edits: list[Change] = field(default_factory=list)  # what the action changed, by element (harness/changes.py)
    note: str = ""  # "loop starts here", ...

    @property
    def changes(self) -> dict[str, tuple[str, str]]:
        """The edits as {path: (before, after)}, as the explorer's table reads them."""
        return by_path(self.edits)


@dataclass
class View:
    kind: str  # "trace" | "cti"
    header: dict  # what was checked, JSON-ready
    title: str  # the header line
    steps: list[Step]
    closing: list[tuple[str, str]]  # (key, text), printed last: lasso, why, note, reachability, statement, reason
    legend: list[tuple[str, str]] = field(default_factory=list)  # (key, text), printed first: how to read values


# ------------------------------------------------------------------------------------ building views

def _offset_fields(t: ItfType, name: str = "") -> Iterator[tuple[str, Offset]]:
    """(field name, type) of every offset in a schema, records, maps, sequences and tuples opened."""
    if isinstance(t, Offset):
        yield name, t
    elif isinstance(t, Record):
        for sub_name, sub in t.fields.items():
            yield from _offset_fields(sub, sub_name)
    elif isinstance(t, (Seq, ById)):
        yield from _offset_fields(t.item, name)
    elif isinstance(t, Tup):
        for sub in t.items:
            yield from _offset_fields(sub, name)


def offset_convention(model: Model) -> str | None:
    """The line every view of a model whose offsets are not Kafka's carries (replication's are the TLA+
    specification's, 1-based), naming its offset fields; None where they are Kafka's (0-based). `show`,
    `diff` and `check` print it; the explorer shows the same line."""
    fields = [(name, t) for name, t in _offset_fields(model.schema) if t.base]
    if not fields:
        return None
    base = fields[0][1].base
    names = ", ".join(dict.fromkeys(name for name, _ in fields))
    return (f"{base}-based as in the TLA+ specification (Kafka's are 0-based: Kafka's offset is {base} less, "
            f"an empty log's LEO is {base} here): {names}; a position in brackets (`log[0]`) counts from 0")


def legend(model: Model) -> list[tuple[str, str]]:
    """How to read a model's values, printed before its steps: its offset convention where it is not Kafka's."""
    offsets = offset_convention(model)
    return [("offsets", offsets)] if offsets else []


def run_steps(model: Model, states: list[tuple], actions: list, loop: int | None = None) -> list[Step]:
    """The steps of a run: each state's fields and what its action changed."""
    steps = []
    for i, (state, action) in enumerate(zip(states, actions)):
        step = Step(i, "init") if action is None else Step(i, model.format_action(action), action.rule, dict(action.params))
        step.fields = dict(model.schema.leaves(state, ""))
        if i:
            step.edits = changes(model.schema, states[i - 1], state)
        steps.append(step)
    if loop is not None and 0 <= loop < len(steps):
        steps[loop].note = "loop starts here"
        if loop < len(steps) - 1:
            steps[-1].note = f"back to state {loop}: the loop closes"
    return steps


def guarded(compute: Callable[[], Any]) -> Any:
    """A property or rule evaluated on a state read from a file: a well-typed state that no run reaches
    (an edited trace) may break a spec's assumptions, and `show` must still print the file."""
    try:
        return compute()
    except Exception:  # noqa: BLE001 - spec code on an arbitrary state; the view goes without this line
        return None


def fair_rules_enabled(model: Model, state: tuple) -> list[str]:
    """The fair rules (weak fairness, as the graph engine reads `model.fair_rules`) enabled in `state`."""
    enabled = {model.rule_names[model.action_rule[index]] for index, _ in model.successors(state)}
    return [r for r in model.fair_rules if r in enabled]


def lasso_text(model: Model, states: list[tuple], loop: int | None) -> str | None:
    """Which state repeats forever, from where; for a stuttering lasso, whether that is fair."""
    if loop is None:
        return None
    last = len(states) - 1
    if loop < last:
        return f"from state {loop}, steps {loop + 1}..{last} repeat forever (state {last} is state {loop} again)"
    enabled = guarded(lambda: fair_rules_enabled(model, states[last]))
    why = ("stuttering: no fair rule is enabled in state {n}" if enabled == [] else
           "stuttering, although fair rule(s) {r} are enabled in state {n}: weak fairness would take one"
           if enabled else "stuttering")
    return f"from state {last}, state {last} repeats forever ({why.format(n=last, r=', '.join(enabled or ()))})"


def property_name(kind: str, prop: str | None) -> str | None:
    """The property an outcome is about: deadlock freedom is `Deadlock` (as `Model.statement` names it)."""
    return prop or ("Deadlock" if kind == "deadlock" else None)


def folded(text: str) -> str:
    """A docstring or message on one line."""
    return " ".join(text.split())


def run_closing(model: Model, states: list[tuple], loop: int | None, outcomes: list[dict], extra: Iterable[tuple] = ()) -> list:
    """The closing lines of a run: lasso, notes, then each property's statement and the reason (a run
    may violate several: one state breaking two invariants)."""
    closing = []
    lasso = lasso_text(model, states, loop)
    if lasso:
        closing.append(("lasso", lasso))
    closing += [(k, v) for k, v in extra if v]
    for outcome in outcomes:
        if outcome.get("statement"):
            closing.append(("statement", f"{property_name(outcome['kind'], outcome.get('property'))}: {outcome['statement']}"))
        if outcome.get("reason"):
            closing.append(("reason", outcome["reason"]))
    return closing


def _variants_text(variant: dict) -> str:
    return ",".join(f"{k}={spelled(v)}" for k, v in variant.items()) or "-"


def trace_view(trace: Trace) -> View:
    model, meta = trace.model, trace.meta
    outcome = outcome_document(model, trace.outcome, trace.states[-1], meta["outcome"])
    variant = variant_of(trace.spec, model.config)
    header = {"kind": "trace", "file": trace.path, "spec": trace.spec.name, "config": meta.get("preset"),
              "config_digest": meta["config_digest"], "variant": variant, "mutation": model.config.mutation,
              "engine": meta.get("engine"), "seed": meta.get("seed"), "outcome": outcome,
              "length": len(trace.states) - 1, "loop": trace.loop}
    what = trace.outcome.kind if trace.outcome.kind in ("none", "deadlock") else \
        f"{trace.outcome.kind} {trace.outcome.property}"
    title = (f"{trace.spec.name}  config={meta.get('preset')}  variants={_variants_text(variant)}  "
             f"mutation={model.config.mutation}  engine={meta.get('engine')}  "
             f"outcome={what} ({counted(len(trace.states) - 1, 'step')}{', lasso' if trace.loop is not None else ''})")
    steps = run_steps(model, trace.states, trace.actions, trace.loop)
    closing = run_closing(model, trace.states, trace.loop, [outcome], [("why", meta.get("why")), ("note", meta.get("note")),
                                                                        ("kafka", _conformance_text(meta.get("conformance")))])
    return View("trace", header, title, steps, closing, legend(model))


def _conformance_text(c: dict | None) -> str | None:
    """`conform`'s record of Kafka's side at the diverging step (the last), on one line."""
    if not isinstance(c, dict):
        return None
    differs = "; ".join(f"{k}: {v}" for k, v in (c.get("differences") or {}).items())
    records = " | ".join(map(str, c.get("kafka_records") or [])) or "none"
    return (f"Kafka {c.get('kafka_version')} at step {c.get('step')}, {c.get('call')}: {c.get('classification')}; "
            f"{differs}; Kafka's records: {records}; response: {c.get('kafka_response') or '-'}")


def _cti_value(v: Any) -> str:
    if isinstance(v, list):
        return "{" + ",".join(map(str, v)) + "}"
    if isinstance(v, dict):  # `prove`'s reading of a field packing one set per broker
        return "{" + ", ".join(f"{k}:{_cti_value(x)}" for k, x in v.items()) + "}"
    return spelled(v)


def cti_values(values: dict) -> str:
    """A symbolic state or a rule's parameters as `name=value, ...`: sets as {..}, booleans true/false."""
    return ", ".join(f"{k}={_cti_value(v)}" for k, v in values.items())


def cti_view(cti: Cti) -> View:
    meta = cti.meta
    pre, post = ({k: _cti_value(v) for k, v in s.items()} for s in cti.states)
    label = f"{cti.rule}({cti_values(meta['params'])})"
    steps = [Step(0, "pre-state", fields=pre, note="the properties hold"),
             Step(1, label, cti.rule, dict(meta["params"]), post,
                  [Change(k, "set", pre[k], post[k]) for k in cti.vars if pre[k] != post[k]],
                  note=f"post-state: breaks {cti.property}")]
    statement = folded(cti.spec.invariant_docs.get(cti.property, ""))
    header = {"kind": "cti", "file": cti.path, "spec": cti.spec.name, "mutation": meta.get("mutation", "none"),
              "rule": cti.rule, "property": cti.property, "brokers": meta["brokers"], "params": meta["params"],
              "reachability": meta["reachability"], "reachable_depth": meta.get("reachable_depth")}
    title = (f"{cti.spec.name}  counterexample to induction ({counted(meta['brokers'], 'broker')}, symbolic state)  "
             f"mutation={header['mutation']}  rule={cti.rule}  breaks {cti.property}")
    closing = [("reachability", meta["reachability"])]
    if statement:
        closing.append(("statement", f"{cti.property}: {statement}"))
    return View("cti", header, title, steps, closing)


def view_of(document: Trace | Cti) -> View:
    return cti_view(document) if isinstance(document, Cti) else trace_view(document)


# ------------------------------------------------------------------------------------ selecting

def field_matcher(patterns: Iterable[str]) -> Callable[[str], bool] | None:
    """Field paths chosen by glob patterns: `*` any characters, `?` one, anything else literal (brackets
    too: paths hold them, `brokers[2].*`). A pattern naming a record or map selects what is inside it
    (`brokers[2]`, `budget`). None: every field."""
    patterns = list(patterns)
    if not patterns:
        return None
    # fnmatch's translation keeps matching linear (a naive `.*` per star backtracks exponentially on
    # `*a*a*a...b`); "[[]" is its spelling of a literal bracket.
    regexes = [re.compile(fnmatch.translate(p.replace("[", "[[]"))) for p in patterns]

    def matches(path: str) -> bool:
        prefixes = [path[:m.start()] for m in re.finditer(r"[.\[]", path)] + [path]
        return any(r.fullmatch(p) for r in regexes for p in prefixes)

    return matches


@dataclass
class Selection:
    """What to print of a view: one step or all, which fields, whole states or changes."""

    step: int | None = None
    fields: Callable[[str], bool] | None = None
    full: bool = False
    initial: bool = True  # the first state in full (show), or only its label (check's inline trace)

    def steps(self, view: View) -> list[Step]:
        return view.steps if self.step is None else [view.steps[self.step]]

    def whole(self, step: Step) -> bool:
        return self.full or self.step is not None or (step.index == 0 and self.initial)

    def keep(self, path: str) -> bool:
        return self.fields is None or self.fields(path)


def selection(view: View, step: int | None = None, patterns: Iterable[str] = (), full: bool = False) -> Selection:
    """A checked selection: the step exists, each pattern names some field (else BadInput: exit 2)."""
    if step is not None and not 0 <= step < len(view.steps):
        raise BadInput(f"--step {step}: the trace has steps 0..{len(view.steps) - 1}")
    paths = {p for s in view.steps for p in s.fields} | {c.address for s in view.steps for c in s.edits}
    for pattern in patterns:
        matcher = field_matcher([pattern])
        if not any(matcher(p) for p in paths):
            example = ", ".join(list(view.steps[0].fields)[:2])
            raise BadInput(f"--fields {shown(pattern)}: matches no field of this trace (fields read like {example})")
    return Selection(step, field_matcher(patterns), full)


def field_lines(step: Step, sel: Selection) -> list[tuple[str, bool]]:
    """(line, whether it is a change) of the fields a selection prints for one step: the changes alone, an
    element of a list as `+ x` / `- x`; or the whole state, a value the step replaced as `path: before ->
    after`, the fields of an element it added marked as changed, and last what it removed."""
    if not sel.whole(step):
        rows = [(c.address, c.text(), True) for c in step.edits]
    else:
        replaced = {c.path: c for c in step.edits if c.kind == "set"}
        added = tuple(c.address for c in step.edits if c.kind == "add")
        rows = [(p, replaced[p].text() if p in replaced else f"{p} = {v}",
                 p in replaced or any(p.startswith(a) and p[len(a):len(a) + 1] in ("", ".", "[") for a in added))
                for p, v in step.fields.items()]
        rows += [(c.address, c.text(), True) for c in step.edits
                 if c.kind == "remove" or (c.kind == "set" and c.path not in step.fields)]
    return [(text, changed) for path, text, changed in rows if sel.keep(path)]


# ------------------------------------------------------------------------------------ rendering


def step_lines(view: View, sel: Selection) -> list[Text]:
    lines = []
    for step in sel.steps(view):
        head = Text.assemble((f"step {step.index}", "bold"), "  ", step.label)
        if step.note:
            head.append(f"  ({step.note})", "cyan")
        if step.index == 0 and not sel.whole(step):
            head.append("  (the config's initial state; `show TRACE --step 0` prints it)", "dim")
        lines.append(head)
        for text, changed in field_lines(step, sel):
            lines.append(Text("  " + text, "yellow" if changed else ""))
    return lines


def keyed_lines(pairs: Iterable[tuple[str, str]]) -> list[Text]:
    return [Text.assemble((f"{'property' if key == 'statement' else key}: ", "bold"), text) for key, text in pairs]


def closing_lines(view: View) -> list[Text]:
    return keyed_lines(view.closing)


def view_lines(view: View, sel: Selection) -> list[Text]:
    """The plain layout: header, legend, steps, closing lines. Nothing is cut, whatever the width."""
    return [Text(view.title, "bold"), *keyed_lines(view.legend), *step_lines(view, sel), *closing_lines(view)]


def view_table(view: View, sel: Selection, width: int) -> Table | None:
    """The steps as a table (step, action, fields) if it fits `width` columns without cutting or
    wrapping anything; None otherwise (then the plain layout is used)."""
    rows = []
    for step in sel.steps(view):
        cells = [text for text, _ in field_lines(step, sel)]
        label = step.label + (f"\n({step.note})" if step.note else "")
        rows.append((str(step.index), label, "\n".join(cells) or "(no change)"))
    widths = [max((cell_len(line) for row in rows for line in row[c].split("\n")), default=0) for c in range(3)]
    widths = [max(w, len(h)) for w, h in zip(widths, ("step", "action", "fields"))]
    if sum(widths) + 3 * len(widths) + 1 > width:  # one space each side of a cell, and the column rules
        return None
    table = Table(*(Column(h, overflow="fold") for h in ("step", "action", "fields")), show_lines=True)
    for row in rows:
        table.add_row(*map(Text, row))
    return table


def rendered(view: View, sel: Selection, terminal_width: int | None) -> list:
    """What `show` prints: on a terminal, the steps as a table when it fits (changes only: --step and
    --full list whole states, one line per field); otherwise, and elsewhere, the plain layout."""
    table = view_table(view, sel, terminal_width) if terminal_width and sel.step is None and not sel.full else None
    if table is None:
        return view_lines(view, sel)
    return [Text(view.title, "bold"), *keyed_lines(view.legend), table, *closing_lines(view)]


def view_json(view: View, sel: Selection) -> dict:
    steps = []
    for step in sel.steps(view):
        entry: dict[str, Any] = {"index": step.index, "action": step.label, "rule": step.rule, "params": step.params}
        if step.note:
            entry["note"] = step.note
        entry["changes"] = [c.to_json() for c in step.edits if sel.keep(c.address)]
        if sel.whole(step):
            entry["state"] = {p: v for p, v in step.fields.items() if sel.keep(p)}
        steps.append(entry)
    return {**view.header, **dict(view.legend), "steps": steps, "closing": {key: text for key, text in view.closing}}


# ------------------------------------------------------------------------------------ check

def replay_command(path: str) -> str:
    return f"python -m harness replay {shlex.quote(path)}"


def same_runs(violations: list) -> list[list]:
    """The violations grouped by run, in order: a state that breaks several properties is one run, whose
    trace is printed once (each property keeps its own trace file)."""
    runs: dict[tuple, list] = {}
    for v in violations:
        runs.setdefault((tuple(v.states), tuple(v.actions), v.loop), []).append(v)
    return list(runs.values())


def violation_lines(model: Model, run: list) -> list[Text]:
    """What `check` prints on stdout for the violations of one run (`same_runs`): the trace in the compact
    changed-fields form, each property's statement and reason, the other invariants its last state breaks,
    and last a VIOLATION line and the replay command per property."""
    first = run[0]
    outcomes = [outcome_document(model, v.outcome, v.states[-1]) for v in run]
    notes = [("note", note) for note in dict.fromkeys(v.note for v in run)]
    view = View("trace", {}, "", run_steps(model, first.states, first.actions, first.loop),
                run_closing(model, first.states, first.loop, outcomes, notes), legend(model))
    named = {v.outcome.property for v in run}
    others = [p for p in guarded(lambda: model.violated(first.states[-1])) or [] if p not in named]
    also = [Text.assemble(("also violated", "bold"), f" in state {first.depth}: {', '.join(others)} "
                          "(the engine reported the first: no trace of their own)")] if others else []
    lasso = ", lasso" if first.loop is not None else ""
    ends = []
    for v in run:
        prop = property_name(v.outcome.kind, v.outcome.property)
        ends += [Text.assemble(("VIOLATION", "bold red"), f" {prop} ({counted(v.depth, 'step')}{lasso}): {v.trace_path}"),
                 Text(replay_command(v.trace_path))]
    return [*keyed_lines(view.legend), *step_lines(view, Selection(initial=False)), *closing_lines(view), *also, *ends]


def violation_json(model: Model, violation) -> dict:
    """One violation of `check --json`: the engine's summary with the property's statement and reason."""
    outcome = outcome_document(model, violation.outcome, violation.states[-1])
    return {**violation.to_json(), **{k: outcome[k] for k in ("statement", "reason") if k in outcome}}


# ------------------------------------------------------------------------------------ diff

def _run_summary(trace: Trace) -> dict:
    o = trace.outcome
    return {"file": trace.path, "length": len(trace.states) - 1, "engine": trace.meta.get("engine"),
            "outcome": {"kind": o.kind, "property": o.property}, "loop": trace.loop}


def _action_at(trace: Trace, i: int) -> str | None:
    if i >= len(trace.states):
        return None  # the trace has ended
    return "init" if trace.actions[i] is None else trace.model.format_action(trace.actions[i])


def compare(a: Trace, b: Trace) -> dict:
    """Where two traces of one spec first part: the step, both actions, the fields that differ in the states
    reached, and what differs in their configs (the same preset under two variants or mutations: where
    does kafka's completion part from seed's?). BadInput (exit 2) if they are traces of different specs."""
    if a.spec.name != b.spec.name:
        raise BadInput(f"not comparable: {a.path} is a trace of spec {a.spec.name}, {b.path} of spec {b.spec.name}")
    x, y = ({"preset": t.meta.get("preset"), **config_to_dict(t.model.config)} for t in (a, b))
    configs = {k: {"a": x.get(k), "b": y.get(k)} for k in {**x, **y} if x.get(k) != y.get(k)}
    n = min(len(a.states), len(b.states))
    first = next((i for i in range(n) if a.actions[i] != b.actions[i] or a.states[i] != b.states[i]), None)
    if first is None and len(a.states) != len(b.states):
        first = n
    result: dict[str, Any] = {"spec": a.spec.name, "config": a.meta.get("preset"), "config_digest": config_digest(a.model.config),
                              "config_differences": configs, **dict(legend(a.model)), "a": _run_summary(a),
                              "b": _run_summary(b), "first_difference": first}
    if first is not None:
        result["actions"] = {side: _action_at(t, first) for side, t in (("a", a), ("b", b))}
        result["fields"] = [{"field": c.path, "change": c.kind, "index": c.index, "a": c.before, "b": c.after}
                            for c in changes(a.model.schema, a.states[first], b.states[first])] if first < n else []
    result["identical"] = (first is None and not configs and result["a"]["outcome"] == result["b"]["outcome"]
                           and a.loop == b.loop)
    return result


def compare_lines(result: dict) -> list[Text]:
    def run(side: str) -> str:
        r = result[side]
        what = r["outcome"]["kind"] + (f" {r['outcome']['property']}" if r["outcome"]["property"] else "")
        loop = f", loop at {r['loop']}" if r["loop"] is not None else ""
        return f"{side.upper()}: {r['file']}  ({counted(r['length'], 'step')}, {what}{loop}, engine {r['engine']})"

    lines = [Text(run("a")), Text(run("b")), *keyed_lines((k, result[k]) for k in ("offsets",) if k in result)]
    if result["config_differences"]:
        lines.append(Text("configs differ (A | B): " + "; ".join(
            f"{k}: {spelled(v['a'])} | {spelled(v['b'])}" for k, v in result["config_differences"].items())))
    first = result["first_difference"]
    if result["identical"]:
        lines.append(Text("identical: the same actions, states and outcome", "green"))
    elif first is None:
        lines.append(Text("the same actions and states; the configs, outcomes or loops differ (see above)", "yellow"))
    else:
        lines.append(Text(f"first difference at step {first}:", "bold"))
        for side in ("a", "b"):
            action = result["actions"][side]
            lines.append(Text(f"  {side.upper()}: {action if action is not None else '(the trace has ended)'}"))
        if result["fields"]:
            lines.append(Text(f"fields that differ in state {first} (A -> B; `- x`: only in A, `+ x`: only in B):", "bold"))
            lines += [Text("  " + Change(f["field"], f["change"], f["a"], f["b"], f["index"]).text()) for f in result["fields"]]
        elif None not in result["actions"].values():
            lines.append(Text(f"state {first} is the same on both sides (different actions, same result)"))
    return lines


# ------------------------------------------------------------------------------------ describe

def _first_sentence(doc: str) -> str:
    """Who acts: the docstring's first sentence (a full stop inside brackets, `[desc. §4.2]`, does not end it)."""
    text = folded(doc.split("\n\n")[0])
    depth = 0
    for i, c in enumerate(text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(0, depth - 1)
        elif c in ".!?" and depth == 0 and text[i + 1: i + 2] in ("", " "):
            return text[: i + 1]
    return text


def _values_text(values: list) -> str:
    """A parameter domain: `1..3` for consecutive ints, else the values."""
    if values and all(isinstance(v, int) for v in values) and values == list(range(values[0], values[0] + len(values))):
        return f"{values[0]}..{values[-1]}" if len(values) > 1 else "{" + str(values[0]) + "}"
    return "{" + ", ".join(map(str, values)) + "}"


def describe(spec: Spec, preset: str | None) -> dict:
    """One spec in full, at one config: parameters, rules, properties, variants, mutations, expectations."""
    cfg = spec.config(preset)
    model = spec.bind(cfg)
    fields, values = spec.config_fields, config_to_dict(cfg)
    params = [{"name": n, "value": values[n], "doc": f.metadata.get("doc", ""),
               "allowed": range_text(f) if {"range", "length"} & set(f.metadata) else None}
              for n, f in fields.items() if n != "mutation" and "variant" not in f.metadata]
    variants = [{"name": n, "value": getattr(cfg, n), "choices": list(f.metadata["variant"]), "doc": f.metadata.get("doc", "")}
                for n, f in fields.items() if "variant" in f.metadata]
    rules = [{"name": r.name, "who": _first_sentence(r.doc), "fair": r.fair,
              "params": {p: _values_text([r.formats[p](cfg, v) if p in r.formats else v for v in d(cfg)])
                         for p, d in r.domains.items()},
              "in_config": r.name in model.rule_names} for r in spec.rules]
    z3 = list(spec.z3_invariants) if spec.symbolic is not None else []
    invariants = [{"name": n, "statement": folded(model.statement(n) or ""), "z3": n in z3} for n in spec.invariants]
    liveness = [{"name": n, "statement": folded(p.doc), "trigger": p.trigger is not None} for n, p in spec.liveness.items()]
    mutations = [{"name": m.name, "rule": m.rule, "removes": m.removes, "caught_at": m.caught_at,
                  **({"survives": m.survives} if m.survives else {})} for m in spec.mutations.values()]
    return {"spec": spec.name, "doc": folded(spec.doc.strip().split("\n\n")[0]), "model_doc": model_doc(spec.name),
            "config": preset or spec.default_preset,
            "presets": list(spec.presets), "params": params, "variants": variants, "rules": rules,
            "invariants": invariants, "liveness": liveness, "z3": z3, "mutations": mutations,
            "expected": dict(spec.expected), "deadlock": spec.deadlock}


def model_doc(name: str) -> str:
    """Where a model's modelling decisions are written (relative to the repository): its own file under
    docs/models/, or the architecture document for a model that has none (the example)."""
    own = f"docs/models/{name}.md"
    return own if (REPOSITORY / own).is_file() else "docs/ARCHITECTURE.md"


def describe_lines(d: dict) -> list[Text]:
    def section(title: str) -> Text:
        return Text(title, "bold")

    lines = [Text.assemble((d["spec"], "bold"), ": ", d["doc"]),
             Text(f"model doc: {d['model_doc']}  (sources, abstractions, variants with verdicts, presets, sizes)"),
             section(f"config {d['config']}") + Text(f"  (presets: {', '.join(d['presets'])})")]
    for p in d["params"]:
        allowed = f"; allowed {p['allowed']}" if p["allowed"] else ""
        lines.append(Text(f"  {p['name']} = {spelled(p['value'])}  - {p['doc']}{allowed}"))
    lines.append(section("variants"))
    for v in d["variants"]:
        choices = "/".join(map(spelled, v["choices"]))
        lines.append(Text(f"  {v['name']} = {spelled(v['value'])}  (one of {choices})  - {v['doc']}"))
    if not d["variants"]:
        lines.append(Text("  -"))
    lines.append(section("rules") + Text("  (fair: weakly fair, for liveness)"))
    for r in d["rules"]:
        params = ", ".join(f"{k} in {v}" for k, v in r["params"].items())
        marks = (["fair"] if r["fair"] else []) + ([] if r["in_config"] else ["not in this config"])
        lines.append(Text(f"  {r['name']}({params})" + (f"  [{', '.join(marks)}]" if marks else "") + f"  - {r['who']}"))
    lines.append(section("invariants") + Text("  ([z3]: also a Z3 form, for prove and --engine z3)" if d["z3"] else ""))
    for p in d["invariants"]:
        lines.append(Text(f"  {p['name']}{'  [z3]' if p['z3'] else ''}  - {p['statement'] or '(no statement)'}"))
    lines.append(section("liveness") + Text("  (under weak fairness of the fair rules; graph engine)"))
    lines += [Text(f"  {p['name']}  - {p['statement'] or '(no statement)'}") for p in d["liveness"]] or [Text("  -")]
    lines.append(section("Z3 forms") + Text(f"  {', '.join(d['z3']) if d['z3'] else '- (no symbolic form)'}"))
    lines.append(section("mutations"))
    lines += [Text(f"  {m['name']}: weakens {m['rule']}, removes: {m['removes']}; "
                   + (f"NOT caught: {m['survives']}" if m.get("survives") else f"caught at config {m['caught_at']}"))
              for m in d["mutations"]] or [Text("  -")]
    lines.append(section("expected violations"))
    lines += [Text(f"  config {p}: {text}") for p, text in d["expected"].items()] or [Text("  -")]
    return lines
