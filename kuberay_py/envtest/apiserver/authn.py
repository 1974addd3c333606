"""Who is asking: bearer tokens to users, as kube-apiserver's authenticators map them.

Two kinds of credentials exist on the built-in server: the environment's admin token (the user
envtest's admin client certificate names on a real control plane, in ``system:masters``) and
ServiceAccount tokens minted by the TokenRequest subresource. The latter are JWTs with
kube-apiserver's claims (``sub``, ``aud``, ``exp``, ``kubernetes.io.serviceaccount``) signed with
a per-server HMAC key instead of the service-account RSA key: nothing outside this server needs
to verify them, and a client that decodes the payload (to read the expiry) sees the real shape.
As with ``--service-account-lookup`` (on by default), a token is only good while its
ServiceAccount exists with the same UID.

A request without credentials is ``system:anonymous`` (anonymous auth is on by default); a
request with a bearer token that is not valid gets ``401 Unauthorized``, never anonymous access.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from .errors import StatusError

__all__ = [
    "ADMIN",
    "ADMIN_TOKEN",
    "ANONYMOUS",
    "AUTHENTICATED",
    "DEFAULT_AUDIENCE",
    "ISSUER",
    "ServiceAccountTokens",
    "UserInfo",
    "service_account_user",
    "unauthorized",
]

MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"


@dataclass(frozen=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, list[str]] = field(default_factory=dict, compare=False)

    @property
    def superuser(self) -> bool:
        """In ``system:masters``: kube-apiserver's privileged-group authorizer allows everything."""
        return MASTERS in self.groups


ADMIN_TOKEN = "envtest-admin"
# The same identity as envtest's admin client certificate (CN=envtest-admin, O=system:masters).
ADMIN = UserInfo("envtest-admin", groups=(MASTERS, AUTHENTICATED))
ANONYMOUS = UserInfo("system:anonymous", groups=("system:unauthenticated",))
ISSUER = "https://kubernetes.default.svc.cluster.local"
DEFAULT_AUDIENCE = ISSUER  # --api-audiences defaults to the issuer


def service_account_user(namespace: str, name: str, uid: str) -> UserInfo:
    return UserInfo(
        f"system:serviceaccount:{namespace}:{name}",
        uid=uid,
        groups=("system:serviceaccounts", f"system:serviceaccounts:{namespace}", AUTHENTICATED),
    )


def unauthorized() -> StatusError:
    return StatusError(401, "Unauthorized", "Unauthorized", None)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


# (namespace, name) -> the ServiceAccount's uid, or None when it does not exist.
ServiceAccountLookup = Callable[[str, str], "str | None"]


class ServiceAccountTokens:
    """Mints and checks ServiceAccount tokens (TokenRequest's ``status.token``)."""

    def __init__(self, audiences: tuple[str, ...] = (DEFAULT_AUDIENCE,)) -> None:
        self._key = secrets.token_bytes(32)
        self._kid = _b64(hashlib.sha256(self._key).digest()[:12])
        self.audiences = audiences

    def _sign(self, signing_input: bytes) -> str:
        return _b64(hmac.new(self._key, signing_input, hashlib.sha256).digest())

    def issue(
        self,
        namespace: str,
        name: str,
        uid: str,
        *,
        audiences: list[str],
        now: int,
        expiration_seconds: int,
        bound: dict[str, Any] | None = None,
    ) -> str:
        claims: dict[str, Any] = {
            "aud": audiences,
            "exp": now + expiration_seconds,
            "iat": now,
            "iss": ISSUER,
            "jti": secrets.token_hex(16),
            "kubernetes.io": {"namespace": namespace, "serviceaccount": {"name": name, "uid": uid}},
            "nbf": now,
            "sub": f"system:serviceaccount:{namespace}:{name}",
        }
        if bound:
            claims["kubernetes.io"][bound["kind"].lower()] = {"name": bound["name"], "uid": bound["uid"]}
        header = _b64(orjson.dumps({"alg": "HS256", "kid": self._kid}))
        payload = _b64(orjson.dumps(claims, option=orjson.OPT_SORT_KEYS))
        signing_input = f"{header}.{payload}".encode()
        return f"{header}.{payload}.{self._sign(signing_input)}"

    def authenticate(self, token: str, now: int, lookup: ServiceAccountLookup) -> UserInfo | None:
        """The token's user, or None if this server did not mint it or it no longer holds."""
        pieces = token.split(".")
        if len(pieces) != 3:
            return None
        header, payload, signature = pieces
        if not hmac.compare_digest(self._sign(f"{header}.{payload}".encode()), signature):
            return None
        try:
            claims = orjson.loads(_unb64(payload))
            sa = claims["kubernetes.io"]["serviceaccount"]
            namespace, name, uid = claims["kubernetes.io"]["namespace"], sa["name"], sa["uid"]
            expires, not_before, audiences = int(claims["exp"]), int(claims["nbf"]), claims["aud"]
        except (ValueError, KeyError, TypeError):
            return None
        if not (not_before <= now < expires) or not set(audiences) & set(self.audiences):
            return None
        if lookup(namespace, name) != uid:
            return None  # deleted, or deleted and recreated (--service-account-lookup)
        user = service_account_user(namespace, name, uid)
        jti = claims.get("jti")
        if jti:  # what kube-apiserver adds for tokens with an ID (audit and SelfSubjectReview show it)
            user.extra["authentication.kubernetes.io/credential-id"] = [f"JTI={jti}"]
        return user
