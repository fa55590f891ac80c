"""The model interface, BFS, traces, replay and the CLI contract, on the example model."""

import json
import os
import subprocess
import sys
import typing
from dataclasses import dataclass
from typing import NamedTuple

import pytest

from harness.engines import bfs
from harness.errors import BadInput
from harness.model import Config, Spec, config_to_dict, fingerprint, param, range_text
from harness.speed import per_state, setter
from harness.registry import load_spec
from harness.trace import read_trace
from tests.conftest import ROOT, load_json


def example(preset="tiny", mutation=None, settings=()):
    spec = load_spec("example")
    return spec.bind(spec.config(preset, settings, (), mutation))


# ------------------------------------------------------------------------- model interface
def test_fingerprint_is_the_same_in_every_process():
    model = example("ci")
    states = model.init_states()
    for _ in range(3):
        states += [t for _, t in model.successors(states[-1])]
    here = [fingerprint(s) for s in states]
    code = ("from harness.registry import load_spec; from harness.model import fingerprint;"
            "m=load_spec('example').bind(load_spec('example').config('ci'));"
            "import json,sys; print(json.dumps([fingerprint(m.decode(bytes.fromhex(b))) for b in json.load(sys.stdin)]))")
    for seed in ("0", "12345"):
        p = subprocess.run([sys.executable, "-c", code], input=json.dumps([model.encode(s).hex() for s in states]),
                           capture_output=True, text=True, env=dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(ROOT)))
        assert json.loads(p.stdout) == here, p.stderr


def test_encoding_and_itf_round_trip():
    model = example("ci")
    seen = model.init_states()
    for s in list(seen):
        seen += [t for _, t in model.successors(s)]
    for s in seen:
        assert model.decode(model.encode(s)) == s == model.decode_trusted(model.encode(s))
        assert model.from_itf(json.loads(json.dumps(model.to_itf(s)))) == s
    itf = model.to_itf(seen[0])
    assert itf["isr"] == {"#set": [1, 2, 3]} and itf["log"] == {"#map": [[1, 0], [2, 0], [3, 0]]}


def test_states_with_negative_or_none_values_are_rejected():
    @dataclass(frozen=True)
    class C(Config):
        start: int = param(-1, "initial value", lo=-1, hi=0)

    class S(NamedTuple):
        x: int

    spec = Spec("neg", C, S, presets={"tiny": {}})
    spec.init(lambda cfg: [S(cfg.start)])
    with pytest.raises(TypeError, match=r"\[0, 2\*\*61-2\]"):
        spec.bind(spec.config()).init_states()


def test_config_resolution_and_bad_settings():
    spec = load_spec("example")
    cfg = spec.config("ci", ["brokers=4", "max_records=1"])
    assert (cfg.brokers, cfg.max_records, cfg.min_isr) == (4, 1, 2)
    with pytest.raises(BadInput, match="unknown config key 'nope'"):
        spec.config("ci", ["nope=1"])
    with pytest.raises(BadInput, match="is not an int"):
        spec.config("ci", ["brokers=three"])
    with pytest.raises(BadInput, match="unknown config 'huge'"):
        spec.config("huge")
    with pytest.raises(BadInput, match="unknown mutation"):
        spec.config("ci", mutation="nope")


# Every int a spec reads has declared bounds (harness.model.param): values outside them are refused,
# with the key, the value and the allowed range on one line, before any config or model exists.
SPECS = ("example", "kraft", "kip642")


def bounded_fields(spec):
    return {k: f for k, f in spec.config_fields.items() if "range" in f.metadata or "length" in f.metadata}


def extreme(f, side):
    """A field's value at one edge of its bounds: every int at lo (hi), every list at its least (most)
    length. At each edge the cross-field rules hold too (ids 1..n of n brokers, leader 1 or n)."""
    lo, hi = f.metadata["range"]
    if "length" not in f.metadata:
        return lo if side == "lo" else hi
    n = f.metadata["item_length" if "item_length" in f.metadata else "length"][side == "hi"]
    ids = list(range(lo, lo + n)) if side == "lo" else list(range(hi - n + 1, hi + 1))
    return [ids] * f.metadata["length"][side == "hi"] if "item_length" in f.metadata else ids


