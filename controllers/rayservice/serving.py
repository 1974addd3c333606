"""Phase: make a cluster serve -- the head's serve label, the Serve config, application statuses.

Nothing here waits on a head: the serve label follows the shared health checker's latest result,
and the dashboard is asked once per reconcile; a head that is not ready yet brings the RayService
back through the Pod watch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controllers import constants as c
from controllers.api.rayservice import ServeConfigError, parse_serve_config
from controllers.common.events import write_with_events
from controllers.common.heads import TokenSecret, dashboard_client, head_pod, head_token, token_from_secret
from controllers.common.objects import labels_of
from controllers.common.pods import is_running_and_ready
from controllers.ray.dashboard import DashboardClient, DashboardClosed, DashboardError, DashboardHTTPError
from controllers.rayservice.cluster import cluster_spec_of
from controllers.rayservice.context import ServiceContext
from controllers.rayservice.hashing import is_zero_downtime_enabled, should_prepare_new_cluster
from controllers.rayservice.heads import head_target
from controllers.rayservice.options import COND_SERVE_CONFIG_VALID
from controllers.rayservice.serve import application_statuses, needs_submit
from controllers.rayservice.shapes import AppStatus, ClusterRole, role_key
from kuberay_py.client import NotFound
from kuberay_py.client.resources import PODS, SECRETS
from kuberay_py.log import get_logger
from kuberay_py.objects import Obj

__all__ = ["ServeResult", "auth_token", "reconcile_serve", "serve_applications", "submit", "sync_head_label"]

log = get_logger(__name__)


@dataclass
class ServeResult:
    """What one cluster's Serve applications look like this round."""

    ready: bool = False  # every application RUNNING and nothing submitted just now
    apps: dict[str, Any] | None = None  # None: unknown this round (keep the previous statuses)
    in_progress: bool = False  # worth polling again soon


async def sync_head_label(ctx: ServiceContext, cluster: Obj | None) -> None:
    """``ray.io/serve`` on the head from the checker's latest result; ``false`` when excluded."""
    if cluster is None:
        return
    ns = ctx.ref.namespace
    pod = head_pod(ctx.deps.cache, ns, cluster["metadata"]["name"])
    if pod is None:
        return  # a normal state (KubeRay #4686): the Pod watch brings us back
    current = labels_of(pod).get(c.RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY)
    if (ctx.svc.get("spec") or {}).get("excludeHeadPodFromServeSvc"):
        desired = c.SERVE_LABEL_FALSE
    else:
        target = head_target(pod, ctx.ref.key)
        result = ctx.checker.latest(pod["metadata"]["uid"])
        if target is not None and (result is None or not ctx.checker.is_fresh(target.pod_uid)):
            ctx.checker.request(target)  # its result change enqueues us; never wait here
        if target is None:
            desired = c.SERVE_LABEL_FALSE
        elif result is None or result.address != f"{target.ip}:{target.port}":
            return  # no verdict yet for this Pod: keep the label it has
        else:
            desired = c.SERVE_LABEL_TRUE if result.healthy else c.SERVE_LABEL_FALSE
    if current == desired:
        return
    pod_ref = f"{ns}/{pod['metadata']['name']}"
    patch = {"metadata": {"labels": {c.RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY: desired}}}
    try:
        await write_with_events(
            ctx.deps.recorder,
            ctx.svc,
            ctx.deps.client.patch(PODS, pod["metadata"]["name"], patch, ns),
            failed=(
                c.EVENT_FAILED_TO_UPDATE_HEAD_POD_SERVE_LABEL,
                f"Failed to update the serve label to {desired!r} for the Head Pod {pod_ref}: {{error}}",
            ),
            done=(
                c.EVENT_UPDATED_HEAD_POD_SERVE_LABEL,
                f"Updated the serve label to {desired!r} for the Head Pod {pod_ref}",
            ),
            expected=(NotFound,),
        )
    except NotFound:
        return


async def serve_applications(
    ctx: ServiceContext, active: Obj | None, pending: Obj | None
) -> tuple[ServeResult, ServeResult]:
    """Serve on the pending cluster if there is one, else on the active one unless it is about to
    be replaced; their application statuses go into the status. Returns (active, pending)."""
    active_serve, pending_serve = ServeResult(), ServeResult()
    spec = ctx.svc.get("spec") or {}
    if pending is not None:
        pending_serve = await reconcile_serve(ctx, pending)
    elif active is not None and not should_prepare_new_cluster(
        active,
        None,
        cluster_spec_of(ctx.svc),
        pending_is_serving=False,
        zero_downtime=is_zero_downtime_enabled(spec, dict(ctx.deps.options.env)),
    ):
        active_serve = await reconcile_serve(ctx, active)
    _put_apps(ctx, "pending", pending_serve.apps)
    _put_apps(ctx, "active", active_serve.apps)
    return active_serve, pending_serve


