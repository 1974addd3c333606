"""Shared by the create-only resources (TokenRequest, the reviews): their handler shape and body.

kube-apiserver answers them with the request object, its ``metadata`` echoed with a null
``creationTimestamp``, plus a ``status``; fields come in the Go type's order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .authn import UserInfo
from .errors import StatusError

__all__ = ["VirtualCreate", "request_object"]

# (namespace from the URL, name from the URL, the request body, the requesting user) -> response
VirtualCreate = Callable[[str | None, str | None, Any, UserInfo], dict[str, Any]]


def request_object(body: Any, kind: str, api_version: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise StatusError.bad_request(f"the object provided is unrecognized (must be of type {kind})")
    if body.get("kind") not in (None, "", kind):
        raise StatusError.bad_request(
            f"the object provided is unrecognized (must be of type {kind}): {body.get('kind')} in version "
            f'"{body.get("apiVersion")}" cannot be handled as a {kind}'
        )
    meta = body.get("metadata")
    spec = body.get("spec")
    meta = meta if isinstance(meta, dict) else {}
    spec = spec if isinstance(spec, dict) else {}
    # The field order of the Go type: TypeMeta, ObjectMeta, spec, status.
    return {
        "kind": kind,
        "apiVersion": api_version,
        "metadata": {**meta, "creationTimestamp": None},
        "spec": spec,
    }