@pytest.mark.parametrize("name", SPECS)
def test_every_int_valued_config_field_declares_its_range(name):
    spec = load_spec(name)
    hints = typing.get_type_hints(spec.config_class)
    numeric = {k for k, t in hints.items() if t is int or typing.get_origin(t) is tuple}
    assert numeric and numeric == set(bounded_fields(spec))
    for k, f in bounded_fields(spec).items():
        lo, hi = f.metadata["range"]
        assert -1 <= lo <= hi < 2**61 - 2, k


def test_param_refuses_a_declaration_without_bounds_or_with_its_default_outside_them():
    for declare in (lambda: param(3, "count"), lambda: param((1, 2), "ids", lo=1, hi=8),
                    lambda: param(((1,),), "sets", lo=1, hi=8, length=(1, 4)), lambda: param(9, "count", lo=0, hi=8),
                    lambda: param((1, 2, 3), "ids", lo=1, hi=8, length=(1, 2))):
        with pytest.raises(TypeError):
            declare()


@pytest.mark.parametrize("name", SPECS)
@pytest.mark.parametrize("side", ["lo", "hi"])
def test_config_values_at_each_edge_of_their_range_are_accepted(name, side):
    spec = load_spec(name)
    values = {k: extreme(f, side) for k, f in bounded_fields(spec).items()}
    cfg = spec.config(settings=[f"{k}={json.dumps(v)}" for k, v in values.items()])
    resolved = config_to_dict(cfg)
    assert {k: resolved[k] for k in values} == values
    assert spec.config_from_dict(values) == cfg
    assert spec.bind(cfg).init_states()  # binding the extremes allocates nothing absurd


def out_of_range(f):
    """(text for --set, what the message must show) for each way a value can leave the field's bounds."""
    lo, hi = f.metadata["range"]
    if "length" not in f.metadata:
        return [(str(v), str(v)) for v in (lo - 1, hi + 1, 10**30, -10**30)]
    least, most = f.metadata["length"]
    nested = "item_length" in f.metadata
    wrap = (lambda ids: [ids]) if nested else (lambda ids: ids)
    cases = [(wrap([lo, hi + 1]), str(hi + 1)), (wrap([lo - 1]), str(lo - 1)), (wrap([lo, 99999999999999999999]), "9999"),
             ([extreme(f, "lo")[0]] * (most + 1), f"{most + 1} items")]
    if least > 0:
        cases.append(([], "0 items"))
    if nested:
        cases.append(([list(range(lo, lo + f.metadata["item_length"][1] + 1))], "list of"))
    return [(json.dumps(v), shown) for v, shown in cases]


@pytest.mark.parametrize("name", SPECS)
def test_config_values_out_of_range_are_refused_naming_key_value_and_range(name):
    spec = load_spec(name)
    for key, f in bounded_fields(spec).items():
        for text, shown in out_of_range(f):
            for refuse in (lambda: spec.config(settings=[f"{key}={text}"]),
                           lambda: spec.config_from_dict({key: json.loads(text)})):  # a trace's config
                with pytest.raises(BadInput) as caught:
                    refuse()
                message = str(caught.value)
                assert message.startswith(f"config key {key!r}: ") and shown in message, message
                assert f"(allowed: {range_text(f)})" in message and "\n" not in message and len(message) < 200


BAD_SETTINGS = ["brokers=1e3", "brokers=", "brokers=3.0", "brokers=0x10", "brokers=1_0", "brokers=\uff13",
                "brokers=\u0663", "brokers=3\x00", "brokers=" + "9" * 5000, "brokers=" + "1" * 200_000, "brokers=true",
                "replicas=" + "[" * 100_000, "replicas=" + "[" * 50_000 + "]" * 50_000,
                "replicas=[1,2,99999999999999999999]", "replicas=[1," + "9" * 5000 + "]", "replicas=[1.5]",
                "replicas=[NaN]", "replicas=[1e400]", "replicas=[true]", "replicas={}", "replicas=\"1\"", "isr=true",
                "isr=[]", "isr=[[1]]", "targets=[1,2]", "targets=[[]]", "targets=" + json.dumps([[1, 2]] * 65),
                "elr=maybe", "max_records=10**30", "max_disruptions=-2", "brok\nters=3", "=3", "brokers"]


