"""Lesson 3's slow simulations kept on disk between processes (``servingmath._kept``)."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from servingmath import _kept, load, simulator


@pytest.fixture
def results(tmp_path, monkeypatch):
    """A folder of kept results, and the in-process caches emptied before and after (as in a fresh process)."""
    monkeypatch.setenv(_kept.FOLDER_VARIABLE, str(tmp_path))
    load._run.cache_clear(), load._goodput.cache_clear()
    yield tmp_path
    load._run.cache_clear(), load._goodput.cache_clear()


def refuse(*args, **kwargs):
    raise AssertionError("simulated again")


def same_run(a: simulator.Simulation, b: simulator.Simulation):
    assert a.server == b.server and a.workload.label == b.workload.label
    for name in ("arrival", "prompt", "reply"):
        assert np.array_equal(getattr(a.workload, name), getattr(b.workload, name)), name
    for name in simulator.SIMULATION_ARRAYS:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.summary() == b.summary()


def test_a_kept_run_and_goodput_are_read_back_as_computed_without_simulating(results, monkeypatch):
    run = load.run(12, count=300)
    found = load.capacity(count=300)
    load._run.cache_clear(), load._goodput.cache_clear()   # a new process: only the folder remembers
    with monkeypatch.context() as patched:
        patched.setattr(load, "simulate", refuse)
        patched.setattr(simulator, "goodput", refuse)
        again, found_again = load.run(12, count=300), load.capacity(count=300)
    same_run(run, again)
    assert found_again.goodput.rate == found.goodput.rate > 0
    assert found_again.cost_per_million == found.cost_per_million and found_again.gpus == found.gpus
    same_run(found.goodput.run, found_again.goodput.run)   # the run at the rate found, made again from it


def test_results_are_filed_under_the_packages_digest_and_another_versions_are_removed(results, monkeypatch):
    load.run(12, count=300)
    assert [p.parent.name for p in results.glob("*/run-*.npz")] == [_kept.DIGEST] == [_kept.package_digest()]
    load._run.cache_clear()
    monkeypatch.setattr(_kept, "DIGEST", "an-edited-package")
    calls = []
    monkeypatch.setattr(load, "simulate", lambda *a: calls.append(a) or simulator.simulate(*a))
    load.run(12, count=300)
    assert len(calls) == 1 and [p.parent.name for p in results.glob("*/run-*.npz")] == ["an-edited-package"]


def test_the_digest_changes_with_any_file_of_the_package(tmp_path, monkeypatch):
    package = tmp_path / "servingmath"
    shutil.copytree(Path(_kept.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(_kept, "__file__", str(package / "_kept.py"))
    before = _kept.package_digest()
    data = next(p for p in sorted((package / "data").iterdir()) if p.is_file())
    data.write_bytes(data.read_bytes() + b"\n")
    assert _kept.package_digest() != before


def test_a_folder_that_cannot_be_written_keeps_nothing_and_the_result_stands(results, monkeypatch):
    monkeypatch.setenv(_kept.FOLDER_VARIABLE, str(results / "a-file"))
    (results / "a-file").write_text("not a folder")
    run = load.run(12, count=300)
    assert run.summary()["tokens_per_second"] > 0 and [p.name for p in results.iterdir()] == ["a-file"]


def test_nothing_is_kept_where_the_variable_is_unset(results, monkeypatch):
    monkeypatch.delenv(_kept.FOLDER_VARIABLE)
    load.run(12, count=300)
    assert list(results.iterdir()) == []


def test_a_half_written_result_is_computed_again(results):
    first = load.run(12, count=300)
    for path in results.glob("*/run-*.npz"):
        path.write_bytes(path.read_bytes()[:100])
    load._run.cache_clear()
    same_run(first, load.run(12, count=300))
