"""The non-Pod children of a RayCluster: autoscaler RBAC, Ingress and Services (create-only).

Services are read from the (owned, watched) Service cache. ServiceAccounts, Roles, RoleBindings
and Ingresses are not worth a cluster-wide informer: the first reconcile after start-up GETs
each one once and remembers (in the cluster's memo) that it exists, so later no-op reconciles
send no request at all. A child deleted behind our back is recreated after an operator restart.
"""

from __future__ import annotations

from collections.abc import Callable

from controllers import constants as C
from controllers.common import cluster as common
from controllers.common.events import create_once, write_with_events
from controllers.common.objects import annotations_of
from controllers.raycluster.auth import auth_secret_name, build_auth_secret, generates_auth_secret
from controllers.raycluster.autoscaler import (
    autoscaler_role,
    autoscaler_role_binding,
    autoscaler_service_account,
    autoscaler_service_account_name,
)
from controllers.raycluster.context import ClusterContext
from controllers.raycluster.ingress import build_ingress
from controllers.raycluster.route import ROUTES, build_route
from controllers.raycluster.services import (
    build_head_service,
    build_headless_worker_service,
    build_serve_service,
)
from kuberay_py.client import NotFound, Resource
from kuberay_py.client.resources import INGRESSES, ROLEBINDINGS, ROLES, SECRETS, SERVICEACCOUNTS, SERVICES
from kuberay_py.objects import Obj

__all__ = ["event_noun", "reconcile_children", "service"]

# KubeRay's Normal "Created ..." events name the kind in lower-case words; users alert on them.
_EVENT_NOUNS = {
    "Service": "service",
    "ServiceAccount": "service account",
    "Role": "role",
    "RoleBinding": "role binding",
    "Ingress": "ingress",
    "Secret": "secret",
    "Route": "route",
}


def event_noun(kind: str) -> str:
    """How KubeRay's events name a kind ("Created service account NS/x")."""
    return _EVENT_NOUNS.get(kind, kind)


def service(ctx: ClusterContext, name: str) -> Obj | None:
    """A Service from the cache, or the one we just created while the watch catches up."""
    cached = ctx.deps.cache.get(SERVICES, name, ctx.ref.namespace)
    if cached is not None:
        return cached
    return ctx.memo.fresh_services.get(name)


async def reconcile_children(ctx: ClusterContext) -> None:
    cluster = ctx.cluster
    if generates_auth_secret(cluster):
        await _ensure(
            ctx,
            SECRETS,
            lambda: build_auth_secret(cluster),
            auth_secret_name(cluster),
            None,  # KubeRay's createAuthSecret sends no event
            C.EVENT_FAILED_TO_CREATE_SECRET,
        )
    if common.is_autoscaling(cluster):
        await _autoscaler_rbac(ctx)
    if (common.spec_of(cluster).get("headGroupSpec") or {}).get("enableIngress"):
        openshift = ctx.deps.options.openshift
        if openshift is not None and await openshift.routes_instead_of_ingress():
            await _route(ctx)
        else:
            await _ingress(ctx)
    await _service(
        ctx, build_head_service(cluster, cluster_ip_service=ctx.deps.options.head_cluster_ip_service)
    )
    groups = common.spec_of(cluster).get("workerGroupSpecs") or []
    if any(common.num_of_hosts(g) > 1 for g in groups):
        await _service(ctx, build_headless_worker_service(cluster))
    if str(annotations_of(cluster).get(C.ENABLE_SERVE_SERVICE_ANNOTATION_KEY, "")).lower() == "true":
        serve = build_serve_service(cluster)
        if serve is not None:
            await _service(ctx, serve)


async def _autoscaler_rbac(ctx: ClusterContext) -> None:
    cluster = ctx.cluster
    sa = autoscaler_service_account_name(cluster)
    user_named = bool(
        ((common.spec_of(cluster).get("headGroupSpec") or {}).get("template") or {})
        .get("spec", {})
        .get("serviceAccountName")
    )
    if user_named and sa != ctx.ref.name:
        await _require_user_service_account(ctx, sa)
    else:
        await _ensure(
            ctx,
            SERVICEACCOUNTS,
            lambda: autoscaler_service_account(cluster),
            sa,
            C.EVENT_CREATED_SERVICE_ACCOUNT,
            C.EVENT_FAILED_TO_CREATE_SERVICE_ACCOUNT,
        )
    await _ensure(
        ctx,
        ROLES,
        lambda: autoscaler_role(cluster),
        ctx.ref.name,
        C.EVENT_CREATED_ROLE,
        C.EVENT_FAILED_TO_CREATE_ROLE,
    )
    await _ensure(
        ctx,
        ROLEBINDINGS,
        lambda: autoscaler_role_binding(cluster),
        ctx.ref.name,
        C.EVENT_CREATED_ROLE_BINDING,
        C.EVENT_FAILED_TO_CREATE_ROLE_BINDING,
    )


async def _ensure(
    ctx: ClusterContext, res: Resource, build: Callable[[], Obj], name: str, created: str | None, failed: str
) -> None:
    if not await _known_to_exist(ctx, res, name):
        await _create(ctx, res, build(), name, created, failed)
        ctx.memo.known.add((res.kind, name))


