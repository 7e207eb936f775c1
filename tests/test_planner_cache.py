from __future__ import annotations

import dataclasses
import multiprocessing
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from ucudnn.core.facts import DeviceFacts
from ucudnn.core.problem import KERNELS, MAX_DIM, ConvProblem
from ucudnn.errors import CacheError, CacheWarning
from ucudnn.planner import cache as cache_module
from ucudnn.planner.cache import BenchmarkCache, Measurement
from ucudnn.planner.tables import MAX_TIME_MS, MAX_WORKSPACE_BYTES, Candidate

FACTS = DeviceFacts("NVIDIA H100 80GB HBM3", "9.0", 92800, 13000)
PROBLEM = ConvProblem.create(8, 4, 8, (9, 9), 3, padding=1)
GRAPH = "graph/A+FALLBACK/v2"  # the source of a graph-API search's sets


def ok(b: int, algo: int, time_ms: float = 1.0, workspace: int = 0, **kw: object) -> Measurement:
    return Measurement(b, algo, time_ms=time_ms, workspace_bytes=workspace, **kw)  # type: ignore[arg-type]


def fill(path: Path, sets: int = 1) -> None:
    """A cache at `path` with `sets` forward sets (b = 1, 2, ...) of two rows each."""
    with BenchmarkCache(path) as cache:
        for b in range(1, sets + 1):
            cache.store(PROBLEM, "forward", b, FACTS, [ok(b, 0), ok(b, 1, 2.0)])