def _put_apps(ctx: ServiceContext, role: ClusterRole, apps: dict[str, AppStatus] | None) -> None:
    sub = ctx.status.get(role_key(role))
    if not sub or not sub.get("rayClusterName") or apps is None:
        return
    sub["applicationStatuses"] = apps


async def reconcile_serve(ctx: ServiceContext, cluster: Obj) -> ServeResult:
    """Read the cluster's Serve applications, submitting serveConfigV2 when it needs to go."""
    cluster_name = cluster["metadata"]["name"]
    pod = head_pod(ctx.deps.cache, ctx.ref.namespace, cluster_name)
    if pod is None or not is_running_and_ready(pod):
        return ServeResult()  # the head Pod's status change wakes us up
    try:
        token = await auth_token(ctx, pod)
    except (NotFound, ValueError) as exc:
        ctx.warn("FailedToGetRayAuthToken", f"Cannot read the Ray auth token of {cluster_name}: {exc}")
        return ServeResult()  # the Secret's creation does not wake us; the slow refresh will
    try:
        dashboard = dashboard_client(ctx.dashboards, pod, cluster, token)
        details = await dashboard.get_serve_details()
    except DashboardClosed:
        log.info(
            "dashboard clients closed (shutting down); serve status left for the next leader",
            cluster=cluster_name,
        )
        return ServeResult(in_progress=True)
    except DashboardError as exc:
        log.warning("failed to get Serve application statuses", cluster=cluster_name, error=str(exc))
        return ServeResult(in_progress=True)
    config_text = (ctx.svc.get("spec") or {}).get("serveConfigV2") or ""
    submit_now, why = needs_submit(
        ctx.memory.serve_configs.get(ctx.ref.key, cluster_name), config_text, details
    )
    submitted = False
    rejected = ctx.memo.rejected.get(cluster_name) == config_text
    if submit_now and config_text and not rejected:
        submitted = await submit(ctx, cluster, dashboard, config_text, why)
        rejected = ctx.memo.rejected.get(cluster_name) == config_text
    ready = details.all_running and not submitted
    # A config Ray rejected stays rejected until serveConfigV2 changes: nothing to poll for.
    in_progress = (not details.all_running or submitted) and not rejected
    return ServeResult(ready=ready, apps=application_statuses(details), in_progress=in_progress)


async def submit(
    ctx: ServiceContext, cluster: Obj, dashboard: DashboardClient, config_text: str, why: str
) -> bool:
    """PUT serveConfigV2 to the cluster; True when Ray accepted it."""
    name = cluster["metadata"]["name"]
    ref = f"{cluster['metadata']['namespace']}/{name}"
    try:
        await dashboard.put_serve_applications(parse_serve_config(config_text))
    except DashboardClosed:
        return False  # shutting down: not Ray's failure, so no Warning; the next leader submits
    except (DashboardError, ServeConfigError) as exc:
        ctx.warn(
            c.EVENT_FAILED_TO_UPDATE_SERVE_APPLICATIONS,
            f"Failed to update serve applications to the RayCluster {ref}: {exc}",
        )
        if isinstance(exc, DashboardHTTPError) and 400 <= exc.status < 500:
            # Ray rejected the config itself; the running applications are untouched.
            ctx.memo.rejected[name] = config_text
            ctx.set_condition(
                COND_SERVE_CONFIG_VALID, "False", "ServeConfigRejected", exc.body.strip()[:1000]
            )
        return False
    log.info("submitted serve config", cluster=ref, reason=why)
    ctx.memory.serve_configs.put(ctx.ref.key, name, config_text)
    ctx.memo.rejected.pop(name, None)
    ctx.memo.warned.pop(c.EVENT_FAILED_TO_UPDATE_SERVE_APPLICATIONS, None)
    ctx.set_condition(
        COND_SERVE_CONFIG_VALID,
        "True",
        "ServeConfigAccepted",
        f"Ray accepted serveConfigV2 on the RayCluster {ref}",
    )
    ctx.deps.recorder.event(
        ctx.svc,
        c.NORMAL,
        c.EVENT_UPDATED_SERVE_APPLICATIONS,
        f"Updated serve applications to the RayCluster {ref}",
    )
    return True


async def auth_token(ctx: ServiceContext, pod: Obj) -> str | None:
    """The head's Ray auth token (literal env or Secret), read once per head Pod."""
    source = head_token(pod)
    if not isinstance(source, TokenSecret):
        return source
    uid = pod["metadata"]["uid"]
    cached = ctx.memory.token(uid)
    if cached is not None:
        return cached
    secret = await ctx.deps.client.get(SECRETS, source.name, pod["metadata"]["namespace"])
    token = token_from_secret(secret, source.key)
    ctx.memory.remember_token(uid, token)
    return token
