"""The reachable state graph in compact arrays: safety, liveness under weak fairness, exports.

`build(model)` explores breadth-first (so safety counterexamples are shortest, as in BFS) and
keeps the whole graph: node i is the i-th state found, a transition u -> v carries the index of
the action that leads there. The graph is kept as arrays, not objects (issue 42): the visited set
is BFS's `FingerprintTable` (a 64-bit fingerprint per node), and each node has its parent, the
action from it, its depth and the rules enabled in it; the transitions are CSR arrays (each node's
transitions contiguous, in generation order: targets and actions); each liveness property's goal
and trigger are evaluated once, when the state is at hand, into one byte per node. The states
themselves are not kept: a trace re-executes its actions from an initial state, as BFS's traces do.
That is about 60-100 bytes a state (docs/liveness.md), against about 3 KB for a networkx DiGraph
of the states. The graph is still limited to `MAX_STATES` states by default (`--max-states`
raises it; a larger space stops the search, exit 3).

Liveness: a property `trigger ~> goal` (or `<>goal`, trigger = true) fails iff some reachable
state satisfies trigger and not goal, and from it a *fair* cycle is reachable through states
where goal never holds. Every state can stutter (TLA+ semantics: the system may stop, and
perturbations need not happen), so the cycles live in the strongly connected components of the
not-goal subgraph, computed by scipy's compiled strong-components routine over the CSR arrays.
A component C is fair under weak fairness iff, for every fair rule R, R is disabled in some state
of C or C contains an R transition: then the cycle through every state of C is fair (each
always-enabled fair rule is taken). The counterexample is a lasso: a shortest prefix to the
component, then a cycle through C that discharges every fairness obligation, written as ITF with
`loop`.
"""

from __future__ import annotations

import heapq
import json
import time
from array import array
from collections import deque

import networkx as nx
import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from harness.engines.bfs import representative
from harness.errors import BadInput, LimitReached
from harness.model import Model
from harness.result import CheckResult, Violation
from harness.speed import cycle_collector_paused
from harness.trace import Outcome
from harness.visited import NO_PARENT, FingerprintTable

MAX_STATES = 20_000_000  # about 2 GB in this form; the default bound of a search that keeps everything
PROGRESS_EVERY = 4096  # expansions between progress reports, as BFS
BATCH = 512  # expansions whose successors the visited set classifies at once
MAX_DEPTH = (1 << 16) - 1  # depths are kept in 16 bits
FAR = np.iinfo(np.int64).max  # the distance of a node not reached


