"""The REST surface: URL parsing, body decoding, verb dispatch and ``Status`` error bodies.

Kept apart from the object semantics (``core``, ``deletion``) so every rule about *what* happens
is testable without HTTP, and this module only answers *how it is spoken*: which content types
are accepted, which status codes come back, what goes into the request log.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import orjson
import structlog
import yaml
from aiohttp import web

from . import discovery, openapi, tables
from .access import AccessControl, current_user
from .admission import (
    AdmissionAttributes,
    ValidatingAdmission,
    admission_warnings,
    admitted_delete,
    admitted_write,
    warning_header,
)
from .apply import server_side_apply
from .authn import ADMIN
from .core import ApiCore, Obj
from .deletion import (
    DeleteOptions,
    collection_keys,
    delete_item,
    delete_object,
    success_status,
)
from .errors import StatusError
from .faults import FaultInjector, RequestLog, RequestRecord
from .listing import list_bytes, select
from .meta import clone
from .options import TRUE, boolean, field_manager, field_validation, int_param, validate_list_options
from .options import dry_run as dry_run_param
from .registry import ResourceType
from .selectors import parse_field_selector, parse_label_selector
from .services_proxy import ServiceProxy
from .tables import wants_table
from .watchstream import WatchParams, serve_watch

__all__ = ["ApiHandler", "HandlerSettings"]


@dataclass
class HandlerSettings:
    """What the HTTP handler needs from the server that owns it; knobs stay changeable at run time."""

    core: ApiCore
    faults: FaultInjector
    request_log: RequestLog
    bookmark_interval: float = 1.0
    watch_timeout: float = 1800.0
    address: str = ""  # host:port, known once the server listens (discovery's serverAddress)
    access: AccessControl | None = None  # authentication and authorization, before routing


log = structlog.get_logger("kuberay_py.envtest.apiserver")

MAX_BODY = 3 * 1024 * 1024  # kube-apiserver's MaxRequestBodyBytes
# kube-apiserver also takes application/vnd.kubernetes.protobuf; the built-in server cannot decode
# protobuf and says so with the same 415 (docs/envtest.md: kubectl's imperative create commands).
_BODY_TYPES = ["application/json", "application/yaml"]
_PATCH_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
}
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def json_response(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        body=orjson.dumps(obj), status=status, content_type="application/json", headers=headers
    )


def error_response(err: StatusError) -> web.Response:
    headers = {"Retry-After": str(err.retry_after)} if err.retry_after is not None else None
    return json_response(err.body(), err.code, headers)


class _Route:
    __slots__ = ("body_name", "group", "name", "namespace", "proxy_path", "rt", "sub", "watch_prefix")

    def __init__(self) -> None:
        self.group = ""
        self.rt: ResourceType | None = None
        self.namespace: str | None = None
        self.name: str | None = None
        self.sub: str | None = None
        self.watch_prefix = False
        self.proxy_path = ""  # services/proxy: what follows ``/proxy`` in the URL
        # A create's name from its body, for the request log (as kube-apiserver's audit fills
        # objectRef.name from the request object); "" with generateName.
        self.body_name = ""


class ApiHandler:
    def __init__(self, settings: HandlerSettings) -> None:
        self.settings = settings
        self.core: ApiCore = settings.core
        self.faults: FaultInjector = settings.faults
        self.log: RequestLog = settings.request_log
        self.service_proxy = ServiceProxy(settings.core)
        self.admission = ValidatingAdmission(settings.core, self.service_proxy)

    async def close(self) -> None:
        await self.service_proxy.close()
        await self.admission.close()

    def _attrs(
        self, rt: ResourceType, operation: str, ns: str | None, name: str, sub: str | None, dry_run: bool
    ) -> AdmissionAttributes:
        return AdmissionAttributes(rt, operation, ns or "", name, sub or "", None, None, dry_run)

    async def _delete_collection(
        self, rt: ResourceType, ns: str | None, matches: Any, opts: DeleteOptions
    ) -> list[Obj]:
        """kube-apiserver's DeleteCollection deletes item by item, each a DELETE through validating
        admission: the first denial is the answer, and what went before it stays deleted."""
        admit = self.admission.may_apply(self._attrs(rt, "DELETE", ns, "", None, opts.dry_run))
        user = current_user.get() or ADMIN
        deleted: list[Obj] = []
        for key in collection_keys(self.core, rt, ns, matches):
            if admit:
                attrs = self._attrs(rt, "DELETE", key[0] or None, key[1], None, opts.dry_run)
                await admitted_delete(self.admission, attrs, user)
            if (obj := delete_item(self.core, rt, key, opts)) is not None:
                deleted.append(obj)
        return deleted

    # -- entry point --------------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        verb, resource, namespace, name = "unknown", "", None, ""
        route: _Route | None = None
        warnings: list[str] = []
        admission_warnings.set(warnings)  # this request's task only
        try:
            if self.settings.access is not None:
                self.settings.access.check(request.method, request.path, request.query, request.headers)
            route, verb = self._route(request)
            if route is not None and route.rt is not None:
                rt = route.rt
                resource = (
                    rt.plural + (f".{rt.group}" if rt.group else "") + (f"/{route.sub}" if route.sub else "")
                )
                namespace, name = route.namespace, route.name or ""
                if rt.key == ("", "namespaces") and name:
                    namespace = name  # RequestInfo: /namespaces/NAME[/status|/finalize] is in NAME
            fault = self.faults.match(request.method, request.path) or self.faults.match(
                verb.upper(), request.path
            )
            if fault is not None:
                if fault.delay:
                    await asyncio.sleep(fault.delay)
                if fault.status:
                    raise FaultInjector.error(fault)
            resp = await self._dispatch(request, route, verb)
        except StatusError as e:
            resp = error_response(e)
        except web.HTTPRequestEntityTooLarge:
            resp = error_response(StatusError.too_large(MAX_BODY))
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception as e:  # a bug here must not take the server down
            log.exception("apiserver.internal_error", method=request.method, path=request.path)
            resp = error_response(StatusError.internal(f"{type(e).__name__}: {e}"))
        for text in warnings:
            resp.headers.add("Warning", warning_header(text))
        if route is not None and not name:
            name = route.body_name
        user = current_user.get() or ADMIN
        self.log.add(
            RequestRecord(
                request.method,
                request.path,
                request.query_string,
                verb,
                resource,
                namespace,
                resp.status,
                name=name,
                user=user.name,
            )
        )
        return resp

    # -- routing ------------------------------------------------------------------------------------

    def _route(self, request: web.Request) -> tuple[_Route | None, str]:
        parts = [p for p in request.path.split("/") if p]
        method = request.method
        if not parts or parts[0] not in ("api", "apis"):
            return None, "discovery" if method == "GET" else "unknown"
        route = _Route()
        if parts[0] == "api":
            if len(parts) < 2:
                return None, "discovery"
            route.group, version, rest = "", parts[1], parts[2:]
        else:
            if len(parts) < 3:
                return None, "discovery"
            route.group, version, rest = parts[1], parts[2], parts[3:]
        if not rest:
            return None, "discovery"
        if rest[0] == "watch":
            route.watch_prefix = True
            rest = rest[1:]
        if (
            len(rest) >= 3
            and rest[0] == "namespaces"
            and not (len(rest) == 3 and rest[2] in ("status", "finalize"))
        ):
            route.namespace, rest = rest[1], rest[2:]
        proxied = len(rest) >= 3 and rest[0] in ("services", "pods") and rest[2] == "proxy"
        if route.namespace is not None and proxied:
            # KIND/NAME/proxy/PATH: the rest of the URL (trailing slash kept) goes to the endpoint.
            prefix = f"/{rest[0]}/{rest[1]}/proxy"
            route.proxy_path = request.path[request.path.index(prefix) + len(prefix) :]
            rest = rest[:3]
        if not rest or len(rest) > 3:
            raise StatusError.no_route()
        rt = self.core.registry.get(route.group, version, rest[0])
        if rt is None:
            raise StatusError.no_route()
        route.rt = rt
        route.name = rest[1] if len(rest) > 1 else None
        route.sub = rest[2] if len(rest) > 2 else None
        if route.namespace is not None and not rt.namespaced:
            raise StatusError.no_route()
        if route.name is not None and rt.namespaced and route.namespace is None:
            raise StatusError.no_route()
        if route.sub is not None and not self._sub_ok(rt, route.sub):
            raise StatusError.no_route()
        return route, self._verb(method, route, request)

    @staticmethod
    def _sub_ok(rt: ResourceType, sub: str) -> bool:
        if sub == "status":
            return rt.status_subresource
        if sub == "finalize":
            return rt.key == ("", "namespaces")
        if sub == "binding":
            return rt.key == ("", "pods")
        if sub == "token":
            return rt.key == ("", "serviceaccounts")
        if sub == "proxy":
            return rt.key in (("", "services"), ("", "pods"))
        return False

    @staticmethod
    def _verb(method: str, route: _Route, request: web.Request) -> str:
        if route.name is None:
            if method == "GET":
                return "watch" if route.watch_prefix or boolean(request.query, "watch") else "list"
            return {"POST": "create", "DELETE": "deletecollection"}.get(method, "unknown")
        if route.sub in ("binding", "token"):
            return "create"
        if route.sub == "proxy":  # a connect subresource: the verb follows the method, as RBAC sees it
            return {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update"}.get(
                method, method.lower()
            )
        if method == "GET":
            return "watch" if route.watch_prefix else "get"
        return {"PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method, "unknown")

    # -- bodies -------------------------------------------------------------------------------------

    async def _raw_body(self, request: web.Request) -> bytes:
        if request.content_length is not None and request.content_length > MAX_BODY:
            raise StatusError.too_large(MAX_BODY)
        return await request.read()

    async def _object_body(self, request: web.Request) -> Any:
        raw = await self._raw_body(request)
        ctype = request.content_type
        if ctype in ("application/json", "application/octet-stream", "") or ctype.endswith("+json"):
            if ctype.endswith("+json") and ctype != "application/json":
                raise StatusError.unsupported_media_type(ctype, _BODY_TYPES)
            try:
                return orjson.loads(raw)
            except orjson.JSONDecodeError as e:
                raise StatusError.bad_request(f"couldn't get version/kind; json parse error: {e}") from None
        if ctype in ("application/yaml", "application/x-yaml", "text/yaml"):
            try:
                return yaml.load(raw, Loader=_YAML_LOADER)
            except yaml.YAMLError as e:
                raise StatusError.bad_request(f"error converting YAML to JSON: {e}") from None
        raise StatusError.unsupported_media_type(ctype, _BODY_TYPES)

    async def _patch_body(self, request: web.Request, rt: ResourceType) -> tuple[str, Any]:
        ctype = request.content_type
        ptype = _PATCH_TYPES.get(ctype)
        accepted = [t for t, p in _PATCH_TYPES.items() if p != "strategic" or rt.strategic_merge]
        if ptype is None or (ptype == "strategic" and not rt.strategic_merge):
            raise StatusError.unsupported_media_type(ctype, accepted)
        raw = await self._raw_body(request)
        try:
            body = yaml.load(raw, Loader=_YAML_LOADER) if ptype == "apply" else orjson.loads(raw)
        except (orjson.JSONDecodeError, yaml.YAMLError) as e:
            raise StatusError.bad_request(f"error decoding patch: {e}") from None
        return ptype, body

    # -- dispatch -----------------------------------------------------------------------------------

    async def _dispatch(self, request: web.Request, route: _Route | None, verb: str) -> web.StreamResponse:
        if route is None:
            return self._discovery(request)
        rt = route.rt
        assert rt is not None
        access = self.settings.access
        answer = access.virtual.get((rt.group, rt.plural, route.sub)) if access is not None else None
        if answer is not None:  # TokenRequest and the reviews: create-only, nothing stored
            if verb != "create":
                raise StatusError.method_not_allowed(request.method)
            body = await self._object_body(request)
            return json_response(answer(route.namespace, route.name, body, current_user.get() or ADMIN), 201)
        if route.sub == "proxy":
            assert route.namespace is not None and route.name is not None
            return await self.service_proxy.forward(
                request, route.namespace, route.name, route.proxy_path, pod=rt.key == ("", "pods")
            )
        q = request.query
        dry_run = dry_run_param(q, verb)
        strict = field_validation(q) == "Strict"
        core = self.core
        ns = route.namespace
        if verb in ("list", "watch", "deletecollection"):
            label_sel = parse_label_selector(q.get("labelSelector"))
            field_sel = parse_field_selector(
                q.get("fieldSelector"), rt.field_labels, rt.kind if rt.is_custom else "", rt.api_version
            )
            if route.name is not None and route.watch_prefix:
                field_sel = parse_field_selector(f"metadata.name={route.name}", (), "", "")

            def matches(obj: dict[str, Any]) -> bool:
                # Field paths are the served version's (regarding.name on events.k8s.io/v1).
                view = obj if field_sel.empty else core.present(rt, obj)
                return label_sel.matches(obj) and field_sel.matches(view)

            selective = not (label_sel.empty and field_sel.empty)
            if verb in ("list", "watch"):
                validate_list_options(q, verb == "watch")
            table = wants_table(request.headers.get("Accept", ""))
            include = q.get("includeObject", "Metadata")
            if verb == "list" and table:
                limit = int_param(q, "limit")
                page, list_meta = select(
                    core,
                    rt,
                    ns,
                    matches,
                    selective=selective,
                    limit=limit if limit and limit > 0 else None,
                    token=q.get("continue"),
                )
                objs = [core.present(rt, obj) for _key, obj in page]
                return json_response(tables.table(rt, objs, core.clock.utcnow(), include, list_meta))
            if verb == "list":
                limit = int_param(q, "limit")
                body = list_bytes(
                    core,
                    rt,
                    ns,
                    matches,
                    selective=selective,
                    limit=limit if limit and limit > 0 else None,
                    token=q.get("continue"),
                )
                return web.Response(body=body, content_type="application/json")
            if verb == "watch":
                timeout = int_param(q, "timeoutSeconds")
                send_initial = q.get("sendInitialEvents")
                params = WatchParams(
                    q.get("resourceVersion"),
                    float(timeout) if timeout else None,  # 0 means "server default", as in kube
                    boolean(q, "allowWatchBookmarks"),
                    None if send_initial is None else send_initial in TRUE,
                    (
                        lambda o: orjson.dumps(
                            tables.table(rt, [core.present(rt, o)], core.clock.utcnow(), include)
                        )
                    )
                    if table
                    else None,
                )
                return await serve_watch(
                    request,
                    core,
                    rt,
                    ns,
                    matches,
                    params,
                    self.settings.bookmark_interval,
                    self.settings.watch_timeout,
                )
            opts = DeleteOptions(await self._optional_json(request), dict(q))
            opts.dry_run = opts.dry_run or dry_run
            deleted = await self._delete_collection(rt, ns, matches, opts)
            items = [core.present(rt, o) for o in deleted]
            return json_response(
                {
                    "kind": rt.list_kind,
                    "apiVersion": rt.api_version,
                    "metadata": {"resourceVersion": str(core.storage.rv)},
                    "items": items,
                }
            )
        if verb == "create" and route.sub == "binding":
            assert route.name is not None
            return json_response(
                self._bind(rt, ns or "", route.name, await self._object_body(request), dry_run), 201
            )
        if verb == "create":
            if rt.namespaced and ns is None:
                raise StatusError.method_not_allowed(request.method)
            body = await self._object_body(request)
            meta = body.get("metadata") if isinstance(body, dict) else None
            route.body_name = str((meta or {}).get("name") or "")
            obj = await admitted_write(
                self.admission,
                self._attrs(rt, "CREATE", ns, str((meta or {}).get("name") or ""), None, dry_run),
                lambda d: core.create(rt, ns, body, dry_run=d, strict=strict),
                current_user.get() or ADMIN,
                body=body,
            )
            return json_response(core.present(rt, obj), 201)
        name = route.name
        assert name is not None
        if verb == "get":
            obj = core.present(rt, core.get(rt, ns, name))
            if wants_table(request.headers.get("Accept", "")):
                meta = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
                return json_response(
                    tables.table(rt, [obj], core.clock.utcnow(), q.get("includeObject", "Metadata"), meta)
                )
            return json_response(obj)
        if verb == "update":
            body = await self._object_body(request)
            writer = field_manager(request, q)
            obj = await admitted_write(
                self.admission,
                self._attrs(rt, "UPDATE", ns, name, route.sub, dry_run),
                lambda d: core.update(
                    rt, ns, name, body, subresource=route.sub, dry_run=d, strict=strict, manager=writer
                ),
                current_user.get() or ADMIN,
            )
            return json_response(core.present(rt, obj))
        if verb == "patch":
            if route.sub == "finalize":
                raise StatusError.method_not_allowed(request.method)
            ptype, body = await self._patch_body(request, rt)
            if ptype != "apply" and "force" in q:
                raise StatusError.invalid(
                    "meta.k8s.io",
                    "PatchOptions",
                    "",
                    [
                        {
                            "reason": "FieldValueForbidden",
                            "field": "force",
                            "message": "Forbidden: may not be specified for non-apply patch",
                        }
                    ],
                )
            manager = q.get("fieldManager")
            if manager is not None and len(manager) > 128:
                raise StatusError(
                    422, "Invalid", "fieldManager: Too long: may not be more than 128 bytes", {}
                )
            created = False
            if ptype == "apply":
                exists = core.storage.get(rt.key, ns or "", name) is not None
                force = boolean(q, "force")

                def apply(d: bool) -> dict[str, Any]:
                    nonlocal created
                    applied, created = server_side_apply(
                        core,
                        rt,
                        ns,
                        name,
                        body,
                        subresource=route.sub,
                        dry_run=d,
                        field_manager=manager,
                        force=force,
                        strict=strict,
                    )
                    return applied

                operation = "UPDATE" if exists else "CREATE"
                attrs = self._attrs(rt, operation, ns, name, route.sub, dry_run)
                obj = await admitted_write(self.admission, attrs, apply, current_user.get() or ADMIN)
            else:
                writer = field_manager(request, q)
                obj = await admitted_write(
                    self.admission,
                    self._attrs(rt, "UPDATE", ns, name, route.sub, dry_run),
                    lambda d: core.patch(rt, ns, name, ptype, body, route.sub, d, writer, strict),
                    current_user.get() or ADMIN,
                )
            return json_response(core.present(rt, obj), 201 if created else 200)
        if verb == "delete":
            if route.sub is not None:
                raise StatusError.method_not_allowed(request.method)
            opts = DeleteOptions(await self._optional_json(request), dict(q))
            opts.dry_run = opts.dry_run or dry_run
            await admitted_delete(
                self.admission,
                self._attrs(rt, "DELETE", ns, name, None, opts.dry_run),
                current_user.get() or ADMIN,
            )
            obj, removed = delete_object(core, rt, ns, name, opts)
            if removed and not rt.return_deleted_object:
                return json_response(success_status(rt, obj))
            return json_response(core.present(rt, obj))
        raise StatusError.method_not_allowed(request.method)

    def _bind(self, rt: ResourceType, ns: str, name: str, body: Any, dry_run: bool) -> dict[str, Any]:
        target = (body or {}).get("target") or {} if isinstance(body, dict) else {}
        node = target.get("name")
        if not node:
            raise StatusError.invalid(
                "",
                "Binding",
                name,
                [{"reason": "FieldValueRequired", "field": "target.name", "message": "Required value"}],
            )
        pod = self.core.get(rt, ns, name)
        current = (pod.get("spec") or {}).get("nodeName")
        if current:
            raise StatusError.conflict(
                rt.group, rt.plural, name, f'pod {name} is already assigned to node "{current}"'
            )
        if pod["metadata"].get("deletionTimestamp"):
            raise StatusError.conflict(
                rt.group, rt.plural, name, f"pod {name} is being deleted, cannot be assigned to a host"
            )
        new = clone(pod)
        new["spec"]["nodeName"] = node
        conds = [
            c for c in new.setdefault("status", {}).get("conditions") or [] if c.get("type") != "PodScheduled"
        ]
        conds.append(
            {
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": self.core.now(),
            }
        )
        new["status"]["conditions"] = conds
        if not dry_run:
            self.core.storage.put(rt.key, new, pod)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    async def _optional_json(self, request: web.Request) -> Any:
        if not request.can_read_body:
            return None
        raw = await self._raw_body(request)
        if not raw.strip():
            return None
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            raise StatusError.bad_request(f"couldn't get version/kind; json parse error: {e}") from None

    def _discovery(self, request: web.Request) -> web.StreamResponse:
        if request.method != "GET":
            raise StatusError.method_not_allowed(request.method)
        path = request.path.rstrip("/") or "/"
        reg = self.core.registry
        if path == "/version":
            return json_response(discovery.VERSION_INFO)
        if path in ("/healthz", "/readyz", "/livez"):
            return web.Response(text="ok", content_type="text/plain")
        if path == "/api":
            return json_response(discovery.api_versions(self.settings.address))
        if path == "/apis":
            return json_response(discovery.api_group_list(reg))
        parts = [p for p in path.split("/") if p]
        doc: dict[str, Any] | None = None
        if parts[:2] == ["openapi", "v3"]:
            if len(parts) == 2:
                return json_response(openapi.openapi_index(reg))
            rest = parts[2:]
            if rest[0] == "api" and len(rest) == 2:
                doc = openapi.openapi_group_version(reg, "", rest[1])
            elif rest[0] == "apis" and len(rest) == 3:
                doc = openapi.openapi_group_version(reg, rest[1], rest[2])
        elif len(parts) == 2 and parts[0] == "api":
            doc = discovery.resource_list(reg, "", parts[1])
        elif len(parts) == 2 and parts[0] == "apis":
            doc = discovery.api_group(reg, parts[1])
        elif len(parts) == 3 and parts[0] == "apis":
            doc = discovery.resource_list(reg, parts[1], parts[2])
        if doc is None:
            raise StatusError.no_route()
        return json_response(doc)
