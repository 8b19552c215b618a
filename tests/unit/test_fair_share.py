"""The fair share of agents across jobs (tuner_server/fair_share.py): pure planning, no database."""
from __future__ import annotations

from collections import Counter

from tuner_server.fair_share import FairShare, JobDemand, plan, share_weight


def test_weights_double_every_ten_points_of_priority():
    assert share_weight(0) == 1.0 and share_weight(10) == 2.0 and share_weight(-20) == 0.25


def test_equal_jobs_alternate_and_the_older_breaks_ties():
    jobs = [JobDemand("b", 0, held=0, queued=9, order=(2,)), JobDemand("a", 0, held=0, queued=9, order=(1,))]
    assert plan(jobs, 5) == ["a", "b", "a", "b", "a"]


def test_held_tasks_count_against_a_job():
    jobs = [JobDemand("busy", 0, held=5, queued=9, order=(1,)), JobDemand("new", 0, held=1, queued=9, order=(2,))]
    assert plan(jobs, 5) == ["new"] * 4 + ["busy"]


def test_shares_follow_the_weights_in_the_long_run():
    jobs = [JobDemand("p0", 0, 0, 10_000, (1,)), JobDemand("p10", 10, 0, 10_000, (2,)),
            JobDemand("p20", 20, 0, 10_000, (3,))]
    assert Counter(plan(jobs, 700)) == {"p0": 100, "p10": 200, "p20": 400}


def test_a_dry_queue_passes_its_share_on():
    jobs = [JobDemand("a", 0, 0, 1, (1,)), JobDemand("b", 0, 0, 0, (2,)), JobDemand("c", 0, 0, 2, (3,))]
    assert plan(jobs, 10) == ["a", "c", "c"]


def test_a_shared_memory_takes_turns_even_when_nothing_is_held():
    """One agent leasing one task at a time: nothing is ever held at a decision, yet the jobs alternate by their
    weights (a fresh plan each time would always pick the same job)."""
    share = FairShare()
    jobs = [JobDemand("old", 0, 0, 99, (1,)), JobDemand("new", 0, 0, 99, (2,)), JobDemand("p10", 10, 0, 99, (3,))]
    picks = [share.plan(jobs, 1)[0] for _ in range(40)]
    assert Counter(picks) == {"old": 10, "new": 10, "p10": 20}
    assert plan(jobs, 1) == plan(jobs, 1) == ["p10"]


def test_a_job_back_from_idle_starts_at_the_others_pass_plus_what_it_holds():
    share = FairShare()
    busy = JobDemand("busy", 0, 0, 99, (1,))
    share.plan([busy], 50)  # busy's pass is 50; 'idle' was not there and banks nothing
    back = JobDemand("back", 0, held=2, queued=99, order=(0,))
    assert share.plan([busy, back], 4) == ["busy", "busy", "back", "busy"]  # back enters at 50 + 2
