"""REST API for best schedules (head, version, as_of, source, history, diff, rollback, pin) and export/import,
through FastAPI's TestClient, on SQLite and PostgreSQL (fixtures from tests/db/conftest.py)."""
from __future__ import annotations

import json
from urllib.parse import quote

import pytest

import compiler_core as cc
from tests.cpu.rest_support import CPU_CLASS, MATMUL, MATMUL_KEY, MATMUL_QUERY, READER, make_farm
from tests.db.conftest import db_engine, db_url, session_factory  # noqa: F401  (fixtures)
from tests.db.factories import agent, at, cpu_fingerprint
from tuner_server.db import session_scope


@pytest.fixture
def farm(session_factory):  # noqa: F811
    return make_farm(session_factory)


def _key(**extra) -> dict:
    return {"op": "matmul", "params": MATMUL, "device": CPU_CLASS, **extra}


def test_head_has_config_runtime_throughput_and_target(farm):
    response = farm.get(f"/v1/best?{MATMUL_QUERY}")
    assert response.status_code == 200, response.text
    best = response.json()
    assert (best["workload"], best["version"], best["head_version"], best["reason"]) == (MATMUL_KEY, 3, 3, "improved")
    assert best["trial_id"] == farm.seeded["trials"][2] and best["config"] == farm.seeded["configs"][2]
    assert (best["median_s"], best["ci_low_s"], best["ci_high_s"]) == pytest.approx((1e-4, 0.99e-4, 1.01e-4))
    assert best["gflops"] == pytest.approx(2 * 64**3 / 1e-4 / 1e9)
    assert best["codegen_version"] == cc.codegen_version()
    assert (best["pinned"], best["head_pinned"], best["source"]) == (False, False, None)
    assert (best["target"]["kind"], best["target"]["cores"], best["target"]["vector_bytes"]) == ("c", 2, 32)


def test_version_as_of_and_source(farm):
    first = farm.get(f"/v1/best?{MATMUL_QUERY}&version=1").json()
    assert (first["version"], first["head_version"], first["median_s"]) == (1, 3, 3e-4)
    then = farm.get(f"/v1/best?{MATMUL_QUERY}&as_of={quote(at(25).isoformat())}").json()  # '+' as %2B
    assert then["version"] == 2
    zulu = farm.get(f"/v1/best?{MATMUL_QUERY}&as_of=2026-01-01T12:00:15Z").json()
    assert zulu["version"] == 1
    with_source = farm.get(f"/v1/best?{MATMUL_QUERY}&include_source=true").json()
    expected = cc.generate(cc.parse_key(MATMUL_KEY), with_source["config"], cc.Target(**with_source["target"]))
    assert with_source["source"] == expected and "#include" in expected


def test_history_and_diff(farm):
    history = farm.get(f"/v1/best/history?{MATMUL_QUERY}&limit=2").json()
    assert history["total"] == 3 and [v["version"] for v in history["items"]] == [3, 2]
    assert history["items"][1]["parent_version"] == 1
    diff = farm.get(f"/v1/best/diff?{MATMUL_QUERY}&v1=1&v2=3").json()
    assert diff["median_ratio"] == pytest.approx(1 / 3)
    configs = farm.seeded["configs"]
    assert diff["changed"] == {k: [configs[0][k], configs[2][k]] for k in configs[0] if configs[0][k] != configs[2][k]}
    other = "op=softmax&rows=8&cols=8&device=" + CPU_CLASS
    assert farm.get(f"/v1/best/history?{other}").json()["total"] == 0  # never tuned: an empty page


