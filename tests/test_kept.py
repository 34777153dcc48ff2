"""The course's slow simulations kept on disk between processes (``servingmath._kept``)."""
from __future__ import annotations

import multiprocessing
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from servingmath import _kept, disaggregation, engines, load, multi_runs, replicas, simulator
from servingmath.simulator.goodput import _latencies, _searched_run


@pytest.fixture
def results(tmp_path, monkeypatch):
    """A folder of kept results, and the in-process caches emptied before and after (as in a fresh process). The
    package is taken as it stands now, as a process importing it now would: a worker that imported it before a
    file under src/servingmath was written (another lane's build, say) would otherwise, rightly, keep nothing."""
    monkeypatch.setenv(_kept.FOLDER_VARIABLE, str(tmp_path))
    monkeypatch.setattr(_kept, "STAMPS", _kept._stamps())
    clear()
    yield tmp_path
    clear()


def clear():
    for cache in (load._run, load._goodput, load._engine_run, load._engine_goodput, replicas._figures,
                  disaggregation.run, disaggregation._latencies, _searched_run, _latencies):
        cache.cache_clear()


def kept_files(results: Path, kind="*") -> list[Path]:
    return sorted(results.glob(f"{_kept.SUBFOLDER}/*/{kind}-*.npz"))


def refuse(*args, **kwargs):
    raise AssertionError("simulated again")


def no_simulation(monkeypatch):
    """Every way to a simulation refused: what follows must come from the folder."""
    clear()   # a new process: only the folder remembers
    for module, name in ((load, "simulate"), (simulator, "simulate"), (simulator, "at_rate"), (simulator, "goodput"),
                         (simulator, "simulate_cluster")):
        monkeypatch.setattr(module, name, refuse)


def same_run(a: simulator.Simulation, b: simulator.Simulation):
    assert a.server == b.server and a.workload.label == b.workload.label
    for name in ("arrival", "prompt", "reply"):
        assert np.array_equal(getattr(a.workload, name), getattr(b.workload, name)), name
    for name in simulator.SIMULATION_ARRAYS:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.summary() == b.summary()


def test_a_kept_run_and_goodput_are_read_back_as_computed_without_simulating(results, monkeypatch):
    run, found = load.run(12, count=300), load.capacity(count=300)
    # the run, the search, and each rate it tried (its requests' latencies, for searches at other targets)
    kinds = [p.name.split("-")[0] for p in kept_files(results)]
    assert kinds[:2] == ["goodput", "run"] and len(kinds) > 3 and set(kinds[2:]) == {"try"}
    with monkeypatch.context() as patched:
        no_simulation(patched)
        again, found_again = load.run(12, count=300), load.capacity(count=300)
    same_run(run, again)
    assert found_again.goodput.rate == found.goodput.rate > 0
    assert found_again.cost_per_million == found.cost_per_million and found_again.gpus == found.gpus
    same_run(found.goodput.run, found_again.goodput.run)   # the run at the rate found, kept beside it


def test_an_engines_run_and_goodput_are_kept_under_the_engine_too(results, monkeypatch):
    # The ideal engine with no flags builds the very server load.capacity and load.run use: the engine in
    # the key keeps the two apart all the same, and each is read back as computed.
    ideal = engines.engine("ideal")
    found, mine = load.capacity(count=300), load.engine_capacity(ideal, count=300)
    run, my_run = load.run(12, count=300), load.engine_run(ideal, 12, count=300)
    assert mine.goodput.server == found.goodput.server and my_run.server == run.server
    assert len(kept_files(results, "goodput")) == 2 and len(kept_files(results, "run")) == 2
    with monkeypatch.context() as patched:
        no_simulation(patched)
        again, run_again = load.engine_capacity(ideal, count=300), load.engine_run(ideal, 12, count=300)
    assert again.goodput.rate == mine.goodput.rate == found.goodput.rate > 0
    same_run(my_run, run_again)
    same_run(mine.goodput.run, again.goodput.run)


