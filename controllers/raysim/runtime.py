"""The simulator's PodRuntime for Ray Pods: each head or worker Pod becomes a fake Ray node.

A Pod is a Ray node when it has the ``ray.io/node-type`` (head/worker) and ``ray.io/cluster`` labels
and a container whose command runs ``ray start``; the node joins the fake cluster named by the
label in the Pod's namespace. A RayJob submitter Pod (its container runs ``ray job submit`` /
``ray job logs``) runs :func:`controllers.raysim.submitter.run_submitter` against the head it
names, and exits with that code (``wait_exit``); a Redis cleanup Job's Pod runs its program
against the fake Redis of :mod:`controllers.raysim.redis` and exits with its code. Other Pods
run nothing (their probes fail, as they would with no process listening). Stopping a Pod stops
its node: listeners close, its replicas are lost, and a stopped head takes the cluster's Serve
state with it (Ray without GCS fault tolerance).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from controllers.raysim.apps import AppRegistry, default_registry
from controllers.raysim.cluster import NodeFaults, RayClusterSim
from controllers.raysim.node import node_spec_for_pod, parse_ray_start, token_secret_ref
from controllers.raysim.redis import RedisRegistry, cleanup_exit_code, gcs_uses_redis, is_redis_cleanup_pod
from controllers.raysim.serve_state import Timings
from controllers.raysim.submitter import SIDECAR, is_submitter_pod, run_submitter, sidecar_submitter
from kuberay_py.clock import Clock, RealClock

__all__ = ["RayPodRuntime"]


class RayPodRuntime:
    """Implements :class:`kuberay_py.envtest.sim.PodRuntime`."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        timings: Timings | None = None,
        registry: AppRegistry | None = None,
        auth_token: str | None = None,
    ) -> None:
        self.clock = clock or RealClock()
        self.timings = timings or Timings()
        self.registry = registry or default_registry()
        self.auth_token = auth_token  # used when a Pod asks for token auth via a Secret reference
        self.clusters: dict[tuple[str, str], RayClusterSim] = {}
        # (namespace, Service name) -> the Service's selector; lets submitters resolve custom names.
        self.service_selector: Callable[[str, str], Awaitable[dict[str, str] | None]] | None = None
        # (namespace, Secret name, key) -> the decoded value: what the kubelet would put into a
        # ``RAY_AUTH_TOKEN`` that reads a Secret, so a node requires the token its Secret holds.
        self.secret_value: Callable[[str, str, str], Awaitable[str | None]] | None = None
        self.history: list[RayClusterSim] = []  # every cluster ever started (tests count submissions)
        self._pods: dict[str, tuple[tuple[str, str], str]] = {}  # pod uid -> (cluster key, node id)
        self._submitters: dict[str, asyncio.Task[int]] = {}  # pod uid -> the running script
        self.submitter_output: dict[tuple[str, str], list[str]] = {}  # (namespace, pod) -> stdout
        # Each new cluster's job table drops this many log streams first (JobTable.log_stream_drops).
        self.log_stream_drops = 0
        # GCS fault tolerance's Redis servers: tests deploy them, heads write, cleanup Pods delete.
        self.redis = RedisRegistry()

    async def resolve(self, namespace: str, host: str) -> str | None:
        """A dashboard host (IP, or ``<svc>.<ns>.svc...``) → the IP of the head serving it.

        A Service name maps to a cluster through ``service_selector`` (set it to read the Service's
        ``ray.io/cluster`` selector from the API), else KubeRay's ``<cluster>-head-svc`` naming.
        """
        if host.replace(".", "").isdigit():
            return host
        parts = host.split(".")
        svc, ns = parts[0], parts[1] if len(parts) > 1 else namespace
        wanted = svc.removesuffix("-head-svc")
        if self.service_selector is not None:
            selector = await self.service_selector(ns, svc)
            wanted = (selector or {}).get("ray.io/cluster", wanted)
        cluster = self.clusters.get((ns, wanted))
        return cluster.head_ip() if cluster is not None else None

    async def _token(self, pod: dict[str, Any]) -> str | None:
        """The token the Pod's ``RAY_AUTH_TOKEN`` Secret holds, else the runtime-wide one."""
        ref = token_secret_ref(pod)
        if ref is not None and self.secret_value is not None:
            value = await self.secret_value((pod.get("metadata") or {}).get("namespace", ""), *ref)
            if value is not None:
                return value
        return self.auth_token

    def _start_submitter(
        self, pod: dict[str, Any], ip: str, container: str | None, token: str | None
    ) -> None:
        meta = pod.get("metadata") or {}
        namespace = meta.get("namespace", "")
        output = self.submitter_output.setdefault((namespace, meta.get("name", "")), [])

        async def resolve(host: str) -> str | None:
            # The sidecar talks to its own head (127.0.0.1 / localhost inside the Pod).
            return ip if host in ("localhost", "127.0.0.1") else await self.resolve(namespace, host)

        self._submitters[meta.get("uid", "")] = asyncio.get_running_loop().create_task(
            run_submitter(
                pod,
                clock=self.clock,
                resolve=resolve,
                auth_token=token,
                output=output,
                container=container,
            )
        )

    async def _container_env(self, pod: dict[str, Any], container: dict[str, Any]) -> dict[str, str]:
        """The container's env as the kubelet resolves it (plain values and Secret keys)."""
        env: dict[str, str] = {}
        namespace = (pod.get("metadata") or {}).get("namespace", "")
        for e in container.get("env") or []:
            ref = (e.get("valueFrom") or {}).get("secretKeyRef")
            if "value" in e:
                env[e["name"]] = str(e["value"])
            elif ref and self.secret_value is not None:
                value = await self.secret_value(namespace, ref.get("name", ""), ref.get("key", ""))
                if value is not None:
                    env[e["name"]] = value
            elif not e.get("valueFrom"):
                env[e["name"]] = ""
        return env

    async def _run_redis_cleanup(self, pod: dict[str, Any]) -> int:
        containers = (pod.get("spec") or {}).get("containers") or [{}]
        return cleanup_exit_code(pod, await self._container_env(pod, containers[0]), self.redis)

    async def _gcs_started(self, pod: dict[str, Any]) -> None:
        if not gcs_uses_redis(pod):
            return  # no env to resolve (each Secret read is a kubelet's read)
        for container in (pod.get("spec") or {}).get("containers") or []:
            line = " ".join(str(x) for x in (container.get("command") or []) + (container.get("args") or []))
            parsed = parse_ray_start(line)
            if parsed is not None:
                self.redis.gcs_started(pod, await self._container_env(pod, container), parsed[1])
                return

    async def start(self, pod: dict[str, Any], ip: str) -> None:
        if is_redis_cleanup_pod(pod):
            uid = (pod.get("metadata") or {}).get("uid", "")
            self._submitters[uid] = asyncio.get_running_loop().create_task(self._run_redis_cleanup(pod))
            return
        token = await self._token(pod)
        spec = node_spec_for_pod(pod, token)
        if spec is None:
            if is_submitter_pod(pod):
                self._start_submitter(pod, ip, None, token)
            return
        key = (spec.namespace, spec.cluster)
        cluster = self.clusters.get(key)
        if cluster is None:
            cluster = RayClusterSim(
                spec.namespace, spec.cluster, clock=self.clock, timings=self.timings, registry=self.registry
            )
            cluster.jobs.log_stream_drops = self.log_stream_drops
            self.clusters[key] = cluster
            self.history.append(cluster)
        node_id = await cluster.add_node(spec, ip)
        self._pods[spec.pod_uid] = (key, node_id)
        if spec.is_head:
            await self._gcs_started(pod)
        if spec.is_head and sidecar_submitter(pod):
            self._start_submitter(pod, ip, SIDECAR, token)

    async def wait_exit(self, pod: dict[str, Any], ip: str) -> int | None:
        """The exit code once the Pod's process ends by itself; None for Pods that run until stopped."""
        if sidecar_submitter(pod):
            return None  # a head with a sidecar: only the sidecar container ends (wait_container_exit)
        task = self._submitters.get(pod.get("metadata", {}).get("uid", ""))
        if task is None:
            return None
        return await asyncio.shield(task)

    async def wait_container_exit(self, pod: dict[str, Any], ip: str) -> tuple[str, int] | None:
        """(container, exit code) when one container of a multi-container Pod ends on its own."""
        task = self._submitters.get(pod.get("metadata", {}).get("uid", ""))
        if task is None or not sidecar_submitter(pod):
            return None
        return SIDECAR, await asyncio.shield(task)

    async def restart_container(self, pod: dict[str, Any], ip: str, name: str) -> None:
        """The kubelet restarts one container of a running Pod (its own ``restartPolicy``): for a
        SidecarMode head that is the submitter, whose script then runs again from the start."""
        if name == SIDECAR and sidecar_submitter(pod):
            self._start_submitter(pod, ip, SIDECAR, await self._token(pod))

    async def stop(self, pod: dict[str, Any], ip: str) -> None:
        submitter = self._submitters.pop(pod.get("metadata", {}).get("uid", ""), None)
        if submitter is not None:
            submitter.cancel()
        entry = self._pods.pop(pod.get("metadata", {}).get("uid", ""), None)
        if entry is None:
            return
        key, node_id = entry
        cluster = self.clusters.get(key)
        if cluster is None:
            return
        await cluster.remove_node(node_id)
        if not cluster.nodes and self.clusters.get(key) is cluster:
            del self.clusters[key]

    async def drain(self, pod: dict[str, Any], ip: str) -> None:
        """Graceful deletion of a worker Pod: drain its Ray node (the kubelet bounds the wait)."""
        entry = self._pods.get(pod.get("metadata", {}).get("uid", ""))
        if entry is None:
            return
        key, node_id = entry
        cluster = self.clusters.get(key)
        if cluster is not None:
            await cluster.drain_node(node_id)

    def cluster(self, namespace: str, name: str) -> RayClusterSim:
        try:
            return self.clusters[(namespace, name)]
        except KeyError:
            raise KeyError(f"no fake Ray cluster {namespace}/{name} is running") from None

    def faults(self, namespace: str, pod_name: str) -> NodeFaults:
        """The fault switches of the Ray node running in Pod ``namespace/pod_name``."""
        for (ns, _), cluster in self.clusters.items():
            if ns == namespace and cluster.node_for_pod(pod_name) is not None:
                return cluster.faults(pod_name)
        raise KeyError(f"no Ray node runs in pod {namespace}/{pod_name}")

    async def close(self) -> None:
        for task in self._submitters.values():
            task.cancel()
        self._submitters.clear()
        for cluster in list(self.clusters.values()):
            await cluster.close()
        self.clusters.clear()
        self._pods.clear()