def test_rollback_and_pin_append_versions(farm):
    rolled = farm.post("/v1/best/rollback", json=_key(to_version=1, message="v3 regressed in production"))
    assert rolled.status_code == 201, rolled.text
    assert (rolled.json()["version"], rolled.json()["reason"], rolled.json()["author"]) == (4, "rollback", "rest:admin")
    assert rolled.json()["trial_id"] == farm.seeded["trials"][0]
    pinned = farm.post("/v1/best/pin", json=_key(version=3))
    assert (pinned.status_code, pinned.json()["version"], pinned.json()["pinned"]) == (201, 5, True)
    head = farm.get(f"/v1/best?{MATMUL_QUERY}").json()
    assert (head["version"], head["head_pinned"], head["trial_id"]) == (5, True, farm.seeded["trials"][2])
    refused = farm.post("/v1/best/rollback", json=_key(to_version=2))
    assert refused.status_code == 409 and "pinned" in refused.json()["error"]
    unpinned = farm.post("/v1/best/pin", json=_key(version=None))
    assert (unpinned.status_code, unpinned.json()["version"], unpinned.json()["pinned"]) == (201, 6, False)
    assert farm.get(f"/v1/best/history?{MATMUL_QUERY}").json()["total"] == 6


def test_pinning_the_pinned_schedule_again_is_a_409_that_appends_nothing(farm):
    assert farm.post("/v1/best/pin", json=_key(version=3)).json()["version"] == 4
    before = farm.rows()
    for again in (_key(version=3), _key(version=4), _key(version=None, trial_id=farm.seeded["trials"][2])):
        refused = farm.post("/v1/best/pin", json=again)
        assert refused.status_code == 409 and "is already the pinned head (version 4" in refused.json()["error"], \
            refused.text
    assert farm.rows() == before
    assert farm.post("/v1/best/pin", json=_key(version=1)).json()["version"] == 5  # another schedule: a new pin


def test_every_best_route_resolves_a_device_kind_to_the_farms_class(farm):
    by_kind = MATMUL_QUERY.replace(CPU_CLASS, "cpu")
    best = farm.get(f"/v1/best?{by_kind}").json()
    assert (best["device_class"], best["version"]) == (CPU_CLASS, 3)
    assert farm.get(f"/v1/best/history?{by_kind}").json()["total"] == 3
    assert farm.get(f"/v1/best/diff?{by_kind}&v1=1&v2=3").json()["device_class"] == CPU_CLASS
    assert [k["device_class"] for k in farm.get("/v1/best/keys?device=cpu").json()["items"]] == [CPU_CLASS]
    rolled = farm.post("/v1/best/rollback", json={**_key(to_version=1), "device": "cpu"})
    assert (rolled.status_code, rolled.json()["device_class"], rolled.json()["version"]) == (201, CPU_CLASS, 4)
    pinned = farm.post("/v1/best/pin", json={**_key(version=2), "device": "cpu"})
    assert (pinned.status_code, pinned.json()["device_class"], pinned.json()["version"]) == (201, CPU_CLASS, 5)
    with session_scope(farm.factory) as session:  # a second CPU class, online too: 'cpu' names neither
        agent(session, "a2", fingerprint=cpu_fingerprint(cores=4))
    for response in (farm.get(f"/v1/best?{by_kind}"), farm.get("/v1/best/keys?device=cpu"),
                     farm.post("/v1/best/pin", json={**_key(version=None), "device": "cpu"})):
        assert response.status_code == 422, response.text
        error = response.json()
        assert "device=cpu: device 'cpu' is ambiguous on this farm: 2 cpu classes, 2 online" in error["error"]
        assert error["detail"]["known_device_classes"] == [CPU_CLASS, "cpu-x86_64-avx2-4c"]


def test_a_kept_head_answer_follows_every_new_version(farm):
    url = f"/v1/best?{MATMUL_QUERY}"
    first, again = farm.get(url), farm.get(url)
    assert again.content == first.content and first.json()["version"] == 3  # the second one is the kept answer
    assert farm.get(url + "&include_source=true").json()["source"] and farm.get(url).json()["source"] is None
    assert farm.post("/v1/best/pin", json=_key(version=1)).status_code == 201
    pinned = farm.get(url).json()
    assert (pinned["version"], pinned["head_pinned"], pinned["trial_id"]) == (4, True, farm.seeded["trials"][0])
    assert farm.get(url + "&include_source=true").json()["config"] == farm.seeded["configs"][0]