def test_copies_behind_a_router_are_kept_as_their_figures(results, monkeypatch):
    found = replicas.routed(6, count=300)
    assert [p.name.split("-")[0] for p in kept_files(results)] == ["run"]
    with monkeypatch.context() as patched:
        no_simulation(patched)
        again = replicas.routed(6, count=300)
    assert again == found and again.policy == "chunked" and found.ttft_p99 > 0
    assert [type(getattr(again, name)) for name in ("rate", "ttft_p99", "preemptions")] == [float, float, int]


def test_a_layouts_latencies_are_kept_and_its_attainment_read_from_them(results, monkeypatch):
    layouts = (disaggregation.Layout(1, 2), disaggregation.Layout(0, 3, 2048))
    targets = ((0.4, 0.015), (0.15, 0.012), (0.12, None), (None, 0.011))
    runs = [disaggregation.run(layout, 8, "long", "nvlink4", 200) for layout in layouts]
    found = [disaggregation.attainment(layout, 8, *target, "long", "nvlink4", 200) for layout in layouts
             for target in targets]
    assert found == [run.attainment(*target) for run in runs for target in targets] and len(set(found)) > 2
    assert [p.name.split("-")[0] for p in kept_files(results)] == ["try", "try"]
    with monkeypatch.context() as patched:
        no_simulation(patched)
        patched.setattr(disaggregation, "run", refuse)
        again = [disaggregation.attainment(layout, 8, *target, "long", "nvlink4", 200) for layout in layouts
                 for target in targets]
    assert again == found
    # Each argument that changes a run files it apart (a colocated pool's link changes nothing).
    split, colocated = layouts
    for asked in ((split, 9, "long", "nvlink4", 200, 0), (split, 8, "sharegpt", "nvlink4", 200, 0),
                  (split, 8, "long", "roce-400g", 200, 0), (split, 8, "long", "nvlink4", 150, 0),
                  (split, 8, "long", "nvlink4", 200, 1), (disaggregation.Layout(1, 2, 512), 8, "long", "nvlink4", 200, 0),
                  (colocated, 8, "long", "roce-400g", 200, 0)):
        layout, rate, lengths, link, count, seed = asked
        disaggregation.attainment(layout, rate, 0.4, 0.015, lengths, link, count, seed)
    assert len(kept_files(results, "try")) == 2 + 6


def test_a_published_rows_replay_is_kept_as_the_figures_it_gives(results, monkeypatch):
    runs = multi_runs.load()
    row = next(run for run in runs if run.engine in engines.PROFILED and run.arrivals["kind"] == "poisson")
    multi_runs._REPLAYED.clear()
    found = multi_runs.predict(row, requests=200, runs=runs)
    with monkeypatch.context() as patched:
        no_simulation(patched)
        patched.setattr(multi_runs, "_REPLAYED", {})
        again = multi_runs.predict(row, requests=200, runs=runs)
    assert again == found and found.value > 0 and kept_files(results, "run")


def test_a_goodput_no_rate_meets_is_kept_too(results, monkeypatch):
    # A first token within a microsecond: no rate meets it.
    found = load._goodput(load.MODEL, load.GPU_, "continuous", 1e-6, 0.05, 200, 0)
    assert found.rate == 0 and found.run is None
    with monkeypatch.context() as patched:
        no_simulation(patched)
        again = load._goodput(load.MODEL, load.GPU_, "continuous", 1e-6, 0.05, 200, 0)
    assert again.rate == 0 and again.run is None and again.mean_reply == found.mean_reply


def test_results_are_filed_under_the_digest_and_only_another_digests_results_are_removed(results, monkeypatch):
    theirs = results / "someone's" / "notes.txt"
    theirs.parent.mkdir()
    theirs.write_text("kept")
    load.run(12, count=300)
    assert [p.parent.name for p in kept_files(results)] == [_kept.DIGEST] == [_kept.package_digest()]
    beside = kept_files(results)[0].parent / "notes.txt"
    beside.write_text("not a result")
    load._run.cache_clear()
    monkeypatch.setattr(_kept, "DIGEST", "f" * 32)
    calls = []
    monkeypatch.setattr(load, "simulate", lambda *a: calls.append(a) or simulator.simulate(*a))
    load.run(12, count=300)
    assert len(calls) == 1 and [p.parent.name for p in kept_files(results)] == ["f" * 32]
    assert theirs.read_text() == "kept" and beside.read_text() == "not a result"   # only results are removed


