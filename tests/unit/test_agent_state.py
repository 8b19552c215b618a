"""The agent state machine, driven by hand: events in, instructions out. No network, processes or clocks."""
from __future__ import annotations

import pytest

from device_agent import events as ev
from device_agent.records import Status, Task, TrialResult
from device_agent.state import AgentState, StateConfig

HB, LEASE = 10.0, 60.0


class Driver:
    """Feeds events at a controlled time and keeps what came out."""

    def __init__(self, **config) -> None:
        self.state = AgentState(StateConfig(**config))
        self.now = 1000.0

    def at(self, now: float) -> list:
        self.now = now
        return self.state.handle(ev.Tick(now))

    def later(self, dt: float) -> list:
        return self.at(self.now + dt)

    def feed(self, *events) -> list:
        out = []
        for e in events:
            out += self.state.handle(e)
        return out

    def register(self) -> list:
        out = self.at(self.now) + self.feed(ev.Started())
        assert ev.Register() in out
        return self.feed(ev.Registered("agent-1", "tok", LEASE, HB, "cpu-x86_64-avx2-2c"))


def task(n: int, attempt: int = 1) -> Task:
    return Task(f"t{n}", attempt, "job", "matmul(M=32,N=32,K=32,dtype=float32)", "{}", None)


def result(n: int, status: Status = Status.OK, attempt: int = 1) -> TrialResult:
    return TrialResult(f"t{n}", attempt, status, (1e-3,), 1e-3, 1e-3, 1e-3)


def of(kind, out: list) -> list:
    return [i for i in out if isinstance(i, kind)]


def started(out: list) -> list[str]:
    return [i.task.task_id for i in of(ev.StartTask, out)]


def reported(out: list) -> list[str]:
    return [r.task_id for i in of(ev.Report, out) for r in i.results]


def sleep_of(out: list) -> float:
    sleeps = of(ev.Sleep, out)
    assert sleeps, out
    return sleeps[-1].seconds


# ---- registration, leasing, one task at a time -------------------------------------------------------------

def test_nothing_before_started_then_one_register_while_in_flight():
    d = Driver()
    assert d.at(1000.0) == []
    out = d.feed(ev.Started())
    assert of(ev.Register, out) == [ev.Register()]
    assert of(ev.Register, d.later(1.0)) == []  # still in flight: not sent twice


def test_registered_leases_a_batch_and_runs_one_task_at_a_time():
    d = Driver(lease_batch=4)
    out = d.register()
    assert of(ev.Lease, out) == [ev.Lease(4)]
    out = d.feed(ev.Leased((task(1), task(2), task(3))))
    assert started(out) == ["t1"]
    assert of(ev.Lease, out) == [ev.Lease(1)]  # tops the batch up: builds run ahead of measurement
    assert started(d.later(0.1)) == []  # t1 still running
    out = d.feed(ev.TaskDone(result(1)))
    assert started(out) == ["t2"]
    assert reported(out) == ["t1"]


def test_a_ready_task_starts_before_older_ones_still_building():
    d = Driver(lease_batch=8)
    d.register()
    d.feed(ev.TaskReady("t9"))  # not ours: ignored
    out = d.feed(ev.Leased((task(1),)))
    assert started(out) == ["t1"]  # nothing ready: the oldest, which waits for its own build
    d.feed(ev.Leased((task(2), task(3), task(4))))
    d.feed(ev.TaskReady("t4"), ev.TaskReady("t3"))
    assert started(d.feed(ev.TaskDone(result(1)))) == ["t3"]  # ready ones in lease order
    assert started(d.feed(ev.TaskDone(result(3)))) == ["t4"]
    assert started(d.feed(ev.TaskDone(result(4)))) == ["t2"]  # none ready: the oldest
    assert d.state.ready == set()


def test_with_a_ready_wait_nothing_starts_until_a_task_is_ready_or_the_wait_is_over():
    d = Driver(lease_batch=8, ready_wait_s=30.0)
    d.register()
    assert started(d.feed(ev.Leased((task(1), task(2))))) == []
    assert sleep_of(d.later(1.0)) <= 29.0  # wakes up for the wait's end
    assert started(d.feed(ev.TaskReady("t2"))) == ["t2"]
    assert started(d.feed(ev.TaskDone(result(2)))) == []  # t1 still building
    assert started(d.later(28.0)) == []
    assert started(d.later(1.5)) == ["t1"]  # its readiness never came: it runs (and waits for its build) anyway