def damage_pages(path: Path) -> None:
    """Overwrite every page but the first, whose header still says the file is ours, and count
    the change in the header, as any writer does, so that open connections read it again."""
    with open(path, "r+b") as file:
        header = file.read(100)
        page_size = int.from_bytes(header[16:18], "big")
        assert path.stat().st_size > 2 * page_size, "too small to damage"
        file.seek(page_size)
        file.write(b"\xa5" * (path.stat().st_size - page_size))
        file.seek(24)  # the file change counter
        file.write((int.from_bytes(header[24:28], "big") + 1).to_bytes(4, "big"))


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file in `directory` with its contents, to show that nothing changed."""
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


@pytest.fixture
def db(tmp_path: Path) -> BenchmarkCache:
    with BenchmarkCache(tmp_path / "cache.sqlite") as cache:
        yield cache


def test_miss_then_hit(db: BenchmarkCache) -> None:
    assert db.candidates(PROBLEM, "forward", 4, FACTS) is None
    db.store(PROBLEM, "forward", 4, FACTS, [ok(4, 1, 2.0, 1024, deterministic=True), ok(4, 0, 3.0)])
    assert db.candidates(PROBLEM, "forward", 4, FACTS) == [
        Candidate(4, 0, 3.0, 0),
        Candidate(4, 1, 2.0, 1024, "default", True),
    ]


def test_statistics_and_failures_are_kept(db: BenchmarkCache) -> None:
    results = [
        Measurement.timed(Candidate(8, 0, 2.0, 10), [4.0, 1.5, 2.0, 2.5, 1.8, 3.0, 2.0]),
        Measurement.failed(8, 1, "tensor_op", "CUDNN_STATUS_NOT_SUPPORTED"),
        Measurement(8, 2, "CUDNN_STATUS_ALLOC_FAILED", workspace_bytes=1 << 40, repeats=0),
    ]
    db.store(PROBLEM, "backward_filter", 8, FACTS, results)
    assert db.lookup(PROBLEM, "backward_filter", 8, FACTS) == results
    assert (results[0].min_ms, results[0].max_ms, results[0].repeats) == (1.5, 4.0, 7)
    assert db.candidates(PROBLEM, "backward_filter", 8, FACTS) == [Candidate(8, 0, 2.0, 10)]


def test_all_failed_is_a_hit_not_a_miss(db: BenchmarkCache) -> None:
    db.store(PROBLEM, "forward", 2, FACTS, [Measurement(2, 5, "CUDNN_STATUS_NOT_SUPPORTED")])
    assert db.candidates(PROBLEM, "forward", 2, FACTS) == []
    db.store(PROBLEM, "forward", 1, FACTS, [])
    assert db.candidates(PROBLEM, "forward", 1, FACTS) == []


def test_store_replaces(db: BenchmarkCache) -> None:
    db.store(PROBLEM, "forward", 4, FACTS, [ok(4, 0), ok(4, 1)])
    db.store(PROBLEM, "forward", 4, FACTS, [ok(4, 2, 0.5)])
    assert db.candidates(PROBLEM, "forward", 4, FACTS) == [Candidate(4, 2, 0.5, 0)]
    assert (db.stats().sets, db.stats().measurements) == (1, 1)


def test_rows_are_shared_across_mini_batches(db: BenchmarkCache) -> None:
    # Keyed by the problem at the micro-batch: N=8 and N=256 share what b=4 measured.
    db.store(PROBLEM, "forward", 4, FACTS, [ok(4, 0)])
    assert db.candidates(PROBLEM.with_batch(256), "forward", 4, FACTS) == [Candidate(4, 0, 1.0, 0)]


def problem_variants() -> dict[str, ConvProblem]:
    """PROBLEM changed in one field, for every field but batch (which the key replaces)."""
    replace = dataclasses.replace
    return {
        "in_channels": replace(PROBLEM, in_channels=2),
        "out_channels": replace(PROBLEM, out_channels=4),
        "input_size": replace(PROBLEM, input_size=(9, 10)),
        "filter_size": replace(PROBLEM, filter_size=(3, 1)),
        "padding": replace(PROBLEM, padding=(1, 0)),
        "stride": replace(PROBLEM, stride=(2, 1)),
        "dilation": replace(PROBLEM, dilation=(1, 2)),
        "groups": replace(PROBLEM, groups=2),
        "layout": replace(PROBLEM, layout="NHWC", filter_layout="NCHW"),
        "filter_layout": replace(PROBLEM, filter_layout="NHWC"),
        "dtype": replace(PROBLEM, dtype="float16"),
        "compute_dtype": replace(PROBLEM, compute_dtype="float16"),
        "math_type": replace(PROBLEM, math_type="tensor_op"),
        "mode": replace(PROBLEM, mode="convolution"),
        "x_strides": replace(PROBLEM, x_strides=(500, 100, 10, 1)),
        "y_strides": replace(PROBLEM, y_strides=(800, 100, 10, 1)),
        "padding_after": replace(PROBLEM, padding_after=(1, 0)),
    }


def facts_variants() -> dict[str, DeviceFacts]:
    return {
        "device_name": dataclasses.replace(FACTS, device_name="NVIDIA H200"),
        "compute_capability": dataclasses.replace(FACTS, compute_capability="9.1"),
        "cudnn_version": dataclasses.replace(FACTS, cudnn_version=92900),
        "cuda_version": dataclasses.replace(FACTS, cuda_version=12080),
    }


def test_variants_cover_every_field() -> None:
    problem_fields = {f.name for f in dataclasses.fields(ConvProblem)} - {"batch"}
    assert set(problem_variants()) == problem_fields
    assert all(p != PROBLEM for p in problem_variants().values())
    assert set(facts_variants()) == {f.name for f in dataclasses.fields(DeviceFacts)}


def test_keys_differing_in_one_field_never_collide(db: BenchmarkCache) -> None:
    keys = [(PROBLEM, "forward", 4, FACTS)]
    keys += [(p, "forward", 4, FACTS) for p in problem_variants().values()]
    keys += [(PROBLEM, k, 4, FACTS) for k in KERNELS if k != "forward"]
    keys += [(PROBLEM, "forward", b, FACTS) for b in (1, 2, 8)]
    keys += [(PROBLEM, "forward", 4, f) for f in facts_variants().values()]
    for algo, key in enumerate(keys):
        db.store(*key, [ok(key[2], algo, time_ms=float(algo))])
    for algo, (problem, kernel, b, facts) in enumerate(keys):
        assert db.candidates(problem, kernel, b, facts) == [Candidate(b, algo, float(algo), 0)]
    assert db.stats().sets == len(keys)


def test_math_types_of_one_algorithm_are_separate_rows(db: BenchmarkCache) -> None:
    db.store(PROBLEM, "forward", 4, FACTS, [ok(4, 1, 2.0), ok(4, 1, 1.0, math_type="tensor_op")])
    assert db.candidates(PROBLEM, "forward", 4, FACTS) == [
        Candidate(4, 1, 2.0, 0, "default"),
        Candidate(4, 1, 1.0, 0, "tensor_op"),
    ]
    with pytest.raises(ValueError, match="repeat an"):
        db.store(PROBLEM, "forward", 4, FACTS, [ok(4, 1), ok(4, 1, 3.0)])


def test_legacy_and_graph_sets_of_one_key_are_separate(db: BenchmarkCache) -> None:
    graph = [
        ok(4, 62, 0.5, 1 << 20, engine="eng62_k2=0_k13=1", notes=("TENSOR_CORE",)),
        Measurement.failed(4, 70, "default", "CUDNN_STATUS_NOT_SUPPORTED", engine="eng70"),
    ]
    db.store(PROBLEM, "forward", 4, FACTS, graph, GRAPH)
    assert db.lookup(PROBLEM, "forward", 4, FACTS) is None  # legacy algorithms: not measured
    db.store(PROBLEM, "forward", 4, FACTS, [ok(4, 1, 2.0)])
    assert db.lookup(PROBLEM, "forward", 4, FACTS, GRAPH) == graph
    assert db.candidates(PROBLEM, "forward", 4, FACTS, GRAPH) == [
        Candidate(4, 62, 0.5, 1 << 20, engine="eng62_k2=0_k13=1")
    ]
    assert db.candidates(PROBLEM, "forward", 4, FACTS) == [Candidate(4, 1, 2.0, 0)]
    assert db.lookup(PROBLEM, "forward", 4, FACTS, "graph/A+FALLBACK/v3") is None  # new search
    # A store replaces its own source's set only.
    db.store(PROBLEM, "forward", 4, FACTS, [], GRAPH)
    assert db.lookup(PROBLEM, "forward", 4, FACTS, GRAPH) == []
    assert db.candidates(PROBLEM, "forward", 4, FACTS) == [Candidate(4, 1, 2.0, 0)]
    assert db.stats().sets == 2


def test_configurations_of_one_engine_are_separate_rows(db: BenchmarkCache) -> None:
    results = [
        ok(4, 62, 1.0, engine="eng62_k2=0"),
        ok(4, 62, 0.5, engine="eng62_k2=1"),
        ok(4, 62, 0.25, engine="eng62_k2=1", math_type="tensor_op"),
    ]
    db.store(PROBLEM, "forward", 4, FACTS, results, GRAPH)
    assert db.lookup(PROBLEM, "forward", 4, FACTS, GRAPH) == results
    with pytest.raises(ValueError, match=r"repeat an \(algo, engine, math_type\)"):
        db.store(PROBLEM, "forward", 4, FACTS, [results[1], ok(4, 62, 3.0, engine="eng62_k2=1")])


def test_engine_and_notes_are_kept(db: BenchmarkCache) -> None:
    given = Measurement(
        4, 62, time_ms=1.0, workspace_bytes=0, engine="eng62_k13=1_k2=0", notes=["TENSOR_CORE"]
    )
    assert (given.engine, given.notes) == ("eng62_k2=0_k13=1", ("TENSOR_CORE",))  # canonical
    assert given.candidate == Candidate(4, 62, 1.0, 0, engine="eng62_k2=0_k13=1")
    timed = Measurement.timed(
        Candidate(4, 45, 1.0, 8, "tensor_op", True, "eng45_k3=-1"),
        [1.2, 1.0, 0.9],
        notes=("TENSOR_CORE", "BETA1_UNSUPPORTED"),
    )
    assert (timed.engine, timed.notes, timed.math_type, timed.deterministic, timed.repeats) == (
        "eng45_k3=-1",
        ("TENSOR_CORE", "BETA1_UNSUPPORTED"),
        "tensor_op",
        True,
        3,
    )
    failed = Measurement.failed(4, 7, "fma", "CUDNN_STATUS_NOT_SUPPORTED", engine="eng7")
    db.store(PROBLEM, "forward", 4, FACTS, [given, timed, failed], GRAPH)
    assert db.lookup(PROBLEM, "forward", 4, FACTS, GRAPH) == [failed, timed, given]


@pytest.mark.parametrize(
    ("source", "error", "message"),
    [
        ("", ValueError, "source must be 'legacy' or 'graph/<search id>'"),
        ("Legacy", ValueError, "got 'Legacy'"),
        ("graph/", ValueError, "printable ASCII without spaces"),
        ("graph/A FALLBACK", ValueError, "printable ASCII without spaces"),
        ("graph/A\n", ValueError, "printable ASCII without spaces"),
        ("graph/é", ValueError, "printable ASCII without spaces"),
        (None, TypeError, "source must be text, got None"),
    ],
)
def test_bad_source(db: BenchmarkCache, source: object, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        db.lookup(PROBLEM, "forward", 4, FACTS, source)  # type: ignore[arg-type]
    with pytest.raises(error, match=message):
        db.store(PROBLEM, "forward", 4, FACTS, [], source)  # type: ignore[arg-type]


@pytest.mark.parametrize("field", list(facts_variants()))
def test_version_mismatch_is_a_miss(db: BenchmarkCache, field: str) -> None:
    db.store(PROBLEM, "forward", 4, FACTS, [ok(4, 0)])
    assert db.candidates(PROBLEM, "forward", 4, facts_variants()[field]) is None


def test_bad_arguments(db: BenchmarkCache) -> None:
    with pytest.raises(ValueError, match="unknown kernel"):
        db.lookup(PROBLEM, "sideways", 4, FACTS)
    with pytest.raises(ValueError, match="micro_batch must be >= 1"):
        db.store(PROBLEM, "forward", 0, FACTS, [])
    with pytest.raises(ValueError, match="all be measured at micro-batch 4"):
        db.store(PROBLEM, "forward", 4, FACTS, [ok(4, 0), ok(2, 1)])
    with pytest.raises(ValueError, match="other than 'ok'"):
        Measurement.failed(4, 0, "default", "ok")
    with pytest.raises(ValueError, match=r"did not run \(NOPE\): not a candidate"):
        _ = Measurement.failed(4, 0, "default", "NOPE").candidate


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"micro_batch": 0, "algo": 0, "status": "x"}, "micro_batch must be >= 1"),
        ({"algo": 0}, "needs time and workspace"),
        ({"algo": 0, "time_ms": 1.0}, "needs time and workspace"),
        ({"algo": -1, "status": "x"}, "algo must be >= 0"),
        ({"algo": 0, "status": ""}, "status must be"),
        ({"algo": 0, "status": "x", "math_type": "int8"}, "math_type"),
        ({"algo": 0, "time_ms": -1.0, "workspace_bytes": 0}, "times must be"),
        ({"algo": 0, "time_ms": float("nan"), "workspace_bytes": 0}, "times must be"),
        ({"algo": 0, "time_ms": 1.0, "min_ms": 2.0, "workspace_bytes": 0}, "min <= median"),
        ({"algo": 0, "time_ms": 1.0, "workspace_bytes": -1}, "workspace_bytes must be"),
        ({"algo": 0, "status": "x", "repeats": -1}, "repeats must be"),
        # Candidate's bounds: what the cache stores must read back as a Candidate.
        ({"algo": 0, "time_ms": 2e9, "workspace_bytes": 0}, "times must be between 0 and 1e"),
        ({"algo": 0, "time_ms": 1.0, "max_ms": 2e9, "workspace_bytes": 0}, "between 0 and"),
        ({"algo": 0, "time_ms": float("inf"), "workspace_bytes": 0}, "between 0 and"),
        ({"algo": 0, "time_ms": 1.0, "workspace_bytes": 2**50 + 1}, "workspace_bytes must be <="),
        ({"algo": 2**31, "status": "x"}, "algo must be <="),
        ({"micro_batch": 2**31, "algo": 0, "status": "x"}, "micro_batch must be <="),
        ({"algo": 61, "status": "x", "engine": "eng62"}, "of engine 62, but algo is 61"),
        ({"algo": 62, "status": "x", "engine": "engine62"}, "is not eng<index>"),
        ({"algo": 62, "status": "x", "engine": "eng62_k2=0_k2=1"}, "more than once"),
        ({"algo": 0, "status": "x", "notes": ("A,B",)}, "letters, digits and underscores"),
        ({"algo": 0, "status": "x", "notes": ("",)}, "letters, digits and underscores"),
    ],
)
def test_measurement_validation(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Measurement(**{"micro_batch": 1, **kwargs})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"algo": 1.0, "status": "x"}, "algo must be an integer"),
        ({"algo": True, "status": "x"}, "algo must be an integer"),
        ({"algo": 0, "status": "x", "repeats": 2.5}, "repeats must be an integer"),
        ({"algo": 0, "time_ms": 1.0, "workspace_bytes": 1.0}, "workspace_bytes must be an int"),
        ({"algo": 0, "time_ms": "1", "workspace_bytes": 0}, "times must be numbers"),
        ({"algo": 0, "time_ms": True, "workspace_bytes": 0}, "times must be numbers"),
        ({"algo": 62, "status": "x", "engine": 62}, "an engine tag must be text"),
        ({"algo": 0, "status": "x", "notes": "TENSOR_CORE"}, "notes must be a sequence of note"),
        ({"algo": 0, "status": "x", "notes": None}, "notes must be a sequence of note"),
        ({"algo": 0, "status": "x", "notes": (1,)}, "a note name must be text, got 1"),
    ],
)
def test_measurement_refuses_wrong_types(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(TypeError, match=message):
        Measurement(**{"micro_batch": 1, **kwargs})  # type: ignore[arg-type]


def test_measurement_at_the_bounds_is_a_candidate() -> None:
    largest = Measurement(
        MAX_DIM, MAX_DIM, time_ms=MAX_TIME_MS, workspace_bytes=MAX_WORKSPACE_BYTES
    )
    assert largest.candidate == Candidate(MAX_DIM, MAX_DIM, MAX_TIME_MS, MAX_WORKSPACE_BYTES)


def test_measurement_takes_numpy_integers() -> None:
    measured = Measurement(
        np.int64(4), np.int32(2), time_ms=np.float32(1.5), workspace_bytes=np.uint64(256)
    )
    assert (measured.micro_batch, measured.algo, measured.workspace_bytes) == (4, 2, 256)
    assert all(
        type(v) is int for v in (measured.micro_batch, measured.algo, measured.workspace_bytes)
    )


def _writer(path: str, worker: int, rounds: int) -> None:
    with BenchmarkCache(path) as cache:
        for i in range(rounds):
            kernel = KERNELS[i % 3]
            # Own keys (micro-batch 100 + worker) and a key every worker fights over (b=1).
            for b in (100 + worker, 1):
                results = [ok(b, a, time_ms=worker + a / 10, workspace=worker) for a in range(4)]
                cache.store(PROBLEM, kernel, b, FACTS, results)
                assert cache.lookup(PROBLEM, kernel, b, FACTS) is not None


def test_several_processes_write_at_once(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite")
    workers, rounds = 6, 30
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=_writer, args=(path, w, rounds)) for w in range(workers)]
    for p in processes:
        p.start()
    for p in processes:
        p.join(timeout=120)
    assert [p.exitcode for p in processes] == [0] * workers
    with BenchmarkCache(path) as cache:
        assert cache.stats().sets == (workers + 1) * 3
        for kernel in KERNELS:
            for w in range(workers):
                found = cache.candidates(PROBLEM, kernel, 100 + w, FACTS)
                assert found == [Candidate(100 + w, a, w + a / 10, w) for a in range(4)]
            shared = cache.candidates(PROBLEM, kernel, 1, FACTS)
            # Whoever wrote last won, and the set is that writer's alone, never a mix.
            assert shared is not None and len(shared) == 4
            assert len({c.workspace_bytes for c in shared}) == 1


def test_unreadable_path_falls_back_to_memory(tmp_path: Path) -> None:
    with pytest.warns(CacheWarning, match="cannot be used.*in memory"):
        cache = BenchmarkCache(tmp_path)  # a directory
    with cache:
        cache.store(PROBLEM, "forward", 4, FACTS, [ok(4, 0)])
        assert cache.candidates(PROBLEM, "forward", 4, FACTS) == [Candidate(4, 0, 1.0, 0)]
    assert tmp_path.is_dir()


@pytest.mark.parametrize(
    "change",
    [
        "math_type = 'bogus'",
        "algo = 'x'",  # SQLite keeps text in an INTEGER column, and 'x' >= 0 passes the CHECK
        "algo = 1.5",
        "repeats = 2.5",
        "median_ms = 'fast'",
        "min_ms = X'00'",
        "workspace_bytes = 1e30",
        # Past Candidate's bounds: a row no Measurement would store.
        "median_ms = 2e9, max_ms = 2e9",
        f"workspace_bytes = {2**50 + 1}",
        f"algo = {2**31}",
        "engine = 'eng9'",  # an engine that is not the row's algo
        "engine = 'fast'",
        "engine = X'00'",
        "notes = 'TENSOR_CORE,,WINOGRAD'",
        "notes = X'41'",
    ],
)
def test_tampered_row_is_a_miss_not_a_wrong_plan(db: BenchmarkCache, change: str) -> None:
    db.store(PROBLEM, "forward", 4, FACTS, [ok(4, 0)])
    with sqlite3.connect(db.path) as conn:
        conn.execute(f"UPDATE measurements SET {change}")
    with pytest.warns(CacheWarning, match="read failed.*treated as a miss"):
        assert db.candidates(PROBLEM, "forward", 4, FACTS) is None


def test_original_ucudnn_database_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "ucudnn-original.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE perfTable (convParam TEXT, perfTime REAL)")
        conn.execute("INSERT INTO perfTable VALUES ('x', 1.0)")
    before = path.read_bytes()
    with pytest.raises(CacheError, match=r"ucudnn-original\.sqlite is not a ucudnn benchmark"):
        BenchmarkCache(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_default_path_comes_from_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UCUDNN_DATABASE", str(tmp_path / "sub" / "env.sqlite"))
    with BenchmarkCache() as cache:
        assert cache.path == str(tmp_path / "sub" / "env.sqlite")
        cache.store(PROBLEM, "forward", 4, FACTS, [ok(4, 0)])
    assert (tmp_path / "sub" / "env.sqlite").is_file()


def test_stats_count_sets_rows_and_bytes(db: BenchmarkCache) -> None:
    empty = db.stats()
    assert (empty.sets, empty.measurements) == (0, 0)
    db.store(
        PROBLEM, "forward", 4, FACTS, [ok(4, 0), Measurement(4, 1, "CUDNN_STATUS_NOT_SUPPORTED")]
    )
    stats = db.stats()
    assert (stats.sets, stats.measurements) == (1, 2)
    assert stats.file_bytes > 0


def test_in_memory_cache() -> None:
    with BenchmarkCache(":memory:") as cache:
        cache.store(PROBLEM, "forward", 4, FACTS, [ok(4, 0)])
        assert cache.candidates(PROBLEM, "forward", 4, FACTS) == [Candidate(4, 0, 1.0, 0)]
        assert cache.stats().file_bytes == 0


def test_store_that_cannot_commit_is_kept_in_memory_and_rolled_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_module, "BUSY_TIMEOUT_S", 0.2)
    path = tmp_path / "cache.sqlite"
    with BenchmarkCache(path) as cache:
        reader = sqlite3.connect(path, isolation_level=None)
        reader.execute("BEGIN")
        reader.execute("SELECT COUNT(*) FROM measurements").fetchone()  # holds a read lock
        with pytest.warns(CacheWarning, match="write failed.*locked.*kept in memory"):
            cache.store(PROBLEM, "forward", 4, FACTS, [ok(4, 0)])  # COMMIT cannot finish
        assert cache.candidates(PROBLEM, "forward", 4, FACTS) == [Candidate(4, 0, 1.0, 0)]
        reader.execute("COMMIT")
        reader.close()
        cache.store(PROBLEM, "forward", 4, FACTS, [ok(4, 1, 0.5)])  # the file's now, not memory's
        assert cache.candidates(PROBLEM, "forward", 4, FACTS) == [Candidate(4, 1, 0.5, 0)]
    with BenchmarkCache(path) as cache:
        assert cache.candidates(PROBLEM, "forward", 4, FACTS) == [Candidate(4, 1, 0.5, 0)]