class StateGraph:
    """The graph's arrays (see the module's docstring); node numbers are the visited set's state numbers."""

    def __init__(self, model: Model, properties: list[str]) -> None:
        if len(model.rule_names) > 64:
            raise RuntimeError("the graph engine keeps the enabled rules of a state in 64 bits")
        self.model = model
        self.visited = FingerprintTable()
        self.parent_action = array("i")  # the action from the parent (-1: an initial state)
        self.depth = array("H")
        self.enabled = array("Q")  # bit r: rule r is enabled in the state
        self.offsets = array("q", [0])  # node u's transitions are [offsets[u], offsets[u + 1])
        self.targets = array("i")
        self.actions = array("H" if len(model.actions) <= 1 << 16 else "i")
        self.initial: dict[int, tuple] = {}  # the initial states, by node
        self.goal = {name: bytearray() for name in properties}  # 1 where the property's goal holds
        self.trigger = {name: bytearray() for name in properties}  # 1 where its trigger holds (or it has none)
        # per action: successors generated, and states first found through it (per-rule coverage, as BFS reports)
        self.generated = [0] * len(model.actions)
        self.discovered = [0] * len(model.actions)

    def __len__(self) -> int:
        return len(self.visited)

    @property
    def nbytes(self) -> int:
        """The bytes the graph holds (its arrays; the states waiting to be expanded aside)."""
        arrays = (self.parent_action, self.depth, self.enabled, self.offsets, self.targets, self.actions)
        flags = sum(len(b) for b in (*self.goal.values(), *self.trigger.values()))
        return self.visited.nbytes + sum(a.itemsize * len(a) for a in arrays) + flags

    def rules_enabled(self, node: int) -> frozenset[int]:
        mask = self.enabled[node]
        return frozenset(r for r in range(len(self.model.rule_names)) if mask >> r & 1)

    def transitions(self, node: int) -> dict[int, list[int]]:
        """Node's successors, in the order first generated, each with the actions leading there."""
        out: dict[int, list[int]] = {}
        for k in range(self.offsets[node], self.offsets[node + 1]):
            out.setdefault(self.targets[k], []).append(self.actions[k])
        return out

    def chain(self, node: int) -> list[int]:
        """The nodes from an initial state to `node`, along the parents (a shortest path)."""
        nodes = []
        while node != NO_PARENT:
            nodes.append(node)
            node = self.visited.parent(node)
        return nodes[::-1]

    def run(self, start: tuple, action_indices: list[int]) -> list[tuple]:
        """The states a run of these actions goes through from `start`, re-executed. Each node's kept
        state is its parent's kept state after its parent action, so a run along parents gives them
        exactly; a step the model refuses (a field outside a view disables it) is an error."""
        states = [start]
        for i, a in enumerate(action_indices, 1):
            nxt = self.model.apply(states[-1], self.model.actions[a])
            if nxt is None:
                raise RuntimeError(f"the path does not re-execute at step {i}: {self.model.actions[a]} is disabled "
                                   "by a field outside the spec's view")
            states.append(nxt)
        return states

    def path_to(self, node: int) -> tuple[list[tuple], list]:
        nodes = self.chain(node)
        taken = [self.parent_action[n] for n in nodes[1:]]
        states = self.run(self.initial[nodes[0]], taken)
        return states, [None] + [self.model.actions[a] for a in taken]

    def all_states(self) -> list[tuple]:
        """Every node's state, in node order (parents come first): for exports and small graphs."""
        states: list[tuple] = []
        for n in range(len(self)):
            parent = self.visited.parent(n)
            states.append(self.initial[n] if parent == NO_PARENT else
                          self.model.apply(states[parent], self.model.actions[self.parent_action[n]]))
        return states

    def sources(self) -> np.ndarray:
        """Each transition's source node (the CSR rows spelled out)."""
        return np.repeat(np.arange(len(self), dtype=np.int32), np.diff(np.frombuffer(self.offsets, np.int64)))

    def digraph(self) -> nx.DiGraph:
        """The graph as a networkx DiGraph (an edge per successor, with its actions): for small graphs."""
        G = nx.DiGraph()
        G.add_nodes_from(range(len(self)))
        for u in range(len(self)):
            for v, acts in self.transitions(u).items():
                G.add_edge(u, v, actions=acts)
        return G