@pytest.mark.parametrize("setting", BAD_SETTINGS, ids=range(len(BAD_SETTINGS)))
def test_bad_set_values_are_one_short_line(setting):
    with pytest.raises(BadInput) as caught:
        load_spec("kraft").config(settings=[setting])
    message = str(caught.value)
    assert "\n" not in message and "\x00" not in message and len(message) < 300, message
    key = setting.partition("=")[0]
    assert key == "brokers" and "expects key=value" in message or repr(key) in message, message


# ----------------------------------------------------------------------------------- BFS
def test_bfs_exhausts_the_correct_model_and_reports_coverage():
    r = bfs.explore(example("ci"))
    assert r.complete and not r.violations
    assert r.stats["distinct"] == sum(r.stats["states_per_depth"])
    assert r.stats["generated"] >= r.stats["distinct"]
    assert sum(c["distinct"] for c in r.coverage.values()) == r.stats["distinct"] - 1  # all but the initial state
    assert 0 < r.stats["collision_probability"] < 1e-9


def test_exact_mode_agrees_with_fingerprints():
    for mutation in (None, "hwm_ignores_isr"):
        a = bfs.explore(example("ci", mutation), keep_going=True)
        b = bfs.explore(example("ci", mutation), keep_going=True, exact=True)
        assert a.stats["distinct"] == b.stats["distinct"]
        assert [(v.outcome, v.states) for v in a.violations] == [(v.outcome, v.states) for v in b.violations]


def test_mutation_gives_a_shortest_counterexample():
    r = bfs.explore(example("ci", "hwm_ignores_isr"))
    # The search stops at the first bad state and reports every invariant that state breaks.
    assert [v.outcome.property for v in r.violations] == ["CommittedOnIsr", "CommittedOnMinIsr"]
    for v in r.violations:
        assert [str(a) for a in v.actions[1:]] == ["produce()", "advance_hwm()"]
    assert not r.complete and r.stopped_by == "violation"


def test_continue_collects_one_shortest_trace_per_property():
    r = bfs.explore(example("ci", "expand_lagging"), keep_going=True)
    assert r.complete
    props = {v.outcome.property: v.depth for v in r.violations}
    assert set(props) == {"CommittedOnIsr"}
    # The shortest way to break it: write, replicate to 2, shrink 3 out, commit, re-admit lagging 3.
    assert props["CommittedOnIsr"] == 5


def test_bounds_stop_the_search():
    m = example("ci")
    assert bfs.explore(m, max_states=50).stopped_by == "max-states"
    r = bfs.explore(m, max_depth=3)
    assert r.stopped_by == "max-depth" and r.stats["depth"] == 3 and not r.complete
    assert bfs.explore(m, time_limit=0.0).stats["distinct"] >= 1


class Counter(NamedTuple):
    n: int


@dataclass(frozen=True)
class CounterConfig(Config):
    limit: int = param(3, "count up to", lo=0, hi=100)


def counter_spec(deadlock=True, quiescent=False):
    spec = Spec("counter", CounterConfig, Counter, presets={"tiny": {}}, deadlock=deadlock)
    spec.init(lambda cfg: [Counter(0)])
    spec.rule()(lambda cfg, s: Counter(s.n + 1) if s.n < cfg.limit else None)
    spec.rules[-1].name = "tick"
    spec.rule()(lambda cfg, s: None)
    spec.rules[-1].name = "never"
    if quiescent:
        spec.quiescent(lambda cfg, s: s.n == cfg.limit)
    return spec.bind(spec.config())


def test_deadlock_detection_and_quiescence():
    r = bfs.explore(counter_spec())
    assert [(v.outcome.kind, v.depth) for v in r.violations] == [("deadlock", 3)]
    assert not bfs.explore(counter_spec(quiescent=True)).violations
    assert not bfs.explore(counter_spec(deadlock=False)).violations
    assert not bfs.explore(counter_spec(), check_deadlock=False).violations


