"""Reaching the current attempt's Ray dashboard: the head Pod's address and the Ray token.

KubeRay dials ``status.dashboardURL`` (the head Service's DNS name). The operator here talks to
the head Pod's IP from the Pod cache instead, as the RayService controller does: it works from
outside the cluster network's DNS (``kuberay-operator run`` on a laptop, the demo) and skips a
Service hop. ``status.dashboardURL`` keeps KubeRay's value, for the submitter and for users.
"""

from __future__ import annotations

from typing import Any

from controllers import constants as C
from controllers.common.heads import TokenSecret, dashboard_client, head_pod, head_token, token_from_secret
from controllers.ray.dashboard import DashboardError
from controllers.ray.jobs import RayJobs
from controllers.rayjob.context import JobContext
from kuberay_py.client import ApiError
from kuberay_py.client.resources import SECRETS
from kuberay_py.log import get_logger

__all__ = ["NoDashboard", "ray_jobs", "stop_ray_job"]

log = get_logger(__name__)


class NoDashboard(Exception):
    """No head Pod to talk to yet (or its token cannot be read); the message says which."""


async def _token(ctx: JobContext, pod: dict[str, Any]) -> str | None:
    source = head_token(pod)
    if not isinstance(source, TokenSecret):
        return source
    uid = str((pod.get("metadata") or {}).get("uid", ""))
    if ctx.memo.token is not None and ctx.memo.token[0] == uid:
        return ctx.memo.token[1]
    try:
        secret = await ctx.deps.client.get(SECRETS, source.name, ctx.ref.namespace)
    except ApiError as exc:
        raise NoDashboard(f"cannot read the Ray auth token Secret {source.name}: {exc}") from exc
    try:
        token = token_from_secret(secret, source.key)
    except ValueError as exc:
        raise NoDashboard(str(exc)) from exc
    ctx.memo.token = (uid, token)
    return token


async def ray_jobs(ctx: JobContext) -> RayJobs:
    """A job client for the current cluster's head; raises NoDashboard without a running head."""
    cluster_name = str(ctx.status.get("rayClusterName") or "")
    pod = head_pod(ctx.deps.cache, ctx.ref.namespace, cluster_name)
    # Running with an address is enough: a SidecarMode head whose submitter container finished is
    # unready (one container terminated) yet its dashboard still answers.
    status = (pod or {}).get("status") or {}
    if pod is None or status.get("phase") != "Running" or not status.get("podIP"):
        raise NoDashboard(f"the head Pod of RayCluster {ctx.ref.namespace}/{cluster_name} is not running")
    cluster = ctx.deps.cache.get(C.RAYCLUSTERS, cluster_name, ctx.ref.namespace)
    token = await _token(ctx, pod)
    ctx.memo.polls += 1
    return RayJobs(dashboard_client(ctx.dashboards, pod, cluster, token))


async def stop_ray_job(ctx: JobContext) -> None:
    """Best effort ``POST /api/jobs/<id>/stop`` (deadline, suspend, retry, deletion)."""
    job_id = str(ctx.status.get("jobId") or "")
    if not job_id:
        return
    try:
        ray = await ray_jobs(ctx)
        stopped = await ray.stop(job_id)
    except (NoDashboard, DashboardError) as exc:
        log.info("could not stop the Ray job", rayjob=ctx.ref.key, job_id=job_id, error=str(exc))
        return
    if stopped:
        log.info("stopped the Ray job", rayjob=ctx.ref.key, job_id=job_id)
