"""`harness explore`: a local web explorer of traces (step through a counterexample) and of a model (choose
enabled actions from an initial state, save the path as a trace).

A Flask application, served by werkzeug's threaded server on 127.0.0.1 only. Pages are rendered on the
server from jinja2 templates (harness/explore/templates); a small script (static/explore.js) only adds
keyboard shortcuts, so every step of a trace and every state of a model walk has its own URL, a permalink.

What it serves is bounded by what it was given: the traces named on the command line (by their position in
that list, never by a path from a URL), or one model. A walk in the model is a list of action indices in the
URL, each checked against the actions enabled in the state it applies to. Nothing from a trace or a URL is
ever evaluated: traces are read by harness/trace.py, the protocol views are the specs' own functions of a
decoded state, and jinja2 escapes every value it prints.

The explorer is not an engine: it takes the Spec from the registry and calls its `protocol_view`. Beside this
module: the message timeline across a run's states (timeline.py), the entities a violation's reason names
(culprits.py), lists changed by element (element_diff.py) and the docs' screenshots (capture.py).
"""

from __future__ import annotations

import functools
import logging
import logging.handlers
import queue
import re
import secrets
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flask import Flask, abort, redirect, render_template, request, url_for
from werkzeug.serving import BaseWSGIServer, make_server

from harness.errors import BadInput
from harness.explore.culprits import Culprits, culprits_named
from harness.explore.element_diff import element_changes
from harness.explore.timeline import Timeline, message_timeline
from harness.model import Action, Model, variant_of
from harness.present import Step, View, guarded, run_steps, view_of
from harness.trace import Cti, Outcome, Trace, trace_filename, write_trace

HOST = "127.0.0.1"  # loopback only: the explorer has no authentication
NAMES = (HOST, "localhost")  # the Host names a browser on this machine gives the server (see `served_hosts`)
MAX_WALK = 1000  # actions in one model walk (a URL); longer walks are refused, not computed
MAX_BODY = 64 * 1024  # bytes of a request body (413 beyond): a save's form, a walk of MAX_WALK actions, is ~12 KB
LOG_QUEUE = 1000  # log records waiting for stderr; more are dropped (see `_log_without_blocking`)


# ------------------------------------------------------------------------------------ page data

def protocol_view(model: Model, state: tuple) -> dict:
    """The spec's drawing of `state` as plain data, or the generic tree when the spec declares none (or its
    function fails on a state no run reaches: an edited trace must still be shown)."""
    draw = model.spec.protocol_view_fn
    data = guarded(lambda: draw(model.config, state)) if draw is not None else None
    return data if isinstance(data, dict) and "kind" in data else {"kind": "tree"}


_PATH_PART = re.compile(r"[^.\[]+|\[[^\]]*\]")


def field_tree(step: Step) -> list[dict]:
    """The state's fields as nested nodes (records and maps opened), each leaf with its value and, when the
    step's action changed it, the value before."""
    root: dict[str, Any] = {"children": {}}
    for path, value in step.fields.items():
        node = root
        parts = _PATH_PART.findall(path)
        for depth, part in enumerate(parts):
            node = node["children"].setdefault(part, {"name": part, "path": "".join(
                p if p.startswith("[") or i == 0 else "." + p for i, p in enumerate(parts[:depth + 1])), "children": {}})
        node["value"] = value
        if path in step.changes:
            node["before"] = step.changes[path][0]

    def finish(node: dict) -> dict:
        kids = [finish(k) for k in node["children"].values()]
        changed = "before" in node or any(k["changed"] for k in kids)
        return {**node, "children": kids, "changed": changed}

    return [finish(k) for k in root["children"].values()]


def invariant_rows(model: Model, state: tuple) -> list[dict]:
    """Every invariant at `state`: holds, fails (with the reason the property gives) or could not be
    evaluated (a spec's assumption broken by a state no run reaches)."""
    rows = []
    for name in model.invariant_names:
        verdict = guarded(lambda: bool(model.holds(name, state)))
        reason = guarded(lambda: model.explain(name, state)) if verdict is False else None
        rows.append({"name": name, "holds": verdict, "reason": reason, "statement": model.statement(name) or ""})
    return rows


def action_params(model: Model, action: Action | None) -> list[tuple[str, str]]:
    return [] if action is None else model.format_params(action)


def variants_text(model: Model) -> str:
    """The chosen variants as `name=value` (booleans as users type them), "-" for a spec without any."""
    chosen = variant_of(model.spec, model.config)
    return " ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in chosen.items()) or "-"


@dataclass
class LoadedTrace:
    """A trace (or a prover's counterexample to induction) given on the command line, with the view `show`
    prints of it and, for a trace, each state's protocol drawing and the message timeline across them."""

    trace: Trace | Cti
    view: View
    drawings: list[dict]
    timeline: Timeline | None

    @property
    def name(self) -> str:
        return Path(self.trace.path).name


