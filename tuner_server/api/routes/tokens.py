"""REST tokens (admin): create one (its plaintext is answered once; only a SHA-256 is stored), list, revoke."""
from __future__ import annotations

from fastapi import APIRouter

from tuner_server import repo
from tuner_server.api import schemas as s
from tuner_server.api.deps import AdminAccess, PathId, SessionDep, SettingsDep
from tuner_server.api.errors import ApiError, documented
from tuner_server.api.json_body import StrictJSONRoute
from tuner_server.db.models import ApiToken

router = APIRouter(prefix="/v1/tokens", tags=["tokens"], route_class=StrictJSONRoute)


def token_public(row: ApiToken) -> s.TokenPublic:
    return s.TokenPublic(id=row.id, name=row.name, scope=row.scope, created_at=row.created_at, revoked=row.revoked)


@router.post("", status_code=201, response_model=s.TokenCreated, responses=documented(400, 401, 403, 413, 415, 422))
def create_token(body: s.TokenCreate, session: SessionDep, _: AdminAccess) -> s.TokenCreated:
    """A new random token of scope `read` or `admin`; `token` in the answer is its plaintext, shown this once."""
    row, plaintext = repo.create_token(body.name, body.scope, session=session)
    out = s.TokenCreated(**token_public(row).model_dump(), token=plaintext)
    session.commit()
    return out


@router.get("", response_model=list[s.TokenPublic], responses=documented(401, 403))
def list_tokens(session: SessionDep, _: AdminAccess) -> list[s.TokenPublic]:
    """Every token, oldest first, revoked ones included (no plaintext: it is not stored)."""
    return [token_public(t) for t in repo.list_tokens(session=session)]


@router.delete("/{token_id}", response_model=s.TokenPublic, responses=documented(401, 403, 404, 409, 422))
def revoke_token(token_id: PathId, session: SessionDep, settings: SettingsDep, _: AdminAccess) -> s.TokenPublic:
    """Revoke a token (idempotent). 409 for the last active admin token, and for a token the server's settings
    name (TUNEFARM_ADMIN_TOKEN / TUNEFARM_READ_TOKEN): the server would register it again at its next start."""
    for setting, secret in (("TUNEFARM_ADMIN_TOKEN", settings.admin_token), ("TUNEFARM_READ_TOKEN",
                                                                            settings.read_token)):
        configured = repo.find_token(secret.get_secret_value(), session=session) if secret is not None else None
        if configured is not None and configured.id == token_id:
            raise ApiError(409, f"token {token_id} is the server's {setting}: change that setting (and restart) "
                                "instead of revoking it")
    out = token_public(repo.revoke_token(token_id, session=session))
    session.commit()
    return out
