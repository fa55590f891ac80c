"""Symmetry reduction (harness/symmetry.py, `Spec.symmetry`, `check --symmetry`): each model's declaration is
sound (the reachable states are closed under its permutations, and every property keeps its value), and a
search with it finds the same violations, as traces that replay, in fewer states."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import deque

import pytest

from harness.engines import bfs, graph
from harness.errors import BadInput
from harness.registry import load_spec
from harness.replay import replay
from harness.symmetry import mappings, state_permuter
from harness.trace import read_trace, write_trace

# A small config per model where the declaration has a group to permute (two spare ids, or example's followers).
SMALL = {
    "example": ("ci", ["brokers=4"]),
    "kraft": ("tiny-fence", ["brokers=5"]),
    "zk": ("seed-shrink-in-phase-b", ["brokers=4", "max_broker_crashes=1"]),  # a spare broker may crash
    "kip435": ("tiny", ["brokers=5", "max_failures=1"]),
    "kip642": ("tiny", ["servers=5", "max_reassignments=0"]),  # spare servers stand in an election
}

# The config field that counts a model's ids: two more of them are two spare ids, interchangeable.
ID_COUNT = {"example": "brokers", "kraft": "brokers", "zk": "brokers", "kip435": "brokers", "kip642": "servers",
            "replication": "broker_count"}


def reachable(model) -> dict:
    """Every reachable state, by identity (its view, or itself), by plain breadth-first search."""
    seen = {}
    queue = deque()
    for s in model.init_states():
        seen.setdefault(model.identity(s), s)
        queue.append(s)
    while queue:
        for _, t in model.successors(queue.popleft()):
            k = model.identity(t)
            if k not in seen:
                seen[k] = t
                queue.append(t)
    return seen


@pytest.mark.parametrize("name", sorted(SMALL))
def test_every_declared_symmetry_maps_reachable_states_to_reachable_states(name):
    """The declaration is what TLC trusts its user for: permuting interchangeable ids maps a reachable state to a
    reachable one and keeps every invariant's value. A group with an id some rule or property singles out fails."""
    spec = load_spec(name)
    preset, settings = SMALL[name]
    cfg = spec.config(preset, settings)
    reduced = spec.bind(cfg, symmetry=True)
    assert reduced.symmetry, f"{name} {preset} {settings}: no interchangeable ids to test"
    plain = spec.bind(cfg)
    states = reachable(plain)
    permute = state_permuter(spec.schema, spec.id_fields)
    moved = 0
    for s in states.values():
        for p in reduced.permutations[1:]:
            image = permute(s, p)
            assert plain.identity(image) in states, f"{name}: a permuted reachable state is unreachable"
            assert plain.violated(image) == plain.violated(s)
            moved += image != s
    assert moved  # the permutations did rename something
    # one canonical form per orbit: fewer keys than states, and a state and its images share it
    assert len({reduced.fingerprint(s) for s in states.values()}) < len(states)


def test_replication_declares_no_interchangeable_brokers():
    """Its Init numbers the brokers' incarnations and epochs by id: brokers 3 and 4, spare, still start apart, and
    the closure check above fails when they are declared interchangeable."""
    spec = load_spec("replication")
    cfg = spec.config("tiny", ["broker_count=4", "clean_shutdown_limit=1"])
    assert spec.bind(cfg, symmetry=True).symmetry == []
    s = spec.bind(cfg).init_states()[0]
    image = state_permuter(spec.schema, spec.id_fields)(s, mappings([(3, 4)])[1])
    assert spec.bind(cfg).identity(image) not in reachable(spec.bind(cfg))


def test_a_wrong_declaration_is_caught_by_the_closure_check():
    """The test above can fail: declaring the leader interchangeable with a follower breaks closure."""
    spec = load_spec("example")
    cfg = spec.config("ci")
    states = reachable(spec.bind(cfg))
    permute = state_permuter(spec.schema)
    swap = mappings([(1, 2)])[1]
    assert any(spec.bind(cfg).identity(permute(s, swap)) not in states for s in states.values())


def test_permuting_renames_ids_in_sets_tables_and_declared_fields():
    spec = load_spec("kraft")
    s = spec.bind(spec.config("tiny", ["brokers=5"])).init_states()[0]
    p = mappings([(2, 5)])[1]
    t = state_permuter(spec.schema, spec.id_fields)(s, p)
    assert t.partition.replicas == tuple(5 if b == 2 else b for b in s.partition.replicas)  # an id field
    assert t.partition.isr >> 5 & 1 == s.partition.isr >> 2 & 1  # a set
    for field in ("status", "epoch", "log", "hwm"):  # broker 2's record is now broker 5's
        assert getattr(t.brokers[4], field) == getattr(s.brokers[1], field)
    assert state_permuter(spec.schema, spec.id_fields)(t, p) == s  # a transposition twice is the identity
    with pytest.raises(TypeError):
        spec.symmetry(lambda cfg: [], id_fields=("no_such_field",))


def _bfs_caught_mutations():
    for name in sorted(ID_COUNT):
        spec = load_spec(name)
        for m in spec.mutations.values():
            # caught by BFS at its preset; those whose trace the corpus regenerates by a guided search (kip642's
            # deep ones) take minutes of BFS and are left to the gate
            if m.caught_by == "bfs" and not m.survives and m.name not in spec.guides:
                yield name, m.name


BUDGET = 5_000  # states of the plain search to the first violation: the test takes seconds, not minutes


def _violations(model, depth):
    r = bfs.explore(model, keep_going=True, max_depth=depth)
    return r, {(v.outcome.property, v.depth) for v in r.violations}


