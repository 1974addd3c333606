"""One Pod's life on the simulated node, like the kubelet's pod worker goroutine.

Bind (if unscheduled), take an address, start the runtime, report Running, run the probes and act
on them (readiness into the status, liveness/startup failures into restarts), and on graceful
deletion drain, stop and remove the Pod. Split from :mod:`.kubelet`, which routes Pod events to
one worker per Pod UID and hands each the :class:`NodeContext` the workers share.
"""

from __future__ import annotations

import asyncio
import copy
import errno
from collections import defaultdict
from typing import Any

from kuberay_py.client import ApiError, Conflict, NotFound, resources
from kuberay_py.clock import Clock, format_rfc3339
from kuberay_py.envtest.sim.nodecontext import NodeContext
from kuberay_py.envtest.sim.podstatus import ContainerState, build_status
from kuberay_py.envtest.sim.prober import ProbeKind, ProbeState, ProbeTiming
from kuberay_py.envtest.sim.probes import run_probe
from kuberay_py.log import get_logger

__all__ = ["PodWorker", "rfc3339"]

log = get_logger("kuberay_py.envtest.sim.kubelet")


def rfc3339(clock: Clock) -> str:
    return format_rfc3339(clock.utcnow())


class PodWorker:
    """One Pod's life on the node, like the kubelet's pod worker goroutine."""

    def __init__(self, node: NodeContext, pod: dict[str, Any]) -> None:
        self.k = node
        self.pod = pod
        meta = pod["metadata"]
        self.namespace: str = meta.get("namespace", "")
        self.name: str = meta["name"]
        self.uid: str = meta.get("uid", "")
        self.ip = ""
        self.start_time = ""
        self.task: asyncio.Task[None] | None = None
        self.containers: dict[str, ContainerState] = {}
        self.probe_tasks: dict[str, list[asyncio.Task[None]]] = defaultdict(list)
        self.runtime_started = False
        self.started_mono: dict[str, float] = {}  # container -> clock.now() when it (re)started
        self._deleting = asyncio.Event()
        self._status_lock = asyncio.Lock()
        self._gone = False
        self._cleaning = False

    def update(self, pod: dict[str, Any]) -> None:
        self.pod = pod
        if pod.get("metadata", {}).get("deletionTimestamp"):
            self._deleting.set()

    def removed(self) -> None:
        """The Pod is gone from the API: stop everything without further API writes.

        A worker already cleaning up is left to finish: on a real kube-apiserver the response to
        our own grace-0 DELETE usually arrives before the DELETED watch event, so the event lands
        while the clean-up awaits the runtime's stop, and cancelling it there would skip freeing
        the Pod's address.
        """
        self._gone = True
        if self.task is not None and not self.task.done() and not self._cleaning:
            self.task.cancel()

    # -- main flow ---------------------------------------------------------------------------
    async def run(self) -> None:
        try:
            if self.pod.get("metadata", {}).get("deletionTimestamp"):
                self._deleting.set()
            if not (self.pod.get("spec") or {}).get("nodeName"):
                for attempt in range(8):
                    try:
                        bound = await self._bind()
                        break
                    except ApiError as exc:  # the scheduler retries failed bindings with back-off
                        log.info(
                            "binding failed; retrying", pod=f"{self.namespace}/{self.name}", error=str(exc)
                        )
                        await asyncio.sleep(min(0.05 * 2**attempt, 2.0))
                else:
                    bound = await self._bind()
                if not bound:
                    return
            if not self._deleting.is_set():
                await self._start()
            await self._deleting.wait()
            await self._terminate()
        finally:
            await self._cleanup()

    async def _bind(self) -> bool:
        """Schedule the Pod the way kube-scheduler does: POST pods/<name>/binding."""
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": self.name, "namespace": self.namespace, "uid": self.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": self.k.node_name},
        }
        client = self.k.client
        try:
            if self.k.binding_supported:
                try:
                    await client.request(
                        "POST", resources.PODS.path(self.namespace, self.name, "binding"), body=body
                    )
                    return True
                except ApiError as exc:
                    if exc.status not in (404, 405):
                        raise
                    # 404 is either "no such Pod" or "no binding subresource": the GET tells which.
                    await client.get(resources.PODS, self.name, self.namespace)
                    log.info("API server has no pods/binding; setting spec.nodeName instead")
                    self.k.binding_supported = False
            await client.patch(
                resources.PODS, self.name, {"spec": {"nodeName": self.k.node_name}}, self.namespace
            )
            return True
        except NotFound:
            return False
        except Conflict:
            # Already bound (by us before a restart, or by someone else): take it only if ours.
            try:
                fresh = await client.get(resources.PODS, self.name, self.namespace)
            except NotFound:
                return False
            self.pod = fresh
            return bool((fresh.get("spec") or {}).get("nodeName") == self.k.node_name)

    async def _start(self) -> None:
        status = self.pod.get("status") or {}
        old_ip = status.get("podIP")
        if old_ip and self.k.addresses.reserve(old_ip):
            self.ip = old_ip  # the simulator restarted: keep the Pod's address
        else:
            self.ip = self.k.addresses.allocate()
        now = rfc3339(self.k.clock)
        self.start_time = status.get("startTime") or now
        spec = self.pod.get("spec") or {}
        error = ""
        if self.k.runtime is not None:
            for attempt in range(5):
                try:
                    await self.k.runtime.start(self.pod, self.ip)
                    self.runtime_started = True
                    break
                except OSError as exc:
                    if exc.errno != errno.EADDRINUSE or attempt == 4 or old_ip == self.ip:
                        error = str(exc)
                        break
                    # Another process on this host uses the address: the Pod has not been
                    # reported yet, so give it a different one.
                    log.info("pod address busy on this host; picking another", ip=self.ip, error=str(exc))
                    self.k.addresses.free(self.ip)
                    self.ip = self.k.addresses.allocate()
                except Exception as exc:
                    error = str(exc) or type(exc).__name__
                    break
            if error:
                log.warning("pod runtime failed to start", pod=f"{self.namespace}/{self.name}", error=error)
        for c in spec.get("containers") or []:
            cs = ContainerState(
                name=c.get("name", ""),
                image=c.get("image", ""),
                started_at=now,
                started="startupProbe" not in c,
                ready=not any(k in c for k in ("readinessProbe", "startupProbe")),
            )
            if error:
                cs.waiting_reason, cs.waiting_message = "CreateContainerError", error
            self.containers[cs.name] = cs
            self.started_mono[cs.name] = self.k.clock.now()
        await self.write_status()
        if not error:
            for c in spec.get("containers") or []:
                self._start_probes(c)
            if getattr(self.k.runtime, "wait_exit", None) is not None:
                self.k.spawn(self._watch_exit())
            if getattr(self.k.runtime, "wait_container_exit", None) is not None:
                self.k.spawn(self._watch_container_exit())

    async def _watch_container_exit(self) -> None:
        """One container of a multi-container Pod ends by itself (``wait_container_exit`` →
        (name, code)): with ``restartPolicy: Never`` it stays terminated while the others run on,
        as a finished sidecar does; unless the container's own ``restartPolicy`` (Kubernetes
        1.35's per-container rule) says ``OnFailure`` and it failed, or ``Always``: then the
        kubelet restarts that container alone (``restartCount``, ``lastState.terminated``) and the
        runtime runs it again (``restart_container``). (Other Pod policies: not modelled.)"""
        wait = getattr(self.k.runtime, "wait_container_exit", None)
        restart_container = getattr(self.k.runtime, "restart_container", None)
        while wait is not None:
            ended = await wait(self.pod, self.ip)
            if ended is None or self._deleting.is_set():
                return
            name, code = ended
            cs = self.containers.get(name)
            if cs is None or (self.pod.get("spec") or {}).get("restartPolicy", "Always") != "Never":
                return
            own = next(
                (
                    c.get("restartPolicy")
                    for c in (self.pod.get("spec") or {}).get("containers") or []
                    if c.get("name") == name
                ),
                None,
            )
            if restart_container is not None and (own == "Always" or (own == "OnFailure" and code != 0)):
                now = rfc3339(self.k.clock)
                cs.last_termination = {
                    "exitCode": code,
                    "reason": "Completed" if code == 0 else "Error",
                    "startedAt": cs.started_at,
                    "finishedAt": now,
                    "containerID": cs.container_id(self.uid),
                }
                cs.restart_count += 1
                cs.started_at = now
                await restart_container(self.pod, self.ip, name)
                await self.write_status()
                log.info(
                    "container restarted", pod=f"{self.namespace}/{self.name}", container=name, exit_code=code
                )
                continue
            for task in self.probe_tasks.pop(name, []):
                task.cancel()
            cs.running, cs.ready, cs.exit_code = False, False, code
            await self.write_status()
            log.info("container exited", pod=f"{self.namespace}/{self.name}", container=name, exit_code=code)
            return

    async def _watch_exit(self) -> None:
        """A runtime whose process ends by itself (``wait_exit`` → exit code): the containers
        terminate with that code; the phase follows restartPolicy (Never: Succeeded/Failed;
        OnFailure: restart after a failure; Always: restart), as the kubelet does."""
        wait_exit = getattr(self.k.runtime, "wait_exit", None)
        while wait_exit is not None and self.runtime_started and not self._deleting.is_set():
            code = await wait_exit(self.pod, self.ip)
            if code is None or self._deleting.is_set():
                return
            for tasks in self.probe_tasks.values():
                for task in tasks:
                    task.cancel()
            self.probe_tasks.clear()
            policy = (self.pod.get("spec") or {}).get("restartPolicy", "Always")
            now = rfc3339(self.k.clock)
            restart = policy == "Always" or (policy == "OnFailure" and code != 0)
            await self.k.runtime.stop(self.pod, self.ip)  # type: ignore[union-attr]
            self.runtime_started = False
            for cs in self.containers.values():
                if restart:
                    cs.last_termination = {
                        "exitCode": code,
                        "reason": "Completed" if code == 0 else "Error",
                        "startedAt": cs.started_at,
                        "finishedAt": now,
                        "containerID": cs.container_id(self.uid),
                    }
                    cs.restart_count += 1
                    cs.started_at = now
                else:
                    cs.running, cs.ready, cs.exit_code = False, False, code
            if restart:
                await self.k.runtime.start(self.pod, self.ip)  # type: ignore[union-attr]
                self.runtime_started = True
            await self.write_status()
            log.info("container exited", pod=f"{self.namespace}/{self.name}", exit_code=code, restart=restart)

    def _start_probes(self, container: dict[str, Any]) -> None:
        name = container.get("name", "")
        if "startupProbe" in container and not self.containers[name].started:
            self.probe_tasks[name].append(self.k.spawn(self._probe_loop(container, "startup")))
            return
        kinds: tuple[ProbeKind, ...] = ("readiness", "liveness")
        for kind in kinds:
            if f"{kind}Probe" in container:
                self.probe_tasks[name].append(self.k.spawn(self._probe_loop(container, kind)))

    async def _probe_loop(self, container: dict[str, Any], kind: ProbeKind) -> None:
        probe = container[f"{kind}Probe"]
        timing = ProbeTiming.of(probe)
        state = ProbeState(kind, timing)
        cs = self.containers[container.get("name", "")]
        clock = self.k.clock
        # Deadlines count from the container's start (as the kubelet's initialDelaySeconds does),
        # so a probe task scheduled late does not shift the probe grid.
        next_at = self.started_mono.get(cs.name, clock.now()) + timing.initial_delay * self.k.scale
        while True:
            await clock.sleep(max(0.0, next_at - clock.now()))
            outcome = await run_probe(probe, container, self.ip, self.k.session(), clock)
            changed = state.observe(outcome.success)
            if not outcome.success:
                log.debug(
                    "probe failed",
                    pod=f"{self.namespace}/{self.name}",
                    container=cs.name,
                    probe=kind,
                    output=outcome.message,
                )
            if changed and kind == "readiness":
                cs.ready = bool(state.result)
                await self.write_status()
            elif changed and kind == "startup" and state.result:
                cs.started = True
                if "readinessProbe" not in container:
                    cs.ready = True
                await self.write_status()
                self._round(cs.name, kind)
                self._start_probes(container)
                return
            elif changed and state.result is False and kind in ("liveness", "startup"):
                self._round(cs.name, kind)
                self.k.spawn(self._restart_container(container, f"{kind} probe failed: {outcome.message}"))
                return
            self._round(cs.name, kind)
            next_at = max(next_at + timing.period * self.k.scale, clock.now())

    def _round(self, container: str, kind: str) -> None:
        self.k.round_done(self.namespace, self.name, container, kind)

    async def _restart_container(self, container: dict[str, Any], reason: str) -> None:
        name = container.get("name", "")
        cs = self.containers[name]
        current = asyncio.current_task()
        for task in self.probe_tasks.pop(name, []):
            if task is not current:
                task.cancel()
        now = rfc3339(self.k.clock)
        log.info("killing container", pod=f"{self.namespace}/{self.name}", container=name, reason=reason)
        cs.last_termination = {
            "exitCode": 137,
            "reason": "Error",
            "startedAt": cs.started_at,
            "finishedAt": now,
            "containerID": cs.container_id(self.uid),
        }
        if self.k.runtime is not None and self.runtime_started:
            await self.k.runtime.stop(self.pod, self.ip)
            self.runtime_started = False
        restart_policy = (self.pod.get("spec") or {}).get("restartPolicy", "Always")
        if restart_policy == "Never":
            cs.running, cs.ready, cs.exit_code = False, False, 137
            await self.write_status()
            return
        cs.restart_count += 1
        cs.started_at = now
        self.started_mono[name] = self.k.clock.now()
        cs.ready = not any(k in container for k in ("readinessProbe", "startupProbe"))
        cs.started = "startupProbe" not in container
        if self.k.runtime is not None:
            try:
                await self.k.runtime.start(self.pod, self.ip)
                self.runtime_started = True
            except Exception as exc:
                cs.waiting_reason, cs.waiting_message = "CreateContainerError", str(exc)
        await self.write_status()
        if not cs.waiting_reason:
            self._start_probes(container)

    async def _terminate(self) -> None:
        """The kubelet's side of graceful deletion: stop the containers, then remove the Pod.

        A runtime with a ``drain(pod, ip)`` coroutine gets the Pod's grace period
        (``metadata.deletionGracePeriodSeconds``, else ``spec.terminationGracePeriodSeconds``, else
        30 s, on the injected clock) to wind down, like SIGTERM before SIGKILL.
        """
        for tasks in self.probe_tasks.values():
            for task in tasks:
                task.cancel()
        self.probe_tasks.clear()
        drain = getattr(self.k.runtime, "drain", None)
        if drain is not None and self.runtime_started:
            meta, spec = self.pod.get("metadata") or {}, self.pod.get("spec") or {}
            grace = meta.get("deletionGracePeriodSeconds")
            if grace is None:
                grace = spec.get("terminationGracePeriodSeconds", 30)
            if grace and grace > 0:
                draining = asyncio.ensure_future(drain(self.pod, self.ip))
                deadline = asyncio.ensure_future(self.k.clock.sleep(float(grace)))
                try:
                    await asyncio.wait({draining, deadline}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for fut in (draining, deadline):
                        fut.cancel()
                if draining.done() and not draining.cancelled() and draining.exception() is not None:
                    log.warning(
                        "pod runtime drain failed",
                        pod=f"{self.namespace}/{self.name}",
                        error=str(draining.exception()),
                    )
        await self._stop_everything()
        self.k.terminated.add(self.uid)
        try:
            await self.k.client.delete(
                resources.PODS,
                self.name,
                self.namespace,
                grace_period_seconds=0,
                preconditions={"uid": self.uid},
            )
        except (NotFound, Conflict):
            pass

    async def _stop_everything(self) -> None:
        for tasks in self.probe_tasks.values():
            for task in tasks:
                task.cancel()
        self.probe_tasks.clear()
        if self.k.runtime is not None and self.runtime_started:
            self.runtime_started = False
            try:
                await self.k.runtime.stop(self.pod, self.ip)
            except Exception as exc:
                log.warning("pod runtime failed to stop", pod=f"{self.namespace}/{self.name}", error=str(exc))

    async def _cleanup(self) -> None:
        self._cleaning = True
        try:
            await asyncio.shield(self._stop_everything())
        finally:
            # Even if cancelled (the simulator shutting down), the address and the worker slot go.
            if self.ip:
                self.k.addresses.free(self.ip)
                self.ip = ""
            self.k.release_worker(self.uid, self)

    # -- status ------------------------------------------------------------------------------
    async def write_status(self) -> None:
        """Write the Pod's status if it differs from what the API has (retrying on conflicts)."""
        async with self._status_lock:
            for attempt in range(8):
                if self._gone:
                    return
                pod = self.pod
                new_status = build_status(
                    pod,
                    pod_ip=self.ip,
                    host_ip=self.k.host_ip,
                    start_time=self.start_time,
                    containers=list(self.containers.values()),
                    now=rfc3339(self.k.clock),
                )
                if new_status == (pod.get("status") or {}):
                    return
                body = copy.deepcopy(pod)
                body["status"] = new_status
                body.get("metadata", {}).pop("managedFields", None)
                try:
                    self.pod = await self.k.client.update_status(resources.PODS, body)
                    return
                except Conflict:
                    try:
                        self.pod = await self.k.client.get(resources.PODS, self.name, self.namespace)
                    except NotFound:
                        return
                except NotFound:
                    return
                except ApiError as exc:  # 5xx, 429, transport trouble: back off and try again
                    log.info(
                        "pod status write failed; retrying",
                        pod=f"{self.namespace}/{self.name}",
                        error=str(exc),
                    )
                    await asyncio.sleep(min(0.05 * 2**attempt, 2.0))
            log.warning("giving up writing pod status", pod=f"{self.namespace}/{self.name}")
