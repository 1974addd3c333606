"""The Pod phase of a RayCluster reconcile: head, worker groups, suspend.

Every create and delete is recorded in :class:`~kuberay_py.controller.Expectations` before the
next decision trusts the cache again, so a lagging informer cannot make us create a Pod twice
(KubeRay #715/#3286). Creates go out in slow-start batches (1, 2, 4 …) like the ReplicaSet
controller: a quota or admission failure costs one request, not hundreds.
"""

from __future__ import annotations

import asyncio
import secrets
import string
from collections.abc import Callable

from controllers import constants as C
from controllers.common import cluster as common
from controllers.common.conditions import is_condition_true
from controllers.common.events import delete_once, write_with_events
from controllers.common.objects import annotations_of, labels_of
from controllers.common.pods import live_pods
from controllers.raycluster.context import ClusterContext
from controllers.raycluster.pod import WorkerPods, build_head_pod
from controllers.raycluster.scaling import plan_group, should_delete_pod
from controllers.spechash import recreate_hash
from kuberay_py.client import ApiError
from kuberay_py.client.resources import PODS
from kuberay_py.log import get_logger
from kuberay_py.objects import Obj

__all__ = ["ReplicaFailure", "delete_all_pods", "reconcile_pods"]

log = get_logger(__name__)