def test_rule_that_never_fires_is_a_warning():
    r = bfs.explore(counter_spec(deadlock=False))
    assert r.never_fired() == ["never"]
    assert any("never fired" in w and "never" in w for w in r.warnings)


class Grid(NamedTuple):
    x: int
    y: int


def grid_spec() -> Spec:
    spec = Spec("grid", CounterConfig, Grid, presets={"tiny": {}}, deadlock=False)
    spec.init(lambda cfg: [Grid(0, 0)])
    return spec


def test_an_invariant_declaring_its_fields_is_skipped_only_where_they_did_not_change():
    spec = grid_spec()
    spec.rule()(lambda cfg, s: s._replace(x=s.x + 1) if s.x < cfg.limit else None)
    spec.rules[-1].name = "right"
    spec.rule()(lambda cfg, s: s._replace(y=s.y + 1) if s.y < cfg.limit else None)
    spec.rules[-1].name = "up"
    checked = []

    @spec.invariant(name="XBelowLimit", reads=("x",))
    def x_below_limit(cfg, s):
        checked.append(s)
        return s.x < cfg.limit

    r = bfs.explore(spec.bind(spec.config()), keep_going=True)
    [v] = r.violations
    assert v.outcome.property == "XBelowLimit" and v.depth == 3  # right, right, right: still the shortest
    # BFS reaches every state with y > 0 first by `up`, which leaves x as it was in the checked parent
    assert r.stats["distinct"] == 16 and checked == [Grid(x, 0) for x in range(4)]
    with pytest.raises(TypeError, match="unknown state field"):
        spec.invariant(lambda cfg, s: True, name="Bad", reads=("z",))


def test_apply_checks_the_rule_precondition_like_successors():
    spec = grid_spec()
    spec.rule(precondition=lambda cfg, s: s.y == 0)(lambda cfg, s: s._replace(x=s.x + 1))  # the body does not check
    spec.rules[-1].name = "right_on_the_floor"
    model = spec.bind(spec.config())
    step = model.actions[0]
    assert model.apply(Grid(0, 0), step) == Grid(1, 0)
    assert model.apply(Grid(0, 1), step) is None and model.successors(Grid(0, 1)) == []


def test_per_state_computes_once_per_state_and_config():
    calls = []

    @per_state
    def room(cfg, s):
        calls.append((cfg, s))
        return len(calls)

    cfg, other_cfg, s, t = object(), object(), Grid(0, 0), Grid(0, 0)  # s == t, but another object
    assert [room(cfg, s), room(cfg, s), room(cfg, t), room(other_cfg, t), room(other_cfg, t)] == [1, 1, 2, 3, 3]
    assert calls == [(cfg, s), (cfg, t), (other_cfg, t)]


class Record(NamedTuple):
    a: int
    b: tuple
    c: int
    d: int


@pytest.mark.parametrize("fields", [("a",), ("b", "c"), ("d",), ("a", "b", "c", "d")])
def test_setter_is_a_positional_replace(fields):
    r = Record(1, (2,), 3, 4)
    values = [(9,) if f == "b" else 10 + i for i, f in enumerate(fields)]
    new = setter(Record, *fields)(r, *values)
    assert type(new) is Record and new == r._replace(**dict(zip(fields, values)))
    assert r == Record(1, (2,), 3, 4)  # the original is untouched


@pytest.mark.parametrize("fields", [("a", "c"), ("d", "b"), ("c", "b")])
def test_setter_refuses_fields_that_are_not_adjacent_in_order(fields):
    with pytest.raises(ValueError, match="adjacent"):
        setter(Record, *fields)


