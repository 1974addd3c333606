"""What a request asks to do, in the terms an authorizer decides on (apiserver's ``RequestInfoFactory``).

kube-apiserver authorizes a request before it knows whether the resource exists, from the URL
alone: ``GET /apis/ray.io/v1/namespaces/x/rayclusters`` is "list rayclusters in group ray.io in
namespace x" even if no such CRD is installed, and paths outside ``/api`` and ``/apis`` are
non-resource requests whose verb is the lower-cased HTTP method. This module is that parse, kept
apart from routing so the authorizer sees exactly what kube-apiserver's would.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .authn import UserInfo
from .options import TRUE

__all__ = ["Attributes", "request_attributes"]

_SPECIAL_VERBS = ("proxy", "watch")
_NAMESPACE_SUBRESOURCES = ("status", "finalize")
_METHOD_VERBS = {
    "POST": "create",
    "GET": "get",
    "HEAD": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}
_FALSE = {"false", "0", "f", "F", "FALSE", "False"}


@dataclass(frozen=True)
class Attributes:
    """``authorizer.AttributesRecord``: who asks for which verb on what."""

    user: UserInfo
    verb: str
    resource_request: bool
    path: str = ""
    namespace: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""

    @property
    def combined_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def _watch_param(query: Mapping[str, str]) -> bool:
    value = query.get("watch")
    if value is None:
        return False
    if value in TRUE:
        return True
    return value not in _FALSE  # an unparsable value still counts as a watch, as upstream


def _exact_name(field_selector: str | None) -> str:
    """``fieldSelector.RequiresExactMatch("metadata.name")``: the name a list or watch is limited to."""
    for term in (field_selector or "").split(","):
        for op in ("==", "="):
            key, sep, value = term.partition(op)
            if sep and key.strip() == "metadata.name" and not value.startswith("="):
                name = value.strip()
                return name if name not in (".", "..") and "/" not in name and "%" not in name else ""
    return ""


def request_attributes(user: UserInfo, method: str, path: str, query: Mapping[str, str]) -> Attributes:
    parts = [p for p in path.split("/") if p]
    verb = method.lower()
    non_resource = Attributes(user, verb, False, path=path)
    if len(parts) < 3 or parts[0] not in ("api", "apis"):
        return non_resource
    prefix, rest = parts[0], parts[1:]
    group = ""
    if prefix == "apis":
        if len(rest) < 3:
            return non_resource
        group, rest = rest[0], rest[1:]
    version, rest = rest[0], rest[1:]
    if rest[0] in _SPECIAL_VERBS:
        if len(rest) < 2:
            return non_resource  # upstream: "unable to determine kind and namespace from url"
        verb, rest = rest[0], rest[1:]
    else:
        verb = _METHOD_VERBS.get(method, "")
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) >= 2 else ""
    subresource = rest[2] if len(rest) >= 3 and verb != "proxy" else ""
    if not name and verb == "get":
        # A collection GET is a list, or a watch with ?watch=true; a list or watch limited to
        # one name by fieldSelector is authorized as that name (resourceNames rules apply).
        verb = "watch" if _watch_param(query) else "list"
        name = _exact_name(query.get("fieldSelector"))
    if not name and verb == "delete":
        verb = "deletecollection"
    return Attributes(
        user,
        verb,
        True,
        path=path,
        namespace=namespace,
        api_group=group,
        api_version=version,
        resource=resource,
        subresource=subresource,
        name=name,
    )
