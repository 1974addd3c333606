"""The Pod phase of a RayCluster reconcile: head, worker groups, suspend.

Every create and delete is recorded in :class:`~kuberay_py.controller.Expectations` before the
next decision trusts the cache again, so a lagging informer cannot make us create a Pod twice
(KubeRay #715/#3286). Creates go out in slow-start batches (1, 2, 4 …) like the ReplicaSet
controller: a quota or admission failure costs one request, not hundreds.
"""

from __future__ import annotations

import secrets
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import anyio

from controllers import constants as C
from controllers.raycluster import common
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.pod import build_head_pod, build_worker_pod
from controllers.raycluster.scaling import plan_group, should_delete_pod
from kuberay_py.client import ApiError, Client, NotFound
from kuberay_py.client.resources import PODS
from kuberay_py.controller import Expectations
from kuberay_py.log import get_logger

__all__ = ["PodPhase", "ReplicaFailure"]

log = get_logger("controllers.raycluster")


class Recorder(Protocol):
    def event(self, obj: dict[str, Any], type_: Any, reason: str, message: str) -> None: ...


class ReplicaFailure(Exception):
    """A Pod write failed; ``reason`` becomes the ReplicaFailure condition's reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass
class PodPhase:
    client: Client
    recorder: Recorder
    expectations: Expectations
    options: RayClusterOptions

    def _key(self, cluster: dict[str, Any]) -> str:
        return f"{cluster['metadata']['namespace']}/{cluster['metadata']['name']}"

    async def _delete(
        self, cluster: dict[str, Any], pod: dict[str, Any], ok: str, failed: str, why: str
    ) -> None:
        name = pod["metadata"]["name"]
        try:
            await self.client.delete(PODS, name, pod["metadata"]["namespace"])
        except NotFound:
            return
        except ApiError as exc:
            self.recorder.event(cluster, C.WARNING, failed, f"Failed to delete Pod {name}: {exc}")
            reason = (
                C.REASON_FAILED_DELETE_HEAD_POD
                if failed == C.EVENT_FAILED_TO_DELETE_HEAD_POD
                else (C.REASON_FAILED_DELETE_WORKER_POD)
            )
            raise ReplicaFailure(reason, str(exc)) from exc
        self.expectations.expect_deleted(self._key(cluster), pod)
        self.recorder.event(
            cluster, C.NORMAL, ok, f"Deleted Pod {pod['metadata']['namespace']}/{name}. {why}".strip()
        )

    async def _create(
        self, cluster: dict[str, Any], body: dict[str, Any], head: bool, *, announce: bool = True
    ) -> str:
        try:
            created = await self.client.create(PODS, body, cluster["metadata"]["namespace"])
        except ApiError as exc:
            reason, event = (
                (C.REASON_FAILED_CREATE_HEAD_POD, C.EVENT_FAILED_TO_CREATE_HEAD_POD)
                if head
                else (C.REASON_FAILED_CREATE_WORKER_POD, C.EVENT_FAILED_TO_CREATE_WORKER_POD)
            )
            self.recorder.event(
                cluster, C.WARNING, event, f"Failed to create {'head' if head else 'worker'} Pod: {exc}"
            )
            raise ReplicaFailure(reason, str(exc)) from exc
        self.expectations.expect_created(self._key(cluster), created)
        name = f"{created['metadata']['namespace']}/{created['metadata']['name']}"
        if announce:
            self.recorder.event(
                cluster,
                C.NORMAL,
                C.EVENT_CREATED_HEAD_POD if head else C.EVENT_CREATED_WORKER_POD,
                f"Created {'head' if head else 'worker'} Pod {name}",
            )
        return name

    async def _slow_start(
        self, cluster: dict[str, Any], count: int, make: Callable[[], dict[str, Any]]
    ) -> None:
        """Create ``count`` worker Pods in doubling batches; stop at the first failing batch.

        One ``CreatedWorkerPod`` event per batch names every Pod in it (KubeRay sends one per Pod;
        the event writes would otherwise eat half of the client's QPS budget while scaling).
        """
        done, batch = 0, 1
        errors: list[ReplicaFailure] = []
        names: list[str] = []

        async def one() -> None:
            try:
                names.append(await self._create(cluster, make(), head=False, announce=False))
            except ReplicaFailure as exc:
                errors.append(exc)

        while done < count:
            size = min(batch, count - done)
            names.clear()
            async with anyio.create_task_group() as tg:
                for _ in range(size):
                    tg.start_soon(one)
            if names:
                message = (
                    f"Created worker Pod {names[0]}"
                    if len(names) == 1
                    else f"Created {len(names)} worker Pods: {', '.join(sorted(names))}"
                )
                self.recorder.event(cluster, C.NORMAL, C.EVENT_CREATED_WORKER_POD, message)
            if errors:
                raise errors[0]
            done += size
            batch *= 2

    async def delete_all(self, cluster: dict[str, Any], pods: list[dict[str, Any]], selector: str) -> None:
        """Suspend: one DeleteCollection, then expect every live Pod to go."""
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        if not live:
            return
        try:
            await self.client.delete_collection(
                PODS, cluster["metadata"]["namespace"], label_selector=selector
            )
        except ApiError as exc:
            self.recorder.event(cluster, C.WARNING, C.EVENT_FAILED_TO_DELETE_POD_COLLECTION, str(exc))
            raise ReplicaFailure(C.REASON_FAILED_DELETE_ALL_PODS, str(exc)) from exc
        for pod in live:
            self.expectations.expect_deleted(self._key(cluster), pod)
        self.recorder.event(
            cluster, C.NORMAL, C.EVENT_DELETED_POD, f"Deleted {len(live)} Pods matching {selector}"
        )

    async def reconcile(self, cluster: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        name = cluster["metadata"]["name"]
        key = self._key(cluster)
        if not self.expectations.satisfied(key):
            log.debug(
                "waiting for the cache to catch up with our writes", key=key, **self.expectations.pending(key)
            )
            return
        spec = common.spec(cluster)
        conditions = (cluster.get("status") or {}).get("conditions") or []
        suspending = any(
            c.get("type") == C.COND_RAYCLUSTER_SUSPENDING and c.get("status") == "True" for c in conditions
        )
        if suspending:
            await self.delete_all(cluster, pods, f"{C.RAY_CLUSTER_LABEL_KEY}={name}")
            return
        if spec.get("suspend"):
            return  # the status records RayClusterSuspending first; Pods go in the next round
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        by_type: dict[str, list[dict[str, Any]]] = {}
        for pod in live:
            by_type.setdefault(
                (pod["metadata"].get("labels") or {}).get(C.RAY_NODE_TYPE_LABEL_KEY, ""), []
            ).append(pod)
        await self._reconcile_head(cluster, by_type.get(C.NODE_TYPE_HEAD, []))
        workers = by_type.get(C.NODE_TYPE_WORKER, [])
        failure: ReplicaFailure | None = None
        for group in spec.get("workerGroupSpecs") or []:
            group_pods = [
                p
                for p in workers
                if (p["metadata"].get("labels") or {}).get(C.RAY_NODE_GROUP_LABEL_KEY)
                == group.get("groupName")
            ]
            try:
                await self._reconcile_group(cluster, group, group_pods)
            except ReplicaFailure as exc:
                failure = failure or exc
        if failure is not None:
            raise failure

    async def _reconcile_head(self, cluster: dict[str, Any], heads: list[dict[str, Any]]) -> None:
        if len(heads) > 1:
            names = ", ".join(sorted(p["metadata"]["name"] for p in heads))
            raise ReplicaFailure(
                C.REASON_FAILED_CREATE_HEAD_POD, f"{len(heads)} head Pods found ({names}); expected 1"
            )
        if len(heads) == 1:
            delete, why = should_delete_pod(heads[0])
            if delete:
                await self._delete(
                    cluster, heads[0], C.EVENT_DELETED_HEAD_POD, C.EVENT_FAILED_TO_DELETE_HEAD_POD, why
                )
            return
        annotations = cluster["metadata"].get("annotations") or {}
        provisioned = any(
            c.get("type") == C.COND_RAYCLUSTER_PROVISIONED and c.get("status") == "True"
            for c in (cluster.get("status") or {}).get("conditions") or []
        )
        if provisioned and str(annotations.get(C.DISABLE_PROVISIONED_HEAD_RESTART_KEY, "")).lower() == "true":
            return
        await self._create(cluster, build_head_pod(cluster, self.options), head=True)

    async def _reconcile_group(
        self, cluster: dict[str, Any], group: dict[str, Any], pods: list[dict[str, Any]]
    ) -> None:
        plan = plan_group(cluster, group, pods, random_delete=self.options.enable_random_pod_delete)
        for pod in plan.delete:
            await self._delete(
                cluster,
                pod,
                C.EVENT_DELETED_WORKER_POD,
                C.EVENT_FAILED_TO_DELETE_WORKER_POD,
                plan.delete_reasons.get(pod["metadata"]["name"], ""),
            )
        if plan.create_replicas <= 0:
            return
        hosts = common.num_of_hosts(group)
        group_name = str(group.get("groupName", ""))
        if hosts == 1:
            await self._slow_start(
                cluster, plan.create_replicas, lambda: build_worker_pod(cluster, group, self.options)
            )
            return
        used = {
            int((p["metadata"].get("labels") or {}).get(C.RAY_WORKER_REPLICA_INDEX_LABEL_KEY, -1))
            for p in pods
            if (p["metadata"].get("labels") or {}).get(C.RAY_WORKER_REPLICA_INDEX_LABEL_KEY, "").isdigit()
        }
        free = (i for i in range(1 << 30) if i not in used)
        for _ in range(plan.create_replicas):
            index = next(free)
            replica = f"{group_name}-{_random_suffix()}"
            for host in range(hosts):  # a replica group is created whole, host by host
                body = build_worker_pod(
                    cluster, group, self.options, replica_name=replica, replica_index=index, host_index=host
                )
                await self._create(cluster, body, head=False)


def _random_suffix() -> str:
    alphabet = string.ascii_lowercase + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(5))
