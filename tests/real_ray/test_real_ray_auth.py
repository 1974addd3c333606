"""KubeRay's ``TestRayClusterAuthOptions`` against one real Ray 2.60 head (marked ``real_ray``).

The head Pod's ``RAY_AUTH_TOKEN`` Secret is resolved into the real ``ray start --head`` as the
kubelet would, so Ray's own token middleware decides: a job submitted with the generated token
runs to SUCCEEDED, a wrong token gets Ray's 403 and a missing one its 401. The cluster has no
workers (the real-Ray tier runs only a head), so "ready" is the head's readiness through
Ray's own health endpoints, which token auth leaves public.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from controllers.constants import RAYCLUSTERS
from controllers.raycluster.setup import setup as setup_raycluster
from kuberay_py.client import NotFound
from kuberay_py.client.resources import PODS, SECRETS
from kuberay_py.envtest import Environment
from tests.in_loop_manager import in_loop_manager, start_in_loop, stop_in_loop
from tests.scenario.kuberay_e2e.test_raycluster_auth_options import NAME, cluster_manifest

from .test_real_ray import wait_for

pytestmark = pytest.mark.real_ray

ROOT = Path(__file__).resolve().parents[2]


async def test_real_ray_token_auth_with_ray_version_2_52(real_ray_runtime) -> None:
    async with Environment(
        [str(ROOT / "config/crd/bases")], simulate=True, pod_runtime=real_ray_runtime, probe_period_scale=0.2
    ) as env:
        client = env.new_client()

        async def secret_value(namespace: str, name: str, key: str) -> str | None:
            try:
                secret = await client.get(SECRETS, name, namespace)
            except NotFound:
                return None
            raw = (secret.get("data") or {}).get(key)
            return base64.b64decode(raw).decode() if raw is not None else None

        real_ray_runtime.secret_value = secret_value
        mgr = in_loop_manager(env.client_config)
        setup_raycluster(mgr)
        task = start_in_loop(mgr)
        try:
            ns = await env.create_namespace()
            body = cluster_manifest()
            body["spec"]["workerGroupSpecs"][0].update(replicas=0, minReplicas=0)
            await client.create(RAYCLUSTERS, body, ns)

            async def ready() -> dict[str, Any] | None:
                cluster: dict[str, Any] = await client.get(RAYCLUSTERS, NAME, ns)
                return cluster if (cluster.get("status") or {}).get("state") == "ready" else None

            await wait_for(ready, 180, "the RayCluster ready on the real head")
            heads = await client.list(PODS, ns, label_selector=f"ray.io/cluster={NAME},ray.io/node-type=head")
            head = heads["items"][0]
            ref = next(
                e["valueFrom"]["secretKeyRef"]
                for e in head["spec"]["containers"][0]["env"]
                if e["name"] == "RAY_AUTH_TOKEN"
            )
            token = await secret_value(ns, ref["name"], ref["key"])
            assert token
            dashboard = f"http://{head['status']['podIP']}:8265"
            good = {"authorization": f"Bearer {token}"}
            job = {
                "entrypoint": "python -c 'import ray; ray.init(); print(\"Job with auth succeeded\")'",
                "submission_id": "test-job-with-auth",
            }
            async with aiohttp.ClientSession() as http:
                async with http.post(f"{dashboard}/api/jobs/", json=job, headers=good) as resp:
                    assert resp.status == 200, await resp.text()
                    assert (await resp.json())["submission_id"] == "test-job-with-auth"

                async def finished() -> dict[str, Any] | None:
                    async with http.get(f"{dashboard}/api/jobs/test-job-with-auth", headers=good) as resp:
                        info: dict[str, Any] = await resp.json()
                        return info if info.get("status") in ("SUCCEEDED", "FAILED", "STOPPED") else None

                info = await wait_for(finished, 120, "the job to finish")
                async with http.get(f"{dashboard}/api/jobs/test-job-with-auth/logs", headers=good) as resp:
                    logs = (await resp.json())["logs"]
                assert info["status"] == "SUCCEEDED", (info.get("message"), logs)
                assert "Job with auth succeeded" in logs
                bad = {"authorization": "Bearer incorrect-token-12345"}
                async with http.post(f"{dashboard}/api/jobs/", json=job, headers=bad) as resp:
                    assert (resp.status, await resp.text()) == (
                        403,
                        "Forbidden: Invalid authentication token",
                    )
                async with http.post(f"{dashboard}/api/jobs/", json=job) as resp:
                    assert (resp.status, await resp.text()) == (
                        401,
                        "Unauthorized: Missing authentication token",
                    )
        finally:
            await stop_in_loop(mgr, task)
            await client.close()
