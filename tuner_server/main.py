"""The tuner process: `serve(settings)` runs the job driver, gRPC and REST (uvicorn) over one database, and
`main(argv)` is `tunefarm server` (Settings from TUNEFARM_* variables, overridden by flags).

Start-up: migrate the database to head, register the tokens the settings name (creating an admin token when the
database has none), join the leadership (leadership.py: on SQLite this process leads; over PostgreSQL the elected
replica runs the job driver and the class-model keeper), start gRPC, then uvicorn in a thread. SIGTERM/SIGINT stop
them in reverse order: health NOT_SERVING, REST and gRPC drain, the leader steps down, the engine closes.
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import logging
import os
import secrets
import signal
import sys
import threading
import time

from pydantic import SecretStr, ValidationError

from tuner_server import metrics, repo, rest_workers
from tuner_server.cost_model.feature_pool import FeaturePool
from tuner_server.db import make_engine, make_session_factory, session_scope, upgrade_to_head
from tuner_server.db.leader_lock import TOKENS, xact_lock
from tuner_server.gc_policy import tune_for_tuner
from tuner_server.leadership import LeaderDuties, elect
from tuner_server.rpc.server import build_grpc_server, stop_grpc_server
from tuner_server.settings import Settings

log = logging.getLogger("tuner_server")

STOP_GRACE_S = 5.0
REST_START_TIMEOUT_S = 30.0


def ensure_tokens(settings: Settings, session_factory) -> Settings:
    """Store the REST tokens the settings name; create an admin token (printed once) when none exists; generate an
    enrolment token (printed once) when the settings have none. Returns the settings with that enrolment token."""
    with session_scope(session_factory) as s:
        xact_lock(s, TOKENS)  # replicas starting together on an empty database create one admin token, not two
        if settings.admin_token is not None:
            repo.register_token("admin (TUNEFARM_ADMIN_TOKEN)", "admin", settings.admin_token.get_secret_value(),
                                session=s)
        elif not any(t.scope == "admin" and not t.revoked for t in repo.list_tokens(session=s)):
            _, plaintext = repo.create_token("admin (generated at first start)", "admin", session=s)
            print(f"tunefarm: created an admin API token (shown once): {plaintext}", file=sys.stderr)
        if settings.read_token is not None:
            repo.register_token("read (TUNEFARM_READ_TOKEN)", "read", settings.read_token.get_secret_value(),
                                session=s)
    if settings.enrolment_token is None:
        token = "tfe_" + secrets.token_urlsafe(24)
        print(f"tunefarm: no TUNEFARM_ENROLMENT_TOKEN set; agents can enrol with: {token}", file=sys.stderr)
        if not settings.database_url.startswith("sqlite"):
            log.warning("this enrolment token is this process's own: other tuner replicas of the database will not "
                        "accept it; give every replica the same TUNEFARM_ENROLMENT_TOKEN")
        settings = settings.model_copy(update={"enrolment_token": SecretStr(token)})
    return settings


def _rest_app(settings: Settings, session_factory, driver):
    """The FastAPI app, or None while tuner_server.api is not there (gRPC-only serving). `driver`: the leadership
    (its wake() reaches the job driver of whichever replica leads; /health shows its role)."""
    try:
        from tuner_server.api.app import create_app
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("tuner_server.api"):
            raise
        log.warning("tuner_server.api is not available (%s): serving gRPC only", exc)
        return None
    if "registry" in inspect.signature(create_app).parameters:  # one /metrics for REST, gRPC and the driver
        return create_app(settings, session_factory, driver, registry=metrics.REGISTRY, leadership=driver)
    return create_app(settings, session_factory, driver)


class TunerRuntime:
    """The running parts of one tuner process; `start()` then `stop()` (serve() and embedded farms use it)."""

    def __init__(self, settings: Settings, plugins: tuple[str, ...] = ()):
        self.settings, self.plugins = settings, plugins  # plugins: modules REST worker processes import too
        self.rest_workers: list = []
        self.engine = self.sessions = self.leadership = self.grpc = None
        self.feature_pool = None
        self.rest = self._rest_thread = None
        self.metrics_server = None
        self.grpc_port: int | None = None
        self.rest_port: int | None = None

    def start(self) -> TunerRuntime:
        settings = self.settings
        tune_for_tuner()
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        upgrade_to_head(settings.database_url)
        self.engine = make_engine(settings.database_url)
        self.sessions = make_session_factory(self.engine)
        self.settings = settings = ensure_tokens(settings, self.sessions)
        self.feature_pool = FeaturePool(settings.feature_workers) if settings.feature_workers else None
        self.leadership = elect(settings, self.engine, self.sessions,
                                lambda sessions: LeaderDuties(settings, sessions, self.feature_pool))
        self.leadership.start()
        self.grpc = build_grpc_server(settings, self.sessions, self.leadership)
        self.grpc.start()
        self.grpc_port = self.grpc.bound_port
        log.info("gRPC listening on %s:%d (%s)", settings.grpc_host, self.grpc_port,
                 "TLS" if settings.grpc_tls_cert_file else "plaintext")
        if settings.metrics_port is not None:
            self.metrics_server = metrics.serve(settings.metrics_host, settings.metrics_port)
            log.info("metrics (no token) on http://%s:%d/metrics", settings.metrics_host,
                     self.metrics_server.server_port)
        app = _rest_app(settings, self.sessions, self.leadership)
        if app is not None:
            self._start_rest(app)
        return self

    def _start_rest(self, app) -> None:
        import uvicorn

        config = uvicorn.Config(app, host=self.settings.rest_host, port=self.settings.rest_port, log_config=None,
                                lifespan="on", timeout_graceful_shutdown=int(STOP_GRACE_S))
        self.rest = uvicorn.Server(config)
        sockets = None
        if self.settings.rest_workers > 1:  # this process and the workers accept on one socket (rest_workers.py)
            sockets = [rest_workers.listen(self.settings.rest_host, self.settings.rest_port)]
            self.rest_workers = rest_workers.start(self.settings, sockets[0], self.settings.rest_workers - 1,
                                                   self.plugins)
        self._rest_thread = threading.Thread(target=self.rest.run, kwargs={"sockets": sockets}, name="tunefarm-rest",
                                             daemon=True)
        self._rest_thread.start()
        while not self.rest.started:
            self._rest_thread.join(0.05)
            if not self._rest_thread.is_alive():
                raise RuntimeError(f"the REST server did not start on {self.settings.rest_host}:"
                                   f"{self.settings.rest_port} (see the log above)")
        self.rest_port = self.rest.servers[0].sockets[0].getsockname()[1]
        log.info("REST listening on http://%s:%d", self.settings.rest_host, self.rest_port)

    def healthy(self) -> bool:
        """False once a serving thread has died on its own."""
        return self._rest_thread is None or self._rest_thread.is_alive()

    def stop(self) -> None:
        if self.rest is not None:
            self.rest.should_exit = True
        if self.grpc is not None:
            stop_grpc_server(self.grpc, STOP_GRACE_S)
        if self.rest_workers:
            rest_workers.stop(self.rest_workers)
        if self._rest_thread is not None:
            self._rest_thread.join(STOP_GRACE_S + 5)
        if self.metrics_server is not None:
            self.metrics_server.shutdown()
            self.metrics_server.server_close()
        if self.leadership is not None:
            self.leadership.stop()
        if self.feature_pool is not None:
            self.feature_pool.close()
        if self.engine is not None:
            self.engine.dispose()
        log.info("tuner stopped")


def serve(settings: Settings, stop: threading.Event | None = None, plugins: tuple[str, ...] = ()) -> int:
    """Run until SIGTERM/SIGINT (or until `stop` is set); returns the exit code. `plugins`: the modules imported
    for custom ops (REST worker processes import them too)."""
    stop = stop or threading.Event()
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, lambda signum, _frame: stop.set())
    runtime = TunerRuntime(settings, plugins)
    try:
        runtime.start()
        while not stop.wait(0.5):
            if not runtime.healthy():
                log.error("the REST server stopped unexpectedly; shutting down")
                return 1
        log.info("shutting down")
        return 0
    finally:
        runtime.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def settings_errors(exc: ValidationError) -> str:
    """A pydantic ValidationError on one line: 'field: message; ...' (a validator's own message as it is)."""
    parts = []
    for error in exc.errors():
        message = str(error.get("ctx", {}).get("error") or error["msg"]).removeprefix("Value error, ")
        field = ".".join(str(x) for x in error["loc"])
        parts.append(f"TUNEFARM_{field.upper()}: {message}" if field else message)
    return "; ".join(parts)


def watch_parent(pid: int, poll_s: float = 1.0) -> None:
    """--parent-pid: send this process SIGTERM (its graceful stop) once `pid` is no longer its parent."""
    def watch() -> None:
        while os.getppid() == pid:
            time.sleep(poll_s)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="tunefarm server", description="run the tuner: REST API, gRPC for agents "
                                     "and the job driver, over one database (settings: TUNEFARM_* variables)")
    parser.add_argument("--database-url", help="SQLAlchemy URL (TUNEFARM_DATABASE_URL)")
    parser.add_argument("--data-dir", help="server files (TUNEFARM_DATA_DIR)")
    parser.add_argument("--rest-host")
    parser.add_argument("--rest-port", type=int)
    parser.add_argument("--grpc-host")
    parser.add_argument("--grpc-port", type=int)
    parser.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                        help="import MODULE before serving (registers custom ops, as the agents' --plugin); "
                        "repeatable")
    parser.add_argument("--parent-pid", type=int, default=None, metavar="PID",
                        help="stop (as on SIGTERM) once PID is no longer this process's parent (tunefarm up sets it)")
    parser.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for module in args.plugin:  # before anything validates a workload: the plugin's ops must be known
        try:
            importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 - any failure of a plugin's import stops the start
            print(f"tunefarm server: cannot load plugin {module!r}: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 2
    if args.parent_pid is not None:
        watch_parent(args.parent_pid)
    overrides = {name: value for name, value in vars(args).items()
                 if name not in ("log_level", "plugin", "parent_pid") and value is not None}
    try:
        settings = Settings(**overrides)
    except ValidationError as exc:
        print(f"tunefarm server: bad settings: {settings_errors(exc)}", file=sys.stderr)
        return 2
    try:
        return serve(settings, plugins=tuple(args.plugin))
    except (OSError, RuntimeError, ValueError) as exc:
        log.error("tunefarm server could not start: %s", exc)
        return 1