# --------------------------------------------------------------------- CLI, traces, replay
def test_end_to_end_check_replay_edit_truncate(cli, tmp_path):
    code, _, err = cli("check", "example", "--config", "ci", "--mutation", "hwm_ignores_isr", "--out", tmp_path, "--quiet")
    assert code == 1, err
    trace = tmp_path / "example-ci-hwm_ignores_isr-CommittedOnIsr.itf.json"
    doc = load_json(trace)
    assert doc["#meta"]["outcome"] == {"kind": "invariant", "property": "CommittedOnIsr",
                                       "statement": "Every ISR member holds every committed record.",
                                       "reason": "broker 2 is in the ISR with 0 of the 1 committed records"}
    assert doc["#meta"]["config"]["brokers"] == 3 and doc["#meta"]["engine"] == "bfs"
    assert len(doc["states"]) == 3  # shortest: produce, advance_hwm
    assert cli("replay", trace)[0] == 0

    doc["states"][1]["log"]["#map"][0][1] = 2  # edit one value of step 1
    edited = tmp_path / "edited.itf.json"
    edited.write_text(json.dumps(doc))
    code, out, err = cli("replay", edited)
    assert code == 1
    assert "step 1" in out and "log" in out

    truncated = tmp_path / "truncated.itf.json"
    truncated.write_text(trace.read_text()[:200])
    code, _, err = cli("replay", truncated)
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_traces_and_stats_are_deterministic(cli, tmp_path):
    runs = []
    for d in ("a", "b"):
        code, out, _ = cli("check", "example", "--config", "ci", "--mutation", "expand_lagging", "--continue",
                           "--out", tmp_path / d, "--json", "--quiet")
        assert code == 1
        summary = json.loads(out)
        for key in ("seconds", "states_per_second", "peak_rss_bytes"):
            summary["stats"].pop(key)
        for v in summary["violations"]:
            v["trace"] = os.path.basename(v["trace"])
        runs.append(summary)
    assert runs[0] == runs[1]
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names and all((tmp_path / "a" / n).read_bytes() == (tmp_path / "b" / n).read_bytes() for n in names)


def test_show_prints_only_changed_variables(cli, tmp_path):
    cli("check", "example", "--config", "ci", "--mutation", "hwm_ignores_isr", "--out", tmp_path, "--quiet")
    code, out, _ = cli("show", tmp_path / "example-ci-hwm_ignores_isr-CommittedOnIsr.itf.json")
    assert code == 0
    assert "advance_hwm()" in out and "hwm: 0 -> 1" in out
    step2 = out[out.index("advance_hwm()"):]
    assert "log" not in step2.split("\n")[0]


BAD_CHECKS = [
    (["check", "nosuchspec"], "unknown spec 'nosuchspec'"),
    (["check", "example", "--config", "huge"], "unknown config 'huge'"),
    (["check", "example", "--variant", "elr=on"], "unknown variant 'elr'"),
    (["check", "example", "--mutation", "nope"], "unknown mutation 'nope'"),
    (["check", "example", "--set", "bogus=1"], "unknown config key 'bogus'"),
    (["check", "example", "--set", "brokers=many"], "is not an int"),
    (["check", "example", "--set", "brokers"], "expects key=value"),
    (["check", "example", "--set", "brokers=100000000"], "'brokers': 100000000 is out of range (allowed: 1..60)"),
    (["check", "kraft", "--set", "replicas=[1,2,99999999999999999999]"], "out of range (allowed: 1 to 8 ints in 1..8)"),
    (["check", "example", "--engine", "warp"], "warp"),
    (["replay", "/nonexistent/trace.itf.json"], "cannot read trace"),
]


@pytest.mark.parametrize("args,message", BAD_CHECKS, ids=[" ".join(a[:3]) for a, _ in BAD_CHECKS])
def test_bad_input_is_one_line_and_exit_2(cli, args, message):
    code, _, err = cli(*args)
    assert code == 2
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and message in err


def test_foreign_and_edited_traces_are_bad_input(cli, tmp_path):
    cli("check", "example", "--config", "ci", "--mutation", "hwm_ignores_isr", "--out", tmp_path, "--quiet")
    good = load_json(tmp_path / "example-ci-hwm_ignores_isr-CommittedOnIsr.itf.json")
    cases = {
        "not-itf": {"hello": "world"},
        "other-vars": {**good, "vars": ["replicas", "isr"]},
        "changed-config": {**good, "#meta": {**good["#meta"], "config": {**good["#meta"]["config"], "brokers": 4}}},
        "unknown-config-key": {**good, "#meta": {**good["#meta"], "config": {**good["#meta"]["config"], "x": 1}}},
        "bad-value": {**good, "states": [{**good["states"][0], "isr": [1, 2]}] + good["states"][1:]},
    }
    for name, doc in cases.items():
        p = tmp_path / f"{name}.itf.json"
        p.write_text(json.dumps(doc))
        code, _, err = cli("replay", p)
        assert code == 2, (name, err)
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, (name, err)


