"""``POST .../serviceaccounts/NAME/token`` (TokenRequest): mint a token for an existing ServiceAccount.

What the kubelet asks for a projected token, and what tests ask to run a controller as a
ServiceAccount. kube-apiserver's rules: ``expirationSeconds`` defaults to 3600 and is at least 600
(at most 2^32), ``audiences`` default to the API server's own, ``boundObjectRef`` (a Pod or Secret
here) must exist with the given UID; the ServiceAccount must exist (404 otherwise). Nothing is
stored; the token is good until it expires or its ServiceAccount goes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from .authn import UserInfo
from .errors import StatusError
from .meta import format_time
from .validation import invalid
from .virtual import VirtualCreate, request_object

if TYPE_CHECKING:
    from .access import AccessControl

__all__ = ["token_request_handler"]

_AUTHN = "authentication.k8s.io"
_MIN_EXPIRATION = 600
_MAX_EXPIRATION = 1 << 32
_DEFAULT_EXPIRATION = 3600


def token_request_handler(access: AccessControl) -> VirtualCreate:
    core = access.core

    def token_request(ns: str | None, name: str | None, body: Any, user: UserInfo) -> dict[str, Any]:
        assert ns is not None and name is not None
        sa_rt = core.registry.get("", "v1", "serviceaccounts")
        assert sa_rt is not None
        sa = core.get(sa_rt, ns, name)
        out = request_object(body, "TokenRequest", f"{_AUTHN}/v1")
        meta = out["metadata"]
        if meta.get("namespace") not in (None, "", ns):
            raise StatusError.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        given_name = str(meta.get("name") or "")  # errors name the object as sent ("" from kubectl)
        meta["name"], meta["namespace"] = given_name or name, ns
        spec = out["spec"]
        seconds = spec.get("expirationSeconds")
        seconds = _DEFAULT_EXPIRATION if seconds is None else seconds
        causes = []
        if not isinstance(seconds, int) or seconds < _MIN_EXPIRATION:
            causes.append(
                invalid("spec.expirationSeconds", seconds, "may not specify a duration less than 10 minutes")
            )
        elif seconds > _MAX_EXPIRATION:
            causes.append(
                invalid(
                    "spec.expirationSeconds", seconds, "may not specify a duration larger than 2^32 seconds"
                )
            )
        if causes:
            raise StatusError.invalid(_AUTHN, "TokenRequest", given_name, causes)
        audiences = [str(a) for a in spec.get("audiences") or []] or list(access.tokens.audiences)
        bound = spec.get("boundObjectRef")
        bound_obj = None
        if isinstance(bound, dict) and bound.get("kind"):
            plural = {"Pod": "pods", "Secret": "secrets"}.get(str(bound["kind"]))
            if plural is None:
                raise StatusError.bad_request(f"cannot bind token to object of type {bound['kind']}")
            rt = core.registry.get("", "v1", plural)
            assert rt is not None
            target = core.get(rt, ns, str(bound.get("name") or ""))
            uid = target["metadata"]["uid"]
            if bound.get("uid") and bound["uid"] != uid:
                raise StatusError.conflict(
                    "",
                    plural,
                    str(bound.get("name")),
                    f"the UID in the bound object reference ({bound['uid']}) "
                    "does not match the UID in record. The object might have been deleted and then recreated",
                )
            bound_obj = {"kind": bound["kind"], "name": bound["name"], "uid": uid}
        now = access.now()
        token = access.tokens.issue(
            ns,
            name,
            str(sa["metadata"]["uid"]),
            audiences=audiences,
            now=now,
            expiration_seconds=seconds,
            bound=bound_obj,
        )
        spec["audiences"], spec["expirationSeconds"] = audiences, seconds
        spec.setdefault("boundObjectRef", None)
        expires = datetime.fromtimestamp(now + seconds, UTC)
        out["status"] = {"token": token, "expirationTimestamp": format_time(expires)}
        return out

    return token_request
