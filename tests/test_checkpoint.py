"""Spark checkpoints: nothing of a user's is cleared, nothing damaged is resumed.

The in-process tests run the Spark engine on models whose levels all stay in the driver, with a
session factory that refuses to start Spark: they exercise the checkpoint itself, not a JVM.
"""

import hashlib
import json
import os
import random
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from harness.engines import bfs, spark
from harness.errors import BadInput
from harness.registry import load_spec

LONG = os.environ.get("FUZZ_PROFILE") == "long"
COUNTS = {"damaged": 0, "refused": 0, "resumed_unchanged": 0, "no_op": 0,
          "edited": 0, "edits_refused": 0, "edits_resumed_unchanged": 0, "edits_no_op": 0}


@pytest.fixture(scope="module", autouse=True)
def fuzz_report():
    """The damage and editing fuzzers' counts, written to $FUZZ_REPORT (the nightly runs this file alone, on one
    worker)."""
    yield
    if os.environ.get("FUZZ_REPORT"):
        Path(os.environ["FUZZ_REPORT"]).write_text(json.dumps(dict(COUNTS, profile="long" if LONG else "short"), indent=1))


def bind(name, preset, mutation=None):
    spec = load_spec(name)
    return spec.bind(spec.config(preset, (), (), mutation))


def no_spark(master, log):
    raise RuntimeError("this test never starts Spark")


def explore(model, ck, **kw):
    return spark.explore(model, master=None, partitions=2, checkpoint=str(ck), session_factory=no_spark,
                         checkpoint_every=0, **kw)


def summary(r):
    return (r.complete, r.stats["distinct"], r.stats["generated"], r.stats["states_per_depth"],
            [(v.outcome.property, v.depth) for v in r.violations])


@pytest.fixture(scope="module")
def reference():
    """The uninterrupted results, and checkpoints stopped mid-way (before the violation) to copy and damage;
    under ("full", mutation), the uninterrupted run's own checkpoint (complete, or stopped by the violation)."""
    import tempfile

    base = Path(tempfile.mkdtemp())
    out = {}
    for name, preset, mutation in (("example", "ci", None), ("example", "ci", "hwm_ignores_isr")):
        model = bind(name, preset, mutation)
        full = explore(model, base / f"full-{mutation}")
        b = bfs.explore(model)  # the same exploration as BFS (which stops a level early on a violation)
        assert summary(full)[-1] == summary(b)[-1] and (mutation or summary(full)[1:] == summary(b)[1:])
        ck = base / f"part-{mutation}"
        part = explore(model, ck, max_depth=4 if mutation is None else 1)
        assert not part.complete and part.stopped_by == "max-depth"
        out[mutation] = (model, summary(full), ck)
        out["full", mutation] = (model, summary(full), base / f"full-{mutation}")
    yield out
    shutil.rmtree(base)


def copy_of(reference, mutation, tmp_path):
    model, expected, ck = reference[mutation]
    target = tmp_path / "ck"
    shutil.copytree(ck, target)
    return model, expected, target


def data_files(ck: Path):
    return sorted(str(p.relative_to(ck)) for p in ck.rglob("*") if p.is_file())


# ------------------------------------------------------------------- the three misreport cases

def test_a_checkpoint_never_clears_a_users_directory(tmp_path, cli):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    (mine / "frontier").mkdir()
    code, _, err = cli("check", "example", "--engine", "spark", "--quiet", "--checkpoint", mine)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "not a checkpoint" in err
    assert (mine / "thesis.tex").read_text() == "years of work" and sorted(os.listdir(mine)) == ["frontier", "thesis.tex"]
    # the current directory, given as ".", is no different
    code, _, err = cli("check", "example", "--engine", "spark", "--quiet", "--checkpoint", ".", cwd=mine)
    assert code == 2 and (mine / "thesis.tex").exists()


