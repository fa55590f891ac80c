"""The reachable state graph in networkx: safety, liveness under weak fairness, exports.

`build(model)` explores breadth-first (so safety counterexamples are shortest, as in BFS) and
keeps the whole graph: node i is the i-th state found, an edge u -> v carries the indices of
the actions that lead there. The graph is held in memory, so it is limited to `MAX_STATES`
states by default (`--max-states` raises it; a larger space stops the search, exit 3).

Liveness: a property `trigger ~> goal` (or `<>goal`, trigger = true) fails iff some reachable
state satisfies trigger and not goal, and from it a *fair* cycle is reachable through states
where goal never holds. Every state can stutter (TLA+ semantics: the system may stop, and
perturbations need not happen), so the cycles live in the strongly connected components of the
not-goal subgraph. A component C is fair under weak fairness iff, for every fair rule R, R is
disabled in some state of C or C contains an R edge: then the cycle through every state of C is
fair (each always-enabled fair rule is taken). The counterexample is a lasso: a shortest prefix
to the component, then a cycle through C that discharges every fairness obligation, written as
ITF with `loop`.
"""

from __future__ import annotations

import heapq
import json
import time
from collections import deque

import networkx as nx

from harness.engines.bfs import representative
from harness.errors import BadInput, LimitReached
from harness.model import Model
from harness.result import CheckResult, Violation
from harness.speed import cycle_collector_paused
from harness.trace import Outcome

MAX_STATES = 300_000  # an in-memory DiGraph costs about 1 KiB per state and edge


