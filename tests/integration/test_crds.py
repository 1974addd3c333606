"""Our generated CRDs on an API server: served, accepting KubeRay's samples, rejecting bad input.

Runs on the envtest API server (real kube-apiserver when KUBEBUILDER_ASSETS is set, the built-in
one otherwise) with only ``config/crd/bases`` installed. Every invalid manifest must be caught
either by the API server (a 422 whose causes name the field) or, when the server accepts it, by
``controllers.api.validation`` on the stored object (an error naming the field). Both paths are
exercised; which one caught each case is part of the assertion's message.
"""

from __future__ import annotations

import asyncio
import copy
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.api import load_raycluster, load_rayservice
from controllers.api.gates import ClusterGates
from controllers.api.validation import validate_raycluster, validate_rayservice
from controllers.constants import RAYCLUSTERS, RAYSERVICES
from kuberay_py.client import Client, Invalid
from kuberay_py.client.resources import Resource
from kuberay_py.envtest import Environment
from tests.manifest_edits import Mutation, all_of, delete_path, duplicate_first_group, set_path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_DIRS = (ROOT / "tests" / "fixtures" / "kuberay" / "samples", ROOT / "config" / "samples")


def _samples() -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for directory in SAMPLE_DIRS:
        for path in sorted(directory.glob("*.yaml")):
            for doc in yaml.safe_load_all(path.read_text()):
                if isinstance(doc, dict) and doc.get("kind") in ("RayCluster", "RayService"):
                    out.append((f"{directory.name}/{path.name}", doc))
    return out


SAMPLES = _samples()


def _resource(kind: str) -> Resource:
    return RAYCLUSTERS if kind == "RayCluster" else RAYSERVICES


# ------------------------------------------------------------------------------------ discovery


async def test_crds_are_established_and_served(client: Client) -> None:
    for plural, kind in (("rayclusters", "RayCluster"), ("rayservices", "RayService")):
        crd = await client.request(
            "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{plural}.ray.io"
        )
        conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
        assert conditions.get("Established") == "True" and conditions.get("NamesAccepted") == "True"
        assert crd["status"]["acceptedNames"]["kind"] == kind
    groups = await client.request("GET", "/apis")
    (ray,) = [g for g in groups["groups"] if g["name"] == "ray.io"]
    assert ray["preferredVersion"]["groupVersion"] == "ray.io/v1"
    listing = await client.request("GET", "/apis/ray.io/v1")
    by_name = {r["name"]: r for r in listing["resources"]}
    assert {"rayclusters", "rayclusters/status", "rayservices", "rayservices/status"} <= set(by_name)
    assert by_name["rayclusters"]["kind"] == "RayCluster" and by_name["rayclusters"]["namespaced"] is True
    assert "all" in by_name["rayclusters"].get("categories", [])
    assert {"create", "get", "list", "watch", "patch", "update", "delete"} <= set(
        by_name["rayservices"]["verbs"]
    )


# -------------------------------------------------------------------------------------- samples