def test_readiness_is_forgotten_with_the_task():
    d = Driver(lease_batch=8)
    d.register()
    d.feed(ev.Leased((task(1), task(2), task(3))))
    d.feed(ev.TaskReady("t2"), ev.TaskReady("t3"))
    d.feed(ev.HeartbeatAck(cancelled=("t2",)))
    assert d.state.ready == {"t3"}
    d.feed(ev.SessionExpired("lease"))
    assert d.state.ready == set() and not d.state.queued


def test_duplicate_leased_tasks_are_ignored():
    d = Driver(lease_batch=4)
    d.register()
    d.feed(ev.Leased((task(1), task(2))))
    d.feed(ev.Leased((task(2), task(1))))
    assert d.state.held == ("t1", "t2")


def test_nothing_to_lease_waits_for_retry_after():
    d = Driver()
    d.register()
    out = d.feed(ev.NothingToLease(3.0))
    assert of(ev.Lease, out) == []
    assert sleep_of(out) == pytest.approx(3.0)
    assert of(ev.Lease, d.later(2.9)) == []
    assert of(ev.Lease, d.later(0.2)) == [ev.Lease(4)]


def test_an_empty_lease_answer_polls_again_later():
    d = Driver(idle_poll_s=2.0)
    d.register()
    assert of(ev.Lease, d.feed(ev.Leased(()))) == []
    assert of(ev.Lease, d.later(2.0)) == [ev.Lease(4)]


def test_heartbeats_are_periodic_and_list_held_tasks_running_first():
    d = Driver()
    d.register()
    d.feed(ev.Leased((task(1), task(2))))
    assert of(ev.Heartbeat, d.later(HB - 0.1)) == []
    assert of(ev.Heartbeat, d.later(0.2)) == [ev.Heartbeat(("t1", "t2"))]
    d.feed(ev.HeartbeatAck())
    assert of(ev.Heartbeat, d.later(HB / 2)) == []
    assert of(ev.Heartbeat, d.later(HB / 2 + 0.1)) == [ev.Heartbeat(("t1", "t2"))]


def test_heartbeats_also_name_tasks_whose_results_await_acknowledgement():
    d = Driver()
    d.register()
    d.feed(ev.Leased((task(1), task(2))))
    d.feed(ev.TaskDone(result(1)))  # t1 measured while the server is away: its report fails
    d.feed(ev.ReportFailed("unavailable"))
    out = d.later(5.0)  # after the backoff, the heartbeat is the probe; the report waits for its answer
    assert of(ev.Heartbeat, out) == [ev.Heartbeat(("t2", "t1"))] and reported(out) == []
    assert d.state.held == ("t2",)
    assert reported(d.feed(ev.HeartbeatAck())) == ["t1"]
    d.feed(ev.Reported(accepted=("t1",)))
    assert of(ev.Heartbeat, d.later(HB)) == [ev.Heartbeat(("t2",))]


def test_sleep_is_the_time_to_the_next_timer():
    d = Driver(max_sleep_s=60.0)
    out = d.register()
    d.feed(ev.NothingToLease(4.0))
    out = d.later(1.0)
    assert sleep_of(out) == pytest.approx(3.0)  # lease retry before the heartbeat at 10 s


# ---- reporting: nothing measured is lost -------------------------------------------------------------------

def test_results_are_reported_and_forgotten_once_acknowledged():
    d = Driver()
    d.register()
    d.feed(ev.Leased((task(1),)))
    out = d.feed(ev.TaskDone(result(1)))
    assert reported(out) == ["t1"]
    d.feed(ev.Reported(accepted=("t1",)))
    assert d.state.unacked == {}
    assert reported(d.later(100.0)) == []


def test_duplicate_and_rejected_results_are_settled_too():
    d = Driver()
    d.register()
    d.feed(ev.Leased((task(1), task(2))))
    d.feed(ev.TaskDone(result(1)))
    d.feed(ev.Reported(duplicate=("t1",)))
    d.feed(ev.TaskDone(result(2)))
    d.feed(ev.Reported(rejected=("t2",)))
    assert d.state.unacked == {}


def test_results_the_server_did_not_mention_are_sent_again_later():
    d = Driver(report_retry_s=5.0)
    d.register()
    d.feed(ev.Leased((task(1),)))
    d.feed(ev.TaskDone(result(1)))
    assert reported(d.feed(ev.Reported())) == []
    assert reported(d.later(4.9)) == []
    assert reported(d.later(0.2)) == ["t1"]


