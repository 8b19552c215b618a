"""GET /v1/best?predict=true: a shape nobody tuned gets the config the device class's model ranks best, marked as a
prediction, on SQLite and PostgreSQL (fixtures from tests/db/conftest.py)."""
from __future__ import annotations

import random
import statistics

import pytest

import compiler_core as cc
from tests.cpu.rest_support import ADMIN, CPU_CLASS, READER, make_farm
from tests.db.conftest import db_engine, db_url, session_factory  # noqa: F401  (fixtures)
from tests.db.factories import CPU_TARGET, at, trial
from tunefarm_client.client import TunefarmError
from tuner_server.class_models import ClassModels
from tuner_server.db import session_scope

TRAINING_SHAPES = ((96, 64, 80), (128, 96, 64), (80, 128, 96), (64, 80, 128))
UNSEEN = {"M": 112, "N": 72, "K": 88, "dtype": "float32"}
UNSEEN_QUERY = "op=matmul&M=112&N=72&K=88&dtype=float32&device=" + CPU_CLASS


def landscape(config: dict, w: cc.Workload) -> float:
    """A runtime that depends on the config's knobs as the program sees them (what a model can learn): tiles near
    16-32 and the widest vectorized inner tile are fast, every other choice costs. A block larger than the problem is
    clipped to it by the template, so it is charged as the problem's size: two configs that build one program run
    alike."""
    clip = {"mc": w["M"], "nc": w["N"], "kc": w["K"]}
    cost = 1.0
    for name, value in config.items():
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            continue
        value = min(value, clip.get(name, value))
        cost += abs((value.bit_length() - 1) - (5 if name.lower().startswith(("tile", "b", "m", "n", "k")) else 2))
    return 1e-4 * cost


@pytest.fixture
def farm(session_factory):  # noqa: F811
    farm = make_farm(session_factory)
    with session_scope(session_factory) as s:  # a history on other shapes of the op, then the class model
        for i, (m, n, k) in enumerate(TRAINING_SHAPES):
            w = cc.make_workload("matmul", {"M": m, "N": n, "K": k})
            for j, config in enumerate(cc.get_space(w, CPU_TARGET).sample(random.Random(i), 24)):
                trial(s, CPU_CLASS, config, key=w.key, median=landscape(config, w), now=at(100 + 30 * i + j))
    keeper = ClassModels(session_factory, min_trials=16)
    assert CPU_CLASS in keeper.refresh().fitted
    return farm


def test_an_unseen_shape_gets_the_models_best_buildable_config_marked_predicted(farm):
    assert farm.get(f"/v1/best?{UNSEEN_QUERY}").status_code == 404  # without predict: no head, no answer
    response = farm.get(f"/v1/best?{UNSEEN_QUERY}&predict=true&candidates=96")
    assert response.status_code == 200, response.text
    answer = response.json()
    w = cc.make_workload("matmul", UNSEEN)
    assert answer["predicted"] is True and answer["workload"] == w.key and answer["device_class"] == CPU_CLASS
    assert cc.get_space(w, CPU_TARGET).is_valid(answer["config"])
    cc.generate(w, answer["config"], CPU_TARGET)
    seeded = len(farm.seeded["trials"])  # the 64^3 job's trials count too
    assert answer["model"]["version"] == 1 and answer["model"]["trained_on"] == 4 * 24 + seeded
    assert answer["model"]["workloads"] == 4 + 1
    assert answer["candidates_scored"] == 96 and answer["candidates_from_heads"] >= 1  # the seeded 64^3 head
    assert "median_s" not in answer and answer["enqueued_job"] is None
    # the model learned the landscape: its pick beats most of what a random draw of the space would give
    draws = [landscape(c, w) for c in cc.get_space(w, CPU_TARGET).sample(random.Random(7), 200)]
    assert landscape(answer["config"], w) <= statistics.quantiles(draws, n=4)[0], str(answer["config"])


def test_a_key_with_a_head_answers_the_head_even_with_predict(farm):
    head = farm.get("/v1/best?op=matmul&M=64&N=64&K=64&dtype=float32&device=" + CPU_CLASS + "&predict=true")
    assert head.status_code == 200 and head.json()["predicted"] is False and head.json()["version"] == 3


def test_enqueue_needs_admin_and_queues_one_job(farm):
    denied = farm.get(f"/v1/best?{UNSEEN_QUERY}&predict=true&enqueue=true")
    assert denied.status_code == 403 and "admin" in denied.json()["error"]
    first = farm.get(f"/v1/best?{UNSEEN_QUERY}&predict=true&enqueue=true&enqueue_trials=16", token=ADMIN).json()
    job = first["enqueued_job"]
    assert job["workload"] == cc.make_workload("matmul", UNSEEN).key and job["trial_budget"] == 16
    assert job["device_selector"] == CPU_CLASS and job["state"] == "queued"
    again = farm.get(f"/v1/best?{UNSEEN_QUERY}&predict=true&enqueue=true", token=ADMIN).json()
    assert again["enqueued_job"]["id"] == job["id"]  # the open job, not a second one
    assert farm.driver.wakes >= 1