def test_a_kept_answer_is_only_sent_to_a_valid_token_asking_for_the_head(farm):
    url = f"/v1/best?{MATMUL_QUERY}"
    kept = farm.get(url)
    assert kept.status_code == 200 and farm.get(url).content == kept.content
    assert farm.get(url, token="tf_not_a_token_of_this_farm").status_code == 401
    assert farm.get(url, token=None).status_code == 401
    assert farm.get(url + "&version=1").json()["version"] == 1
    assert farm.get(url + "&M=64").status_code == 422  # a param twice: the route says so
    assert farm.get(url + "&include_source=1").json()["source"]  # another spelling: the route parses it


def test_a_revoked_token_gets_no_kept_answer(farm):
    url = f"/v1/best?{MATMUL_QUERY}"
    made = farm.post("/v1/tokens", json={"name": "reader-to-revoke", "scope": "read"}).json()
    first, kept = farm.get(url, token=made["token"]), farm.get(url, token=made["token"])
    assert first.status_code == kept.status_code == 200 and kept.content == first.content
    assert farm.delete(f"/v1/tokens/{made['id']}").status_code == 200
    assert farm.get(url, token=made["token"]).status_code == 401
    assert farm.get(url).content == first.content  # the kept answer itself stays good for valid tokens


def test_export_streams_json_lines_and_import_merges(farm):
    exported = farm.get(f"/v1/export?workload={MATMUL_KEY}")
    assert exported.status_code == 200 and exported.headers["content-type"].startswith("application/x-ndjson")
    records = [json.loads(line) for line in exported.text.splitlines()]
    kinds = [r["type"] for r in records]
    assert kinds[0] == "header" and kinds.count("trial") == 3 and kinds.count("schedule_version") == 3
    assert farm.get("/v1/export?op=softmax").text.count('"type":"trial"') == 0
    before = farm.rows()
    merged = farm.post("/v1/import", content=exported.content, headers={"Content-Type": "application/x-ndjson"})
    assert merged.status_code == 200, merged.text
    assert merged.json() == {"workloads": 0, "devices": 0, "trials": 0, "duplicate_trials": 3, "versions": 0}
    assert farm.rows() == before


def test_import_adds_a_faster_foreign_head(farm):
    lines = farm.get(f"/v1/export?workload={MATMUL_KEY}").text.splitlines()
    faster = [json.loads(line) for line in lines]
    for record in faster:
        if record["type"] == "trial":
            record.update(median_s=record["median_s"] / 10, ci_low_s=record["ci_low_s"] / 10,
                          ci_high_s=record["ci_high_s"] / 10, samples=[x / 10 for x in record["samples"]],
                          created_at=at(100).isoformat())
    body = "\n".join(json.dumps(r) for r in faster).encode()
    counts = farm.post("/v1/import", content=body).json()
    assert (counts["trials"], counts["versions"]) == (3, 1)
    head = farm.get(f"/v1/best?{MATMUL_QUERY}").json()
    assert (head["version"], head["reason"], head["median_s"]) == (4, "import", pytest.approx(1e-5))


CUDA_CLASS = "cuda-nvidia-h100-80gb-hbm3-sm90"
H100_FINGERPRINT = {"kind": "cuda", "model": "NVIDIA H100 80GB HBM3", "arch": "sm_90", "compute_units": 132}
TRIAL_ID = "0f8fad5b-d9cb-469f-a165-70867728950e"  # a trial's id in the exporting farm


