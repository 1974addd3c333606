"""The batch/v1 Job controller of the cluster simulator (kube-controller-manager's, reduced).

For every Job it keeps ``parallelism`` (default 1) Pods running until ``completions`` (default 1)
have succeeded, counting failed Pods against ``backoffLimit`` (default 6) and re-creating after a
failure with the controller's exponential back-off (10 s doubling, at most 6 min; multiplied by
``backoff_scale`` so tests need not wait). It writes the status the real controller writes:
``startTime``, ``active`` / ``ready`` / ``succeeded`` / ``failed`` / ``terminating``, and the
Kubernetes 1.33+ condition pairs: ``SuccessCriteriaMet`` then ``Complete`` (with
``completionTime``) on success; ``FailureTarget`` then ``Failed`` (reason ``BackoffLimitExceeded``
or ``DeadlineExceeded`` once ``activeDeadlineSeconds`` has passed since ``startTime``), after
deleting the Pods still running. ``suspend: true`` deletes the active Pods and sets
``Suspended``. Pods are named ``<job>-<random>``, carry the ``batch.kubernetes.io/job-name`` /
``controller-uid`` labels and a controller owner reference to the Job.

Not modelled: Indexed completion mode, pod failure / success policies, ``backoffLimitPerIndex``,
``podReplacementPolicy`` (a terminating Pod is replaced at once), ``ttlSecondsAfterFinished``,
and the ``batch.kubernetes.io/job-tracking`` Pod finalizer (counts survive in this controller's
memory and in ``status`` instead). Timers run on the injected clock.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from kuberay_py.cache import Cache
from kuberay_py.client import Client, Conflict, NotFound, resources
from kuberay_py.clock import Clock, format_rfc3339, parse_rfc3339
from kuberay_py.envtest.sim.dirtyset import DirtySet
from kuberay_py.log import get_logger

__all__ = ["JOB_NAME_LABEL", "JobController"]

log = get_logger("kuberay_py.envtest.sim.jobs")

Key = tuple[str, str]
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
_LEGACY_LABELS = ("job-name", "controller-uid")
BACKOFF_BASE, BACKOFF_MAX = 10.0, 360.0


class _Handler:
    def __init__(self, on_change: Any) -> None:
        self._on_change = on_change

    def on_add(self, obj: dict[str, Any], is_initial: bool) -> None:
        self._on_change(obj)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self._on_change(new)

    def on_delete(self, obj: dict[str, Any]) -> None:
        self._on_change(obj)


def _condition(type_: str, reason: str, message: str, now: str) -> dict[str, Any]:
    return {
        "type": type_,
        "status": "True",
        "lastProbeTime": now,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }


def _has(status: dict[str, Any], type_: str) -> bool:
    return any(c.get("type") == type_ and c.get("status") == "True" for c in status.get("conditions") or [])


def _phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _ready(pod: dict[str, Any]) -> bool:
    conds = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


class JobController:
    def __init__(self, client: Client, cache: Cache, *, clock: Clock, backoff_scale: float = 1.0) -> None:
        self.client = client
        self.cache = cache
        self.clock = clock
        self.backoff_scale = backoff_scale
        self._queue: DirtySet[Key] = DirtySet(
            log, "job sync", lambda k: {"job": f"{k[0]}/{k[1]}"}, order=sorted
        )
        self._expected: dict[str, set[str]] = {}  # job uid -> Pods created, not yet seen in the cache
        self._counted: dict[str, dict[str, str]] = {}  # job uid -> pod uid -> "succeeded" | "failed"
        self._not_before: dict[str, float] = {}  # job uid -> clock time the next Pod may be created
        self._timers: set[asyncio.Task[None]] = set()
        self.pods_created = 0

    def register(self) -> None:
        self.cache.informer_for(resources.JOBS).add_event_handler(_Handler(self._job_changed))
        self.cache.informer_for(resources.PODS).add_event_handler(_Handler(self._pod_changed))

    def _job_changed(self, job: dict[str, Any]) -> None:
        meta = job.get("metadata") or {}
        self._queue.mark((meta.get("namespace", ""), meta.get("name", "")))

    def _pod_changed(self, pod: dict[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        for ref in meta.get("ownerReferences") or []:
            if ref.get("kind") == "Job" and ref.get("controller"):
                self._queue.mark((meta.get("namespace", ""), ref.get("name", "")))

    def _mark_later(self, key: Key, delay: float) -> None:
        async def later() -> None:
            await self.clock.sleep(max(0.0, delay))
            self._queue.mark(key)

        task = asyncio.get_running_loop().create_task(later())
        self._timers.add(task)
        task.add_done_callback(self._timers.discard)

    async def run(self) -> None:
        await self.cache.wait_for_cache_sync()
        try:
            await self._queue.run(lambda key: self.reconcile(*key))
        finally:
            for task in list(self._timers):
                task.cancel()

    # -- one Job ------------------------------------------------------------------------------
    def _pods(self, job: dict[str, Any]) -> list[dict[str, Any]]:
        uid = job["metadata"]["uid"]
        out = []
        for pod in self.cache.list(resources.PODS, job["metadata"]["namespace"]):
            refs = (pod.get("metadata") or {}).get("ownerReferences") or []
            if any(r.get("uid") == uid and r.get("controller") for r in refs):
                out.append(pod)
        return out

    async def reconcile(self, namespace: str, name: str) -> None:
        job = self.cache.get(resources.JOBS, name, namespace)
        if job is None:
            return
        uid = job["metadata"]["uid"]
        spec = job.get("spec") or {}
        status: dict[str, Any] = copy.deepcopy(job.get("status") or {})
        if _has(status, "Complete") or _has(status, "Failed"):
            self._forget(uid)
            return
        pods = self._pods(job)
        seen = {p["metadata"]["name"] for p in pods}
        expected = self._expected.setdefault(uid, set())
        expected -= seen
        counted = self._counted.setdefault(uid, {})
        now_mono = self.clock.now()
        for pod in pods:
            phase, pod_uid = _phase(pod), pod["metadata"].get("uid", "")
            if phase in ("Succeeded", "Failed") and pod_uid not in counted:
                counted[pod_uid] = "succeeded" if phase == "Succeeded" else "failed"
                if phase == "Failed":
                    failures = sum(1 for v in counted.values() if v == "failed")
                    delay = min(BACKOFF_BASE * 2 ** (failures - 1), BACKOFF_MAX) * self.backoff_scale
                    self._not_before[uid] = now_mono + delay
        succeeded = max(
            int(status.get("succeeded") or 0), sum(1 for v in counted.values() if v == "succeeded")
        )
        failed = max(int(status.get("failed") or 0), sum(1 for v in counted.values() if v == "failed"))
        running = [p for p in pods if _phase(p) not in ("Succeeded", "Failed")]
        active = [p for p in running if not p["metadata"].get("deletionTimestamp")]
        terminating = len(running) - len(active)
        now = format_rfc3339(self.clock.utcnow())
        completions = int(spec.get("completions") or 1)
        parallelism = int(spec["parallelism"]) if spec.get("parallelism") is not None else 1
        backoff_limit = int(spec["backoffLimit"]) if spec.get("backoffLimit") is not None else 6
        suspended = bool(spec.get("suspend"))

        conditions: list[dict[str, Any]] = list(status.get("conditions") or [])
        if not suspended and not status.get("startTime"):
            status["startTime"] = now
        finishing = next(
            (c for c in conditions if c.get("type") in ("SuccessCriteriaMet", "FailureTarget")), None
        )
        if finishing is None:
            reason = message = ""
            deadline = spec.get("activeDeadlineSeconds")
            if succeeded >= completions:
                finishing = _condition(
                    "SuccessCriteriaMet",
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                    now,
                )
            elif failed > backoff_limit:
                reason, message = "BackoffLimitExceeded", "Job has reached the specified backoff limit"
            elif deadline is not None and status.get("startTime") and not suspended:
                started = parse_rfc3339(status["startTime"]) or self.clock.utcnow()
                left = started.timestamp() + float(deadline) - self.clock.utcnow().timestamp()
                if left <= 0:
                    reason, message = "DeadlineExceeded", "Job was active longer than specified deadline"
                else:
                    self._mark_later((namespace, name), left)
            if reason:
                finishing = _condition("FailureTarget", reason, message, now)
            if finishing is not None:
                conditions.append(finishing)
        if finishing is not None or suspended:
            for pod in active:
                await self._delete_pod(pod)
            terminating += len(active)
            active = []
        if finishing is not None and not running and not expected:
            final = "Complete" if finishing["type"] == "SuccessCriteriaMet" else "Failed"
            conditions.append(_condition(final, finishing["reason"], finishing["message"], now))
            if final == "Complete":
                status["completionTime"] = now
        if suspended != _has(status, "Suspended") and finishing is None:
            conditions = [c for c in conditions if c.get("type") != "Suspended"]
            if suspended:
                conditions.append(_condition("Suspended", "JobSuspended", "Job suspended", now))
        wanted = 0 if (finishing is not None or suspended) else min(parallelism, completions - succeeded)
        missing = wanted - len(active) - len(expected)
        if missing > 0:
            wait = self._not_before.get(uid, 0.0) - now_mono
            if wait > 0:
                self._mark_later((namespace, name), wait)
            else:
                for _ in range(missing):
                    await self._create_pod(job, expected)
        status.update(
            active=len(active) + len(expected),
            ready=sum(1 for p in active if _ready(p)),
            succeeded=succeeded,
            failed=failed,
            terminating=terminating,
            uncountedTerminatedPods={},
        )
        if conditions:
            status["conditions"] = conditions
        for zero in ("succeeded", "failed", "active"):
            if not status.get(zero):
                status.pop(zero, None)
        if status != (job.get("status") or {}):
            body = copy.deepcopy(job)
            body["status"] = status
            try:
                await self.client.update_status(resources.JOBS, body)
            except Conflict:
                self._queue.mark((namespace, name))
            except NotFound:
                self._forget(uid)

    def _forget(self, uid: str) -> None:
        self._expected.pop(uid, None)
        self._counted.pop(uid, None)
        self._not_before.pop(uid, None)

    async def _create_pod(self, job: dict[str, Any], expected: set[str]) -> None:
        meta = job["metadata"]
        template = copy.deepcopy((job.get("spec") or {}).get("template") or {})
        tmeta = template.get("metadata") or {}
        labels = dict(tmeta.get("labels") or {})
        for key in (JOB_NAME_LABEL, _LEGACY_LABELS[0]):
            labels.setdefault(key, meta["name"])
        for key in (CONTROLLER_UID_LABEL, _LEGACY_LABELS[1]):
            labels.setdefault(key, meta["uid"])
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "generateName": f"{meta['name']}-",
                "namespace": meta["namespace"],
                "labels": labels,
                "annotations": dict(tmeta.get("annotations") or {}),
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": template.get("spec") or {},
        }
        created = await self.client.create(resources.PODS, pod, meta["namespace"])
        expected.add(created["metadata"]["name"])
        self.pods_created += 1

    async def _delete_pod(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        try:
            await self.client.delete(resources.PODS, meta["name"], meta["namespace"])
        except NotFound:
            pass
