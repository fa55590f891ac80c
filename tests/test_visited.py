"""The BFS visited set (harness/visited.py): the compact fingerprint table answers as a dict would, and the
search over it finds what a state-at-a-time search over a dict finds."""

import random

import numpy as np
import pytest

from harness.engines import bfs
from harness.registry import load_spec
from harness.visited import NO_PARENT, ExactTable, FingerprintTable


def reference_classify(seen: dict, keys: list) -> tuple[list, list]:
    first_at: dict = {}
    known = [seen.get(k, -1) for k in keys]
    return known, [-1 if n >= 0 else first_at.setdefault(k, j) for j, (k, n) in enumerate(zip(keys, known))]


@pytest.mark.parametrize("table", [FingerprintTable, ExactTable])
def test_a_table_answers_as_a_dict_through_growth(table):
    rng = random.Random(7)
    visited, seen = table(), {}
    pool = [rng.randrange(-2**63, 2**63) for _ in range(60_000)]
    pool += [(1 << 40) * i for i in range(2_000)]  # keys sharing their low bits, one home slot apart
    for batch in range(40):
        keys = [rng.choice(pool) for _ in range(rng.randrange(0, 6_000))]
        known, first = visited.classify(keys)
        assert (known.tolist(), first.tolist()) == reference_classify(seen, keys)
        new = [k for j, (k, f) in enumerate(zip(keys, first.tolist())) if f == j]
        parents = [rng.randrange(-1, max(len(seen), 1)) for _ in new]
        visited.add(new, parents)
        for k, p in zip(new, parents):
            seen[k] = len(seen)
            assert visited.key(seen[k]) == k and visited.parent(seen[k]) == p
    assert len(visited) == len(seen) > 40_000


def test_fingerprints_cost_at_most_32_bytes_a_state_once_past_the_first_allocation():
    visited = FingerprintTable()
    rng = np.random.default_rng(3)
    worst = 0.0
    while len(visited) < 1_500_000:
        keys = np.unique(rng.integers(-2**63, 2**63 - 1, 50_000, dtype=np.int64)).tolist()
        known, first = visited.classify(keys)
        new = [k for k, n in zip(keys, known.tolist()) if n < 0]
        visited.add(new, [NO_PARENT] * len(new))
        if len(visited) >= 100_000:
            worst = max(worst, visited.nbytes / len(visited))
    assert 12 < worst <= 32


def models():
    for spec_name, preset, mutation in [("kraft", "tiny", None), ("replication", "p3", None),
                                        ("replication", "p1", "isr_join_below_hwm"), ("example", "ci", "hwm_ignores_isr")]:
        spec = load_spec(spec_name)
        yield spec.bind(spec.config(preset, mutation=mutation))


@pytest.mark.parametrize("model", list(models()), ids=lambda m: f"{m.spec.name}")
@pytest.mark.parametrize("limits", [{}, {"keep_going": True}, {"max_states": 700}])
def test_fingerprint_and_exact_searches_agree_batch_size_aside(model, limits, monkeypatch):
    """The same counts, coverage and shortest traces whatever the batch, with or without a view, stopped by
    a violation or a state limit or not at all; a batch of one parent is a state-at-a-time search."""
    default = bfs.BATCH_PARENTS

    def run(exact, batch):
        monkeypatch.setattr(bfs, "BATCH_PARENTS", batch)
        r = bfs.explore(model, exact=exact, **limits)
        return ({k: r.stats[k] for k in ("distinct", "generated", "depth", "states_per_depth")}, r.stopped_by,
                r.coverage, [(v.outcome.property, v.states, v.actions) for v in r.violations])

    one_at_a_time = run(False, 1)
    assert run(False, default) == one_at_a_time == run(True, 7)
    assert run(False, 3) == one_at_a_time