@pytest.mark.parametrize("name,mutation", list(_bfs_caught_mutations()))
@pytest.mark.parametrize("spare", [0, 2])
def test_same_violations_with_and_without_symmetry_on_the_mutation_presets(name, mutation, spare, tmp_path):
    """Acceptance: at each mutation's preset (and with two spare ids added, which are interchangeable), the
    search with symmetry finds the same properties violated at the same depths, its traces replay as recorded,
    and it visits at most as many states (fewer where there are interchangeable ids that act)."""
    spec = load_spec(name)
    preset = spec.preset_for(mutation)
    settings = []
    if spare:
        count = getattr(spec.config(preset, mutation=mutation), ID_COUNT[name])
        settings = [f"{ID_COUNT[name]}={count + spare}"]
    cfg = spec.config(preset, settings, mutation=mutation)
    plain, reduced = spec.bind(cfg), spec.bind(cfg, symmetry=True)
    if not reduced.symmetry:  # the preset names every id: the reduced model is the plain one, so is every result
        assert reduced.view is plain.view is spec.view and (spare == 0 or name == "replication")
        return
    first = bfs.explore(plain, max_states=BUDGET)
    if not first.violations:
        pytest.skip(f"not caught within {BUDGET:,} states with {spare} spare ids")
    depth = first.violations[0].depth
    r0, found0 = _violations(plain, depth)
    r1, found1 = _violations(reduced, depth)
    assert found1 == found0
    for i, v in enumerate(r1.violations):
        path = write_trace(tmp_path / f"{i}.itf.json", reduced, v.states, v.actions, v.outcome, "bfs")
        assert replay(read_trace(path)).ok
    assert r1.stats["distinct"] <= r0.stats["distinct"]
    if spare:
        assert reduced.symmetry


def test_symmetry_reduces_the_state_count_where_spare_ids_act():
    """The reduced counts, exhausted: example's followers, and kraft's two spare brokers that may be fenced."""
    for name, preset, settings, plain_count, reduced_count in [
            ("example", "ci", ["brokers=4"], 1584, 397), ("kraft", "tiny-fence", ["brokers=5"], 6428, 6152)]:
        spec = load_spec(name)
        cfg = spec.config(preset, settings)
        r0, r1 = bfs.explore(spec.bind(cfg)), bfs.explore(spec.bind(cfg, symmetry=True))
        assert (r0.stats["distinct"], r1.stats["distinct"]) == (plain_count, reduced_count)
        assert r0.complete and r1.complete


def test_without_the_flag_nothing_changes():
    """Off by default: a model bound without symmetry has no canonical view; with it, a config without two
    interchangeable ids gives the same model (kraft ci names every broker)."""
    spec = load_spec("kraft")
    cfg = spec.config("ci")
    assert spec.bind(cfg).view is None and spec.bind(cfg).symmetry == []
    assert spec.bind(cfg, symmetry=True).view is None  # nothing to permute: the search is the plain one


def test_the_graph_engine_refuses_symmetry_for_liveness_and_keeps_orbits_for_safety():
    spec = load_spec("example")
    model = spec.bind(spec.config("ci", ["brokers=4"]), symmetry=True)
    with pytest.raises(BadInput, match="refused for liveness"):
        graph.explore(model)
    result, g = graph.explore(model, properties=[])
    assert result.stats["distinct"] == 397  # BFS's orbit count


def test_check_symmetry_on_the_command_line(tmp_path):
    run = subprocess.run([sys.executable, "-m", "harness", "check", "example", "--config", "ci", "--symmetry",
                          "--mutation", "expand_lagging", "--json", "--quiet", "--out", str(tmp_path)],
                         capture_output=True, text=True)
    assert run.returncode == 1, run.stderr
    out = json.loads(run.stdout)
    assert out["stats"]["symmetry"] == [[2, 3]]
    [trace] = tmp_path.glob("*.itf.json")
    again = subprocess.run([sys.executable, "-m", "harness", "replay", str(trace)], capture_output=True, text=True)
    assert again.returncode == 0 and "replays as recorded" in again.stdout
    refused = subprocess.run([sys.executable, "-m", "harness", "check", "example", "--config", "ci", "--symmetry",
                              "--engine", "graph"], capture_output=True, text=True)
    assert refused.returncode == 2 and refused.stderr.startswith("error: ") and len(refused.stderr.splitlines()) == 1


@pytest.mark.slow
def test_spark_keeps_the_orbits_bfs_keeps(tmp_path):
    """The tasks rebuild the model from the job: with symmetry, every level on Spark, BFS's orbit counts and a
    violation as short as BFS's, replayed."""
    from harness.engines import spark

    spec = load_spec("zk")
    model = spec.bind(spec.config("seed-shrink-in-phase-b", ["brokers=4", "max_broker_crashes=1"]), symmetry=True)
    expected = bfs.explore(model, keep_going=True)
    r = spark.explore(model, master="local[2]", partitions=2, checkpoint=str(tmp_path / "ck"), spark_levels_only=True,
                      keep_going=True)
    assert r.stats["distinct"] == expected.stats["distinct"] == 5_845
    assert r.stats["states_per_depth"] == expected.stats["states_per_depth"]
    assert sorted((v.outcome.property, v.depth) for v in r.violations) == \
           sorted((v.outcome.property, v.depth) for v in expected.violations)
    for i, v in enumerate(r.violations):
        path = write_trace(tmp_path / f"{i}.itf.json", model, v.states, v.actions, v.outcome, "spark")
        assert replay(read_trace(path)).ok
