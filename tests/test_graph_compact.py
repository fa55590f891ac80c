"""The graph engine's compact form (issue 42): the CSR arrays, scipy's strong components and the fairness
test over arrays give what networkx gives over the same graph, and a state costs at most 100 bytes."""

import networkx as nx
import numpy as np
import pytest

from harness.engines import graph
from harness.registry import load_spec


def model(name, preset, **kw):
    spec = load_spec(name)
    return spec.bind(spec.config(preset, **kw))


@pytest.fixture(scope="module")
def kraft_liveness():
    m = model("kraft", "liveness")
    return m, graph.build(m, check_safety=False)[0]


def test_the_components_are_networkx_strongly_connected_components():
    m = model("replication", "liveness")
    g, _ = graph.build(m, check_safety=False)
    labels = graph._components(g)
    ours = {frozenset(np.flatnonzero(labels == label).tolist()) for label in set(labels.tolist())}
    assert ours == {frozenset(c) for c in nx.strongly_connected_components(g.digraph())}
    assert any(len(c) > 1 for c in ours)  # the check says something: 1,143 components here are cycles


def test_fair_components_match_a_networkx_reading_of_weak_fairness(kraft_liveness):
    """A component of the not-goal subgraph is fair iff each fair rule is disabled in one of its states or
    taken on one of its inner edges: the same components, read with networkx from the same graph."""
    m, g = kraft_liveness
    G = g.digraph()
    fair = graph._fair_rule_ids(m)
    checked = 0
    for name in m.liveness:
        not_goal = np.frombuffer(g.goal[name], np.uint8) == 0
        labels, fair_label = graph._fair_components(g, not_goal, fair)
        ours = {frozenset(np.flatnonzero((labels == lab) & not_goal).tolist())
                for lab in set(labels[not_goal].tolist()) if fair_label[lab]}
        sub = G.subgraph(np.flatnonzero(not_goal).tolist())
        theirs = set()
        for c in nx.strongly_connected_components(sub):
            rules_on = {m.action_rule[a] for u in c for v in sub.successors(u) if v in c for a in sub[u][v]["actions"]}
            if all(r in rules_on or not all(r in g.rules_enabled(n) for n in c) for r in fair):
                theirs.add(frozenset(c))
        assert ours == theirs
        checked += len(theirs)
    assert checked  # kraft's liveness preset has fair not-goal components (its expected failures)


def test_a_state_costs_at_most_100_bytes(kraft_liveness):
    _, g = kraft_liveness
    assert len(g) == 61_036
    assert g.nbytes / len(g) <= 100


def test_paths_and_exports_re_execute_the_kept_states(kraft_liveness):
    """No state is stored: a node's state is its parent's after its action, for every node of the graph."""
    m, g = kraft_liveness
    states = g.all_states()
    assert len(set(map(m.liveness_view or (lambda s: s), states))) == len(g)
    node = len(g) - 1
    path, actions = g.path_to(node)
    assert path[-1] == states[node] and len(path) == g.depth[node] + 1 and actions[0] is None
