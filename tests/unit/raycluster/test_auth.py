"""Token authentication (``authOptions``) in the Pods, both modes, as KubeRay v1.7 wires it."""

from __future__ import annotations

import base64
import copy
from typing import Any

from controllers.raycluster.auth import build_auth_secret, generates_auth_secret
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.pod import build_head_pod, build_worker_pod

OPTS = RayClusterOptions()


def cluster(auth: dict[str, Any], *, autoscaling: bool = False) -> dict[str, Any]:
    container = {"name": "ray", "image": "rayproject/ray:2.52.0"}
    spec: dict[str, Any] = {
        "rayVersion": "2.52.0",
        "authOptions": auth,
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [dict(container)]}}},
        "workerGroupSpecs": [
            {
                "groupName": "g",
                "replicas": 1,
                "rayStartParams": {},
                "template": {"spec": {"containers": [copy.deepcopy(container)]}},
            }
        ],
    }
    if autoscaling:
        spec["enableInTreeAutoscaling"] = True
        spec["autoscalerOptions"] = {"env": [{"name": "USER", "value": "1"}]}
    return {"metadata": {"name": "rc", "namespace": "ns", "uid": "u1", "generation": 1}, "spec": spec}


def env(container: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(e["name"], e.get("value", e.get("valueFrom"))) for e in container.get("env") or []]


TOKEN_REF = {"secretKeyRef": {"name": "rc", "key": "auth_token"}}


def test_token_mode_every_ray_container_reads_the_generated_secret() -> None:
    c = cluster({"mode": "token"}, autoscaling=True)
    head = build_head_pod(c, OPTS)
    worker = build_worker_pod(c, c["spec"]["workerGroupSpecs"][0], OPTS)
    ray, autoscaler = head["spec"]["containers"]
    init = worker["spec"]["initContainers"][0]
    for container in (ray, autoscaler, worker["spec"]["containers"][0], init):
        names = [n for n, _ in env(container)]
        assert ("RAY_AUTH_MODE", "token") in env(container)
        assert ("RAY_AUTH_TOKEN", TOKEN_REF) in env(container)
        assert "RAY_ENABLE_K8S_TOKEN_AUTH" not in names
    # KubeRay sets the auth env before merging autoscalerOptions.env.
    names = [n for n, _ in env(autoscaler)]
    assert names.index("RAY_AUTH_TOKEN") < names.index("USER")
    assert not any(v["name"] == "ray-token" for v in head["spec"]["volumes"])
    assert generates_auth_secret(c)


def test_a_named_secret_is_used_and_none_is_generated() -> None:
    c = cluster({"mode": "token", "secretName": "mine"})
    head = build_head_pod(c, OPTS)
    ref = {"secretKeyRef": {"name": "mine", "key": "auth_token"}}
    assert ("RAY_AUTH_TOKEN", ref) in env(head["spec"]["containers"][0])
    assert not generates_auth_secret(c)


def test_kubernetes_token_auth_mounts_the_projected_token_and_needs_no_secret() -> None:
    c = cluster({"mode": "token", "enableK8sTokenAuth": True})
    head = build_head_pod(c, OPTS)
    worker = build_worker_pod(c, c["spec"]["workerGroupSpecs"][0], OPTS)
    for pod in (head, worker):
        ray = pod["spec"]["containers"][0]
        assert ("RAY_ENABLE_K8S_TOKEN_AUTH", "true") in env(ray)
        assert "RAY_AUTH_TOKEN" not in [n for n, _ in env(ray)]
        mount = {"name": "ray-token", "mountPath": "/var/run/secrets/ray.io/serviceaccount", "readOnly": True}
        assert mount in ray["volumeMounts"]
        volume = {"name": "ray-token", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}
        assert volume in pod["spec"]["volumes"]
    assert mount in worker["spec"]["initContainers"][0]["volumeMounts"]
    assert not generates_auth_secret(c)


def test_user_set_auth_env_is_kept() -> None:
    c = cluster({"mode": "token"})
    c["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "RAY_AUTH_TOKEN", "value": "literal"}
    ]
    ray = build_head_pod(c, OPTS)["spec"]["containers"][0]
    assert [v for n, v in env(ray) if n == "RAY_AUTH_TOKEN"] == ["literal"]


def test_disabled_or_absent_auth_adds_nothing() -> None:
    for auth in ({}, {"mode": "disabled"}):
        ray = build_head_pod(cluster(auth), OPTS)["spec"]["containers"][0]
        assert not [n for n, _ in env(ray) if n.startswith("RAY_AUTH") or n == "RAY_ENABLE_K8S_TOKEN_AUTH"]


def test_generated_secret_is_owned_by_the_cluster_and_holds_32_random_bytes() -> None:
    c = cluster({"mode": "token"})
    first, second = build_auth_secret(c), build_auth_secret(c)
    assert first["metadata"]["name"] == "rc" and first["metadata"]["namespace"] == "ns"
    assert first["metadata"]["ownerReferences"][0]["uid"] == "u1"
    token = first["stringData"]["auth_token"]
    assert len(base64.b64decode(token)) == 32
    assert token != second["stringData"]["auth_token"]
