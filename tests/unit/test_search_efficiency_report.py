"""benchmarks/search_efficiency.py and its report (benchmarks/efficiency_report.py): the spreads beside each median
and fraction, a verdict that tells a loss other seeds could reverse from a clear one, rank tests, the replicate
check; small end-to-end runs."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import efficiency_report as report
from tests.file_modules import module_from_file
from tuner_server.synthetic_spaces import FRESH, GROUPS, LATER

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "search_efficiency.py"


@pytest.fixture(scope="module")
def se():
    return module_from_file("search_efficiency", SCRIPT)


def test_fraction_interval_brackets_the_fraction_and_stays_in_0_1():
    for hits in (0, 1, 10, 19, 20):
        lo, hi = report.fraction_interval(hits, 20)
        assert 0.0 <= lo <= hits / 20 <= hi <= 1.0 + 1e-12
    assert report.fraction_interval(20, 20)[0] > 0.8 and report.fraction_interval(0, 20)[1] < 0.2
    wide, narrow = report.fraction_interval(10, 20), report.fraction_interval(50, 100)
    assert wide[1] - wide[0] > narrow[1] - narrow[0]  # more seeds, a tighter interval


def test_median_interval_brackets_the_median_and_counts_misses_as_cap_plus_one():
    steps = [10, 12, 15, 40, 41, 42, None, None]
    lo, hi = report.median_interval(steps, 100)
    assert lo <= report.median_steps(steps, 100) <= hi
    assert report.median_interval([None] * 5, 100) == (101.0, 101.0)
    assert report.median_interval(steps, 100) == (lo, hi)  # seeded


def _row(steps, cap=400):
    return report.summary_row([{"to_5pct": s, f"best_at_{report.AT}": 1.0, "wall_s": 0.1} for s in steps], cap)


def test_verdict_tells_a_loss_within_spread_from_a_clear_one():
    ref = _row([30, 31, 32, 33, 34, 35, 36, 37, 38, 39])
    assert report.verdict(_row([20] * 10), [ref]) == (True, "ok")
    good, text = report.verdict(_row([28, 30, 31, 33, 35, 36, 37, 38, 40, 41]), [ref])
    assert not good and text == "worse: median (within spread)"
    good, text = report.verdict(_row([90, 91, 92, 93, 94, 95, 96, 97, 98, 99]), [ref])
    assert not good and text == "worse: median"
    good, text = report.verdict(_row([None] * 10), [ref])
    assert not good and text == "worse: median, reached"


def test_a_small_run_reports_every_strategy_with_intervals(se, tmp_path, capsys):
    out = tmp_path / "runs.json"
    se.main(["--tables", "", "--synthetic", "synth-smooth-6k9-s1", "--seeds", "2", "--budget", "24",
             "--strategies", "ga,bo,model", "--json", str(out)])
    printed = capsys.readouterr()
    rows = [line for line in printed.out.splitlines() if line.startswith("| synth-smooth-6k9-s1 |")]
    assert [line.split(" | ")[2] for line in rows] == ["ga", "bo", "model"]
    assert all(" [" in line.split(" | ")[3] and " [" in line.split(" | ")[4] for line in rows)
    assert "6/6 runs" in printed.err  # progress
    runs = json.loads(out.read_text())["runs"]
    assert len(runs) == 6 and {r["strategy"] for r in runs} == {"ga", "bo", "model"}


def test_the_closing_line_names_losses_beyond_the_spread():
    failing = [("a", "worse: median (within spread)"), ("b", "worse: median (within spread), reached"),
               ("c", "worse: @100 (within spread)")]
    line = report.closing_line(failing, 5)
    assert line.startswith("model at least as good as the best of GA and BO on 2 of 5 spaces; not on: a, b, c")
    assert line.endswith("beyond the 90% spread on: b")
    assert report.closing_line([], 3) == "model at least as good as the best of GA and BO on 3 of 3 spaces"


def test_an_earlier_json_is_reported_again(se, tmp_path, capsys):
    out = tmp_path / "runs.json"
    args = ["--tables", "", "--synthetic", "synth-smooth-6k9-s1", "--seeds", "2", "--budget", "16"]
    se.main([*args, "--strategies", "ga,model", "--json", str(out)])
    first = capsys.readouterr().out
    se.main([*args, "--strategies", "", "--reuse", str(out)])
    again = capsys.readouterr().out
    assert [line for line in again.splitlines() if line.startswith("|")] == \
        [line for line in first.splitlines() if line.startswith("|")]


def test_model_runs_without_a_reference_claim_nothing(se, capsys):
    se.main(["--tables", "", "--synthetic", "synth-smooth-6k9-s1", "--seeds", "1", "--budget", "16",
             "--strategies", "model"])
    assert "no space has runs of the model strategy and of GA or BO to compare" in capsys.readouterr().out


def test_a_checkpoint_goes_on_where_a_run_stopped(se, tmp_path, capsys):
    args = ["--tables", "", "--synthetic", "synth-smooth-6k9-s1", "--seeds", "3", "--budget", "16",
            "--strategies", "ga,model"]
    def figures(out: str) -> list[list[str]]:  # the table without its wall-time column (s/run)
        return [line.split(" | ")[:6] + line.split(" | ")[7:] for line in out.splitlines() if line.startswith("|")]
    se.main(args)
    whole = figures(capsys.readouterr().out)
    checkpoint = tmp_path / "runs.jsonl"
    se.main([*args, "--checkpoint", str(checkpoint)])
    capsys.readouterr()
    settings, *runs = checkpoint.read_text().splitlines()
    assert json.loads(settings) == {"settings": {"budget": 16, "batch": 8, "options": "{}", "bo_sample": 0}}
    assert len(runs) == 6
    checkpoint.write_text("\n".join([settings, *runs[:2]]) + "\n")  # cut short after two runs
    se.main([*args, "--checkpoint", str(checkpoint)])
    printed = capsys.readouterr()
    assert "2 runs from" in printed.err and "4 to go" in printed.err
    assert figures(printed.out) == whole
    assert len(checkpoint.read_text().splitlines()) == 7
    se.main([*args, "--checkpoint", str(checkpoint)])  # nothing left to run
    assert "6 runs from" in capsys.readouterr().err and len(checkpoint.read_text().splitlines()) == 7


def test_a_checkpoint_of_fewer_seeds_gives_the_first_of_more(se, tmp_path, capsys):
    """A run is one seed's, whatever --seeds says: a checkpoint of 2 seeds (written with the seeds in its settings,
    as files before this were) holds the first 2 of 3."""
    checkpoint = tmp_path / "runs.jsonl"
    args = ["--tables", "", "--synthetic", "synth-smooth-6k9-s1", "--budget", "16", "--strategies", "ga",
            "--checkpoint", str(checkpoint)]
    se.main([*args, "--seeds", "2"])
    settings, *runs = checkpoint.read_text().splitlines()
    older = json.loads(settings)
    older["settings"]["seeds"] = 2
    checkpoint.write_text("\n".join([json.dumps(older), *runs]) + "\n")
    capsys.readouterr()
    se.main([*args, "--seeds", "3"])
    assert "2 runs from" in capsys.readouterr().err and len(checkpoint.read_text().splitlines()) == 4


def test_decided_runs_stop_early_with_the_full_runs_figures(se, tmp_path):
    """--decided stops a run once it reached 5 % and made AT measurements: reach and best@AT are the full run's,
    and a run that never reaches 5 % runs its whole budget. Two seeds hold both kinds: GA misses 5 % on the needle
    space (and on s1 with seed 1), model reaches it on both spaces, before and after AT."""
    def runs(*extra):
        out = tmp_path / f"runs{len(extra)}.json"
        se.main(["--tables", "", "--synthetic", "synth-smooth-6k9-s1,synth-needle-8k9-s14", "--seeds", "2",
                 "--budget", "160", "--strategies", "ga,model", "--json", str(out), *extra])
        return {(r["space"], r["strategy"], r["seed"]): r for r in json.loads(out.read_text())["runs"]}
    full, decided = runs(), runs("--decided")
    assert full.keys() == decided.keys()
    for key, r in full.items():
        assert (decided[key]["to_5pct"], decided[key]["best_at_100"]) == (r["to_5pct"], r["best_at_100"])
        if r["to_5pct"] is None:
            assert decided[key]["measured"] == 160
        else:
            assert 0 <= decided[key]["measured"] - max(100, r["to_5pct"]) < 8  # within the batch that decided it
    assert any(r["measured"] < 160 for r in decided.values())
    assert any(r["to_5pct"] is None for r in full.values())  # the whole-budget case was checked too


def test_a_checkpoint_of_other_settings_is_refused(se, tmp_path):
    checkpoint = tmp_path / "runs.jsonl"
    args = ["--tables", "", "--synthetic", "synth-smooth-6k9-s1", "--seeds", "1", "--budget", "16",
            "--strategies", "ga", "--checkpoint", str(checkpoint)]
    se.main(args)
    with pytest.raises(SystemExit, match="--checkpoint .*use another file or the same settings"):
        se.main([*args[:-4], "--budget", "24", *args[-4:]])


def test_the_bo_reference_scores_every_unmeasured_config_unless_told_a_sample(se, monkeypatch, capsys):
    """Kernel Tuner's BO scores every config of the space each round; --bo-sample N gives it the farm's
    bounded-cost sample instead."""
    from tuner_server.search import bayes_opt
    scored = []
    candidates = bayes_opt.BayesOpt._candidates
    monkeypatch.setattr(bayes_opt.BayesOpt, "_candidates", lambda self: scored.append(len(c := candidates(self))) or c)
    args = ["--tables", "", "--synthetic", "synth-smooth-6k9-s1", "--seeds", "1", "--budget", "32",
            "--strategies", "bo"]
    se.main(args)
    assert scored and min(scored) > 5900  # 6,000 configs, fewer than 32 measured
    scored.clear()
    se.main([*args, "--bo-sample", "300"])
    assert scored and set(scored) == {300}
    with pytest.raises(SystemExit):
        se.parse_args(["--bo-sample", "-1"])
    assert "--bo-sample -1: allowed 0-65536 (configs the BO reference scores per round; 0: every unmeasured config)" \
        in capsys.readouterr().err
    monkeypatch.setattr(se, "BO_MOST", 5000)  # the option's maximum: a space larger than it cannot be scored whole
    with pytest.raises(SystemExit, match=r"--bo-sample 0 scores every config, and the BO reference scores at most "
                                         r"5000 a round: synth-smooth-6k9-s1 \(6000\) hold more; give --bo-sample "
                                         r"1-5000"):
        se.main(args)
    assert "runs," not in capsys.readouterr().err  # refused before any run


def test_reused_bo_runs_must_have_scored_as_this_command_says(se, tmp_path, capsys):
    out = tmp_path / "runs.json"
    args = ["--tables", "", "--synthetic", "synth-smooth-6k9-s1", "--seeds", "1", "--budget", "16"]
    se.main([*args, "--strategies", "bo", "--bo-sample", "512", "--json", str(out)])
    with pytest.raises(SystemExit, match="a sample of 512 per round, this command's every unmeasured config; give "
                                         "--bo-sample 512"):
        se.main([*args, "--strategies", "", "--reuse", str(out)])
    se.main([*args, "--strategies", "", "--reuse", str(out), "--bo-sample", "512"])
    assert "| synth-smooth-6k9-s1 | 6000 | bo |" in capsys.readouterr().out


@pytest.mark.parametrize("flag, value, allowed", [
    ("--batch", "0", "1 or more"), ("--batch", "-1", "1 or more"), ("--budget", "0", "1 or more"),
    ("--budget", "-5", "1 or more"), ("--seeds", "0", "1 or more"), ("--jobs", "0", "1 or more"),
    ("--bo-sample", "-1", "0-65536"), ("--bo-sample", "70000", "0-65536"),
])
def test_a_count_outside_its_range_is_refused_before_any_run(se, capsys, flag, value, allowed):
    with pytest.raises(SystemExit) as stopped:
        se.main(["--tables", "", "--synthetic", "synth-smooth-6k9-s1", "--strategies", "ga", flag, value])
    assert stopped.value.code == 2  # argparse's usage error
    err = capsys.readouterr().err
    assert f"{flag} {value}: allowed {allowed} (" in err and "runs," not in err


@pytest.mark.parametrize("extra, message", [
    (["--strategies", "ga,foo,model,bar"], "--strategies: unknown 'foo', 'bar'; known: random, grid, model, ga, bo, "
                                           "model+transfer"),
    (["--options", "{kappa: 1}"], "--options '{kappa: 1}': not JSON (Expecting property name"),
    (["--options", "[1]"], "--options '[1]': give a JSON object of the model strategy's options"),
    (["--options", '{"kapa": 1}'], "--options: unknown option(s) 'kapa'; known: acquisition, anchors,"),
    (["--options", '{"epsilon": 2, "min_distance": "2"}'], "--options: option 'epsilon'=2 must be at most 1.0; option "
                                                           "'min_distance' must be int, got str '2'"),
])
def test_unknown_strategies_and_bad_options_are_refused_before_any_run(se, capsys, extra, message):
    with pytest.raises(SystemExit) as stopped:
        se.main(["--tables", "", "--synthetic", "synth-smooth-6k9-s1", "--seeds", "1", "--budget", "8",
                 "--strategies", "ga,model", *extra])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "runs," not in err


def test_options_for_no_selected_model_strategy_are_warned_about(se, capsys):
    se.parse_args(["--strategies", "ga,bo", "--options", '{"kappa": 2.0}'])
    assert "warning: --options are the model strategy's, and --strategies 'ga,bo' runs no model strategy: they are " \
           "not used" in capsys.readouterr().err
    for strategies, options in (("ga,model+transfer", '{"kappa": 2.0}'), ("ga,bo", "{}")):
        se.parse_args(["--strategies", strategies, "--options", options])
        assert "warning" not in capsys.readouterr().err
    assert se.strategy_names(" ga, bo,ga,,") == ["ga", "bo"]  # each once, in order


def test_any_synthetic_space_runs_by_its_name_and_a_wrong_name_is_refused(se, capsys):
    se.main(["--tables", "", "--synthetic", "synth-basins-2k9-s77", "--seeds", "1", "--budget", "16",
             "--strategies", "ga"])
    assert "| synth-basins-2k9-s77 | 2000 | ga |" in capsys.readouterr().out
    spaces = se.load_spaces(se.parse_args(["--tables", "", "--synthetic", "fresh,synth-basins-2k9-s77,fresh"]))
    assert list(spaces) == [*FRESH, "synth-basins-2k9-s77"]  # a group among names, each space once
    with pytest.raises(SystemExit, match="--synthetic: 'synth-basins-2k9' is not a synthetic space name; the form"):
        se.main(["--tables", "", "--synthetic", "synth-basins-2k9", "--seeds", "1", "--strategies", "ga"])


def test_groups_expand_to_their_sets_and_an_unknown_group_is_refused(se):
    assert [s.name for s in se.synthetic_specs("report")] == list(GROUPS["report"])
    assert [s.name for s in se.synthetic_specs("later, synth-basins-2k9-s77,later")] == [*LATER, "synth-basins-2k9-s77"]
    assert [(s.name, s.configs) for s in se.synthetic_specs("synth-basins-2500x9-s77")] == [
        ("synth-basins-2500x9-s77", 2500)]  # a size not whole thousands, exactly
    with pytest.raises(SystemExit, match="'newer' is not a synthetic space name.*groups: all, held-out, fresh, later, "
                                         "newest, late-gp-check, every, report, none"):
        se.synthetic_specs("later,newer")


def test_the_replicate_check_holds_each_strategy_against_the_first_half_of_the_references(se):
    table = se.synthetic_table(se.spec_from_name("synth-smooth-6k9-s1"))
    name = table.meta["name"]

    def runs(strategy, steps_by_seed):
        return [{"space": name, "strategy": strategy, "seed": seed, "to_5pct": steps, f"best_at_{report.AT}": 1.0,
                 "wall_s": 0.1} for seed, steps in enumerate(steps_by_seed)]
    rows = (runs("ga", [90] * 10) + runs("bo", [30, 31, 32, 33, 34, 40, 41, 42, 43, 44])
            + runs("model", [50] * 5 + [20] * 5))
    line = report.replicate_check(rows, {name: table}, 400)
    assert line.startswith("replicates (seeds 0-4 of GA and BO")
    # BO's later seeds (median 42) lose to its own first ones (32); the model's later seeds (20) win
    assert "ga at least as good on 0 of 1" in line and "bo at least as good on 0 of 1" in line
    assert "model at least as good on 1 of 1" in line
    assert report.replicate_check(rows[:8] + rows[10:18] + rows[20:28], {name: table}, 400) == ""  # 8 seeds: too few


def _runs(steps):
    return [{"to_5pct": s, f"best_at_{report.AT}": 1.0, "wall_s": 0.1} for s in steps]


def test_the_rank_test_tells_a_slower_strategy_from_a_replicate():
    fast = _runs([30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 30, 32])
    slow = _runs([40, 41, 42, 43, 44, 45, 46, 47, 48, 49, None, None])
    assert report.slower_p(slow, fast, 400) < 0.001 and report.slower_p(fast, slow, 400) > 0.99
    assert report.slower_p(fast, slow, 400, "less") < 0.001
    assert report.slower_p(fast, fast, 400) > 0.4  # a replicate of itself: no evidence either way
    assert report.slower_p(_runs([None] * 12), _runs([None] * 12), 400) == 1.0
    tested = report.rank_tests(slow, {"ga": fast, "bo": _runs([60] * 12)}, 400)
    assert tested["slower_than"] == "ga" and tested["slower_p"] < 0.001 and tested["faster_p"] > 0.99
    assert report.rank_tests(slow[:9], {"ga": fast}, 400) is None  # too few seeds to test


def test_holm_keeps_what_survives_the_correction_and_the_line_names_it():
    assert report.holm({"a": 0.001, "b": 0.03, "c": 0.04}) == ["a"]  # 0.03 > 0.05 / 2
    assert report.holm({"a": 0.001, "b": 0.02, "c": 0.04}) == ["a", "b", "c"]
    assert report.holm({"a": 0.001, "b": 0.02}) == ["a", "b"]
    assert report.holm({"a": 0.5}) == []
    tests = {"a": {"slower_p": 0.001, "slower_than": "bo", "faster_p": 1.0},
             "b": {"slower_p": 0.03, "slower_than": "ga", "faster_p": 0.9},
             "c": {"slower_p": 1.0, "slower_than": "bo", "faster_p": 0.001}}
    line = report.significance_line(tests)
    assert "slower than GA or BO at p < 0.05 on 2 of 3 spaces: a 0.001 (bo), b 0.030 (ga)" in line
    assert "after Holm's correction over the 3: a;" in line and line.endswith("faster than both at p < 0.05 on 1")
    assert report.significance_line({}) == ""


def test_a_table_where_nothing_ran_is_skipped_by_name_and_an_unreadable_one_is_refused(se, tmp_path, capsys):
    from tuner_server.replay import save_table

    failed = save_table(tmp_path / "allfail.json.gz", {"name": "allfail"},
                        [{"config": {"x": x}, "median_s": None, "status": "RUNTIME_ERROR"} for x in range(4)])
    save_table(tmp_path / "ran.json.gz", {"name": "ran"},
               [{"config": {"x": x}, "median_s": 1e-3 * (1 + x), "status": "OK"} for x in range(4)])
    spaces = se.load_spaces(se.parse_args(["--tables", str(tmp_path / "*.json.gz"), "--synthetic", ""]))
    assert list(spaces) == ["ran"]
    assert "skipped allfail: none of its 4 recorded configs ran" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="no table with a config that ran"):
        se.main(["--tables", str(failed), "--synthetic", "", "--seeds", "1", "--strategies", "ga"])
    (tmp_path / "broken.json").write_text("not json")
    with pytest.raises(SystemExit, match="--tables: .*broken.json: not JSON"):
        se.main(["--tables", str(tmp_path / "broken.json"), "--synthetic", "", "--seeds", "1", "--strategies", "ga"])