def loaded(document: Trace | Cti) -> LoadedTrace:
    if isinstance(document, Cti):  # two symbolic states, not states of the model: no drawing, no timeline
        return LoadedTrace(document, view_of(document), [], None)
    drawings = [protocol_view(document.model, state) for state in document.states]
    return LoadedTrace(document, view_of(document), drawings, message_timeline(drawings, document.actions))


@dataclass
class Walk:
    """A path through the model: the initial state chosen, then each action (an index of the model's action
    table) taken from the state before it."""

    choices: list[int]
    states: list[tuple]
    actions: list[Action | None]


def parse_walk(model: Model, text: str) -> Walk:
    """`text` ("0,12,5": initial state 0, then actions 12 and 5) as a walk, each action checked to be
    enabled where it is taken; 404 for anything else."""
    parts = text.split(",") if text else []
    if len(parts) > MAX_WALK + 1 or not all(p.isdigit() and len(p) <= 9 for p in parts):
        abort(404)
    choices = [int(p) for p in parts]
    inits = model.init_states()
    if not choices or choices[0] >= len(inits):
        abort(404)
    states, actions = [inits[choices[0]]], [None]
    for index in choices[1:]:
        nxt = dict(model.successors(states[-1])).get(index)
        if nxt is None:
            abort(404)
        states.append(nxt)
        actions.append(model.actions[index])
    return Walk(choices, states, actions)


def walk_text(choices: list[int]) -> str:
    return ",".join(map(str, choices))


def save_walk(model: Model, walk: Walk, out_dir: Path) -> Path:
    """Write a walk as an ITF trace `replay` accepts: outcome the first invariant the last state violates,
    else none (violations on the way are recorded as such by the trace writer)."""
    violated = model.violated(walk.states[-1])
    outcome = Outcome("invariant", violated[0]) if violated else Outcome("none")
    stem = trace_filename(model, outcome, "explore").removesuffix(".itf.json") + f"-{len(walk.states) - 1}-steps"
    path, n = out_dir / f"{stem}.itf.json", 1
    while path.exists():  # never overwrite an earlier save
        n += 1
        path = out_dir / f"{stem}-{n}.itf.json"
    return write_trace(path, model, walk.states, walk.actions, outcome, "explore")


# ------------------------------------------------------------------------------------ the application

def create_app(traces: list[Trace | Cti] | None = None, model: Model | None = None,
               out_dir: Path = Path("traces")) -> Flask:
    """The explorer of `traces` (trace mode: traces, or counterexamples to induction shown as their pre- and
    post-state) or of `model` (model mode, saving walks under `out_dir`)."""
    if (traces is None) == (model is None):
        raise ValueError("explore either traces or a model")
    _log_without_blocking()
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY  # werkzeug refuses a longer body (413) before reading it
    app.jinja_env.trim_blocks = app.jinja_env.lstrip_blocks = True
    app.jinja_env.globals["element_changes"] = element_changes
    loaded_traces = [loaded(t) for t in traces or ()]
    save_token = secrets.token_urlsafe(16)  # a page of another site cannot post a save without it

    @app.before_request
    def only_this_server_by_name():
        # DNS rebinding: a page of another site whose name was made to resolve to 127.0.0.1 sends that name as
        # Host; refused, it can neither read pages (nor the save token in them) nor post a save
        if request.host.lower() not in served_hosts(request.environ["SERVER_PORT"]):
            abort(403)

    @app.get("/")
    def index():
        if model is not None:
            return redirect(url_for("model_page"))
        if len(loaded_traces) == 1:
            return redirect(url_for("trace_step", number=0, index=0))
        return render_template("index.html", traces=loaded_traces)

    def loaded_trace(number: int) -> LoadedTrace:
        if number >= len(loaded_traces):
            abort(404)
        return loaded_traces[number]

    @app.get("/trace/<int:number>/")
    def trace_start(number: int):
        loaded_trace(number)
        return redirect(url_for("trace_step", number=number, index=0))

    @app.get("/trace/<int:number>/step/<int:index>")
    def trace_step(number: int, index: int):
        item = loaded_trace(number)
        trace, view = item.trace, item.view
        if index >= len(view.steps):
            abort(404)
        step = view.steps[index]
        last = len(view.steps) - 1
        if isinstance(trace, Cti):
            return render_template("cti.html", item=item, view=view, pre=view.steps[0], post=view.steps[1])
        closing = view.closing if index == last else []
        return render_template(
            "trace.html", item=item, number=number, view=view, step=step, last=last, loop_start=trace.loop,
            params=action_params(trace.model, trace.actions[index]), protocol=item.drawings[index],
            previous=item.drawings[index - 1] if index else None, timeline=item.timeline,
            tree=field_tree(step), closing=closing, outcome=view.header["outcome"],
            culprits=culprits_named([dict(closing).get("reason")]),
            step_urls=[url_for("trace_step", number=number, index=i) for i in range(last + 1)])

    @app.get("/model")
    def model_page():
        if model is None:
            abort(404)
        text = request.args.get("path", "")
        if not text:
            inits = model.init_states()
            return render_template("model_init.html", model=model, variants=variants_text(model), culprits=Culprits(),
                                   inits=[{"choice": i, "protocol": protocol_view(model, s),
                                           "tree": field_tree(run_steps(model, [s], [None])[0])}
                                          for i, s in enumerate(inits)])
        walk = parse_walk(model, text)
        steps = run_steps(model, walk.states, walk.actions)
        state = walk.states[-1]
        drawings = [protocol_view(model, s) for s in walk.states]
        invariants = invariant_rows(model, state)
        enabled = [{"index": index, "label": model.format_action(model.actions[index]),
                    "params": model.format_params(model.actions[index]),
                    "path": walk_text(walk.choices + [index])} for index, _ in model.successors(state)]
        history = [{"label": s.label, "path": walk_text(walk.choices[:i + 1])} for i, s in enumerate(steps)]
        return render_template(
            "model.html", model=model, walk=walk, path=text, step=steps[-1], history=history, enabled=enabled,
            back=walk_text(walk.choices[:-1]), params=action_params(model, walk.actions[-1]),
            protocol=drawings[-1], previous=drawings[-2] if len(drawings) > 1 else None,
            timeline=message_timeline(drawings, walk.actions),
            step_urls=[url_for("model_page", path=walk_text(walk.choices[:i + 1])) for i in range(len(walk.choices))],
            tree=field_tree(steps[-1]), invariants=invariants,
            token=save_token, quiescent=guarded(lambda: model.quiescent(state)), variants=variants_text(model),
            culprits=culprits_named([row["reason"] for row in invariants]))

    @app.post("/model/save")
    def model_save():
        if model is None:
            abort(404)
        if not secrets.compare_digest(request.form.get("token", ""), save_token):
            abort(403)
        walk = parse_walk(model, request.form.get("path", ""))
        try:
            path = save_walk(model, walk, out_dir)
        except BadInput as exc:  # a full disk, a file-size limit, a folder made read-only since the start
            return render_template("error.html", code=500, message=str(exc)), 500
        return render_template("saved.html", model=model, saved=str(path), path=walk_text(walk.choices),
                               steps=len(walk.states) - 1)

    @app.errorhandler(403)
    @app.errorhandler(404)
    @app.errorhandler(405)
    @app.errorhandler(413)
    def refused(error):
        return render_template("error.html", code=error.code, message=error.description), error.code

    return app


