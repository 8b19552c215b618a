"""TunefarmClient: one typed method per REST endpoint (httpx), answers validated with the API's own schemas.

Any 3xx (redirects are not followed: every path the client calls is the API's own, so one means a malformed path such
as an empty id), 4xx or 5xx, or a server that cannot be reached, raises TunefarmError carrying the server's message,
after the tries that `RetryPolicy` (tunefarm_client/retrying.py) allows for a farm that is briefly unable to answer.
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from tunefarm_client.retrying import RetryPolicy
from tuner_server.api.device_kinds import DEVICE_KINDS, DeviceChoiceError, choose_class
from tuner_server.api.prediction import PredictedBest
from tuner_server.api.schemas import (
    BestPublic,
    ComparisonPublic,
    DevicePublic,
    DiffPublic,
    Health,
    ImportResult,
    JobPublic,
    OpsPage,
    Page,
    TokenCreated,
    TokenPublic,
    TrialPublic,
    VersionPublic,
)

M = TypeVar("M", bound=BaseModel)
FINAL_JOB_STATES = ("done", "failed", "cancelled")


class TunefarmError(Exception):
    """A request failed: `status` (None when the server was not reached), the server's `error` and `detail`."""

    def __init__(self, message: str, *, status: int | None = None, error: str | None = None, detail: Any = None,
                 method: str = "", url: str = ""):
        super().__init__(message)
        self.status, self.error, self.detail, self.method, self.url = status, error, detail, method, url

    @classmethod
    def from_response(cls, response: httpx.Response) -> TunefarmError:
        """The error a response of status 300 or more is: its body's `error` and `detail` (a redirect's, where it
        was sent, since the client follows none: every path it calls is the API's own)."""
        if 300 <= response.status_code < 400:
            where = f" to {response.headers['location']}" if "location" in response.headers else ""
            error = (f"unexpected redirect ({response.status_code} {response.reason_phrase}{where}): no API route "
                     "answers this path (an empty id?)")
            request = response.request
            return cls(f"{request.method} {request.url.path} -> {error}", status=response.status_code, error=error,
                       method=request.method, url=str(request.url))
        try:
            body = response.json()
            error, detail = (body.get("error"), body.get("detail")) if isinstance(body, dict) else (None, body)
        except ValueError:
            error, detail = None, None
        error = error or response.text[:300] or response.reason_phrase
        request = response.request
        message = f"{request.method} {request.url.path} -> {response.status_code}: {error}"
        if detail:
            message += f" (detail: {json.dumps(detail, default=str)[:500]})"
        return cls(message, status=response.status_code, error=error, detail=detail, method=request.method,
                   url=str(request.url))


# The query parameters /v1/best, /v1/best/history and /v1/best/diff take beside the op's params: a param of that
# name would be read as one of them (a "predict" param would ask for a prediction), so none may be one.
CONTROLS = frozenset({"op", "device", "version", "as_of", "include_source", "predict", "candidates", "enqueue",
                      "enqueue_trials", "limit", "offset", "v1", "v2"})


def _query(op: str, params: Mapping[str, Any], device: str, **extra: Any) -> dict[str, Any]:
    """/v1/best* take the op's params as query parameters beside op and device; None values are left out."""
    clash = sorted(CONTROLS.intersection(params))
    if clash:
        raise ValueError(f"params {', '.join(map(repr, clash))}: no op has such a parameter; these are the request's "
                         "own options (pass them as keyword arguments, e.g. predict=True)")
    query = {**params, "op": op, "device": device}
    query.update({k: v for k, v in extra.items() if v is not None})
    return query