def _cuda_import(fingerprint: dict | None = H100_FINGERPRINT, device_after: bool = False, **trial_changes) -> bytes:
    """A softmax head of CUDA_CLASS (a class the seeded farm does not know) as another farm's export: its device line
    (`fingerprint`; None: no device line, `device_after`: after the trial), the trial, the version."""
    key = "softmax(rows=64,cols=1000,dtype=float32)"
    config = cc.default_config(cc.parse_key(key), cc.cuda_target("sm_90"))
    trial = {"type": "trial", "id": TRIAL_ID, "workload": key, "device_class": CUDA_CLASS, "config": config,
             "codegen_version": cc.codegen_version(), "status": "OK", "samples": [1e-5], "median_s": 1e-5,
             "created_at": at(5).isoformat(), **trial_changes}
    version = {"type": "schedule_version", "workload": key, "device_class": CUDA_CLASS, "version": 1, "trial": TRIAL_ID,
               "reason": "improved", "created_at": at(5).isoformat()}
    device = [] if fingerprint is None else [{"type": "device", "device_class": CUDA_CLASS, "kind": "cuda",
                                              "fingerprint": fingerprint}]
    records = [trial, *device, version] if device_after else [*device, trial, version]
    return "\n".join(json.dumps(r) for r in records).encode()


def test_cuda_source_for_an_imported_cuda_head(farm):
    query = f"/v1/best?op=softmax&rows=64&cols=1000&device={CUDA_CLASS}"
    assert farm.post("/v1/import", content=_cuda_import()).json()["versions"] == 1  # a new class, with its device line
    best = farm.get(query).json()  # a class known only from the import: served, its target unknown here
    assert best["target"] is None and best["reason"] == "import"
    refused = farm.get(query + "&include_source=true")
    assert refused.status_code == 422 and "registered its compiler target" in refused.json()["error"]
    h100 = cc.cuda_target("sm_90a", sm_count=132).to_dict()  # the device line of an export from an H100 farm
    device = {"type": "device", "device_class": CUDA_CLASS, "kind": "cuda", "fingerprint": {"target": h100}}
    imported = farm.post("/v1/import", content=json.dumps(device).encode())
    assert imported.status_code == 200, imported.text
    best = farm.get(query + "&include_source=true").json()
    assert (best["target"]["kind"], best["target"]["arch"], best["target"]["sm_count"]) == ("cuda", "sm_90a", 132)
    assert "__global__" in best["source"] and best["gbps"] == pytest.approx(2 * 64 * 1000 * 4 / 1e-5 / 1e9)


@pytest.mark.parametrize("body, words", [
    (_cuda_import(None), [f"line 1: trial '{TRIAL_ID}' is of device class {CUDA_CLASS}, which this farm does not know",
                          "a `device` line for", "must precede trials of a class the farm does not know"]),
    (_cuda_import(device_after=True), ["line 1: trial", "must precede trials"]),
    (_cuda_import({}), [f"line 1: device {CUDA_CLASS} is new to this farm, and its fingerprint does not describe it",
                        "missing field 'kind'"]),
    (_cuda_import({**H100_FINGERPRINT, "arch": "sm_80"}), ["line 1: device",
                                                          "describes cuda-nvidia-h100-80gb-hbm3-sm80, not"]),
    (_cuda_import(id="t1"), ["line 2: trial: id 't1' is not a UUID"]),
    (_cuda_import(id=TRIAL_ID.upper()), ["line 2: trial: id", "is not a UUID"]),
    (_cuda_import(threads=4), ["line 2: trial: field 'threads' is not one of type, id, workload"]),
    (b'{"type": "header", "format": "tunefarm-export", "format_version": 1}\n{"type": "trial", "id": ',
     ["line 2: not JSON (Expecting value at column 25)"]),
], ids=["no device line", "device line after", "empty fingerprint", "another class's fingerprint",
      "id not a UUID", "id not canonical", "unknown field", "not JSON"])
def test_an_import_that_would_add_a_class_without_its_fingerprint_or_a_malformed_line_is_refused(farm, body, words):
    before = farm.rows()
    response = farm.post("/v1/import", content=body)
    assert response.status_code == 422, response.text
    for word in words:
        assert word in response.json()["error"], (word, response.json())
    assert farm.rows() == before
    assert farm.get("/v1/devices?kind=cuda").json()["total"] == 0