@cycle_collector_paused(keeps_what_it_built=True)  # the states waiting to be expanded
def build(model: Model, max_states: int = MAX_STATES, check_safety: bool = True,
          properties: list[str] | None = None, progress=None) -> tuple[StateGraph, list[Violation]]:
    names = list(model.liveness) if properties is None else properties
    g = StateGraph(model, names)
    cfg = model.config
    judged = [(g.goal[n], g.trigger[n], model.liveness[n]) for n in names]
    violations: list[Violation] = []
    seen_props: set[str] = set()
    queue: deque[int] = deque()
    waiting: dict[int, tuple] = {}  # the kept state of each node not expanded yet
    viewed = model.liveness_view is not None
    identify = model.liveness_view if viewed else (lambda s: s)  # a node per view
    started = time.perf_counter()

    def judge(node: int, state: tuple, new: bool) -> None:
        for goal, trigger, prop in judged:
            g_, t_ = bool(prop.goal(cfg, state)), prop.trigger is None or bool(prop.trigger(cfg, state))
            if new:
                goal.append(g_)
                trigger.append(t_)
            else:
                goal[node], trigger[node] = g_, t_
        if check_safety:
            for prop in model.violated(state):
                if prop not in seen_props:
                    seen_props.add(prop)
                    states, actions = g.path_to(node)
                    violations.append(Violation(Outcome("invariant", prop), states, actions))

    def absorb(found: list[tuple[int, int, tuple]], depth: int) -> None:
        """Number the new states among `found` (parent, action, state), found in this order by expanding
        nodes of one depth (or the initial states), and record the transitions. One batch for many
        expansions: the visited set answers it in numpy, and the numbers are those a state-at-a-time
        search gives (the first occurrence of a key takes the next number)."""
        if depth > MAX_DEPTH:
            raise RuntimeError(f"the graph engine keeps depths below {MAX_DEPTH + 1}")
        keys = list(map(hash, map(identify, [s for _, _, s in found])))
        known, first = (a.tolist() for a in g.visited.classify(keys))
        fresh = [j for j in range(len(found)) if known[j] < 0 and first[j] == j]
        base = len(g.visited)
        if base + len(fresh) > max_states:
            raise LimitReached(f"the state graph exceeds {max_states:,} states; use a smaller config or raise "
                               f"--max-states (the graph engine keeps every state and transition)")
        g.visited.add([keys[j] for j in fresh], [found[j][0] for j in fresh])
        number = {j: base + i for i, j in enumerate(fresh)}
        for j, (parent, action, state) in enumerate(found):
            new = known[j] < 0 and first[j] == j
            node = known[j] if known[j] >= 0 else number[first[j]]
            if new:
                g.parent_action.append(action)
                g.depth.append(depth)
                waiting[node] = state
                queue.append(node)
                if parent == NO_PARENT:
                    g.initial[node] = state
                judge(node, state, True)
            elif viewed and g.depth[node] == depth and representative(model, waiting[node], state):
                # under a view, a node of the level being built takes the representative BFS keeps
                waiting[node] = state
                g.visited.set_parent(node, parent)
                g.parent_action[node] = action
                if parent == NO_PARENT:
                    g.initial[node] = state
                judge(node, state, False)
            if parent != NO_PARENT:
                g.targets.append(node)
                g.actions.append(action)
                g.generated[action] += 1
                g.discovered[action] += new

    absorb([(NO_PARENT, -1, s) for s in model.init_states()], 0)
    expanded = 0
    rule_of = model.action_rule
    while queue:
        depth = g.depth[queue[0]]
        found: list[tuple[int, int, tuple]] = []
        ends = []
        # A batch of nodes of one depth: the next level's kept states may still change until this one is done.
        while queue and len(ends) < BATCH and g.depth[queue[0]] == depth:
            u = queue.popleft()
            mask = 0
            for action, state in model.successors(waiting.pop(u)):
                mask |= 1 << rule_of[action]
                found.append((u, action, state))
            ends.append(len(found))
            g.enabled.append(mask)
        start = len(g.targets)
        absorb(found, depth + 1)
        g.offsets.extend(start + e for e in ends)
        expanded += len(ends)
        if progress and expanded // PROGRESS_EVERY != (expanded - len(ends)) // PROGRESS_EVERY:
            progress({"distinct": len(g), "generated": sum(g.generated), "depth": depth + 1,
                      "queue": len(queue), "elapsed": time.perf_counter() - started})
    return g, violations


def _components(g: StateGraph, keep: np.ndarray | None = None) -> np.ndarray:
    """The strongly connected component of each node (a label), over the transitions `keep` selects
    (all if None); scipy's compiled routine (Pearce's algorithm) over CSR arrays, in linear time."""
    n = len(g)
    offsets = np.frombuffer(g.offsets, np.int64)
    targets = np.frombuffer(g.targets, np.int32)
    if keep is not None:
        rows = np.bincount(g.sources()[keep], minlength=n)
        offsets = np.concatenate(([0], np.cumsum(rows)))
        targets = targets[keep]
    matrix = csr_matrix((np.ones(len(targets), np.int8), targets, offsets), shape=(n, n))
    return connected_components(matrix, directed=True, connection="strong")[1]


def summary(g: StateGraph) -> dict:
    n = len(g)
    src, dst = g.sources(), np.frombuffer(g.targets, np.int32)
    labels = _components(g)
    sizes = np.bincount(labels, minlength=n)
    looped = np.zeros(len(sizes), bool)
    looped[labels[src[src == dst]]] = True
    return {"states": n, "edges": len(np.unique(src.astype(np.int64) * n + dst)), "transitions": len(dst),
            "sccs": int((sizes > 0).sum()), "nontrivial_sccs": int(((sizes > 1) | looped).sum()),
            "largest_scc": int(sizes.max(initial=0)),
            "terminal_states": int((np.diff(np.frombuffer(g.offsets, np.int64)) == 0).sum()),
            "depth": max(g.depth, default=0), "bytes_per_state": round(g.nbytes / n, 1) if n else 0}


# ------------------------------------------------------------------------------------- liveness


def _fair_rule_ids(model: Model) -> list[int]:
    return [i for i, name in enumerate(model.rule_names) if name in model.fair_rules]