class TunefarmClient:
    """`TunefarmClient("http://127.0.0.1:8080", token)`; `http=` takes a ready httpx.Client (e.g. FastAPI's
    TestClient); `retry=`: when to try a request again (`retrying.NO_RETRY`: never). Use as a context manager, or
    call close()."""

    def __init__(self, base_url: str, token: str | None = None, *, timeout: float = 30.0,
                 http: httpx.Client | None = None, retry: RetryPolicy | None = None):
        self.base_url = base_url.rstrip("/")
        self.retry = retry if retry is not None else RetryPolicy()
        self._owned = http is None
        self._http = http if http is not None else httpx.Client(timeout=timeout)
        self._auth = {"Authorization": f"Bearer {token}"} if token else {}

    def close(self) -> None:
        if self._owned:
            self._http.close()

    def __enter__(self) -> TunefarmClient:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # ---- plumbing ------------------------------------------------------------------------------------------------
    def _request(self, method: str, path: str, **kw: Any) -> httpx.Response:
        url = self.base_url + path
        headers = {**self._auth, **kw.pop("headers", {})}
        tries, waited = 0, 0.0
        while True:
            tries += 1
            try:
                response = self._http.request(method, url, headers=headers, **kw)
            except httpx.HTTPError as exc:
                error: TunefarmError = TunefarmError(f"{method} {url}: cannot reach the tunefarm server: {exc}",
                                                     method=method, url=url)
                error.__cause__, status, retry_after = exc, None, None
            else:
                if response.status_code < 300:  # a 3xx is no answer: redirects are not followed (from_response)
                    return response
                error, status = TunefarmError.from_response(response), response.status_code
                retry_after = response.headers.get("retry-after")
            wait = self.retry.wait_s(tries, retry_after, waited) if self.retry.should_retry(method, status) else None
            if wait is None:
                raise error
            self.retry.sleep(wait)
            waited += wait

    def _get(self, model: type[M], path: str, params: Mapping[str, Any] | None = None) -> M:
        query = {k: v for k, v in (params or {}).items() if v is not None}
        return model.model_validate(self._request("GET", path, params=query).json())

    def _send(self, model: type[M], method: str, path: str, body: Mapping[str, Any] | None = None) -> M:
        return model.model_validate(self._request(method, path, json=body).json())

    # ---- farm ----------------------------------------------------------------------------------------------------
    def health(self) -> Health:
        return self._get(Health, "/health")

    def ops(self, *, limit: int = 100, offset: int = 0) -> OpsPage:
        return self._get(OpsPage, "/v1/ops", {"limit": limit, "offset": offset})

    def devices(self, *, kind: str | None = None, limit: int = 100, offset: int = 0) -> Page[DevicePublic]:
        return self._get(Page[DevicePublic], "/v1/devices", {"kind": kind, "limit": limit, "offset": offset})

    def resolve_device(self, device: str) -> str:
        """An exact device class as is; 'cpu' or 'cuda' -> this farm's class of that kind: the only one, else the
        only one with an agent online (api/device_kinds.py, the rule the server's /v1/best routes apply).
        TunefarmError (listing the classes) when there is none or several."""
        if device not in DEVICE_KINDS:
            return device
        classes = self.devices(kind=device, limit=1000).items
        try:
            return choose_class(device, [(d.device_class, d.status == "online") for d in classes])
        except DeviceChoiceError as exc:
            raise TunefarmError(str(exc)) from None

    def metrics(self) -> str:
        return self._request("GET", "/metrics").text

    # ---- jobs ----------------------------------------------------------------------------------------------------
    def create_job(self, op: str, params: Mapping[str, Any], device: str, trials: int, *, strategy: str = "model",
                   strategy_options: Mapping[str, Any] | None = None, priority: int = 0, seed: int | None = None,
                   measure: Mapping[str, Any] | None = None) -> JobPublic:
        body = {"op": op, "params": dict(params), "device": device, "trials": trials, "strategy": strategy,
                "strategy_options": dict(strategy_options or {}), "priority": priority, "seed": seed,
                "measure": dict(measure or {})}
        return self._send(JobPublic, "POST", "/v1/jobs", body)

    def jobs(self, *, state: str | None = None, workload: str | None = None, device_class: str | None = None,
             limit: int = 50, offset: int = 0) -> Page[JobPublic]:
        return self._get(Page[JobPublic], "/v1/jobs", {"state": state, "workload": workload,
                                                       "device_class": device_class, "limit": limit, "offset": offset})

    def job(self, job_id: str) -> JobPublic:
        return self._get(JobPublic, f"/v1/jobs/{job_id}")

    def job_trials(self, job_id: str, *, status: str | None = None, limit: int = 100,
                   offset: int = 0) -> Page[TrialPublic]:
        return self._get(Page[TrialPublic], f"/v1/jobs/{job_id}/trials",
                         {"status": status, "limit": limit, "offset": offset})

    def job_comparisons(self, job_id: str) -> list[ComparisonPublic]:
        """The job's head-to-head comparisons (challenges during the search, final ones when it ended)."""
        return [ComparisonPublic.model_validate(c) for c in self._request("GET", f"/v1/jobs/{job_id}/comparisons")
                .json()]

    def cancel_job(self, job_id: str) -> JobPublic:
        return self._send(JobPublic, "DELETE", f"/v1/jobs/{job_id}")

    def wait_for_job(self, job_id: str, *, timeout_s: float | None = None, poll_s: float = 1.0) -> JobPublic:
        """Poll until the job is done, failed or cancelled; TunefarmError after `timeout_s`."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            job = self.job(job_id)
            if job.state in FINAL_JOB_STATES:
                return job
            if deadline is not None and time.monotonic() > deadline:
                raise TunefarmError(f"job {job_id} is still {job.state} after {timeout_s} s")
            time.sleep(poll_s)

    # ---- best schedules ------------------------------------------------------------------------------------------
    def best(self, op: str, params: Mapping[str, Any], device: str, *, version: int | None = None,
             as_of: datetime | str | None = None, include_source: bool = False, predict: bool = False,
             candidates: int | None = None, enqueue: bool = False,
             enqueue_trials: int | None = None) -> BestPublic | PredictedBest:
        """The head (or `version`, or the head `as_of`); with `predict`, a key with no head gets the class model's
        pick instead of a 404 (a PredictedBest: `predicted` is True), and `enqueue` (admin) queues its tuning. Where
        the class has no model yet it is still a 404 (TunefarmError), and with `enqueue` its
        `detail["enqueued_job"]` is the job queued."""
        when = as_of.isoformat() if isinstance(as_of, datetime) else as_of
        query = _query(op, params, device, version=version, as_of=when,
                       include_source="true" if include_source else None, predict="true" if predict else None,
                       candidates=candidates, enqueue="true" if enqueue else None, enqueue_trials=enqueue_trials)
        answer = self._request("GET", "/v1/best", params={k: v for k, v in query.items() if v is not None}).json()
        return (PredictedBest if answer.get("predicted") else BestPublic).model_validate(answer)

    def history(self, op: str, params: Mapping[str, Any], device: str, *, limit: int = 50,
                offset: int = 0) -> Page[VersionPublic]:
        return self._get(Page[VersionPublic], "/v1/best/history", _query(op, params, device, limit=limit,
                                                                          offset=offset))

    def diff(self, op: str, params: Mapping[str, Any], device: str, v1: int, v2: int) -> DiffPublic:
        return self._get(DiffPublic, "/v1/best/diff", _query(op, params, device, v1=v1, v2=v2))

    def rollback(self, op: str, params: Mapping[str, Any], device: str, to_version: int, *,
                 message: str | None = None) -> VersionPublic:
        body = {"op": op, "params": dict(params), "device": device, "to_version": to_version, "message": message}
        return self._send(VersionPublic, "POST", "/v1/best/rollback", body)

    def pin(self, op: str, params: Mapping[str, Any], device: str, version: int | None, *,
            message: str | None = None, trial_id: str | None = None) -> VersionPublic:
        """Pin `version`; or with version None, pin the trial `trial_id` (a verified trial of the key that is no
        version, e.g. to replace an implausible head), or without it unpin."""
        body = {"op": op, "params": dict(params), "device": device, "version": version, "message": message}
        if trial_id is not None:
            body["trial_id"] = trial_id
        return self._send(VersionPublic, "POST", "/v1/best/pin", body)

    # ---- tokens (admin) ------------------------------------------------------------------------------------------
    def tokens(self) -> list[TokenPublic]:
        return [TokenPublic.model_validate(t) for t in self._request("GET", "/v1/tokens").json()]

    def create_token(self, name: str, scope: str = "read") -> TokenCreated:
        """A new token; `.token` is its plaintext, returned this once."""
        return self._send(TokenCreated, "POST", "/v1/tokens", {"name": name, "scope": scope})

    def revoke_token(self, token_id: str) -> TokenPublic:
        return self._send(TokenPublic, "DELETE", f"/v1/tokens/{token_id}")

    # ---- exchange ------------------------------------------------------------------------------------------------
    def export(self, *, op: str | None = None, workload: str | None = None,
               device_class: str | None = None) -> Iterator[str]:
        """The export's JSON lines, streamed (lazily: the request is made on the first next())."""
        query = {k: v for k, v in {"op": op, "workload": workload, "device_class": device_class}.items() if v}
        url = self.base_url + "/v1/export"
        try:
            with self._http.stream("GET", url, params=query, headers=self._auth) as response:
                if response.status_code >= 300:
                    response.read()
                    raise TunefarmError.from_response(response)
                yield from (line for line in response.iter_lines() if line)
        except httpx.HTTPError as exc:
            raise TunefarmError(f"GET {url}: cannot reach the tunefarm server: {exc}", method="GET", url=url) from exc

    def import_lines(self, lines: Iterable[str] | str | bytes) -> ImportResult:
        """Merge JSON lines (an export) into the farm; all or nothing."""
        if isinstance(lines, str):
            body = lines.encode()
        elif isinstance(lines, bytes):
            body = lines
        else:
            body = "".join(line if line.endswith("\n") else line + "\n" for line in lines).encode()
        response = self._request("POST", "/v1/import", content=body,
                                 headers={"Content-Type": "application/x-ndjson"})
        return ImportResult.model_validate(response.json())
