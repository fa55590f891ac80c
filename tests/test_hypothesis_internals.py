"""The Hypothesis internals the engine relies on (pyproject caps Hypothesis below its next major for them).
If one moves in a new release, these fail by name before the engine silently changes behaviour."""

from harness.engines import hypothesis as hyp
from harness.registry import load_spec


def machine():
    spec = load_spec("example")
    return hyp.build_machine(spec.bind(spec.config("ci")))


def test_feature_flags_live_where_the_engine_imports_them():
    from hypothesis.strategies._internal.featureflags import FeatureFlags

    assert hyp.FeatureFlags is FeatureFlags


def test_a_machine_has_a_rules_strategy_with_its_feature_flags():
    strategy = getattr(machine()(), "_rules_strategy", None)
    assert strategy is not None and hasattr(strategy, "enabled_rules_strategy")


def test_the_internal_seed_decides_the_walks():
    """`_hypothesis_internal_use_seed` on the machine class is what makes a seed repeat its walks."""
    spec = load_spec("example")
    model = spec.bind(spec.config("ci"))
    runs = [hyp.explore(model, profile="nightly", examples=30, steps=20, seed=s).stats for s in (5, 5, 6)]
    assert runs[0]["steps"] == runs[1]["steps"] and runs[0]["distinct_walks"] == runs[1]["distinct_walks"]
    assert (runs[0]["steps"], runs[0]["distinct_walks"]) != (runs[2]["steps"], runs[2]["distinct_walks"])


def test_a_ci_machine_keeps_the_profiles_as_written():
    """With `CI` set, Hypothesis loads its own derandomized "ci" profile at import; the harness's profiles
    must not inherit from it, or a nightly seed would be ignored on CI machines only."""
    import os
    import subprocess
    import sys

    probe = ("from harness.engines import hypothesis as h; "
             "print(h.profile_settings('nightly').derandomize, h.profile_settings('ci').derandomize)")
    out = subprocess.run([sys.executable, "-c", probe], env={**os.environ, "CI": "true"},
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True"]


def test_the_mined_constants_are_where_the_engine_empties_them():
    from hypothesis.internal.conjecture import providers

    assert callable(providers._get_local_constants) and hasattr(providers.CONSTANTS_CACHE, "cache")
    with hyp.walks_from_the_seed_alone():
        assert not providers._get_local_constants().set_for_type("integer")
    assert providers._get_local_constants is not providers.Constants


def test_a_seed_gives_the_same_walks_whatever_the_process_imported():
    """Two processes, one of which imported more of the harness first (which fed Hypothesis more mined
    constants), walk the same steps."""
    import subprocess
    import sys

    probe = ("{} from harness.registry import load_spec; from harness.engines import hypothesis as h; "
             "s = load_spec('kraft'); m = s.bind(s.config('small', mutation='expand_below_leso')); "
             "r = h.explore(m, profile='ci', examples=120, steps=60); print(r.stats['steps'], r.stats['distinct_walks'])")
    walks = [subprocess.run([sys.executable, "-c", probe.format(first).strip()], capture_output=True, text=True,
                            check=True).stdout for first in ("", "import harness.cli, harness.engines.spark, harness.explore;")]
    assert walks[0] == walks[1] and int(walks[0].split()[0]) > 120
