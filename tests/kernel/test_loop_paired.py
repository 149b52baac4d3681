"""benchmarks/loop.py's paired estimator: a bare step (in a helper process), then a tether step, in turn.

The bubblewrap aim (tether's step <= raw bubblewrap's + 1.5 ms) is smaller than what raw bubblewrap moves between two
runs on a shared host, so the benchmark pairs the steps instead. Checked here by structure and arithmetic, never by
timing: a paired run times N tether steps and N bare steps (each bare step a real command and a fsynced line), and
the summary is the median of the pairs' differences with the spread it prints.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchkit import bench

LOOP = bench("loop")


def test_a_paired_run_times_n_tether_steps_and_n_bare_steps(tmp_path: Path) -> None:
    out = LOOP.tether_loop(tmp_path, "local", False, 4, paired=True)
    assert len(out["steps"]) == len(out["raws"]) == 4
    assert all(t > 0 for t in out["steps"]) and all(r > 0 for r in out["raws"])
    assert out["per_step"] == pytest.approx(sum(out["steps"]) / 4)
    lines = [json.loads(line) for line in (tmp_path / "bare.jsonl").read_text().splitlines()]
    assert [(x["step"], x["exit"]) for x in lines] == [(1, 0), (2, 0), (3, 0), (4, 0)]
    assert out["commits"] == 2.0  # the bare steps write no event: tether's own figures are unchanged


def test_an_unpaired_run_returns_no_pairs_and_runs_no_bare_step(tmp_path: Path) -> None:
    out = LOOP.tether_loop(tmp_path, "local", False, 3)
    assert "steps" not in out and "raws" not in out
    assert not (tmp_path / "bare.jsonl").exists()


def test_the_summary_is_the_median_of_the_pairs_differences() -> None:
    runs = [
        {"steps": [3.0, 5.0, 4.0], "raws": [1.0, 1.0, 2.0]},  # differences 2, 4, 2
        {"steps": [10.0, 9.0], "raws": [9.0, 1.0]},  # differences 1, 8
    ]
    s = LOOP.paired_summary(runs)
    assert s["pairs"] == 5
    assert s["median"] == 2.0  # of 1, 2, 2, 4, 8: not the difference of the medians (5 - 1 = 4)
    assert s["runs"] == [2.0, 4.5]
    assert s["tether"] == 5.0 and s["bare"] == 1.0
    assert s["ci"][0] <= s["median"] <= s["ci"][1]
    assert s["q1"] <= s["median"] <= s["q3"]


def test_the_summary_refuses_runs_without_pairs_or_with_unmatched_ones() -> None:
    with pytest.raises(ValueError, match="no pairs"):
        LOOP.paired_summary([])
    with pytest.raises(ValueError):
        LOOP.paired_summary([{"steps": [1.0, 2.0], "raws": [1.0]}])


def test_a_bare_helper_that_dies_stops_the_run_with_its_exit(tmp_path: Path) -> None:
    ws = LOOP.make_workspace(tmp_path, False)
    helper = LOOP.BareHelper(tmp_path, "local", ws)
    assert helper.step(1) > 0
    helper.proc.kill()
    helper.proc.wait()
    with pytest.raises(SystemExit, match=r"helper ended \(exit -9\)"):
        helper.step(2)