@pytest.mark.parametrize("extra,status,says", [
    ("&predict=true&version=1", 422, "predict=true"),
    ("&enqueue=true", 422, "enqueue=true goes with predict=true"),
    ("&predict=true&candidates=0", 422, "candidates"),
    ("&predict=true&candidates=100000", 422, "candidates"),
])
def test_bad_predict_queries_are_422(farm, extra, status, says):
    response = farm.get(f"/v1/best?{UNSEEN_QUERY}{extra}")
    assert response.status_code == status and says in response.text


def test_a_class_without_a_model_is_a_404_that_says_so(session_factory):  # noqa: F811
    farm = make_farm(session_factory)  # three trials only: no class model
    jobs_before = farm.get("/v1/jobs", token=ADMIN).json()["total"]
    response = farm.get(f"/v1/best?{UNSEEN_QUERY}&predict=true")
    assert response.status_code == 404 and "no cost model" in response.json()["error"]
    assert response.json()["detail"] is None and farm.get("/v1/jobs", token=ADMIN).json()["total"] == jobs_before


def test_enqueue_queues_the_job_even_where_no_model_can_predict(session_factory):  # noqa: F811
    farm = make_farm(session_factory)  # no class model: the job is how the class gets one
    jobs_before = farm.get("/v1/jobs", token=ADMIN).json()["total"]
    response = farm.get(f"/v1/best?{UNSEEN_QUERY}&predict=true&enqueue=true&enqueue_trials=12", token=ADMIN)
    body = response.json()
    job = body["detail"]["enqueued_job"]
    assert response.status_code == 404 and "no cost model" in body["error"]
    assert f"tuning job {job['id']} (queued)" in body["error"] and job["trial_budget"] == 12
    assert job["workload"] == cc.make_workload("matmul", UNSEEN).key and job["device_selector"] == CPU_CLASS
    again = farm.get(f"/v1/best?{UNSEEN_QUERY}&predict=true&enqueue=true", token=ADMIN).json()
    assert again["detail"]["enqueued_job"]["id"] == job["id"]  # the open job, not a second one
    assert farm.get("/v1/jobs", token=ADMIN).json()["total"] == jobs_before + 1
    denied = farm.get(f"/v1/best?{UNSEEN_QUERY}&predict=true&enqueue=true", token=READER)
    assert denied.status_code == 403  # a reader queues nothing, model or not
    assert farm.driver.wakes >= 1


def test_the_cli_names_the_queued_job_where_no_model_can_predict(session_factory):  # noqa: F811
    from tunefarm_cli.commands import CliError
    from tunefarm_cli.parser import build_parser
    from tunefarm_cli.schedules import cmd_best
    from tunefarm_client import TunefarmClient

    farm = make_farm(session_factory)
    admin = TunefarmClient("http://testserver", ADMIN, http=farm.client)
    args = build_parser().parse_args(["best", "--op", "matmul", "--params", "M=112,N=72,K=88", "--device", CPU_CLASS,
                                      "--predict", "--enqueue"])
    with pytest.raises(CliError, match=r"no cost model.*tuning job (\S+) \(queued\).*`tunefarm follow \1`"):
        cmd_best(admin, args)
    args.enqueue = False  # without it nothing is queued, and the error is the server's as it is
    with pytest.raises(TunefarmError, match="no cost model") as raised:
        cmd_best(admin, args)
    assert "tuning job" not in str(raised.value)


def test_client_cli_and_loader_take_the_prediction(farm, tmp_path, capsys):
    from tunefarm_cli.parser import build_parser
    from tunefarm_cli.schedules import cmd_best
    from tunefarm_client import TunefarmClient, load_best

    reader = TunefarmClient("http://testserver", READER, http=farm.client)
    answer = reader.best("matmul", UNSEEN, CPU_CLASS, predict=True, candidates=64)
    assert answer.predicted and answer.candidates_scored == 64
    kernel = load_best(reader, "matmul", UNSEEN, CPU_CLASS, predict=True, cache_dir=tmp_path)
    assert kernel.schedule.predicted and kernel.kernel.config == kernel.schedule.config
    w = cc.make_workload("matmul", UNSEEN)
    inputs = cc.random_inputs(w, seed=0)
    assert cc.verify(w, kernel.run(*inputs), cc.expect(w, inputs)).ok  # a prediction that builds and computes
    args = build_parser().parse_args(["best", "--op", "matmul", "--params", "M=112,N=72,K=88", "--device", CPU_CLASS,
                                      "--predict"])
    assert cmd_best(reader, args) == 0
    assert "PREDICTED" in capsys.readouterr().out