def test_a_file_dropped_into_a_checkpoint_stops_it_being_cleared(reference, tmp_path):
    model, expected, ck = copy_of(reference, None, tmp_path)
    (ck / "notes.txt").write_text("mine")
    with pytest.raises(BadInput, match="notes.txt, which the harness did not write"):
        explore(model, ck)
    assert (ck / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("damage, message", [
    ("missing frontier part", r"frontier/4/part-0-[0-9a-f]{8}\.parquet is missing"),
    ("edited level counter", "checksum does not match"),
    ("missing parents file", r"parents/3/part-0-[0-9a-f]{8}\.parquet is missing"),
])
def test_a_damaged_checkpoint_is_refused_never_resumed(reference, tmp_path, damage, message):
    model, expected, ck = copy_of(reference, None, tmp_path)
    if damage == "missing frontier part":
        [part] = (ck / "frontier" / "4").glob("part-0-*.parquet")
        part.unlink()
    elif damage == "edited level counter":
        doc = json.loads((ck / "state.json").read_text())
        doc["body"]["level"] = 9
        (ck / "state.json").write_text(json.dumps(doc))
    else:
        [part] = (ck / "parents" / "3").glob("part-0-*.parquet")
        part.unlink()
    with pytest.raises(BadInput, match=message):
        explore(model, ck, resume=True)


def test_an_undamaged_checkpoint_resumes_to_the_uninterrupted_result(reference, tmp_path):
    model, expected, ck = copy_of(reference, None, tmp_path)
    assert summary(explore(model, ck, resume=True)) == expected


def test_a_checkpoint_another_run_is_using_is_refused_and_left_as_it_is(reference, tmp_path, cli):
    """Two runs given one directory (an overlapping nightly, a second terminal): the second would clear or
    rewrite the first one's files, so it is refused while the first driver holds the directory."""
    from harness.checkpoint import Checkpoint
    from harness.store import Store

    model, expected, ck = copy_of(reference, None, tmp_path)
    before = {f: (ck / f).read_bytes() for f in data_files(ck)}
    marker = json.loads((ck / "checkpoint.json").read_text())["identity"]
    marker.pop("format")
    first = Checkpoint(Store(str(ck)), marker)
    first.open(resume=True, hold=True)
    try:
        for resume in (True, False):
            with pytest.raises(BadInput, match="in use by another run"):
                explore(model, ck, resume=resume)
        code, _, err = cli("check", "example", "--config", "ci", "--engine", "spark", "--quiet", "--checkpoint", ck, "--resume")
        assert code == 2 and len(err.strip().splitlines()) == 1 and "in use by another run" in err, err
        assert {f: (ck / f).read_bytes() for f in data_files(ck)} == before
    finally:
        first.release()
    assert summary(explore(model, ck, resume=True)) == expected  # released: the next run may use it
    assert summary(explore(model, ck, resume=False)) == expected  # and a finished run has released it too


def test_resume_without_a_checkpoint_is_refused(tmp_path, cli):
    for target in (tmp_path / "absent", tmp_path):
        code, _, err = cli("check", "example", "--engine", "spark", "--quiet", "--checkpoint", target, "--resume")
        assert code == 2 and "no checkpoint" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "absent").exists()


def test_a_checkpoint_of_another_job_is_neither_resumed_nor_cleared(reference, tmp_path):
    _, _, ck = copy_of(reference, None, tmp_path)
    before = data_files(ck)
    other = bind("example", "tiny")
    for resume in (True, False):
        with pytest.raises(BadInput, match="another job"):
            explore(other, ck, resume=resume)
    assert data_files(ck) == before

# ------------------------------------------------------------ a manifest edited and its checksum recomputed