class StateGraph:
    """States (list), the DiGraph over their indices, parents for shortest paths, enabled rules."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.states: list[tuple] = []
        self.index: dict[tuple, int] = {}
        self.graph = nx.DiGraph()
        self.parent: dict[int, tuple[int, int] | None] = {}
        self.depth: dict[int, int] = {}
        self.enabled_rules: list[frozenset[int]] = []  # rule indices enabled in each state
        # per action: successors generated, and states first found through it (per-rule coverage, as BFS reports)
        self.generated = [0] * len(model.actions)
        self.discovered = [0] * len(model.actions)

    def path_to(self, node: int) -> tuple[list[tuple], list]:
        nodes, actions = [], []
        while node is not None:
            nodes.append(node)
            link = self.parent[node]
            actions.append(None if link is None else self.model.actions[link[1]])
            node = None if link is None else link[0]
        nodes.reverse()
        actions.reverse()
        return [self.states[n] for n in nodes], actions


@cycle_collector_paused(keeps_what_it_built=True)  # the graph: dicts of dicts, and states
def build(model: Model, max_states: int = MAX_STATES, check_safety: bool = True) -> tuple[StateGraph, list[Violation]]:
    g = StateGraph(model)
    violations: list[Violation] = []
    seen_props: set[str] = set()
    queue: deque[int] = deque()
    viewed = model.liveness_view is not None
    identify = model.liveness_view if viewed else (lambda s: s)  # a node per view

    def add(state: tuple, parent: tuple[int, int] | None, depth: int) -> int:
        ident = identify(state)
        node = g.index.get(ident)
        if node is not None:
            # under a view, a node of the level being built takes the representative BFS keeps
            if viewed and g.depth[node] == depth and representative(model, g.states[node], state):
                g.states[node] = state
                g.parent[node] = parent
                check(node, state)
            return node
        node = len(g.states)
        if node >= max_states:
            raise LimitReached(f"the state graph exceeds {max_states:,} states; use a smaller config or raise --max-states "
                           f"(the graph engine keeps every state and edge in memory)")
        g.states.append(state)
        g.index[ident] = node
        g.graph.add_node(node)
        g.parent[node] = parent
        g.depth[node] = depth
        queue.append(node)
        check(node, state)
        return node

    def check(node: int, state: tuple) -> None:
        if check_safety:
            for prop in model.violated(state):
                if prop not in seen_props:
                    seen_props.add(prop)
                    states, actions = g.path_to(node)
                    violations.append(Violation(Outcome("invariant", prop), states, actions))

    for s in model.init_states():
        add(s, None, 0)
    while queue:
        u = queue.popleft()
        rules = set()
        for action, nxt in model.successors(g.states[u]):
            rules.add(model.action_rule[action])
            known = len(g.states)
            v = add(nxt, (u, action), g.depth[u] + 1)
            g.generated[action] += 1
            g.discovered[action] += v == known
            if g.graph.has_edge(u, v):
                g.graph[u][v]["actions"].append(action)
            else:
                g.graph.add_edge(u, v, actions=[action])
        g.enabled_rules.append(frozenset(rules))
    return g, violations


def summary(g: StateGraph) -> dict:
    G = g.graph
    sccs = list(nx.strongly_connected_components(G))
    return {"states": G.number_of_nodes(), "edges": G.number_of_edges(),
            "transitions": sum(len(d["actions"]) for _, _, d in G.edges(data=True)),
            "sccs": len(sccs), "nontrivial_sccs": sum(1 for c in sccs if len(c) > 1 or any(G.has_edge(n, n) for n in c)),
            "largest_scc": max((len(c) for c in sccs), default=0),
            "terminal_states": sum(1 for n in G if G.out_degree(n) == 0),
            "depth": max(g.depth.values(), default=0)}


# ------------------------------------------------------------------------------------- liveness


def _fair_rule_ids(model: Model) -> list[int]:
    return [i for i, name in enumerate(model.rule_names) if name in model.fair_rules]


def _is_fair(g: StateGraph, component: set[int], fair: list[int]) -> bool:
    model = g.model
    for r in fair:
        if not all(r in g.enabled_rules[n] for n in component):
            continue  # disabled somewhere on the cycle: weak fairness asks nothing
        if not any(model.action_rule[a] == r for u in component for v in g.graph.successors(u) if v in component
                   for a in g.graph[u][v]["actions"]):
            return False
    return True


def _shortest_in(g: StateGraph, allowed: set[int], sources: dict[int, int]) -> tuple[dict, dict]:
    """Dijkstra (unit weights, per-source start offsets) inside `allowed`; returns dist and parent."""
    dist = dict(sources)
    parent: dict[int, tuple[int, int] | None] = {s: None for s in sources}
    heap = [(d, s) for s, d in sources.items()]
    heapq.heapify(heap)
    while heap:
        d, u = heapq.heappop(heap)
        if d > dist[u]:
            continue
        for v in g.graph.successors(u):
            if v in allowed and d + 1 < dist.get(v, 1 << 60):
                dist[v] = d + 1
                parent[v] = (u, g.graph[u][v]["actions"][0])
                heapq.heappush(heap, (d + 1, v))
    return dist, parent


def _walk(g: StateGraph, component: set[int], start: int, target) -> list[tuple[int, int]]:
    """Shortest path inside the component from start to the first node satisfying target(node, via_edge)."""
    parent = {start: None}
    queue = deque([start])
    while queue:
        u = queue.popleft()
        for v in g.graph.successors(u):
            if v not in component:
                continue
            for a in g.graph[u][v]["actions"]:
                if target(u, v, a):
                    path = [(v, a)]
                    while parent[u] is not None:
                        path.append((u, parent[u][1]))
                        u = parent[u][0]
                    return list(reversed(path))
            if v not in parent:
                parent[v] = (u, g.graph[u][v]["actions"][0])
                queue.append(v)
    raise RuntimeError("component is not strongly connected")


def _cycle(g: StateGraph, component: set[int], entry: int, fair: list[int]) -> list[tuple[int, int]]:
    """A cycle from `entry` back to it that takes every always-enabled fair rule once and visits a
    state where each other fair rule is disabled; empty (stuttering) if no fair rule is enabled."""
    model = g.model
    steps: list[tuple[int, int]] = []
    here = entry
    obligations = []
    for r in fair:
        if all(r in g.enabled_rules[n] for n in component):
            obligations.append(("take", r))
        elif r in g.enabled_rules[entry]:
            obligations.append(("visit", r))
    if not obligations:
        return []  # stutter at `entry`: fair, since no fair rule is enabled there
    for kind, r in obligations:
        if kind == "take":
            path = _walk(g, component, here, lambda u, v, a, r=r: model.action_rule[a] == r)
        else:
            if r not in g.enabled_rules[here]:
                continue
            path = _walk(g, component, here, lambda u, v, a, r=r: r not in g.enabled_rules[v])
        steps += path
        here = path[-1][0]
    if here != entry:
        steps += _walk(g, component, here, lambda u, v, a: v == entry)
    return steps


def check_liveness(g: StateGraph, name: str) -> Violation | None:
    model = g.model
    prop = model.liveness[name]
    cfg = model.config
    not_goal = {n for n, s in enumerate(g.states) if not prop.goal(cfg, s)}
    triggers = [n for n in not_goal if prop.trigger is None or prop.trigger(cfg, g.states[n])]
    if not triggers:
        return None
    fair = _fair_rule_ids(model)
    sub = g.graph.subgraph(not_goal)
    fair_components = [c for c in nx.strongly_connected_components(sub) if _is_fair(g, c, fair)]
    if not fair_components:
        return None
    in_fair = {n: i for i, c in enumerate(fair_components) for n in c}
    # Shortest prefix: init ->* trigger state (any path), then inside not-goal to a fair component.
    dist, parent = _shortest_in(g, not_goal, {t: g.depth[t] for t in triggers})
    reachable = [n for n in in_fair if n in dist]
    if not reachable:
        return None
    entry = min(reachable, key=lambda n: (dist[n], n))
    tail = []
    n = entry
    while parent[n] is not None:
        tail.append((n, parent[n][1]))
        n = parent[n][0]
    states, actions = g.path_to(n)
    for node, action in reversed(tail):
        states.append(g.states[node])
        actions.append(model.actions[action])
    loop = len(states) - 1
    for node, action in _cycle(g, fair_components[in_fair[entry]], entry, fair):
        states.append(g.states[node])
        actions.append(model.actions[action])
    if model.view is not None:
        # A node holds the first state found with its view; re-execute the actions so the trace holds
        # the states they really lead to (equal to the nodes' on the view).
        for i in range(1, len(states)):
            nxt = model.apply(states[i - 1], actions[i])
            if nxt is None:  # a field outside the view disables the step: the lasso exists only on the view
                raise RuntimeError(f"the lasso of {name} does not re-execute at step {i}: {actions[i]} is disabled "
                                   "by a field outside the spec's view")
            states[i] = nxt
    return Violation(Outcome("liveness", name), states, actions, loop=loop)


@cycle_collector_paused(keeps_what_it_built=True)  # and the liveness checks, which walk it
def explore(model: Model, *, max_states: int = MAX_STATES, properties: list[str] | None = None,
            check_safety: bool = True) -> tuple[CheckResult, StateGraph]:
    names = properties if properties is not None else list(model.liveness)
    if model.symmetry and names:
        # TLC's caveat: on orbits, a cycle may close only up to a permutation, so a lasso found there need not be
        # a run, and fairness read on representatives can hide or invent one. Safety alone is sound on orbits.
        raise BadInput("symmetry reduction is refused for liveness: a lasso over orbits may close only up to a "
                       "permutation of the ids (TLC's caveat); check liveness without --symmetry")
    started = time.monotonic()
    g, violations = build(model, max_states, check_safety)
    built = time.monotonic() - started
    unknown = [n for n in names if n not in model.liveness]
    if unknown:
        raise BadInput(f"unknown liveness property {unknown[0]!r} (known: {', '.join(model.liveness) or 'none'})")
    liveness = {}
    for name in names:
        t = time.monotonic()
        v = check_liveness(g, name)
        liveness[name] = {"holds": v is None, "seconds": round(time.monotonic() - t, 3)}
        if v is not None:
            violations.append(v)
            liveness[name]["lasso_length"] = v.depth
            liveness[name]["loop_start"] = v.loop
    stats = summary(g)
    stats.update({"seconds": round(time.monotonic() - started, 3), "build_seconds": round(built, 3),
                  "distinct": stats["states"], "liveness": liveness})
    result = CheckResult("graph", complete=True, violations=violations, stats=stats)
    result.record_coverage(model.rule_names, model.action_rule, g.generated, g.discovered)
    if violations:
        result.stopped_by = "violation"
    return result, g


# -------------------------------------------------------------------------------------- exports


def to_export_graph(g: StateGraph) -> nx.DiGraph:
    """A copy with only scalar attributes (GraphML needs them): state as compact JSON, labels."""
    model = g.model
    out = nx.DiGraph(spec=model.name)
    for n, s in enumerate(g.states):
        out.add_node(n, state=json.dumps(s, separators=(",", ":")), depth=g.depth[n], initial=g.parent[n] is None)
    for u, v, d in g.graph.edges(data=True):
        out.add_edge(u, v, label=" | ".join(str(model.actions[a]) for a in d["actions"]))
    return out


def write(g: StateGraph, path: str, fmt: str) -> None:
    import json

    eg = to_export_graph(g)
    if fmt == "graphml":
        nx.write_graphml(eg, path)
    elif fmt == "json":
        with open(path, "w") as fh:
            json.dump(nx.node_link_data(eg, edges="edges"), fh)
    elif fmt == "dot":
        lines = [f'digraph "{g.model.name}" {{', "  node [shape=box, fontsize=9];"]
        for n, d in eg.nodes(data=True):
            # the state itself, one field per line under the node's number and depth (DOT's \l: left-justified)
            text = "".join(f"{path} = {value}\n" for path, value in g.model.schema.leaves(g.states[n], ""))
            label = json.dumps(f"{n} (depth {d['depth']})\n{text}").replace("\\n", "\\l")
            style = ", style=bold" if d["initial"] else ""
            lines.append(f'  {n} [label={label}{style}];')
        for u, v, d in eg.edges(data=True):
            lines.append(f'  {u} -> {v} [label={json.dumps(d["label"])}];')
        lines.append("}")
        with open(path, "w") as fh:
            fh.write("\n".join(lines) + "\n")
    else:
        raise BadInput(f"unknown graph format {fmt!r} (dot, graphml, json)")