def test_a_trace_outlives_a_parameter_and_a_variant_added_with_defaults(cli, tmp_path, monkeypatch):
    """Issue 38: a trace's config digest covers the fields that differ from their defaults only, so a trace
    written before a spec's config grew a parameter and a variant (at their defaults) keeps its digest, is
    read, and replays; an edited config is still refused."""
    import dataclasses

    import specs.example
    from harness.model import config_digest, variant
    from harness.replay import replay

    cli("check", "example", "--config", "ci", "--mutation", "hwm_ignores_isr", "--out", tmp_path, "--quiet")
    path = tmp_path / "example-ci-hwm_ignores_isr-CommittedOnIsr.itf.json"
    written = load_json(path)

    @dataclass(frozen=True)
    class GrownConfig(specs.example.ExampleConfig):
        retries: int = param(0, "a parameter added after the trace was written", lo=0, hi=3)
        eager_hwm: bool = variant(False, "a variant added after the trace was written")

    monkeypatch.setattr(specs.example, "spec", dataclasses.replace(specs.example.spec, config_class=GrownConfig))
    trace = read_trace(path)
    assert type(trace.model.config) is GrownConfig and trace.model.config.retries == 0
    assert config_digest(trace.model.config) == written["#meta"]["config_digest"]
    report = replay(trace)
    assert report.ok and report.steps == written["#meta"]["length"], report.message

    for edit in ({"brokers": 4}, {"retries": 1}, {"eager_hwm": True}):  # a value changed, or a new field set
        edited = tmp_path / "edited.itf.json"
        edited.write_text(json.dumps({**written, "#meta": {**written["#meta"], "config": {**written["#meta"]["config"], **edit}}}))
        with pytest.raises(BadInput, match="digest mismatch"):
            read_trace(edited)


def test_reading_a_trace_never_executes_it(tmp_path):
    """A trace is data: Python code in any field is only ever a string that fails validation."""
    p = tmp_path / "evil.itf.json"
    marker = tmp_path / "pwned"
    p.write_text(json.dumps({"#meta": {"format": "ITF", "spec": f"__import__('os').system('touch {marker}')",
                                       "config": {}, "config_digest": "", "outcome": {"kind": "none"}, "harness_version": "0"},
                             "vars": ["x"], "states": [{"#meta": {"index": 0}, "x": 1}]}))
    with pytest.raises(BadInput, match="unknown spec"):
        read_trace(p)
    assert not marker.exists()


def venv_interpreter(*assignments):
    """The interpreter `make` would build .venv from, read from a dry run (nothing is executed)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "DISTRO_PYTHON", "MAKEFLAGS")}
    p = subprocess.run(["make", "-n", "-B", "-C", str(ROOT), ".venv/.installed", *assignments],
                       capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    line = next(x for x in p.stdout.splitlines() if "-m venv" in x)
    return line.split("||")[1].split(" -m venv")[0].strip()


def test_makefile_prefers_a_usable_distribution_python(tmp_path):
    """.venv comes from the distribution's CPython when it is >= 3.11 with venv (docs/ARCHITECTURE.md,
    "The interpreter"), else from the python3 on PATH; PYTHON= overrides both."""
    assert venv_interpreter(f"DISTRO_PYTHON={sys.executable}") == sys.executable  # >= 3.11, has ensurepip
    assert venv_interpreter(f"DISTRO_PYTHON={tmp_path / 'missing'}") == "python3"
    too_old = tmp_path / "python2"  # answers the probe with nothing, as a Python < 3.11 or without venv does
    too_old.write_text("#!/bin/sh\nexit 0\n")
    too_old.chmod(0o755)
    assert venv_interpreter(f"DISTRO_PYTHON={too_old}") == "python3"
    assert venv_interpreter("PYTHON=/opt/python/bin/python3.12") == "/opt/python/bin/python3.12"