def missing_from(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Paths in ``expected`` that ``actual`` lacks or changed (``actual`` may add defaults)."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [path or "<root>"]
        out: list[str] = []
        for key, value in expected.items():
            if key not in actual:
                out.append(f"{path}.{key}")
            else:
                out += missing_from(value, actual[key], f"{path}.{key}")
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [path]
        return [
            p
            for i, (e, a) in enumerate(zip(expected, actual, strict=True))
            for p in missing_from(e, a, f"{path}[{i}]")
        ]
    return [] if expected == actual else [path]


@pytest.mark.parametrize(("name", "doc"), SAMPLES, ids=[n for n, _ in SAMPLES])
async def test_sample_is_accepted_without_loss(
    client: Client, ns: str, name: str, doc: dict[str, Any]
) -> None:
    res = _resource(doc["kind"])
    created = await client.create(res, copy.deepcopy(doc), namespace=ns)
    stored = await client.get(res, doc["metadata"]["name"], ns)
    for obj in (created, stored):
        # Nothing the user wrote was pruned or changed; the server only added defaults.
        assert missing_from(doc["spec"], obj["spec"], "spec") == []
    load = load_raycluster if doc["kind"] == "RayCluster" else load_rayservice
    validate = validate_raycluster if doc["kind"] == "RayCluster" else validate_rayservice
    assert load(stored).to_dict() == stored
    # Each sample is valid with its own feature gate on (the alpha-gated samples need theirs).
    assert validate(stored, gates=ClusterGates.all_on()) == []
    if doc["kind"] == "RayCluster":
        groups = stored["spec"].get("workerGroupSpecs", [])
        assert all(g["numOfHosts"] == 1 for g in groups), "the CRD default was applied"
    await client.delete(res, doc["metadata"]["name"], ns)


# ------------------------------------------------------------------------------ invalid manifests

CLUSTER: dict[str, Any] = yaml.safe_load((ROOT / "config/samples/ray-cluster.sample.yaml").read_text())
SERVICE: dict[str, Any] = yaml.safe_load((ROOT / "config/samples/ray-service.sample.yaml").read_text())

HEAD = "spec.headGroupSpec"
HEAD_C0 = f"{HEAD}.template.spec.containers[0]"
W0 = "spec.workerGroupSpecs[0]"
RC = "spec.rayClusterConfig"

# (id, kind, mutation, the field path the rejection must name)
INVALID: list[tuple[str, str, Mutation, str]] = [
    # Types, enums, required fields, patterns: the schema's job.
    ("replicas-string", "RayCluster", set_path(f"{W0}.replicas", "3"), f"{W0}.replicas"),
    ("suspend-string", "RayCluster", set_path("spec.suspend", "yes"), "spec.suspend"),
    (
        "ray-start-param-int",
        "RayCluster",
        set_path(f"{HEAD}.rayStartParams", {"num-cpus": 1}),
        f"{HEAD}.rayStartParams",
    ),
    (
        "upgrade-enum",
        "RayCluster",
        set_path("spec.upgradeStrategy", {"type": "Rolling"}),
        "spec.upgradeStrategy.type",
    ),
    ("no-head-group", "RayCluster", delete_path(HEAD), HEAD),
    ("no-head-template", "RayCluster", delete_path(f"{HEAD}.template"), f"{HEAD}.template"),
    (
        "pod-spec-without-containers",
        "RayCluster",
        set_path(f"{HEAD}.template.spec", {}),
        f"{HEAD}.template.spec.containers",
    ),
    ("container-without-name", "RayCluster", delete_path(f"{HEAD_C0}.name"), f"{HEAD_C0}.name"),
    ("no-group-name", "RayCluster", delete_path(f"{W0}.groupName"), f"{W0}.groupName"),
    ("no-worker-template", "RayCluster", delete_path(f"{W0}.template"), f"{W0}.template"),
    (
        "bad-cpu-quantity",
        "RayCluster",
        set_path(f"{HEAD_C0}.resources.limits.cpu", "one"),
        f"{HEAD_C0}.resources.limits",
    ),
    (
        "port-string",
        "RayCluster",
        set_path(f"{HEAD_C0}.ports[0].containerPort", "gcs"),
        f"{HEAD_C0}.ports[0].containerPort",
    ),
    (
        "env-without-name",
        "RayCluster",
        set_path(f"{HEAD_C0}.env", [{"value": "x"}]),
        f"{HEAD_C0}.env[0].name",
    ),
    (
        "upscaling-enum",
        "RayCluster",
        set_path("spec.autoscalerOptions", {"upscalingMode": "Fast"}),
        "spec.autoscalerOptions.upscalingMode",
    ),
    (
        "autoscaler-version-enum",
        "RayCluster",
        set_path("spec.autoscalerOptions", {"version": "v3"}),
        "spec.autoscalerOptions.version",
    ),
    (
        "gcs-backend-enum",
        "RayCluster",
        set_path("spec.gcsFaultToleranceOptions", {"backend": "etcd"}),
        "spec.gcsFaultToleranceOptions.backend",
    ),
    (
        "ingress-path-type-enum",
        "RayCluster",
        set_path(f"{HEAD}.ingressOptions", {"pathType": "Regex"}),
        f"{HEAD}.ingressOptions.pathType",
    ),
    (
        "auth-mode-enum",
        "RayCluster",
        set_path("spec.authOptions", {"mode": "oauth"}),
        "spec.authOptions.mode",
    ),
    (
        "head-service-port-missing",
        "RayCluster",
        set_path(f"{HEAD}.headService", {"spec": {"ports": [{"name": "x"}]}}),
        f"{HEAD}.headService.spec.ports[0].port",
    ),
    ("managed-by-other", "RayCluster", set_path("spec.managedBy", "someone-else"), "spec.managedBy"),
    ("service-no-cluster-config", "RayService", delete_path(RC), RC),
    (
        "service-serve-config-object",
        "RayService",
        set_path("spec.serveConfigV2", {"applications": []}),
        "spec.serveConfigV2",
    ),
    (
        "service-negative-delay",
        "RayService",
        set_path("spec.rayClusterDeletionDelaySeconds", -1),
        "spec.rayClusterDeletionDelaySeconds",
    ),
    # Semantics: what only the operator can check.
    ("name-too-long", "RayCluster", set_path("metadata.name", "a" * 54), "metadata.name"),
    ("name-not-dns1035", "RayCluster", set_path("metadata.name", "1-cluster"), "metadata.name"),
    ("min-above-max", "RayCluster", set_path(f"{W0}.minReplicas", 6), f"{W0}.minReplicas"),
    ("negative-min", "RayCluster", set_path(f"{W0}.minReplicas", -1), f"{W0}.minReplicas"),
    ("zero-hosts", "RayCluster", set_path(f"{W0}.numOfHosts", 0), f"{W0}.numOfHosts"),
    ("duplicate-groups", "RayCluster", duplicate_first_group, "spec.workerGroupSpecs[1].groupName"),
    (
        "head-without-containers",
        "RayCluster",
        set_path(f"{HEAD}.template.spec.containers", []),
        f"{HEAD}.template.spec.containers",
    ),
    (
        "ft-annotation-and-options",
        "RayCluster",
        all_of(
            set_path("metadata.annotations", {"ray.io/ft-enabled": "true"}),
            set_path("spec.gcsFaultToleranceOptions", {"redisAddress": "redis:6379"}),
        ),
        "spec.gcsFaultToleranceOptions",
    ),
    (
        "redis-env-without-ft",
        "RayCluster",
        set_path(f"{HEAD_C0}.env", [{"name": "RAY_REDIS_ADDRESS", "value": "r:6379"}]),
        f"{HEAD_C0}.env",
    ),
    (
        "idle-timeout-without-v2",
        "RayCluster",
        set_path(f"{W0}.idleTimeoutSeconds", 30),
        f"{W0}.idleTimeoutSeconds",
    ),
    (
        "suspended-group-with-autoscaler",
        "RayCluster",
        all_of(set_path("spec.enableInTreeAutoscaling", True), set_path(f"{W0}.suspend", True)),
        f"{W0}.suspend",
    ),
    (
        "autoscaler-v2-restart-always",
        "RayCluster",
        all_of(
            set_path("spec.enableInTreeAutoscaling", True),
            set_path("spec.autoscalerOptions", {"version": "v2"}),
            set_path(f"{HEAD}.template.spec.restartPolicy", "Always"),
        ),
        f"{HEAD}.template.spec.restartPolicy",
    ),
    ("service-name-too-long", "RayService", set_path("metadata.name", "s" * 48), "metadata.name"),
    (
        "service-custom-head-service-name",
        "RayService",
        set_path(f"{RC}.headGroupSpec.headService", {"metadata": {"name": "mine"}}),
        f"{RC}.headGroupSpec.headService.metadata.name",
    ),
    (
        "service-upgrade-type",
        "RayService",
        set_path("spec.upgradeStrategy", {"type": "BlueGreen"}),
        "spec.upgradeStrategy.type",
    ),
    (
        "service-serve-config-not-yaml",
        "RayService",
        set_path("spec.serveConfigV2", "applications: [\n"),
        "spec.serveConfigV2",
    ),
    (
        "service-serve-config-no-apps",
        "RayService",
        set_path("spec.serveConfigV2", "proxy_location: HeadOnly\n"),
        "spec.serveConfigV2",
    ),
    (
        "service-bad-timeout",
        "RayService",
        set_path("metadata.annotations", {"ray.io/initializing-timeout": "soon"}),
        "metadata.annotations",
    ),
    (
        "service-inner-min-above-max",
        "RayService",
        set_path(f"{RC}.workerGroupSpecs[0].minReplicas", 9),
        f"{RC}.workerGroupSpecs[0].minReplicas",
    ),
]


def test_the_table_is_big_enough() -> None:
    assert len(INVALID) >= 30
    assert len({case[0] for case in INVALID}) == len(INVALID)


def _names_field(text: str, path: str) -> bool:
    return path in text


@pytest.mark.parametrize(("kind", "mutate", "path"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
async def test_invalid_manifest_is_rejected_naming_the_field(
    client: Client, ns: str, kind: str, mutate: Mutation, path: str
) -> None:
    obj = copy.deepcopy(CLUSTER if kind == "RayCluster" else SERVICE)
    mutate(obj)
    res = _resource(kind)
    try:
        stored = await client.create(res, copy.deepcopy(obj), namespace=ns)
    except Invalid as exc:
        fields = [f"{c.get('field', '')}: {c.get('message', '')}" for c in exc.causes]
        assert exc.status == 422
        assert any(_names_field(f, path) for f in fields) or _names_field(exc.message, path), (
            f"API server rejected it but named no {path}: {exc.message} {fields}"
        )
        return
    # Accepted by the schema: semantic validation must catch it, on what the server stored.
    validate = validate_raycluster if kind == "RayCluster" else validate_rayservice
    errors = validate(stored)
    assert any(_names_field(e.path, path) for e in errors), (
        f"accepted by the API server and semantic validation missed {path}: {[str(e) for e in errors]}"
    )
    await client.delete(res, stored["metadata"]["name"], ns)


# ------------------------------------------------------------------------------------- kubectl


async def _kubectl(env: Environment, *args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        "kubectl",
        "--kubeconfig",
        env.kubeconfig_path,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=60)
    return proc.returncode or 0, out.decode()


needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")


@needs_kubectl
async def test_kubectl_discovers_the_kinds_and_the_all_category(
    crd_env: Environment, client: Client, ns: str
) -> None:
    code, out = await _kubectl(crd_env, "api-resources", "--api-group=ray.io", "-o", "name")
    assert code == 0, out
    assert set(out.split()) == {
        "rayclusters.ray.io",
        "rayservices.ray.io",
        "rayjobs.ray.io",
        "raycronjobs.ray.io",
    }
    await client.create(RAYCLUSTERS, copy.deepcopy(CLUSTER), namespace=ns)
    code, out = await _kubectl(crd_env, "get", "all", "-n", ns, "-o", "name")
    assert code == 0, out
    assert f"raycluster.ray.io/{CLUSTER['metadata']['name']}" in out.split()


@needs_kubectl
async def test_kubectl_explain_reads_our_schema(crd_env: Environment) -> None:
    code, out = await _kubectl(crd_env, "explain", "rayclusters.spec.workerGroupSpecs.numOfHosts")
    assert code == 0, out
    assert "numOfHosts" in out and "integer" in out