def forge(ck: Path, edit) -> None:
    """Edit state.json as a forger would: `edit(body, ck)` changes its body (and the files, if it likes), then
    the checksum is recomputed: a SHA-256 of the canonical JSON, which anyone can compute."""
    doc = json.loads((ck / "state.json").read_text())
    edit(doc["body"], ck)
    doc["sha256"] = hashlib.sha256(json.dumps(doc["body"], sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    (ck / "state.json").write_text(json.dumps(doc, indent=1))


def drop_files(body, ck, prefix):
    for rel in [r for r in body["files"] if r.startswith(prefix)]:
        del body["files"][rel]
        (ck / rel).unlink()


def claim_completion(body, ck):
    """The issue's edit: no frontier left, and the frontier's files gone (the manifest did not require them)."""
    body["totals"]["frontier"] = 0
    drop_files(body, ck, "frontier/")


def rewrite(body, ck, prefix, change):
    """The file under `prefix` rewritten as `change(table)`, its size and SHA-256 listed afresh."""
    import pyarrow.parquet as pq

    [rel] = [r for r in body["files"] if r.startswith(prefix)]
    pq.write_table(change(pq.read_table(ck / rel)), ck / rel)
    data = (ck / rel).read_bytes()
    body["files"][rel] = [len(data), hashlib.sha256(data).hexdigest()]


def relabel_a_file(body, ck):
    """parents/3's file with level 2 in its own metadata."""
    def change(table):
        tag = json.loads(table.schema.metadata[b"harness"])
        return table.replace_schema_metadata({b"harness": json.dumps(dict(tag, level=2)).encode()})
    rewrite(body, ck, "parents/3/", change)


def swap_a_frontier_state(body, ck):
    """The frontier's second state replaced by its first (their fingerprints left as they were)."""
    import pyarrow as pa

    def change(table):
        states = table.column("state").to_pylist()
        return table.set_column(1, "state", pa.array(states[:1] + states[:1] + states[2:], pa.binary()))
    rewrite(body, ck, "frontier/", change)


def add_a_violation(body, ck):
    """A violation of a real property by a real state (the initial one), which does not violate it."""
    import pyarrow.parquet as pq

    [rel] = [r for r in body["files"] if r.startswith("parents/0/")]
    body["totals"]["violations"]["CommittedOnIsr"] = [0, pq.read_table(ck / rel).column("fp")[0].as_py()]


def in_totals(key, value):
    return lambda body, ck: body["totals"].__setitem__(key, value)


def one_more_state_at_depth_2(body, ck):
    body["totals"]["states_per_depth"][2] += 1
    body["totals"]["distinct"] += 1


FORGERIES = {  # name: (which checkpoint, the edit)
    "claims completion, its frontier dropped": (None, claim_completion),
    "claims completion, its frontier kept": (None, lambda body, ck: body["totals"].__setitem__("frontier", 0)),
    "skips a level (parents of depth 2 dropped)": (None, lambda body, ck: drop_files(body, ck, "parents/2/")),
    "goes back a level": (None, lambda body, ck: body.__setitem__("level", 3)),
    "counts disagree with the files": (None, one_more_state_at_depth_2),
    "a file's metadata level changed": (("full", None), relabel_a_file),
    "a frontier state swapped": (None, swap_a_frontier_state),
    "a violation removed": (("full", "hwm_ignores_isr"), in_totals("violations", {})),
    "a violation added": (("full", None), add_a_violation),
    # malformed fields
    "level a string": (None, lambda body, ck: body.__setitem__("level", "4")),
    "level negative": (None, lambda body, ck: body.__setitem__("level", -1)),
    "level a float": (None, lambda body, ck: body.__setitem__("level", 4.0)),
    "level a boolean": (None, lambda body, ck: body.__setitem__("level", True)),
    "level missing": (None, lambda body, ck: body.pop("level")),
    "a count a string": (None, in_totals("distinct", "37")),
    "a count negative": (None, in_totals("generated", -75)),
    "a count missing": (None, lambda body, ck: body["totals"].pop("frontier")),
    "states per depth a dict": (None, in_totals("states_per_depth", {"0": 1})),
    "violations a list": (None, in_totals("violations", [])),
    "totals a list": (None, lambda body, ck: body.__setitem__("totals", [])),
    "files a list": (None, lambda body, ck: body.__setitem__("files", list(body["files"].items()))),
    "a file's size negative": (None, lambda body, ck: body["files"].__setitem__(
        next(iter(body["files"])), [-1, body["files"][next(iter(body["files"]))][1]])),
    "a file entry without its checksum": (None, lambda body, ck: body["files"].__setitem__(
        next(iter(body["files"])), body["files"][next(iter(body["files"]))][:1])),
    "a file outside the layout": (None, lambda body, ck: body["files"].__setitem__("../../etc/passwd", [0, "0" * 64])),
}


@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_a_manifest_edited_with_its_checksum_recomputed_is_refused_in_one_line(reference, tmp_path, cli, forgery):
    """Exit 2, one line, and nothing in the folder changed: the checksum is not a secret, so a resume checks
    the manifest against what it can recompute from the files."""
    which, edit = FORGERIES[forgery]
    model, expected, ck = copy_of(reference, which, tmp_path)
    forge(ck, edit)
    before = {f: (ck / f).read_bytes() for f in data_files(ck)}
    mutation = which[1] if isinstance(which, tuple) else which
    code, out, err = cli("check", "example", "--config", "ci", "--engine", "spark", "--quiet", "--checkpoint", ck,
                         "--resume", *(["--mutation", mutation] if mutation else []))
    assert code == 2 and err.startswith("error: corrupt checkpoint") and len(err.strip().splitlines()) == 1, (code, err)
    assert {f: (ck / f).read_bytes() for f in data_files(ck)} == before


# -------------------------------------------------------------------------- the damage fuzzer

DAMAGES = ("truncate", "delete", "swap", "flip", "append", "extra", "duplicate-into-next-level")


def damage(ck: Path, rnd: random.Random, kind: str) -> str:
    files = [f for f in data_files(ck) if f != "spark.log"]
    name = rnd.choice(files)
    target = ck / name
    if kind == "truncate":
        data = target.read_bytes()
        target.write_bytes(data[:rnd.randrange(len(data))])
    elif kind == "delete":
        target.unlink()
    elif kind == "swap":  # two files trade places (shards reordered)
        other = ck / rnd.choice([f for f in files if f != name])
        a, b = target.read_bytes(), other.read_bytes()
        target.write_bytes(b)
        other.write_bytes(a)
        if a == b:
            return "noop"
    elif kind == "flip":
        data = bytearray(target.read_bytes())
        i = rnd.randrange(len(data))
        data[i] ^= 1 << rnd.randrange(8)
        target.write_bytes(bytes(data))
    elif kind == "append":
        with open(target, "ab") as fh:
            fh.write(b"\0" * rnd.randrange(1, 64))
    elif kind == "extra":
        (ck / "frontier" / "2").mkdir(parents=True, exist_ok=True)
        (ck / "frontier" / "2" / "part-0-0123abcd.parquet").write_bytes(b"PAR1")
    else:  # a committed file copied into a level where it does not belong
        parts = name.split("/")
        if len(parts) != 3:
            return "noop"
        dest = ck / parts[0] / str(int(parts[1]) - 2) / parts[2]
        if dest.exists() or int(parts[1]) < 2:
            return "noop"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(target, dest)
    return f"{kind} {name}"


@settings(max_examples=2000 if LONG else 25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(kind=st.sampled_from(DAMAGES), seed=st.integers(0, 2**32 - 1), mutation=st.sampled_from([None, "hwm_ignores_isr"]))
def test_damaged_checkpoints_are_refused_or_give_the_uninterrupted_result(reference, tmp_path_factory, kind, seed,
                                                                           mutation):
    model, expected, ck = copy_of(reference, mutation, tmp_path_factory.mktemp("fuzz"))
    what = damage(ck, random.Random(seed), kind)
    COUNTS["damaged"] += 1
    try:
        r = explore(model, ck, resume=True)
    except BadInput as exc:
        assert "\n" not in str(exc) and (str(ck) in str(exc) or "checkpoint" in str(exc)), what
        COUNTS["refused"] += 1
        return
    assert what == "noop" or summary(r) == expected, what  # accepted only if the result is unchanged
    COUNTS["no_op" if what == "noop" else "resumed_unchanged"] += 1

# ------------------------------------------------------------------------- the editing fuzzer

EDITS = ("replace", "delete", "add", "level", "violation", "drop-frontier")


def places(value, path=()):
    """Every (path, value) inside a JSON value, containers included."""
    yield path, value
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        yield from places(inner, path + (key,))


def other_values(value, rnd: random.Random) -> list:
    """What a forger or a slip might put in a field's place: near numbers, and values of every other type."""
    near = [value + 1, value - 1, value * 2, -1, 0, 2**63, float(value), str(value)] if type(value) is int else []
    return near + [None, True, "x", 1.5, [], {}, [value], {"x": value}, rnd.randrange(-2**63, 2**63)]


def edit_manifest(ck: Path, rnd: random.Random, kind: str, model) -> str:
    """One random edit of state.json's body, the checksum recomputed (`forge`); what was done, or "noop"."""
    doc = json.loads((ck / "state.json").read_text())
    what = [kind]  # and the field, for a failure's message

    def edit(body, ck):
        if kind == "level":
            body["level"] += rnd.choice([-2, -1, 1, 2])
        elif kind == "violation":  # a real property, by a real state of a real depth
            import pyarrow.parquet as pq

            depth = rnd.randrange(body["level"] + 1)
            [rel, *_] = [r for r in body["files"] if r.startswith(f"parents/{depth}/")]
            fps = pq.read_table(ck / rel).column("fp").to_pylist()
            prop = rnd.choice(model.invariant_names + ["Deadlock"])
            body["totals"]["violations"][prop] = [depth, rnd.choice(fps or [0])]
        elif kind == "drop-frontier":  # the edit: claims there is nothing left to expand
            body["totals"]["frontier"] = 0
            drop_files(body, ck, "frontier/")
        else:
            path, value = rnd.choice([pv for pv in places(body) if pv[0]
                                      and (kind != "add" or isinstance(pv[1], (dict, list)))])
            parent = body
            for key in path[:-1]:
                parent = parent[key]
            what.append("/".join(map(str, path)))
            if kind == "replace":
                parent[path[-1]] = rnd.choice(other_values(value, rnd))
            elif kind == "delete":
                del parent[path[-1]]
            elif isinstance(value, dict):
                value[rnd.choice(["x", "level", "frontier", *value][:5])] = rnd.choice(other_values(0, rnd))
            else:
                value.append(rnd.choice(value + other_values(0, rnd)))

    forge(ck, edit)
    return " ".join(what) if json.loads((ck / "state.json").read_text())["body"] != doc["body"] else "noop"


@settings(max_examples=2000 if LONG else 40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(kind=st.sampled_from(EDITS), seed=st.integers(0, 2**32 - 1),
       which=st.sampled_from([None, "hwm_ignores_isr", ("full", None), ("full", "hwm_ignores_isr")]))
def test_edited_manifests_are_refused_or_give_the_uninterrupted_result(reference, tmp_path_factory, kind, seed, which):
    """A field of state.json edited at random and its checksum recomputed: refused in one line with nothing in
    the folder changed, or resumed to exactly the uninterrupted result; never another result."""
    model, expected, ck = copy_of(reference, which, tmp_path_factory.mktemp("edit"))
    what = edit_manifest(ck, random.Random(seed), kind, model)
    before = {f: (ck / f).read_bytes() for f in data_files(ck)}
    COUNTS["edited"] += 1
    try:
        r = explore(model, ck, resume=True)
    except BadInput as exc:
        assert "\n" not in str(exc) and "checkpoint" in str(exc), what
        assert {f: (ck / f).read_bytes() for f in data_files(ck)} == before, what
        COUNTS["edits_refused"] += 1
        return
    assert summary(r) == expected, what
    COUNTS["edits_no_op" if what == "noop" else "edits_resumed_unchanged"] += 1


def test_relative_and_default_checkpoint_paths_work_and_resume(tmp_path, cli):
    for args in (["--checkpoint", "rel/ck"], []):
        code, out, err = cli("check", "example", "--config", "ci", "--engine", "spark", "--quiet", "--json", *args,
                             cwd=tmp_path)
        assert code == 0, err
        ck = json.loads(out)["stats"]["checkpoint"]
        code, _, err = cli("check", "example", "--config", "ci", "--engine", "spark", "--quiet", "--resume",
                           "--checkpoint", ck, cwd=tmp_path)
        assert code == 0, err
    assert (tmp_path / "rel" / "ck" / "checkpoint.json").exists() and any((tmp_path / "checkpoints").iterdir())


@pytest.mark.parametrize("uri, message", [
    ("hdfs://nn:8020/ck", "libjvm"),  # pyarrow's HDFS client needs a JVM and libhdfs, which this machine lacks
    ("s3://bucket/ck?region=us-east-1&scheme=http&endpoint_override=127.0.0.1:9", "cannot be used"),  # nothing listens
    ("s3://bucket", "inside the bucket"),
    ("foo://bucket/ck", "foo"),
])
def test_a_checkpoint_folder_that_cannot_be_used_is_refused_in_one_line(cli, tmp_path, uri, message):
    """Before any work, and without a local folder named after the URI."""
    code, out, err = cli("check", "kraft", "--config", "tiny", "--engine", "spark", "--checkpoint", uri, cwd=tmp_path)
    assert code == 2 and err.startswith("error: --checkpoint") and message in err and len(err.splitlines()) == 1, err
    assert list(tmp_path.iterdir()) == []


def test_the_owner_of_a_fingerprint_is_the_mixed_fingerprint_modulo_the_tasks():
    """`owners` (numpy, a whole array) and `owner` (one int, SplitMix64) agree, negative fingerprints included."""
    import numpy as np

    from harness.engines.spark import owner, owners

    fps = [0, 1, -1, -(2**63), 2**63 - 1, 123456789, -987654321] + [random.Random(k).randrange(-(2**63), 2**63) for k in range(200)]
    for tasks in (1, 2, 3, 7, 64):
        assert owners(np.array(fps, np.int64), tasks).tolist() == [owner(fp, tasks) for fp in fps]


# ------------------------------------------------------------------- level workers, any number of tasks

def run_tasks(model, ck: Path | str, tasks: int, start: int | None = None, **job_options):
    """The Spark job's tasks as threads of this process (the same `run_task`, the same files), from a level 0
    the driver committed (or from the committed level `start`): what T tasks compute, without a JVM.
    Returns the committed totals and the end."""
    import secrets
    import threading

    job, store = spark.make_job(model, str(ck), checkpoint_every=0, **job_options)
    if start is None:
        explore(model, ck, max_depth=0, **job_options)  # commits level 0 and stops
    saved = store.open(resume=True)
    start = saved["level"]
    job = dict(job, tasks=tasks, attempt=secrets.token_hex(4))
    ended, errors = {}, []

    def task(t):
        try:
            ended[t] = spark.run_task(job, t, start)
        except Exception as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=task, args=(t,)) for t in range(tasks)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(300)
    assert not errors and len(ended) == tasks, errors
    return store.open(resume=True)["totals"], ended[0]


@pytest.mark.parametrize("name, preset, mutation", [("kraft", "tiny", None), ("replication", "p3", None),
                                                     ("example", "ci", "hwm_ignores_isr")])
def test_any_number_of_tasks_gives_the_same_search(tmp_path, name, preset, mutation):
    """Counts per depth, successors per rule and the violations found (depth and state) do not depend on the
    number of tasks: 1, 2, 3 and 5 tasks, each run in threads over one checkpoint directory."""
    model = bind(name, preset, mutation)
    seen = {}
    for tasks in (1, 2, 3, 5):
        totals, ended = run_tasks(model, tmp_path / f"ck{tasks}", tasks, keep_going=True)
        seen[tasks] = (totals["states_per_depth"], totals["gen_by_action"], totals["violations"], ended["stopped_by"])
        # What the tasks wrote for one another, per level: nothing for one task (no files); otherwise at least
        # each new state's candidate row (fingerprint, tie, parent: 8 bytes each, action: 4).
        per_depth = totals["states_per_depth"] + [0]  # the last level expanded finds nothing new
        assert [level for level, _ in ended["exchanged"]] == list(range(len(per_depth) - 1))
        for level, sent in ended["exchanged"]:
            new = per_depth[level + 1]
            assert (sent == 0) if tasks == 1 else (sent >= 28 * new and (sent > 0 or new == 0)), (tasks, level, sent)
    assert seen[2] == seen[1] and seen[3] == seen[1] and seen[5] == seen[1]
    b = bfs.explore(model, keep_going=True)
    assert seen[1][0] == b.stats["states_per_depth"] and seen[1][3] is None
    assert {p for p in seen[1][2]} == {v.outcome.property for v in b.violations}


@pytest.mark.parametrize("every", [60, 0])
def test_a_level_the_driver_gives_up_midway_is_committed_unexpanded_and_the_tasks_finish_as_bfs(tmp_path, every):
    """Spark came up in the middle of a driver level: the driver abandons it (`hand_over`), commits the
    frontier it held as it was (unless that is committed already: every level is with `every` 0), and
    the tasks, expanding it afresh, end with BFS's search."""
    import secrets

    from harness import checkpoint as ck
    from harness.engines.spark.exchange import _committed_files

    model = bind("kraft", "leaderless")  # a level of over 1,024 states: where `hand_over` is first asked
    folder = tmp_path / "ck"
    job, store = spark.make_job(model, str(folder), checkpoint_every=0)
    explore(model, folder, max_depth=0)
    totals = store.open(resume=True)["totals"]
    job = dict(job, tasks=1, attempt=secrets.token_hex(4))
    worker = spark.LevelWorker(job, 0, 1)
    worker.load(0)
    asked, held = [], []

    def hand_over(done):
        asked.append(done)
        held.append(sorted(fp for fp, _ in worker.frontier))
        return True

    last = [0]

    def commit(k):
        store.commit(k, totals, _committed_files(job, last[0], k), keep=lambda rel: rel.startswith("parents/"))
        last[0] = k

    level, stop = spark.run_levels(worker, 0, totals, commit=commit, stop_flag=lambda: None, max_depth=None,
                                   keep_going=False, counter="driver_levels", every=every, hand_over=hand_over)
    worker.drop(level - 1)  # as the driver does after its levels
    b = bfs.explore(model)
    assert stop == "handoff" and asked == [1024 / b.stats["states_per_depth"][level]]
    assert len(totals["states_per_depth"]) == level + 1  # the level given up is not counted
    saved = store.open(resume=True)
    assert saved["level"] == level
    [name] = ck.names(store.folder, "frontier", level)
    committed = ck.read_table(store.folder, store.job, "frontier", level, name).column("fp").to_pylist()
    assert sorted(committed) == held[0] and len(committed) == b.stats["states_per_depth"][level]
    # A driver resumed there gives up its very first level: what it loaded is the commit, which stays.
    resumed = spark.LevelWorker(dict(job, attempt=secrets.token_hex(4)), 0, 1)
    resumed.load(level)
    again, stop = spark.run_levels(resumed, level, totals, commit=commit, stop_flag=lambda: None, max_depth=None,
                                   keep_going=False, counter="driver_levels", every=60, hand_over=lambda done: True)
    resumed.drop(again - 1)  # as the driver does after its levels
    assert (again, stop) == (level, "handoff") and store.open(resume=True)["level"] == level
    finished, ended = run_tasks(model, folder, 2, start=level)
    assert ended["stopped_by"] is None and finished["states_per_depth"] == b.stats["states_per_depth"]
    assert finished["generated"] == b.stats["generated"]


def test_a_frontier_from_one_initial_state_is_shared_out(tmp_path):
    """From its one initial state a search would stay on the task that holds it; the tasks even it out."""
    model = bind("kraft", "tiny")
    totals, _ = run_tasks(model, tmp_path / "ck", 3)
    expanded = totals["task_expanded"]
    assert len(expanded) == 3 and sum(expanded) == totals["distinct"]
    assert min(expanded) > 0.25 * totals["distinct"], expanded  # a third each, give or take


# ------------------------------------------------------------------- a checkpoint on S3


@pytest.fixture(scope="module")
def s3():
    """An S3 endpoint on 127.0.0.1 (moto's server) with one bucket; `s3(name)` is a fresh folder's URI in it,
    with the endpoint in the URI as a user would give it. Credentials come from the environment, as on AWS."""
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    with pytest.MonkeyPatch.context() as env:
        for key, value in (("AWS_ACCESS_KEY_ID", "harness"), ("AWS_SECRET_ACCESS_KEY", "harness"),
                           ("AWS_DEFAULT_REGION", "us-east-1")):
            env.setenv(key, value)
        client = boto3.client("s3", endpoint_url=f"http://{host}:{port}")
        client.create_bucket(Bucket="harness-ck")
        query = f"region=us-east-1&scheme=http&endpoint_override={host}:{port}"
        folder = lambda name: f"s3://harness-ck/{name}?{query}"  # noqa: E731
        folder.client = client
        yield folder
    server.stop()


def keys(s3, name):
    """The objects under s3://harness-ck/name/, but the empty folder markers pyarrow keeps (keys ending in /)."""
    found = s3.client.list_objects_v2(Bucket="harness-ck", Prefix=f"{name}/").get("Contents", [])
    return sorted(o["Key"][len(name) + 1:] for o in found if not o["Key"].endswith("/"))


def test_a_checkpoint_on_s3_resumes_to_the_uninterrupted_result(reference, s3):
    """The same layout as on a disk (no temporary objects: an object appears whole when its upload ends), and a
    search stopped at depth 4 resumes from S3 to the uninterrupted result."""
    model, expected, _ = reference[None]
    part = explore(model, s3("resume"), max_depth=4)
    assert not part.complete and part.stopped_by == "max-depth"
    found = keys(s3, "resume")
    assert "checkpoint.json" in found and "state.json" in found and "frontier/4/" in " ".join(found)
    assert not [k for k in found if ".tmp" in k or k == "spark.log"]  # the JVM's log stays on the driver's disk
    assert summary(explore(model, s3("resume"), resume=True)) == expected


def test_a_damaged_or_foreign_s3_checkpoint_is_refused_and_nothing_is_cleared(reference, s3):
    model, expected, _ = reference[None]
    explore(model, s3("damaged"), max_depth=4)
    committed = next(k for k in keys(s3, "damaged") if k.startswith("parents/2/"))
    body = s3.client.get_object(Bucket="harness-ck", Key=f"damaged/{committed}")["Body"].read()
    s3.client.put_object(Bucket="harness-ck", Key=f"damaged/{committed}", Body=body[:-9] + bytes(9))
    with pytest.raises(BadInput, match="corrupt checkpoint: s3://harness-ck/damaged/parents/2/.* was changed"):
        explore(model, s3("damaged"), resume=True)

    explore(model, s3("foreign"), max_depth=2)
    s3.client.put_object(Bucket="harness-ck", Key="foreign/notes.txt", Body=b"mine")
    before = keys(s3, "foreign")
    with pytest.raises(BadInput, match="notes.txt, which the harness did not write"):
        explore(model, s3("foreign"))
    assert keys(s3, "foreign") == before
    s3.client.put_object(Bucket="harness-ck", Key="users/data.csv", Body=b"1,2")
    with pytest.raises(BadInput, match="is not empty and is not a checkpoint"):
        explore(model, s3("users"))
    assert keys(s3, "users") == ["data.csv"]


@pytest.mark.nightly  # 20 s of Spark on moto's S3; test_spark_local_with_its_checkpoint_on_s3_matches_bfs stays
def test_tasks_exchanging_through_s3_give_the_search_of_one_process(s3):
    """Three tasks (threads here) wait for each other's objects on S3: the same states per depth and successors
    as BFS, and each level's exchange removed once read."""
    model = bind("kraft", "tiny")
    totals, ended = run_tasks(model, s3("tasks"), 3)
    b = bfs.explore(model)
    assert ended["stopped_by"] is None and totals["states_per_depth"] == b.stats["states_per_depth"]
    assert totals["generated"] == b.stats["generated"] and totals["distinct"] == b.stats["distinct"]
    assert keys(s3, "tasks")[:1] == ["checkpoint.json"] and not [k for k in keys(s3, "tasks") if "exchange/" in k]


@pytest.mark.nightly  # 12-20 s of Spark; the S3 refusals stay in make test
def test_spark_local_with_its_checkpoint_on_s3_matches_bfs(s3, cli):
    """A real Spark job (local[2], every level in the barrier tasks) whose checkpoint and exchange are on S3."""
    from harness.engines import spark

    model = bind("kraft", "tiny")
    r = spark.explore(model, master="local[2]", partitions=2, checkpoint=s3("spark"), spark_levels_only=True)
    b = bfs.explore(model)
    assert r.complete and r.stats["states_per_depth"] == b.stats["states_per_depth"] and r.stats["spark_levels"] > 0
    assert r.stats["tasks"] == 2 and Path(r.stats["spark_log"]).is_file()
    code, out, err = cli("check", "kraft", "--config", "tiny", "--engine", "spark", "--checkpoint", s3("cli"),
                         "--json", "--quiet")
    assert code == 0 and json.loads(out)["stats"]["distinct"] == b.stats["distinct"], err