def _always_enabled(g: StateGraph, nodes: np.ndarray, rule: int) -> bool:
    return bool(((np.frombuffer(g.enabled, np.uint64)[nodes] >> np.uint64(rule)) & np.uint64(1)).all())


def _fair_components(g: StateGraph, not_goal: np.ndarray, fair: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The components of the not-goal subgraph (a label per node) and, per label, whether it is fair:
    every fair rule is disabled in one of its states or labels one of its inner transitions."""
    src, dst = g.sources(), np.frombuffer(g.targets, np.int32)
    inside = not_goal[src] & not_goal[dst]
    labels = _components(g, inside)
    members = np.flatnonzero(not_goal)
    size = np.bincount(labels[members], minlength=len(g))
    fair_label = size > 0
    inner = inside & (labels[src] == labels[dst])
    rule_of = np.array(g.model.action_rule, np.int32)[np.frombuffer(g.actions, g.actions.typecode)]
    enabled = np.frombuffer(g.enabled, np.uint64)
    for r in fair:
        on = ((enabled[members] >> np.uint64(r)) & np.uint64(1)).astype(np.int64)
        always = np.bincount(labels[members], weights=on, minlength=len(g)) == size
        taken = np.bincount(labels[src[inner & (rule_of == r)]], minlength=len(g)) > 0
        fair_label &= ~always | taken
    return labels, fair_label


def _shortest_in(g: StateGraph, allowed: np.ndarray, sources: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dijkstra (unit weights, each source starting at its depth) inside `allowed`: distance, parent
    node and parent action of each node (-1 where unreached or a source)."""
    n = len(g)
    dist = array("q", [FAR]) * n  # arrays, not numpy: the loop reads one item at a time
    parent = array("q", [-1]) * n
    via = array("q", [-1]) * n
    allowed = allowed.tobytes()
    heap = []
    for s in sources.tolist():
        dist[s] = g.depth[s]
        heap.append((dist[s], s))
    heapq.heapify(heap)
    offsets, targets, actions = g.offsets, g.targets, g.actions
    while heap:
        d, u = heapq.heappop(heap)
        if d > dist[u]:
            continue
        for k in range(offsets[u], offsets[u + 1]):
            v = targets[k]
            if allowed[v] and d + 1 < dist[v]:
                dist[v], parent[v], via[v] = d + 1, u, actions[k]
                heapq.heappush(heap, (d + 1, v))
    return np.frombuffer(dist, np.int64), np.frombuffer(parent, np.int64), np.frombuffer(via, np.int64)


def _walk(g: StateGraph, component: bytes, start: int, target) -> list[tuple[int, int]]:
    """Shortest path inside the component from start to the first node satisfying target(node, via_edge)."""
    parent = {start: None}
    queue = deque([start])
    while queue:
        u = queue.popleft()
        for v, acts in g.transitions(u).items():
            if not component[v]:
                continue
            for a in acts:
                if target(u, v, a):
                    path = [(v, a)]
                    while parent[u] is not None:
                        path.append((u, parent[u][1]))
                        u = parent[u][0]
                    return list(reversed(path))
            if v not in parent:
                parent[v] = (u, acts[0])
                queue.append(v)
    raise RuntimeError("component is not strongly connected")


def _cycle(g: StateGraph, component: bytes, entry: int, fair: list[int]) -> list[tuple[int, int]]:
    """A cycle from `entry` back to it that takes every always-enabled fair rule once and visits a
    state where each other fair rule is disabled; empty (stuttering) if no fair rule is enabled."""
    model = g.model
    members = np.flatnonzero(np.frombuffer(component, np.uint8))
    steps: list[tuple[int, int]] = []
    here = entry
    obligations = []
    for r in fair:
        if _always_enabled(g, members, r):
            obligations.append(("take", r))
        elif g.enabled[entry] >> r & 1:
            obligations.append(("visit", r))
    if not obligations:
        return []  # stutter at `entry`: fair, since no fair rule is enabled there
    for kind, r in obligations:
        if kind == "take":
            path = _walk(g, component, here, lambda u, v, a, r=r: model.action_rule[a] == r)
        else:
            if not g.enabled[here] >> r & 1:
                continue
            path = _walk(g, component, here, lambda u, v, a, r=r: not g.enabled[v] >> r & 1)
        steps += path
        here = path[-1][0]
    if here != entry:
        steps += _walk(g, component, here, lambda u, v, a: v == entry)
    return steps


def check_liveness(g: StateGraph, name: str) -> Violation | None:
    model = g.model
    not_goal = np.frombuffer(g.goal[name], np.uint8) == 0
    triggers = np.flatnonzero(not_goal & (np.frombuffer(g.trigger[name], np.uint8) == 1))
    if not len(triggers):
        return None
    fair = _fair_rule_ids(model)
    labels, fair_label = _fair_components(g, not_goal, fair)
    in_fair = not_goal & fair_label[labels]
    if not in_fair.any():
        return None
    # Shortest prefix: init ->* trigger state (any path), then inside not-goal to a fair component.
    dist, parent, via = _shortest_in(g, not_goal, triggers)
    reachable = np.flatnonzero(in_fair & (dist < FAR))
    if not len(reachable):
        return None
    nearest = reachable[dist[reachable] == dist[reachable].min()]
    entry = int(nearest.min())
    tail = []
    n = entry
    while parent[n] >= 0:
        tail.append(int(via[n]))
        n = int(parent[n])
    states, actions = g.path_to(n)
    loop_actions = [a for _, a in _cycle(g, (labels == labels[entry]).tobytes(), entry, fair)]
    later = tail[::-1] + loop_actions
    try:
        states += g.run(states[-1], later)[1:]
    except RuntimeError as e:  # the lasso exists only on the view
        raise RuntimeError(f"the lasso of {name} does not re-execute: {e}") from None
    actions += [model.actions[a] for a in later]
    return Violation(Outcome("liveness", name), states, actions, loop=len(states) - 1 - len(loop_actions))


@cycle_collector_paused(keeps_what_it_built=True)  # and the liveness checks, which walk it
def explore(model: Model, *, max_states: int = MAX_STATES, properties: list[str] | None = None,
            check_safety: bool = True, progress=None) -> tuple[CheckResult, StateGraph]:
    started = time.monotonic()
    names = properties if properties is not None else list(model.liveness)
    if model.symmetry and names:
        # TLC's caveat: on orbits, a cycle may close only up to a permutation, so a lasso found there need not be
        # a run, and fairness read on representatives can hide or invent one. Safety alone is sound on orbits.
        raise BadInput("symmetry reduction is refused for liveness: a lasso over orbits may close only up to a "
                       "permutation of the ids (TLC's caveat); check liveness without --symmetry")
    unknown = [n for n in names if n not in model.liveness]
    if unknown:
        raise BadInput(f"unknown liveness property {unknown[0]!r} (known: {', '.join(model.liveness) or 'none'})")
    g, violations = build(model, max_states, check_safety, names, progress)
    built = time.monotonic() - started
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
                  "distinct": stats["states"], "liveness": liveness, "fingerprints": "64-bit"})
    result = CheckResult("graph", complete=True, violations=violations, stats=stats)
    result.record_coverage(model.rule_names, model.action_rule, g.generated, g.discovered)
    if violations:
        result.stopped_by = "violation"
    return result, g


