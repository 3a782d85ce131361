"""API tokens: who may call the REST service, and with which role.

A token is shown to its owner once, when it is created; the database keeps only its
sha256. Tokens are 256-bit random strings, so a fast hash is enough: nothing can be
learnt from a stolen hash by guessing. A token is looked up by the hash of what the
client sends, so no token is ever compared in a timing-sensitive way.
"""

from __future__ import annotations

import enum
import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import CheckConstraint, String, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from nictune.db._errors import maps_storage_errors
from nictune.db.models import Base
from nictune.db.types import utcnow
from nictune.errors import InvalidInputError, UnknownNameError

#: Every token starts with this, so a leaked one is easy to recognise in logs and scanners.
TOKEN_PREFIX = "nt_"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
_LIFETIME = re.compile(r"^\s*([0-9]{1,6})\s*(m|h|d|w)\s*$")
_LIFETIME_UNITS = {"m": timedelta(minutes=1), "h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}
#: The longest lifetime ``--expires`` takes (ten years).
MAX_LIFETIME = timedelta(days=3650)
LIFETIME_FORM = "a number with a unit: m (minutes), h, d or w, e.g. 90d; at most 3650d"


class Role(enum.StrEnum):
    """What a token may do: ``read`` everything, or also ``submit`` (every mutating call)."""

    READ = "read"
    SUBMIT = "submit"

    def allows(self, needed: Role) -> bool:
        """Whether a token with this role may call an endpoint that needs ``needed``."""
        return needed is Role.READ or self is Role.SUBMIT


class ApiToken(Base):
    """A bearer token of the REST service (only its hash is stored)."""

    __tablename__ = "api_tokens"
    __table_args__ = (CheckConstraint("role IN ('read', 'submit')", name="role"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    role: Mapped[str] = mapped_column(String(16))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    revoked_at: Mapped[datetime | None]
    #: After this instant the token is refused (401, "expired"); ``None``: it never expires.
    expires_at: Mapped[datetime | None]

    def __repr__(self) -> str:
        return f"ApiToken(id={self.id!r}, name={self.name!r}, role={self.role!r})"


@dataclass(frozen=True)
class TokenInfo:
    """A token as the service sees it after authentication (never the secret)."""

    id: int
    name: str
    role: Role
    expires_at: datetime | None = None

    def expired(self, now: datetime | None = None) -> bool:
        """Whether the token's lifetime is over."""
        return self.expires_at is not None and (now or utcnow()) >= self.expires_at


def parse_lifetime(text: str) -> timedelta:
    """``90d``, ``12h``, ``2w``, ``30m`` -> the lifetime of a token.

    Raises:
        InvalidInputError: naming ``expires`` and the allowed form.
    """
    match = _LIFETIME.match(text) if isinstance(text, str) else None
    lifetime = int(match.group(1)) * _LIFETIME_UNITS[match.group(2)] if match else None
    if lifetime is None or not timedelta(0) < lifetime <= MAX_LIFETIME:
        raise InvalidInputError(f"--expires {str(text)[:40]!r} is not a lifetime", field="expires",
                                allowed=LIFETIME_FORM)
    return lifetime


def hash_token(token: str) -> str:
    """Return the sha256 hex digest under which ``token`` is stored."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _role(role: str) -> Role:
    try:
        return Role(role)
    except ValueError:
        raise InvalidInputError(
            f"unknown role {role!r}", field="role", allowed=", ".join(r.value for r in Role)
        ) from None


@maps_storage_errors
def create_token(s: Session, name: str, role: str, expires_at: datetime | None = None) -> tuple[ApiToken, str]:
    """Create a token called ``name`` with ``role``; return the row and the secret.

    The secret is returned only here: print it once, it cannot be recovered.

    Args:
        expires_at: when the token stops working (``None``: never).

    Raises:
        InvalidInputError: a malformed or already used name, or an unknown role.
        StorageError: the database failed.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidInputError(f"token name {name!r} is not valid", field="name",
                                allowed=f"a name matching {_NAME.pattern}")
    checked = _role(role)
    existing = s.scalars(select(ApiToken).where(ApiToken.name == name)).one_or_none()
    if existing is not None:
        # A revoked token keeps its name (audit trail), so the name cannot come back.
        why = "was revoked; names are not reused" if existing.revoked_at is not None else "already exists"
        raise InvalidInputError(f"a token called {name!r} {why}: pick another name", field="name",
                                allowed="a name no token has had")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken(name=name, role=checked.value, token_hash=hash_token(secret), expires_at=expires_at)
    s.add(row)
    s.flush()
    return row, secret


@maps_storage_errors
def lookup_token(s: Session, secret: str) -> TokenInfo | None:
    """Return the unrevoked token whose secret is ``secret`` (expired or not), or ``None``.

    Raises:
        StorageError: the database failed.
    """
    row = s.scalars(select(ApiToken).where(ApiToken.token_hash == hash_token(secret))).one_or_none()
    if row is None or row.revoked_at is not None:
        return None
    return TokenInfo(row.id, row.name, Role(row.role), row.expires_at)


@maps_storage_errors
def verify_token(s: Session, secret: str) -> TokenInfo | None:
    """Return the live token (neither revoked nor expired) whose secret is ``secret``, or ``None``.

    Raises:
        StorageError: the database failed.
    """
    token = lookup_token(s, secret)
    return None if token is None or token.expired() else token


@maps_storage_errors
def token_gone(s: Session, token_id: int) -> str | None:
    """Why the token with id ``token_id`` no longer works (``"revoked"``, ``"expired"``), or
    ``None`` while it does (what a long-lived request checks again now and then).

    Raises:
        StorageError: the database failed.
    """
    row = s.get(ApiToken, token_id)
    if row is None or row.revoked_at is not None:
        return "revoked"
    if row.expires_at is not None and utcnow() >= row.expires_at:
        return "expired"
    return None


@maps_storage_errors
def list_tokens(s: Session) -> list[ApiToken]:
    """Return every token, oldest first (revoked ones too)."""
    return list(s.scalars(select(ApiToken).order_by(ApiToken.id)))


@maps_storage_errors
def revoke_token(s: Session, name: str) -> ApiToken:
    """Revoke the token called ``name`` (its row stays, so the name is not reused by mistake).

    Raises:
        UnknownNameError: no token has this name.
        StorageError: the database failed.
    """
    row = s.scalars(select(ApiToken).where(ApiToken.name == name)).one_or_none()
    if row is None:
        raise UnknownNameError("token", name, [t.name for t in list_tokens(s)])
    if row.revoked_at is None:
        row.revoked_at = utcnow()
    s.flush()
    return row
