"""Dependencies of the routes: one database session per request, the app's settings and driver, and auth.

Auth: a bearer token checked with `repo.authenticate_token`; GETs need scope 'read' (or 'admin'), writes need
'admin'. No or an unknown token is 401 with a WWW-Authenticate header; a read token on a write is 403.
"""
from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Path, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from tuner_server import bounds, repo
from tuner_server.api.errors import ApiError
from tuner_server.api.schemas import NO_NUL
from tuner_server.db import session_scope
from tuner_server.db.engine import READ_ONLY
from tuner_server.device_class import CLASS_PATTERN
from tuner_server.settings import Settings

READ_METHODS = ("GET", "HEAD")  # routes of these methods never write (their sessions cannot)


async def get_db(request: Request) -> AsyncIterator[Session]:
    """A session for the route: committed when it returns normally, rolled back on any error, closed before the
    response is sent (scope='function', so a streamed response never holds a transaction).

    FastAPI runs each sync dependency, the sync route and the response's validation in separate worker-thread
    steps, and a request holds its connection (on SQLite: the write lock every transaction takes) across them. If
    every worker thread were waiting for a connection or that lock, the holder could never get the worker it needs
    next. So at most `app.state.db_slots` requests hold a session at a time (fewer than the pool's connections
    and the worker threads; the rest wait on the event loop, holding nothing), and auth ends its own
    transaction at once. Write routes commit before they wake the driver.

    GET and HEAD requests get a read-only session (db/engine.py: on SQLite a deferred transaction that takes no
    lock), so reads never queue behind each other, leasing or reporting."""
    state = request.app.state
    factory = state.read_session_factory if request.method in READ_METHODS else state.session_factory
    async with state.db_slots:
        with session_scope(factory) as session:
            yield session


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_driver(request: Request) -> Any:
    return request.app.state.driver


SessionDep = Annotated[Session, Depends(get_db, scope="function")]
Limit = Annotated[int, Query(ge=1, le=1000, description="page size")]
Offset = Annotated[int, Query(ge=0, le=bounds.MAX_OFFSET, description="items to skip")]
PathId = Annotated[str, Path(max_length=64, pattern=NO_NUL, description="a UUID")]
WORKLOAD_KEY = r"^[a-z][a-z0-9_]{0,63}\([^\x00]{0,1000}\)$"
WorkloadKey = Annotated[str | None, Query(max_length=1100, pattern=WORKLOAD_KEY, description="a workload key, e.g. "
                                          "matmul(M=64,N=64,K=64) (dtype defaults to float32)")]
DeviceClassFilter = Annotated[str | None, Query(max_length=128, pattern=f"^{CLASS_PATTERN}$",
                                                description="an exact device class, e.g. cpu-x86_64-avx2-2c")]
DeviceSelectorFilter = Annotated[str | None, Query(max_length=128, pattern=f"^(cpu|cuda|{CLASS_PATTERN})$",
                                                   description="'cpu' or 'cuda' (this farm's class of that kind: the "
                                                               "only one, else the only one online) or an exact "
                                                               "device class")]
SettingsDep = Annotated[Settings, Depends(get_settings)]
DriverDep = Annotated[Any, Depends(get_driver)]

bearer = HTTPBearer(auto_error=False, description="an API token: scope 'read' for GETs, 'admin' for writes")
CredentialsDep = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]


@dataclass(frozen=True)
class Principal:
    scope: str

    @property
    def author(self) -> str:
        """Recorded as the author of schedule versions a request creates."""
        return f"rest:{self.scope}"


def _authenticate(credentials: HTTPAuthorizationCredentials | None, session: Session) -> Principal:
    if credentials is None or not credentials.credentials:
        raise ApiError(401, "missing bearer token: send 'Authorization: Bearer <token>'",
                       headers={"WWW-Authenticate": "Bearer"})
    scope = repo.authenticate_token(credentials.credentials, session=session)
    if not session.info.get(READ_ONLY):  # a read-only transaction holds no lock: it goes on into the route
        session.commit()  # end the read now: hold no lock (SQLite: the write lock) while the route waits for a worker
    if scope is None:
        raise ApiError(401, "invalid or revoked token", headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
    return Principal(scope)


def require_read(credentials: CredentialsDep, session: SessionDep) -> Principal:
    return _authenticate(credentials, session)


def require_admin(credentials: CredentialsDep, session: SessionDep) -> Principal:
    principal = _authenticate(credentials, session)
    if principal.scope != "admin":
        raise ApiError(403, f"this needs an admin token; yours has scope {principal.scope!r}",
                       headers={"WWW-Authenticate": 'Bearer error="insufficient_scope", scope="admin"'})
    return principal


ReadAccess = Annotated[Principal, Depends(require_read)]
AdminAccess = Annotated[Principal, Depends(require_admin)]


def wake_driver(driver: Any) -> None:
    """Tell the job driver something changed (after the change is committed); no driver, no call."""
    if driver is not None:
        driver.wake()
