"""Every request the operator actually sends is allowed by config/rbac (the dynamic half of test_rbac).

The operator (wired exactly as ``kuberay-operator run`` wires it, leader election on) runs against
the embedded cluster with the simulator and fake Ray through a scenario touching most code paths:
samples become ready, a worker group scales down, an autoscaling cluster gets its ServiceAccount,
Role and RoleBinding, the RayService and the RayCluster are deleted (finalizers). Its HTTP requests
are recorded on its own client session (the simulator's and the test's are not), mapped to
``(apiGroup, resource[/subresource], verb)`` and checked against role.yaml + leader_election_role.yaml.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from controllers.api.crdgen import write_crds
from controllers.cli.flags import OperatorFlags
from controllers.cli.operator import build_manager
from controllers.constants import RAYCLUSTERS, RAYSERVICES
from controllers.raysim import RayPodRuntime
from kuberay_py.client import Client
from kuberay_py.client.client import RequestObserver
from kuberay_py.envtest import Environment
from tests.api_objects import get_or_none
from tests.polling import eventually
from tests.unit.test_rbac import cluster_role, leader_election_role

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = ROOT / "config" / "samples"
WAIT = 240.0  # a bound so a stuck scenario fails; not a performance assertion

Permission = tuple[str, str, str]


def permission(method: str, path: str, query: Sequence[tuple[str, str]]) -> Permission | None:
    """The RBAC permission a request needs; None for discovery and non-resource paths."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 3:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, rest = parts[1], parts[3:]
    else:
        return None
    if rest[0] == "namespaces" and len(rest) >= 3:
        rest = rest[2:]
    resource = rest[0] + (f"/{rest[2]}" if len(rest) > 2 else "")
    named = len(rest) > 1
    verb = {
        "GET": "get" if named else ("watch" if dict(query).get("watch") in ("true", "1") else "list"),
        "POST": "create",
        "PUT": "update",
        "PATCH": "patch",
        "DELETE": "delete" if named else "deletecollection",
    }[method]
    return group, resource, verb


def recorder(seen: set[Permission]) -> RequestObserver:
    def record(method: str, path: str, query: Sequence[tuple[str, str]]) -> None:
        perm = permission(method, path, query)
        if perm is not None:
            seen.add(perm)

    return record


async def _status(client: Client, res: Any, name: str) -> dict[str, Any]:
    obj = await get_or_none(client, res, name, "default")
    return dict((obj or {}).get("status") or {})


async def _gone(client: Client, res: Any, name: str) -> bool:
    return await get_or_none(client, res, name, "default") is None


async def test_every_request_the_operator_sends_is_allowed_by_rbac(tmp_path: Path) -> None:
    write_crds(str(tmp_path))
    seen: set[Permission] = set()
    async with (
        Environment([str(tmp_path)], simulate=True, pod_runtime=RayPodRuntime()) as env,
        env.new_client() as client,
    ):
        flags = OperatorFlags(
            metrics_addr="0", health_probe_bind_address="0", leader_election_namespace="default"
        )
        manager = build_manager(env.client_config, flags, leader_election=True)
        # The manager builds its own Clients (controllers, Events, the Lease on its own thread's
        # loop); each reports the requests it sends.
        built = (manager.client, manager.events_client, manager.lease_client or manager.client)
        for client_ in {id(c): c for c in built}.values():
            client_.add_request_observer(recorder(seen))
        run = asyncio.create_task(manager.run(install_signal_handlers=False))
        try:
            for sample in ("ray-cluster.sample.yaml", "ray-service.sample.yaml"):
                body = yaml.safe_load((SAMPLES / sample).read_text())
                await client.create(
                    RAYCLUSTERS if body["kind"] == "RayCluster" else RAYSERVICES, body, "default"
                )
            autoscaling = copy.deepcopy(yaml.safe_load((SAMPLES / "ray-cluster.sample.yaml").read_text()))
            autoscaling["metadata"]["name"] = "autoscaling"
            autoscaling["spec"]["enableInTreeAutoscaling"] = True
            await client.create(RAYCLUSTERS, autoscaling, "default")

            async def samples_ready() -> bool:
                rc = await _status(client, RAYCLUSTERS, "raycluster-kuberay")
                svc = await _status(client, RAYSERVICES, "rayservice-sample")
                ready = {c["type"]: c["status"] for c in svc.get("conditions") or []}
                return rc.get("state") == "ready" and ready.get("Ready") == "True"

            await eventually(samples_ready, "samples ready", WAIT)
            await client.patch(
                RAYCLUSTERS,
                "raycluster-kuberay",
                [
                    {"op": "replace", "path": "/spec/workerGroupSpecs/0/minReplicas", "value": 0},
                    {"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 0},
                ],
                "default",
                patch_type="json",
            )

            async def scaled_down() -> bool:
                status = await _status(client, RAYCLUSTERS, "raycluster-kuberay")
                # Zero counters are omitted from the status, as KubeRay (omitempty) writes them.
                return not status.get("desiredWorkerReplicas") and not status.get("availableWorkerReplicas")

            await eventually(scaled_down, "scale down", WAIT)
            await client.delete(RAYSERVICES, "rayservice-sample", "default")
            await eventually(lambda: _gone(client, RAYSERVICES, "rayservice-sample"), "RayService gone", WAIT)
            await client.delete(RAYCLUSTERS, "raycluster-kuberay", "default")
            await eventually(lambda: _gone(client, RAYCLUSTERS, "raycluster-kuberay"), "cluster gone", WAIT)
        finally:
            manager.stop()
            await asyncio.wait_for(run, 60)

    allowed = cluster_role() | leader_election_role()
    assert ("rbac.authorization.k8s.io", "roles", "create") in seen  # the scenario reached autoscaling
    assert ("coordination.k8s.io", "leases", "update") in seen
    assert ("ray.io", "rayclusters/status", "update") in seen
    assert ("events.k8s.io", "events", "create") in seen
    denied = sorted(seen - allowed)
    assert not denied, f"the operator sent requests config/rbac does not allow: {denied}"
