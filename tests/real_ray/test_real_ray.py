"""One real ``ray[serve]`` 2.60 head as the head Pod's Ray (marked ``real_ray``).

The operator submits serveConfigV2 to the real dashboard, the RayService becomes Ready through the
real proxy's ``/-/healthz`` (head label → EndpointSlice → numServeEndpoints), and a bad
``import_path`` shows up in status as Ray reports it (DEPLOY_FAILED with the traceback), while the
good application keeps serving.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.constants import RAYSERVICES
from controllers.raycluster.setup import setup as setup_raycluster
from controllers.rayservice.reconciler import RayServiceOptions
from controllers.rayservice.setup import setup as setup_rayservice
from kuberay_py.client.resources import PODS
from kuberay_py.envtest import Environment
from tests.in_loop_manager import in_loop_manager, start_in_loop, stop_in_loop
from tests.live import update_live
from tests.rayservice_harness import sample

from .conftest import http_get

pytestmark = pytest.mark.real_ray

ROOT = Path(__file__).resolve().parents[2]
SERVE_CONFIG = {
    "proxy_location": "EveryNode",
    "http_options": {"host": "127.0.0.1", "port": 8000, "request_timeout_s": 5},
    "applications": [
        {
            "name": "fruit_app",
            "import_path": "fruit:app",
            "route_prefix": "/fruit",
            "deployments": [{"name": "Fruit", "num_replicas": 1, "ray_actor_options": {"num_cpus": 0.1}}],
        }
    ],
}


def manifest() -> dict[str, Any]:
    obj = sample("ray-service.sample.yaml")
    obj["metadata"] = {"name": "real"}
    obj["spec"]["serveConfigV2"] = yaml.safe_dump(SERVE_CONFIG)
    spec = obj["spec"]["rayClusterConfig"]
    spec["rayVersion"] = "2.60.0"
    spec["headGroupSpec"]["rayStartParams"] = {"num-cpus": "1"}
    spec["workerGroupSpecs"][0].update(replicas=0, minReplicas=0)
    return obj


async def wait_for(fn: Any, timeout: float, what: str) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    last: Any = None
    while asyncio.get_running_loop().time() < deadline:
        last = await fn()
        if last:
            return last
        await asyncio.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}; last: {last!r}")


async def test_real_ray_head_serves_and_reports_a_bad_import_path(real_ray_runtime) -> None:
    async with Environment(
        [str(ROOT / "config/crd/bases")], simulate=True, pod_runtime=real_ray_runtime, probe_period_scale=0.2
    ) as env:
        client = env.new_client()
        mgr = in_loop_manager(env.client_config)
        setup_raycluster(mgr)
        setup_rayservice(
            mgr, head_check_period=1.0, options=RayServiceOptions(serve_poll_interval=1.0, env={})
        )
        task = start_in_loop(mgr)
        try:
            ns = await env.create_namespace()
            await client.create(RAYSERVICES, manifest(), ns)

            async def ready() -> dict[str, Any] | None:
                svc = await client.get(RAYSERVICES, "real", ns)
                conds = {c["type"]: c for c in (svc.get("status") or {}).get("conditions") or []}
                return svc if conds.get("Ready", {}).get("status") == "True" else None

            svc = await wait_for(ready, 180, "Ready=True from the real proxy")
            status = svc["status"]
            assert status["numServeEndpoints"] == 1
            assert status["activeServiceStatus"]["applicationStatuses"]["fruit_app"]["status"] == "RUNNING"
            cluster = status["activeServiceStatus"]["rayClusterName"]
            heads = await client.list(
                PODS, ns, label_selector=f"ray.io/cluster={cluster},ray.io/node-type=head"
            )
            head = heads["items"][0]
            assert head["metadata"]["labels"]["ray.io/serve"] == "true"
            code, body = await http_get(f"http://{head['status']['podIP']}:8000/fruit")
            assert code == 200 and "mango" in body

            bad = dict(SERVE_CONFIG)
            bad["applications"] = [
                *SERVE_CONFIG["applications"],  # type: ignore[misc]
                {"name": "bad_app", "import_path": "no_such_module:app", "route_prefix": "/bad"},
            ]
            await update_live(
                client, RAYSERVICES, "real", ns, lambda o: o["spec"].update(serveConfigV2=yaml.safe_dump(bad))
            )

            async def failed() -> dict[str, Any] | None:
                cur = await client.get(RAYSERVICES, "real", ns)
                apps = cur["status"]["activeServiceStatus"].get("applicationStatuses") or {}
                return cur if apps.get("bad_app", {}).get("status") == "DEPLOY_FAILED" else None

            cur = await wait_for(failed, 120, "bad_app DEPLOY_FAILED")
            apps = cur["status"]["activeServiceStatus"]["applicationStatuses"]
            assert "no_such_module" in apps["bad_app"]["message"]
            assert apps["fruit_app"]["status"] == "RUNNING"
            ready_cond = next(c for c in cur["status"]["conditions"] if c["type"] == "Ready")
            assert ready_cond["status"] == "True"  # the good app keeps serving
            code, body = await http_get(f"http://{head['status']['podIP']}:8000/fruit")
            assert code == 200
        finally:
            await stop_in_loop(mgr, task)
            await client.close()
