"""KubeRay v1.7.0's ``TestRayClusterAuthOptions`` (test/e2e/raycluster_auth_test.go), on the simulator.

A RayCluster with ``rayVersion: "2.52"`` (no patch component: KubeRay pads it to 2.52.0) and
``authOptions.mode: token`` must become ready, every Ray container must read ``RAY_AUTH_TOKEN``
from the generated Secret, and the head's dashboard must take a job submitted with that token
and refuse one with a wrong token. The fake head requires the token the Secret holds, as the
kubelet would hand it to a real one, so a token the operator wired wrongly fails here.

KubeRay's test drives ``ray job submit`` inside the head Pod and expects the CLI to say
"Unauthenticated" for the wrong token; here the same requests go to the dashboard's REST API
from outside (the simulator runs no containers), and the refusal is Ray 2.60's HTTP answer.
"""

from __future__ import annotations

import base64
from typing import Any

import aiohttp

from controllers.constants import RAYCLUSTERS
from kuberay_py.client import NotFound
from kuberay_py.client.resources import PODS, SECRETS
from tests.polling import eventually
from tests.scenario.conftest import Scenario

NAME = "raycluster-auth-token"
IMAGE = "rayproject/ray:2.52.0"


def _container(name: str, ports: list[dict[str, Any]]) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": name,
        "image": IMAGE,
        "resources": {
            "requests": {"cpu": "300m", "memory": "1G"},
            "limits": {"cpu": "500m", "memory": "2G"},
        },
    }
    if ports:
        container["ports"] = ports
    return container


def cluster_manifest() -> dict[str, Any]:
    """``NewRayClusterSpec()`` of KubeRay's test support, with token auth and rayVersion "2.52"."""
    head_ports = [
        {"name": "gcs", "containerPort": 6379},
        {"name": "serve", "containerPort": 8000},
        {"name": "dashboard", "containerPort": 8265},
        {"name": "client", "containerPort": 10001},
    ]
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": NAME},
        "spec": {
            "rayVersion": "2.52",
            "authOptions": {"mode": "token"},
            "headGroupSpec": {
                "rayStartParams": {"dashboard-host": "0.0.0.0"},
                "template": {"spec": {"containers": [_container("ray-head", head_ports)]}},
            },
            "workerGroupSpecs": [
                {
                    "groupName": "small-group",
                    "replicas": 1,
                    "minReplicas": 1,
                    "maxReplicas": 1,
                    "rayStartParams": {"num-cpus": "1"},
                    "template": {"spec": {"containers": [_container("ray-worker", [])]}},
                }
            ],
        },
    }


def _assert_token_env(container: dict[str, Any]) -> None:
    """KubeRay's ``VerifyContainerAuthTokenEnvVars``."""
    env = {e["name"]: e for e in container.get("env") or []}
    assert env["RAY_AUTH_MODE"].get("value") == "token", container["name"]
    ref = (env["RAY_AUTH_TOKEN"].get("valueFrom") or {}).get("secretKeyRef") or {}
    assert NAME in ref.get("name", ""), container["name"]
    assert ref.get("key") == "auth_token", container["name"]


async def _token_from_pod(sc: Scenario, pod: dict[str, Any]) -> str:
    """KubeRay's ``getAuthTokenFromPod``: the Secret the Ray container's RAY_AUTH_TOKEN reads."""
    for env in pod["spec"]["containers"][0].get("env") or []:
        ref = (env.get("valueFrom") or {}).get("secretKeyRef")
        if env["name"] == "RAY_AUTH_TOKEN" and ref:
            secret = await sc.client.get(SECRETS, ref["name"], sc.namespace)
            return base64.b64decode(secret["data"][ref["key"]]).decode()
    return ""


def _wire_secrets(sc: Scenario) -> None:
    """Let the fake nodes read the Secret a Pod's RAY_AUTH_TOKEN names, as the kubelet does."""

    async def secret_value(namespace: str, name: str, key: str) -> str | None:
        try:
            secret = await sc.client.get(SECRETS, name, namespace)
        except NotFound:
            return None
        raw = (secret.get("data") or {}).get(key)
        return base64.b64decode(raw).decode() if raw is not None else None

    sc.runtime.secret_value = secret_value


async def _pods(sc: Scenario, node_type: str) -> list[dict[str, Any]]:
    selector = f"ray.io/cluster={NAME},ray.io/node-type={node_type}"
    items: list[dict[str, Any]] = (await sc.client.list(PODS, sc.namespace, label_selector=selector))["items"]
    return items


async def test_raycluster_with_token_auth_and_ray_version_2_52(scenario: Scenario) -> None:
    sc = scenario
    _wire_secrets(sc)
    await sc.client.create(RAYCLUSTERS, cluster_manifest(), sc.namespace)

    async def ready() -> dict[str, Any] | None:
        cluster: dict[str, Any] = await sc.client.get(RAYCLUSTERS, NAME, sc.namespace)
        return cluster if (cluster.get("status") or {}).get("state") == "ready" else None

    await eventually(ready, f"RayCluster {NAME} ready", 60.0)

    heads = await _pods(sc, "head")
    assert len(heads) == 1
    head = heads[0]
    _assert_token_env(head["spec"]["containers"][0])
    workers = await _pods(sc, "worker")
    assert workers
    for worker in workers:
        _assert_token_env(worker["spec"]["containers"][0])

    token = await _token_from_pod(sc, head)
    assert token, "the auth token should be present"
    dashboard = f"http://{head['status']['podIP']}:8265"

    async with aiohttp.ClientSession() as http:
        # "Submit job with auth token should succeed"
        job = {
            "entrypoint": "python -c 'import ray; ray.init(); print(\"Job with auth succeeded\")'",
            "submission_id": "test-job-with-auth",
        }
        good = {"authorization": f"Bearer {token}"}
        async with http.post(f"{dashboard}/api/jobs/", json=job, headers=good) as resp:
            assert resp.status == 200, await resp.text()
            assert (await resp.json())["submission_id"] == "test-job-with-auth"

        async def succeeded() -> bool:
            async with http.get(f"{dashboard}/api/jobs/test-job-with-auth", headers=good) as resp:
                return resp.status == 200 and (await resp.json())["status"] == "SUCCEEDED"

        await eventually(succeeded, "the job submitted with the token to succeed")

        # "Submit job with incorrect auth token should fail"
        bad_job = {
            "entrypoint": "python -c 'print(\"Should not run\")'",
            "submission_id": "test-job-bad-auth",
        }
        bad = {"authorization": "Bearer incorrect-token-12345"}
        async with http.post(f"{dashboard}/api/jobs/", json=bad_job, headers=bad) as resp:
            assert (resp.status, await resp.text()) == (403, "Forbidden: Invalid authentication token")
        async with http.post(f"{dashboard}/api/jobs/", json=bad_job) as resp:
            assert resp.status == 401
        async with http.get(f"{dashboard}/api/jobs/test-job-bad-auth", headers=good) as resp:
            assert resp.status == 404  # the refused submission never reached the job table