# ------------------------------------------------------------------------------------ the server

def served_hosts(port: str) -> set[str]:
    """The Host values served on `port`: the bound address and localhost with the port, bare only on port 80
    (the one a browser leaves out; werkzeug's `request.host` drops it too)."""
    return set(NAMES) if port == "80" else {f"{name}:{port}" for name in NAMES}


class _DroppingQueueHandler(logging.handlers.QueueHandler):
    def enqueue(self, record: logging.LogRecord) -> None:
        try:
            self.queue.put_nowait(record)
        except queue.Full:  # stderr is not being read: the record is lost, the request is still answered
            pass


@functools.cache
def _log_without_blocking() -> None:
    """werkzeug's lines (one per malformed request) and Flask's (a view's exception) go through a bounded queue
    to one writer thread: when stderr is a pipe nobody reads, that thread waits and records are dropped,
    where a write from the thread answering the request would leave it, and every later one, blocked.
    Successful requests are not logged at all."""
    records: queue.Queue = queue.Queue(LOG_QUEUE)
    to_stderr = logging.StreamHandler(sys.stderr)
    to_stderr.setFormatter(logging.Formatter("explore: %(message)s"))
    logging.handlers.QueueListener(records, to_stderr).start()  # a daemon thread
    for name, level in (("werkzeug", logging.ERROR), (__name__, logging.NOTSET)):  # __name__: Flask's app.logger
        logger = logging.getLogger(name)
        logger.setLevel(level)
        logger.addHandler(_DroppingQueueHandler(records))  # a handler of its own: neither adds one to stderr
        logger.propagate = False


def start_server(app: Flask, port: int) -> BaseWSGIServer:
    """werkzeug's threaded server for `app` on 127.0.0.1:`port` (0: a free port); BadInput if the port
    cannot be bound (in use, privileged)."""
    # The socket is bound here, not by make_server: on a taken port werkzeug prints two lines of its own and
    # exits 1, where every command of the harness says one line and exits 2.
    try:
        listening = socket.create_server((HOST, port))
    except OSError as exc:
        raise BadInput(f"--port {port}: cannot listen on {HOST}: {exc.strerror or exc}") from None
    with listening:  # make_server works on a duplicate of this descriptor
        return make_server(HOST, listening.getsockname()[1], app, threaded=True, fd=listening.fileno())


def url_of(server: BaseWSGIServer) -> str:
    return f"http://{HOST}:{server.port}/"