BAD = [
    ("get", f"/v1/best?op=matmul&M=64&N=64&K=64&device={CPU_CLASS}&M=65", None, 422, ["'M' given more than once"]),
    ("get", f"/v1/best?op=matmul&M=64&N=64&device={CPU_CLASS}", None, 422, ["missing param K"]),
    ("get", f"/v1/best?op=matmul&M=64&N=64&K=64&Z=3&device={CPU_CLASS}", None, 422, ["query.Z", "unknown query"]),
    ("get", f"/v1/best?op=matmul&M=x&N=64&K=64&device={CPU_CLASS}", None, 422, ["query.M", "valid integer"]),
    ("get", f"/v1/best?op=matmul&M=0&N=64&K=64&device={CPU_CLASS}", None, 422, ["query.M",
                                                                                "greater than or equal to 1"]),
    ("get", f"/v1/best?op=softmax&rows=8&cols=8&M=8&device={CPU_CLASS}", None, 422, ["unknown param(s) M"]),
    ("get", f"/v1/best?op=nope&device={CPU_CLASS}", None, 422, ["query.op", "'matmul'"]),
    ("get", "/v1/best?op=matmul&M=64&N=64&K=64&device=gpu0", None, 422, ["query.device", "(cpu|cuda)-"]),
    ("get", "/v1/best?op=matmul&M=64&N=64&K=64&device=cpu-arm-neon-4c", None, 422, ["unknown device class",
                                                                                    CPU_CLASS]),
    ("get", "/v1/best?op=matmul&M=64&N=64&K=64", None, 422, ["query.device", "Field required"]),
    ("get", "/v1/best?op=matmul&M=64&N=64&K=64&device=cuda", None, 422, ["device=cuda: no cuda device class on this "
                                                                         "farm yet", CPU_CLASS]),
    ("post", "/v1/best/pin", {**_key(version=1), "device": "cuda"}, 422, ["no cuda device class", CPU_CLASS]),
    ("get", f"/v1/best/history?{MATMUL_QUERY}&offset=-1", None, 422, ["query.offset: -1 is out of range: an integer "
                                                                      "from 0 to 2147483647"]),
    ("get", f"/v1/best?{MATMUL_QUERY.replace('M=64', 'M=-64')}", None, 422, ["query.M: -64 is out of range: an "
                                                                            "integer from 1 to 1048576"]),
    ("get", f"/v1/best?{MATMUL_QUERY.replace('M=64', 'M=064')}", None, 422, ["query.M: '064' is not a valid integer: "
                                                                            "an integer from 1 to 1048576",
                                                                            "without '+', spaces or a leading zero"]),
    ("get", f"/v1/best?{MATMUL_QUERY.replace('M=64', 'M=%2B64')}", None, 422, ["query.M: '+64' is not a valid"]),
    *[("post", "/v1/best/pin", {**_key(version=1), "params": {**MATMUL, "M": text}}, 422,
       [f"body.params.M: {text!r} is a string; M is an integer from 1 to 1048576, sent as a JSON number"])
      for text in ("64", " 64", "+64", "064")],
    ("post", "/v1/best/rollback", {**_key(to_version=1), "params": {**MATMUL, "K": "64"}}, 422,
     ["body.params.K: '64' is a string"]),
    ("get", "/v1/best?op=matmul&M=64&N=64&K=32&device=" + CPU_CLASS, None, 404, ["no best schedule for"]),
    ("get", f"/v1/best?{MATMUL_QUERY}&version=9", None, 404, ["no version 9"]),
    ("get", f"/v1/best?{MATMUL_QUERY}&version=1&as_of=2026-01-01T00:00:00Z", None, 422, ["not both"]),
    ("get", f"/v1/best?{MATMUL_QUERY}&as_of=yesterday", None, 422, ["not an ISO 8601 time"]),
    ("get", f"/v1/best?{MATMUL_QUERY}&as_of=2026-01-01T00:00:00", None, 422, ["no time zone"]),
    ("get", f"/v1/best?{MATMUL_QUERY}&as_of=2026-01-01T00:00:00+00:00", None, 422, ["%2B"]),
    ("get", f"/v1/best?{MATMUL_QUERY}&as_of=2026-01-01T00:00:00%2B25:00", None, 422,
     ["as_of='2026-01-01T00:00:00+25:00' has a zone offset +25:00 out of range: an offset is within -23:59 .. +23:59"]),
    ("get", f"/v1/best?{MATMUL_QUERY}&as_of=2026-13-01T00:00:00Z", None, 422,
     ["is not an ISO 8601 time (month must be in 1..12): write it like 2026-01-01T12:00:00Z"]),
    ("get", f"/v1/best?{MATMUL_QUERY}&as_of=2020-01-01T00:00:00Z", None, 404, ["as of 2020"]),
    ("get", f"/v1/best/diff?{MATMUL_QUERY}&v1=1&v2=7", None, 404, ["no version 7"]),
    ("get", f"/v1/best/history?{MATMUL_QUERY.replace(CPU_CLASS, 'cpu-arm-neon-4c')}", None, 422, ["known: "]),
    ("post", "/v1/best/rollback", _key(to_version=3), 409, ["already the head"]),
    ("post", "/v1/best/rollback", _key(to_version=99), 404, ["no version 99"]),
    ("post", "/v1/best/rollback", _key(to_version=0), 422, ["body.to_version"]),
    ("post", "/v1/best/rollback", {**_key(to_version=1), "device": "cuda-x-sm90"}, 422, ["unknown device class"]),
    ("post", "/v1/best/pin", _key(version=None), 409, ["is not pinned"]),
    ("post", "/v1/best/pin", _key(), 422, ["body.version", "Field required"]),
    ("post", "/v1/best/pin", {**_key(version=1), "params": {"M": 64}}, 422, ["missing param N"]),
    ("post", "/v1/best/pin", {**_key(version=1), "op": "softmax", "params": {"rows": 4, "cols": 4}}, 404,
     ["no schedule versions"]),
    ("post", "/v1/import", b"not json\n", 422, ["line 1: not JSON (Expecting value at column 1)"]),
    ("post", "/v1/import", b'{"type": "trial", "id": "t"}\n', 422, ["missing field"]),
    ("post", "/v1/import", b"\xff\xfe", 400, ["not UTF-8"]),
    ("post", "/v1/import", b"\n\n", 422, ["empty import"]),
    ("get", "/v1/export?op=nope", None, 422, ["query.op"]),
    ("get", "/v1/export?workload=matmul(", None, 422, ["query.workload"]),
    ("get", "/v1/export?workload=matmul(M=1)", None, 422, ["bad workload", "missing param N"]),
]


@pytest.mark.parametrize(("method", "path", "body", "status", "words"), BAD, ids=[f"{i}-{b[3]}" for i, b in
                                                                                  enumerate(BAD)])
def test_bad_requests_say_what_is_wrong_and_change_nothing(farm, method, path, body, status, words):
    before = farm.rows()
    if method == "get":
        response = farm.get(path)
    elif isinstance(body, bytes):
        response = farm.post(path, content=body)
    else:
        response = farm.post(path, json=body)
    assert response.status_code == status, response.text
    error = response.json()
    for word in words:
        assert word in error["error"] or word in str(error["detail"]), (word, error)
    assert farm.rows() == before


def test_writes_need_admin(farm):
    before = farm.rows()
    assert farm.post("/v1/best/rollback", token=READER, json=_key(to_version=1)).status_code == 403
    assert farm.post("/v1/import", token=READER, content=b"{}").status_code == 403
    assert farm.post("/v1/best/pin", token=None, json=_key(version=1)).status_code == 401
    assert farm.rows() == before