def test_results_arriving_while_a_report_is_in_flight_go_in_the_next_one():
    d = Driver()
    d.register()
    d.feed(ev.Leased((task(1), task(2))))
    assert reported(d.feed(ev.TaskDone(result(1)))) == ["t1"]
    assert reported(d.feed(ev.TaskDone(result(2)))) == []  # t1's report still in flight
    assert reported(d.feed(ev.Reported(accepted=("t1",)))) == ["t2"]


def test_a_failed_report_keeps_results_and_resends_them_after_reconnecting():
    d = Driver()
    d.register()
    d.feed(ev.Leased((task(1), task(2))))
    d.feed(ev.TaskDone(result(1)))
    out = d.feed(ev.ReportFailed("unavailable"))
    assert of(ev.Report, out) == [] and of(ev.Lease, out) == []
    d.feed(ev.TaskDone(result(2)))  # measuring goes on while the server is away
    assert of(ev.Report, d.later(0.1)) == []  # backing off
    probe = d.later(1.0)  # past the first backoff (<= 0.5 s): probe with a heartbeat
    assert of(ev.Heartbeat, probe) and of(ev.Report, probe) == []
    out = d.feed(ev.HeartbeatAck())
    assert sorted(reported(out)) == ["t1", "t2"]


# ---- connection loss and backoff ---------------------------------------------------------------------------

def _backoff_delays(seed: int, failures: int) -> list[float]:
    d = Driver(seed=seed, backoff_base_s=0.5, backoff_cap_s=30.0)
    d.register()
    delays = []
    call = "lease"
    for _ in range(failures):
        d.feed(ev.ConnectionLost(call, "unavailable"))
        delays.append(d.state.retry_at - d.now)
        out = d.at(d.state.retry_at)
        assert of(ev.Heartbeat, out), "after the backoff the agent probes with a heartbeat"
        call = "heartbeat"
    return delays


def test_backoff_is_exponential_jittered_capped_and_deterministic():
    delays = _backoff_delays(seed=7, failures=10)
    for k, delay in enumerate(delays):
        nominal = min(30.0, 0.5 * 2 ** k)
        assert 0.5 * nominal <= delay <= nominal
    assert max(delays) <= 30.0
    assert delays[-1] >= 15.0  # reached the cap
    assert delays == _backoff_delays(seed=7, failures=10)
    assert delays != _backoff_delays(seed=8, failures=10)


def test_no_calls_during_backoff_and_success_resets_it():
    d = Driver()
    d.register()
    d.feed(ev.ConnectionLost("lease", "unavailable"))
    assert [i for i in d.later(0.2) if not isinstance(i, ev.Sleep)] == []
    d.at(d.state.retry_at)
    out = d.feed(ev.HeartbeatAck())
    assert d.state.failures == 0 and d.state.connected
    assert of(ev.Lease, out) == [ev.Lease(4)]


def test_several_failures_in_one_batch_count_as_one_backoff_step():
    d = Driver()
    d.register()
    d.feed(ev.ConnectionLost("lease"), ev.ReportFailed("x"), ev.ConnectionLost("heartbeat"))
    assert d.state.failures == 1


def test_register_failure_retries_with_backoff_and_a_fatal_one_exits():
    d = Driver()
    d.at(d.now)
    d.feed(ev.Started())
    out = d.feed(ev.RegisterFailed("unavailable"))
    assert of(ev.Register, out) == []
    assert of(ev.Register, d.at(d.state.retry_at)) == [ev.Register()]
    out = d.feed(ev.RegisterFailed("bad token", fatal=True))
    assert of(ev.Exit, out) == [ev.Exit(2, "registration refused: bad token")]
    assert d.later(1.0) == []  # exited: nothing more


# ---- re-registration and cancellation ----------------------------------------------------------------------

def test_reregister_drops_queued_tasks_keeps_the_running_one_and_its_result():
    d = Driver()
    d.register()
    d.feed(ev.Leased((task(1), task(2), task(3))))
    out = d.feed(ev.HeartbeatAck(reregister=True))
    assert of(ev.Register, out) == [ev.Register()]
    assert sorted(i.task_id for i in of(ev.CancelTask, out)) == ["t2", "t3"]
    assert of(ev.Report, d.feed(ev.TaskDone(result(1)))) == []  # no session yet: held back
    out = d.feed(ev.Registered("agent-2", "tok2", LEASE, HB))
    assert reported(out) == ["t1"]
    assert of(ev.Lease, out) == [ev.Lease(4)]


def test_session_expired_on_report_reregisters_and_resends():
    d = Driver()
    d.register()
    d.feed(ev.Leased((task(1),)))
    d.feed(ev.TaskDone(result(1)))
    out = d.feed(ev.SessionExpired("report"))
    assert of(ev.Register, out) == [ev.Register()]
    assert reported(d.feed(ev.Registered("agent-2", "tok2", LEASE, HB))) == ["t1"]


