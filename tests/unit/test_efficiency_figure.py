"""benchmarks/efficiency_figure.py: the search-efficiency report as an SVG that parses, with a row per space, each
strategy's median where its value lies on the log axis, reach fractions where reach decides, and the model strategy's
verdict; and search_efficiency.py --svg draws it from a real run."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from benchmarks.efficiency_figure import efficiency_svg
from tests.file_modules import module_from_file

SVG = "{http://www.w3.org/2000/svg}"


def _runs(space: str, strategy: str, steps: list[int | None]) -> list[dict]:
    return [{"space": space, "strategy": strategy, "seed": i, "to_5pct": s, "best_at_100": 1.0, "wall_s": 0.1}
            for i, s in enumerate(steps)]


def _elements(svg: str, cls: str) -> list[ET.Element]:
    return [e for e in ET.fromstring(svg).iter() if e.get("class") == cls]


def test_each_space_is_a_row_and_a_larger_median_sits_further_right():
    rows = (_runs("a", "ga", [40, 50, 60]) + _runs("a", "bo", [10, 12, 14]) + _runs("a", "model", [5, 6, 7])
            + _runs("b", "ga", [90, 100, 110]) + _runs("b", "bo", [20, 30, 40]) + _runs("b", "model", [200, 250, 300]))
    svg = efficiency_svg(rows, {"a": 600, "b": 9000}, 400, "title & more")
    labels = [e.text for e in _elements(svg, "space")]
    assert labels == ["a (600)", "b (9000)"]
    medians = _elements(svg, "median")
    assert [(m.get("data-strategy"), float(m.get("data-median"))) for m in medians] == [
        ("ga", 50), ("bo", 12), ("model", 6), ("ga", 100), ("bo", 30), ("model", 250)]
    x = {(i // 3, m.get("data-strategy")): float(m.get("cx")) for i, m in enumerate(medians)}
    assert x[0, "model"] < x[0, "bo"] < x[0, "ga"] < x[1, "ga"] < x[1, "model"]
    verdicts = [e.itertext() for e in _elements(svg, "verdict")]
    assert [list(v)[-1] for v in verdicts] == ["met", "short"]
    assert _elements(svg, "reach") == []  # every seed of every strategy reached 5 %: nothing to tell


def test_misses_sit_past_the_budget_and_reach_fractions_are_shown():
    rows = _runs("n", "ga", [None, None, 300]) + _runs("n", "bo", [None] * 3) + _runs("n", "model", [None, 150, 200])
    svg = efficiency_svg(rows, {"n": 10_000}, 400)
    medians = {m.get("data-strategy"): m for m in _elements(svg, "median")}
    assert float(medians["bo"].get("data-median")) == 401  # a miss counts as the budget + 1
    assert float(medians["ga"].get("cx")) == float(medians["bo"].get("cx")) > float(medians["model"].get("cx"))
    reach = {e.get("data-strategy"): e.text for e in _elements(svg, "reach")}
    assert reach == {"ga": "0.33", "bo": "0.00", "model": "0.67"}
    assert list(_elements(svg, "verdict")[0].itertext())[-1] == "met"


def test_without_a_reference_or_a_model_no_verdict_is_drawn():
    svg = efficiency_svg(_runs("a", "model", [5, 6]) + _runs("b", "ga", [7, 8]), {"a": 100, "b": 100}, 100)
    assert _elements(svg, "verdict") == []
    assert len(_elements(svg, "median")) == 2


@pytest.mark.parametrize("strategies", ["ga,bo,model", "model"])
def test_search_efficiency_draws_the_figure_of_its_run(tmp_path, capsys, strategies):
    se = module_from_file("search_efficiency", Path(__file__).resolve().parents[2] / "benchmarks" /
                          "search_efficiency.py")
    out = tmp_path / "figure.svg"
    se.main(["--tables", "", "--synthetic", "synth-smooth-6k9-s1", "--seeds", "2", "--budget", "24",
             "--strategies", strategies, "--svg", str(out)])
    capsys.readouterr()
    svg = out.read_text()
    assert [e.text for e in _elements(svg, "space")] == ["synth-smooth-6k9-s1 (6000)"]
    assert {m.get("data-strategy") for m in _elements(svg, "median")} == set(strategies.split(","))
    assert len(_elements(svg, "verdict")) == (1 if "ga" in strategies else 0)
    assert ET.fromstring(svg).tag == f"{SVG}svg"


@pytest.mark.parametrize("flag", ["--svg", "--json", "--checkpoint"])
def test_an_output_in_a_missing_folder_is_refused_before_any_run(tmp_path, capsys, flag):
    se = module_from_file("search_efficiency", Path(__file__).resolve().parents[2] / "benchmarks" /
                          "search_efficiency.py")
    with pytest.raises(SystemExit) as stopped:
        se.main(["--tables", "", "--synthetic", "synth-smooth-6k9-s1", "--seeds", "1", "--budget", "16",
                 "--strategies", "ga", flag, str(tmp_path / "missing" / "out")])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"{flag} " in err and "missing" in err and "not a folder" in err
    assert "1/1 runs" not in err  # refused before the run, not after it