async def _known_to_exist(ctx: ClusterContext, res: Resource, name: str) -> bool:
    """Known from an earlier reconcile, or found by one GET (then remembered)."""
    if (res.kind, name) in ctx.memo.known:
        return True
    try:
        await ctx.deps.client.get(res, name, ctx.ref.namespace)
    except NotFound:
        return False
    ctx.memo.known.add((res.kind, name))
    return True


async def _ingress(ctx: ClusterContext) -> None:
    """Create the Ingress, and bring an owned one back to the spec once per RayCluster generation.

    The drift check runs when the generation changes (or after a restart), not on every
    reconcile, so a converged cluster still costs no request.
    """
    cluster = ctx.cluster
    desired = build_ingress(cluster)
    ns, name = ctx.ref.namespace, desired["metadata"]["name"]
    marker, known = ctx.memo.generation_marker("Ingress", cluster, name), ctx.memo.known
    if marker is None:
        return
    try:
        current = await ctx.deps.client.get(INGRESSES, name, ns)
    except NotFound:
        created = await _create(
            ctx, INGRESSES, desired, name, C.EVENT_CREATED_INGRESS, C.EVENT_FAILED_TO_CREATE_INGRESS
        )
        if created is not None:  # else someone raced us; the next generation's check settles it
            known.add(marker)
        return
    owners = current["metadata"].get("ownerReferences") or []
    if not any(o.get("uid") == cluster["metadata"]["uid"] for o in owners):
        ctx.deps.recorder.event(
            cluster,
            C.WARNING,
            C.EVENT_FAILED_TO_UPDATE_INGRESS,
            f"Ingress {ns}/{name} exists and is not owned by this RayCluster; leaving it alone",
        )
        known.add(marker)
        return
    annotations = desired["metadata"].get("annotations") or {}
    current_spec = current.get("spec") or {}
    drifted = any(current_spec.get(k) != v for k, v in desired["spec"].items())
    if drifted or annotations_of(current) != annotations:
        body = dict(current)
        body["spec"] = {**current_spec, **desired["spec"]}
        body["metadata"] = {**current["metadata"], "annotations": annotations}
        await write_with_events(
            ctx.deps.recorder,
            cluster,
            ctx.deps.client.update(INGRESSES, body),
            failed=(C.EVENT_FAILED_TO_UPDATE_INGRESS, f"Failed to update Ingress {ns}/{name}: {{error}}"),
            done=(C.EVENT_UPDATED_INGRESS, f"Updated Ingress {ns}/{name}"),
        )
    known.add(marker)


async def _route(ctx: ClusterContext) -> None:
    """OpenShift: the head Route, created when no Route labelled with this cluster exists (never
    updated, as KubeRay); remembered once seen, so a converged cluster costs no request."""
    cluster = ctx.cluster
    desired = build_route(cluster)
    name = desired["metadata"]["name"]
    if ("Route", name) in ctx.memo.known:
        return
    selector = f"{C.RAY_CLUSTER_LABEL_KEY}={cluster['metadata']['name']}"
    existing = (await ctx.deps.client.list(ROUTES, ctx.ref.namespace, label_selector=selector))["items"]
    if not existing:
        await _create(ctx, ROUTES, desired, name, C.EVENT_CREATED_ROUTE, C.EVENT_FAILED_TO_CREATE_ROUTE)
    ctx.memo.known.add(("Route", name))


async def _require_user_service_account(ctx: ClusterContext, sa: str) -> None:
    if await _known_to_exist(ctx, SERVICEACCOUNTS, sa):
        return
    ns = ctx.ref.namespace
    ctx.deps.recorder.event(
        ctx.cluster,
        C.WARNING,
        C.EVENT_AUTOSCALER_SERVICE_ACCOUNT_NOT_FOUND,
        f"The autoscaler ServiceAccount {ns}/{sa} named in the head Pod template does not exist; "
        "create it, or remove serviceAccountName to let KubeRay create one.",
    )
    raise NotFound(404, "NotFound", f'serviceaccounts "{sa}" not found')


async def _service(ctx: ClusterContext, body: Obj) -> None:
    ns = ctx.ref.namespace
    name = body["metadata"]["name"]
    marker = ("Service", name)
    memo = ctx.memo
    if ctx.deps.cache.get(SERVICES, name, ns) is not None:
        memo.known.discard(marker)
        memo.fresh_services.pop(name, None)
        return  # KubeRay never updates an existing Service
    if marker in memo.known:
        return  # created by us, not yet in the cache: creating again would only 409
    created = await _create(
        ctx, SERVICES, body, name, C.EVENT_CREATED_SERVICE, C.EVENT_FAILED_TO_CREATE_SERVICE
    )
    if created is not None:
        memo.known.add(marker)
        memo.fresh_services[name] = created


async def _create(
    ctx: ClusterContext, res: Resource, body: Obj, name: str, created: str | None, failed: str
) -> Obj | None:
    """Create a child with its events (``created=None``: no Normal one); None when it already
    exists (someone raced us)."""
    ref = f"{res.kind} {ctx.ref.namespace}/{name}"
    done = (
        None if created is None else (created, f"Created {event_noun(res.kind)} {ctx.ref.namespace}/{name}")
    )
    return await create_once(
        ctx.deps.recorder,
        ctx.cluster,
        ctx.deps.client.create(res, body, ctx.ref.namespace),
        failed=(failed, f"Failed to create {ref}: {{error}}"),
        done=done,
    )