# -------------------------------------------------------------------------------------- exports


def to_export_graph(g: StateGraph, states: list[tuple]) -> nx.DiGraph:
    """A networkx copy with only scalar attributes (GraphML needs them): state as compact JSON, labels."""
    model = g.model
    out = nx.DiGraph(spec=model.name)
    for n, s in enumerate(states):
        out.add_node(n, state=json.dumps(s, separators=(",", ":")), depth=g.depth[n],
                     initial=g.visited.parent(n) == NO_PARENT)
    for u in range(len(g)):
        for v, acts in g.transitions(u).items():
            out.add_edge(u, v, label=" | ".join(str(model.actions[a]) for a in acts))
    return out
def write(g: StateGraph, path: str, fmt: str) -> None:
    import json

    states = g.all_states()
    eg = to_export_graph(g, states)
    if fmt == "graphml":
        nx.write_graphml(eg, path)
    elif fmt == "json":
        with open(path, "w") as fh:
            json.dump(nx.node_link_data(eg, edges="edges"), fh)
    elif fmt == "dot":
        lines = [f'digraph "{g.model.name}" {{', "  node [shape=box, fontsize=9];"]
        for n, d in eg.nodes(data=True):
            # the state itself, one field per line under the node's number and depth (DOT's \l: left-justified)
            text = "".join(f"{path} = {value}\n" for path, value in g.model.schema.leaves(states[n], ""))
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
