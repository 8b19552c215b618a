"""API tokens for REST (read / admin scopes). Only a SHA-256 of each token is stored."""
from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from tuner_server.db.models import TOKEN_SCOPES, ApiToken
from tuner_server.db.types import utcnow
from tuner_server.repo.errors import Conflict, InvalidRequest, NotFound

TOKEN_PREFIX = "tf_"


def hash_secret(plaintext: str) -> str:
    return hashlib.sha256(plaintext.encode()).hexdigest()


def secrets_match(plaintext: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_secret(plaintext), stored_hash)


def new_secret() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def create_token(name: str, scope: str, *, session: Session, now: datetime | None = None) -> tuple[ApiToken, str]:
    """A new random token; returns (row, plaintext). The plaintext is shown once and never stored."""
    plaintext = new_secret()
    return register_token(name, scope, plaintext, session=session, now=now), plaintext


def register_token(name: str, scope: str, plaintext: str, *, session: Session,
                   now: datetime | None = None) -> ApiToken:
    """Store a token chosen elsewhere (TUNEFARM_ADMIN_TOKEN); idempotent for the same plaintext."""
    if scope not in TOKEN_SCOPES:
        raise InvalidRequest(f"token scope must be one of {', '.join(TOKEN_SCOPES)}, got {scope!r}")
    if len(plaintext) < 16:
        raise InvalidRequest("a token must be at least 16 characters")
    digest = hash_secret(plaintext)
    row = session.scalar(select(ApiToken).where(ApiToken.token_hash == digest))
    if row is not None:
        if row.scope != scope or row.revoked:
            raise InvalidRequest(f"that token is already registered as {row.name!r} ({row.scope}, "
                                 f"{'revoked' if row.revoked else 'active'})")
        return row
    row = ApiToken(name=name, token_hash=digest, scope=scope, created_at=now or utcnow(), revoked=False)
    session.add(row)
    session.flush()
    return row


def authenticate_token(plaintext: str, *, session: Session) -> str | None:
    """The scope of a valid, unrevoked token; None otherwise."""
    if not plaintext:
        return None
    row = session.execute(select(ApiToken.scope, ApiToken.revoked)  # two columns, no ORM object: every request
                          .where(ApiToken.token_hash == hash_secret(plaintext))).first()
    if row is None or row.revoked:
        return None
    return row.scope


def revoke_token(token_id: str, *, session: Session) -> ApiToken:
    """Revoke (idempotent); Conflict for the last active admin token, which would lock every admin out."""
    row = session.get(ApiToken, token_id)
    if row is None:
        raise NotFound(f"no token {token_id}: `GET /v1/tokens` lists them")
    if row.revoked:
        return row
    admins = [t for t in list_tokens(session=session) if t.scope == "admin" and not t.revoked]
    if row.scope == "admin" and len(admins) == 1:
        raise Conflict(f"token {token_id} ({row.name!r}) is the last active admin token: create another admin "
                       "token first")
    row.revoked = True
    session.flush()
    return row


def find_token(plaintext: str, *, session: Session) -> ApiToken | None:
    """The row of a plaintext token (revoked or not), None when it was never registered."""
    return session.scalar(select(ApiToken).where(ApiToken.token_hash == hash_secret(plaintext)))


def list_tokens(*, session: Session) -> list[ApiToken]:
    return list(session.scalars(select(ApiToken).order_by(ApiToken.created_at, ApiToken.id)).all())