class ReplicaFailure(Exception):
    """A Pod write failed; ``reason`` becomes the ReplicaFailure condition's reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


# head? -> (Normal event, Warning event, ReplicaFailure reason)
_DELETE_NAMES = {
    True: (C.EVENT_DELETED_HEAD_POD, C.EVENT_FAILED_TO_DELETE_HEAD_POD, C.REASON_FAILED_DELETE_HEAD_POD),
    False: (
        C.EVENT_DELETED_WORKER_POD,
        C.EVENT_FAILED_TO_DELETE_WORKER_POD,
        C.REASON_FAILED_DELETE_WORKER_POD,
    ),
}
# head? -> (ReplicaFailure reason, Warning event, Normal event)
_CREATE_NAMES = {
    True: (C.REASON_FAILED_CREATE_HEAD_POD, C.EVENT_FAILED_TO_CREATE_HEAD_POD, C.EVENT_CREATED_HEAD_POD),
    False: (
        C.REASON_FAILED_CREATE_WORKER_POD,
        C.EVENT_FAILED_TO_CREATE_WORKER_POD,
        C.EVENT_CREATED_WORKER_POD,
    ),
}


async def reconcile_pods(ctx: ClusterContext) -> None:
    """Bring the head and every worker group to the spec; suspend deletes them all."""
    key = ctx.ref.key
    if not ctx.expectations.satisfied(key):
        log.debug(
            "waiting for the cache to catch up with our writes", key=key, **ctx.expectations.pending(key)
        )
        return
    spec = common.spec_of(ctx.cluster)
    conditions_gate = ctx.deps.options.gates.status_conditions
    suspending = is_condition_true(
        (ctx.cluster.get("status") or {}).get("conditions"), C.COND_RAYCLUSTER_SUSPENDING
    )
    if suspending or (spec.get("suspend") and not conditions_gate):
        # Gate off (KubeRay's path before RayClusterStatusConditions): Pods go at once.
        await delete_all_pods(ctx, f"{C.RAY_CLUSTER_LABEL_KEY}={ctx.ref.name}")
        return
    if spec.get("suspend"):
        return  # the status records RayClusterSuspending first; Pods go in the next round
    heads = [
        p for p in live_pods(ctx.pods) if labels_of(p).get(C.RAY_NODE_TYPE_LABEL_KEY) == C.NODE_TYPE_HEAD
    ]
    if await _recreate_for_upgrade(ctx, heads):
        return
    if ctx.deps.options.batch_scheduler is not None:  # e.g. Volcano's PodGroup, before any Pod
        await ctx.deps.options.batch_scheduler.submit_cluster(ctx.deps.client, ctx.cluster)
    await _reconcile_head(ctx, heads)
    # Terminating workers too: they count until gone (scaling.plan_group).
    workers = [p for p in ctx.pods if labels_of(p).get(C.RAY_NODE_TYPE_LABEL_KEY) == C.NODE_TYPE_WORKER]
    failure: ReplicaFailure | None = None
    for group in spec.get("workerGroupSpecs") or []:
        group_pods = [
            p for p in workers if labels_of(p).get(C.RAY_NODE_GROUP_LABEL_KEY) == group.get("groupName")
        ]
        try:
            await _reconcile_group(ctx, group, group_pods)
        except ReplicaFailure as exc:
            failure = failure or exc
    if failure is not None:
        raise failure


async def delete_all_pods(ctx: ClusterContext, selector: str) -> None:
    """Suspend: one DeleteCollection, then expect every live Pod to go."""
    live = live_pods(ctx.pods)
    if not live:
        return
    try:
        await write_with_events(
            ctx.deps.recorder,
            ctx.cluster,
            ctx.deps.client.delete_collection(PODS, ctx.ref.namespace, label_selector=selector),
            failed=(C.EVENT_FAILED_TO_DELETE_POD_COLLECTION, "{error}"),
            done=(C.EVENT_DELETED_POD, f"Deleted {len(live)} Pods matching {selector}"),
        )
    except ApiError as exc:
        raise ReplicaFailure(C.REASON_FAILED_DELETE_ALL_PODS, str(exc)) from exc
    for pod in live:
        ctx.expectations.expect_deleted(ctx.ref.key, pod)


async def _recreate_for_upgrade(ctx: ClusterContext, heads: list[Obj]) -> bool:
    """``upgradeStrategy: Recreate`` (KubeRay's shouldRecreatePodsForUpgrade): True when every Pod
    was deleted because the head's spec hash is out of date.

    A head stamped by another operator version only gets both annotations re-stamped: its hash
    may come from another encoder, and a version change alone must never restart a cluster.
    """
    spec = common.spec_of(ctx.cluster)
    if (spec.get("upgradeStrategy") or {}).get("type") != C.UPGRADE_STRATEGY_RECREATE or len(heads) != 1:
        return False
    head = heads[0]
    annotations = annotations_of(head)
    goal = recreate_hash(spec)
    version = str(annotations.get(C.KUBERAY_VERSION_KEY) or "")
    if version and version != C.KUBERAY_VERSION:
        stamp = {C.KUBERAY_VERSION_KEY: C.KUBERAY_VERSION, C.UPGRADE_STRATEGY_RECREATE_HASH_KEY: goal}
        body = {"metadata": {"annotations": stamp}}
        await ctx.deps.client.patch(PODS, head["metadata"]["name"], body, ctx.ref.namespace)
        return False
    current = str(annotations.get(C.UPGRADE_STRATEGY_RECREATE_HASH_KEY) or "")
    if not current or current == goal:
        return False
    log.info("recreating every Pod: the Pod spec changed", key=ctx.ref.key, was=current, now=goal)
    await delete_all_pods(ctx, f"{C.RAY_CLUSTER_LABEL_KEY}={ctx.ref.name}")
    return True


async def _reconcile_head(ctx: ClusterContext, heads: list[Obj]) -> None:
    if len(heads) > 1:
        names = ", ".join(sorted(p["metadata"]["name"] for p in heads))
        raise ReplicaFailure(
            C.REASON_FAILED_CREATE_HEAD_POD, f"{len(heads)} head Pods found ({names}); expected 1"
        )
    if len(heads) == 1:
        delete, why = should_delete_pod(heads[0])
        if delete:
            await _delete(ctx, heads[0], head=True, why=why)
        return
    provisioned = is_condition_true(
        (ctx.cluster.get("status") or {}).get("conditions"), C.COND_RAYCLUSTER_PROVISIONED
    )
    restart_disabled = annotations_of(ctx.cluster).get(C.DISABLE_PROVISIONED_HEAD_RESTART_KEY, "")
    if provisioned and str(restart_disabled).lower() == "true":
        return
    await _create(ctx, build_head_pod(ctx.cluster, ctx.deps.options), head=True)


async def _reconcile_group(ctx: ClusterContext, group: Obj, pods: list[Obj]) -> None:
    cluster, options = ctx.cluster, ctx.deps.options
    indexing = options.gates.multi_host_indexing
    plan = plan_group(
        cluster, group, pods, random_delete=options.enable_random_pod_delete, multi_host_indexing=indexing
    )
    for pod in plan.delete:
        await _delete(ctx, pod, head=False, why=plan.delete_reasons.get(pod["metadata"]["name"], ""))
    if plan.create_replicas <= 0:
        return
    workers = WorkerPods(cluster, group, options)
    if not indexing:  # RayMultiHostIndexing off: every Pod alone, no index labels, as KubeRay
        await _slow_start(ctx, plan.create_replicas, workers.body)
        return
    hosts = common.num_of_hosts(group)
    group_name = str(group.get("groupName", ""))
    index_label = C.RAY_WORKER_REPLICA_INDEX_LABEL_KEY
    used = {int(labels_of(p)[index_label]) for p in pods if labels_of(p).get(index_label, "").isdigit()}
    free = (i for i in range(1 << 30) if i not in used)
    if hosts == 1:  # each Pod is a replica and gets the lowest free index, as KubeRay numbers them
        await _slow_start(
            ctx,
            plan.create_replicas,
            lambda: workers.body(replica_index=next(free)),
        )
        return
    for _ in range(plan.create_replicas):
        if ctx.creates_left is not None and ctx.creates_left <= 0:
            return  # the next pass creates the rest (a replica group is never split across passes)
        index = next(free)
        replica = f"{group_name}-{_random_suffix()}"
        for host in range(hosts):  # a replica group is created whole, host by host
            body = workers.body(replica_name=replica, replica_index=index, host_index=host)
            await _create(ctx, body, head=False)
        if ctx.creates_left is not None:
            ctx.creates_left -= hosts


async def _delete(ctx: ClusterContext, pod: Obj, *, head: bool, why: str) -> None:
    name, ns = pod["metadata"]["name"], pod["metadata"]["namespace"]
    ok, failed, reason = _DELETE_NAMES[head]
    try:
        deleted = await delete_once(
            ctx.deps.recorder,
            ctx.cluster,
            ctx.deps.client.delete(PODS, name, ns),
            failed=(failed, f"Failed to delete Pod {name}: {{error}}"),
            done=(ok, f"Deleted Pod {ns}/{name}. {why}".strip()),
        )
    except ApiError as exc:
        raise ReplicaFailure(reason, str(exc)) from exc
    if not deleted:
        return
    ctx.expectations.expect_deleted(ctx.ref.key, pod)


async def _create(ctx: ClusterContext, body: Obj, *, head: bool, announce: bool = True) -> str:
    """Create one Pod, return ``namespace/name``; ``announce=False``: the caller sends the event."""
    role = "head" if head else "worker"
    reason, failed, created_event = _CREATE_NAMES[head]
    if ctx.deps.options.batch_scheduler is not None:  # schedulerName, queue labels, group annotations
        group = labels_of(body).get(C.RAY_NODE_GROUP_LABEL_KEY, "")
        ctx.deps.options.batch_scheduler.add_metadata(ctx.cluster, "RayCluster", body, group)
    try:
        created = await write_with_events(
            ctx.deps.recorder,
            ctx.cluster,
            ctx.deps.client.create(PODS, body, ctx.ref.namespace),
            failed=(failed, f"Failed to create {role} Pod: {{error}}"),
        )
    except ApiError as exc:
        raise ReplicaFailure(reason, str(exc)) from exc
    ctx.expectations.expect_created(ctx.ref.key, created)
    name = f"{created['metadata']['namespace']}/{created['metadata']['name']}"
    if announce:
        ctx.deps.recorder.event(ctx.cluster, C.NORMAL, created_event, f"Created {role} Pod {name}")
    return name


async def _slow_start(ctx: ClusterContext, count: int, make: Callable[[], Obj]) -> None:
    """Create ``count`` worker Pods in doubling batches; stop at the first failing batch.

    At most ``ctx.creates_left`` of them in this pass: the Pods' watch events bring the next pass
    (behind every other key already queued), whose expectations wait for them, as after any
    create. One ``CreatedWorkerPod`` event names every Pod this round created, including those
    before a failing batch (KubeRay sends one per Pod; per-batch events still cost a write each
    while a cluster scales up).
    """
    if ctx.creates_left is not None:
        count = min(count, ctx.creates_left)
        ctx.creates_left -= count
    done, batch = 0, 1
    errors: list[ReplicaFailure] = []
    names: list[str] = []

    async def one() -> None:
        try:
            names.append(await _create(ctx, make(), head=False, announce=False))
        except ReplicaFailure as exc:
            errors.append(exc)

    try:
        while done < count and not errors:
            size = min(batch, count - done)
            # asyncio's own TaskGroup: the same cancel-on-failure scope as anyio's at about half
            # the CPU per task, and a 1,000-worker scale-up starts a task per Pod.
            async with asyncio.TaskGroup() as tg:
                for _ in range(size):
                    tg.create_task(one())
            done += size
            batch *= 2
    finally:
        if names:
            message = (
                f"Created worker Pod {names[0]}"
                if len(names) == 1
                else f"Created {len(names)} worker Pods: {', '.join(sorted(names))}"
            )
            ctx.deps.recorder.event(ctx.cluster, C.NORMAL, C.EVENT_CREATED_WORKER_POD, message)
    if errors:
        raise errors[0]


def _random_suffix() -> str:
    alphabet = string.ascii_lowercase + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(5))