def test_the_digest_changes_with_any_file_of_the_package(tmp_path, monkeypatch):
    package = tmp_path / "servingmath"
    shutil.copytree(_kept.PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(_kept, "PACKAGE", package)
    before = _kept.package_digest()
    data = next(p for p in sorted((package / "data").iterdir()) if p.is_file())
    data.write_bytes(data.read_bytes() + b"\n")
    assert _kept.package_digest() != before


def test_bytecode_written_after_the_import_is_no_change(results, monkeypatch, tmp_path_factory):
    package = tmp_path_factory.mktemp("package") / "servingmath"
    shutil.copytree(_kept.PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(_kept, "PACKAGE", package)
    monkeypatch.setattr(_kept, "STAMPS", _kept._stamps())
    (package / "simulator" / "__pycache__").mkdir()
    load.run(12, count=300)
    assert [path.name for path in results.iterdir()] == [_kept.SUBFOLDER]


@pytest.mark.parametrize("change", ["edited", "added", "removed"])
def test_a_process_whose_package_changed_since_import_keeps_nothing(results, monkeypatch, tmp_path_factory, change):
    package = tmp_path_factory.mktemp("package") / "servingmath"
    shutil.copytree(_kept.PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(_kept, "PACKAGE", package)
    monkeypatch.setattr(_kept, "STAMPS", _kept._stamps())
    load.run(12, count=300)
    assert [path.name for path in results.iterdir()] == [_kept.SUBFOLDER]     # kept while the package is as imported
    clear()
    if change == "edited":
        module = package / "load.py"
        module.write_text(module.read_text() + "\n")
    elif change == "added":
        (package / "data" / "new.yaml").write_text("{}\n")
    else:
        next(path for path in sorted((package / "data").iterdir()) if path.is_file()).unlink()
    shutil.rmtree(results / _kept.SUBFOLDER)
    load.run(12, count=300)
    assert list(results.iterdir()) == []


@pytest.mark.parametrize("setting", ["", "relative/folder"])
def test_nothing_is_kept_where_the_variable_is_unset_or_not_absolute(results, monkeypatch, setting):
    monkeypatch.setenv(_kept.FOLDER_VARIABLE, setting)
    monkeypatch.chdir(results)
    load.run(12, count=300)
    assert list(results.iterdir()) == []


def test_a_folder_that_cannot_be_written_keeps_nothing_and_the_result_stands(results, monkeypatch):
    monkeypatch.setenv(_kept.FOLDER_VARIABLE, str(results / "a-file"))
    (results / "a-file").write_text("not a folder")
    run = load.run(12, count=300)
    assert run.summary()["tokens_per_second"] > 0 and [p.name for p in results.iterdir()] == ["a-file"]


def test_a_result_that_cannot_be_read_whole_is_computed_again(results):
    first = load.run(12, count=300)
    [path] = kept_files(results)
    path.write_bytes(path.read_bytes()[:100])
    load._run.cache_clear()
    same_run(first, load.run(12, count=300))


def _slow_count(calls: Path):
    """A computation that takes a while and notes each time it is run."""
    with calls.open("a") as noted:
        noted.write("computed\n")
    time.sleep(0.5)
    return {"x": np.arange(3)}


def _want(folder: str, calls: str):
    os.environ[_kept.FOLDER_VARIABLE] = folder
    got = _kept.kept_arrays("run", ("the same arguments",), lambda: _slow_count(Path(calls)))
    assert list(got["x"]) == [0, 1, 2]


def test_processes_that_want_the_same_result_at_once_compute_it_once(results):
    calls = results.parent / "calls.txt"
    context = multiprocessing.get_context("fork")
    wanting = [context.Process(target=_want, args=(str(results), str(calls))) for _ in range(3)]
    for process in wanting:
        process.start()
    for process in wanting:
        process.join(30)
    assert [process.exitcode for process in wanting] == [0, 0, 0]
    assert calls.read_text() == "computed\n"