def test_cancelled_tasks_are_stopped_and_their_results_dropped():
    d = Driver()
    d.register()
    d.feed(ev.Leased((task(1), task(2), task(3))))
    out = d.feed(ev.HeartbeatAck(cancelled=("t1", "t3")))
    assert sorted(i.task_id for i in of(ev.CancelTask, out)) == ["t1", "t3"]
    assert d.state.held == ("t2",)
    out = d.feed(ev.TaskDone(result(1, Status.RUNTIME_ERROR)))  # the killed worker's answer
    assert reported(out) == [] and started(out) == ["t2"]


def test_a_queued_task_whose_lease_ran_out_is_dropped_unless_heartbeats_extend_it():
    d = Driver()
    d.register()
    d.feed(ev.Leased((task(1), task(2))))
    for _ in range(8):  # heartbeats acknowledged: leases extended past the original deadline
        d.later(HB)
        d.feed(ev.HeartbeatAck())
    assert d.state.held == ("t1", "t2")
    d.feed(ev.ConnectionLost("heartbeat"))
    out = d.later(LEASE + 1.0)  # no acknowledged heartbeat for longer than the lease
    assert of(ev.CancelTask, out) == [ev.CancelTask("t2")]
    assert d.state.held == ("t1",)  # the running task goes on; the server decides if its result counts


# ---- graceful shutdown -------------------------------------------------------------------------------------

def test_shutdown_finishes_the_running_task_reports_and_exits_cleanly():
    d = Driver(shutdown_grace_s=60.0)
    d.register()
    d.feed(ev.Leased((task(1), task(2))))
    out = d.feed(ev.ShutdownRequested())
    assert of(ev.CancelTask, out) == [ev.CancelTask("t2")]  # queued: its lease is left to lapse
    assert of(ev.Lease, d.later(30.0)) == [] and of(ev.Exit, d.later(1.0)) == []
    out = d.feed(ev.TaskDone(result(1)))
    assert reported(out) == ["t1"] and started(out) == [] and of(ev.Exit, out) == []
    out = d.feed(ev.Reported(accepted=("t1",)))
    assert of(ev.Exit, out) == [ev.Exit(0, "shut down")]


def test_shutdown_cancels_a_task_that_outlasts_the_grace_period():
    d = Driver(shutdown_grace_s=5.0)
    d.register()
    d.feed(ev.Leased((task(1),)))
    d.feed(ev.ShutdownRequested())
    assert of(ev.Exit, d.later(4.9)) == []
    out = d.later(0.2)
    assert of(ev.CancelTask, out) == [ev.CancelTask("t1")]
    assert of(ev.Exit, out) == [ev.Exit(0, "shut down")]


def test_shutdown_while_the_server_is_away_gives_up_after_the_grace_period():
    d = Driver(shutdown_grace_s=5.0)
    d.register()
    d.feed(ev.Leased((task(1),)))
    d.feed(ev.TaskDone(result(1)))
    d.feed(ev.ReportFailed("unavailable"))
    d.feed(ev.ShutdownRequested())
    assert of(ev.Exit, d.later(3.0)) == []
    out = d.later(3.0)
    assert of(ev.Exit, out) == [ev.Exit(1, "shut down with 1 result(s) not acknowledged")]


def test_a_second_shutdown_request_ends_the_grace_period():
    d = Driver(shutdown_grace_s=60.0)
    d.register()
    d.feed(ev.Leased((task(1),)))
    d.feed(ev.ShutdownRequested())
    out = d.feed(ev.ShutdownRequested())
    assert of(ev.CancelTask, out) == [ev.CancelTask("t1")] and of(ev.Exit, out)


def test_tasks_leased_after_shutdown_are_not_run():
    d = Driver()
    d.register()
    d.feed(ev.Leased((task(1),)))
    d.feed(ev.ShutdownRequested())  # t1 still running: not exited yet
    out = d.feed(ev.Leased((task(5),)))  # a lease answer that crossed the signal
    assert started(out) == [] and of(ev.CancelTask, out) == [ev.CancelTask("t5")]
    assert d.state.held == ("t1",)


def test_shutdown_before_registration_exits_at_once():
    d = Driver()
    d.at(d.now)
    d.feed(ev.Started())
    out = d.feed(ev.ShutdownRequested())
    assert of(ev.Exit, out) == [ev.Exit(0, "shut down")]
