"""The committed CRDs are exactly what the generator produces, structural, and KubeRay-shaped."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.api.crdgen import CRD_FILES, check_crds, generate_crds, main
from controllers.api.k8s_schema import K8sSchemaBuilder, load_overlay
from controllers.api.overlay import extract_overlay

ROOT = Path(__file__).resolve().parents[3]
BASES = ROOT / "config" / "crd" / "bases"
KUBERAY_CRDS = ROOT / "tests" / "fixtures" / "kuberay" / "crd"
Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@pytest.fixture(scope="module")
def generated() -> dict[str, dict[str, Any]]:
    return generate_crds()


@functools.cache
def _load_cached(path: Path) -> str:
    return json.dumps(yaml.load(path.read_text(), Loader=Loader))


def _load(path: Path) -> dict[str, Any]:
    """Parse once per run (the KubeRay CRDs are ~1 MB each); a fresh copy per caller."""
    data: dict[str, Any] = json.loads(_load_cached(path))
    return data


def _schema(crd: dict[str, Any], version: str = "v1") -> dict[str, Any]:
    (v,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    schema: dict[str, Any] = v["schema"]["openAPIV3Schema"]
    return schema


def test_committed_crds_match_the_generator(generated: dict[str, dict[str, Any]]) -> None:
    for name in CRD_FILES:
        assert _load(BASES / name) == generated[name], (
            f"{name} is stale: run `python -m controllers.api.crdgen`"
        )
    assert check_crds(BASES) == []


def test_check_flags_a_hand_edited_crd(tmp_path: Path) -> None:
    assert main(["--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(CRD_FILES)
    assert main(["--out", str(tmp_path), "--check"]) == 0
    path = tmp_path / CRD_FILES[0]
    path.write_text(path.read_text().replace("maxReplicas:", "maxReplica:", 1))
    assert main(["--out", str(tmp_path), "--check"]) == 1
    assert check_crds(tmp_path) == [CRD_FILES[0]]


def _walk(node: Any, path: str, visit: Any) -> None:
    if isinstance(node, dict):
        visit(node, path)
        for key, child in (node.get("properties") or {}).items():
            _walk(child, f"{path}.{key}", visit)
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                _walk(node[key], f"{path}.{key}", visit)


def test_schemas_are_structural(generated: dict[str, dict[str, Any]]) -> None:
    problems: list[str] = []

    def visit(node: dict[str, Any], path: str) -> None:
        typed = (
            "type" in node
            or node.get("x-kubernetes-int-or-string")
            or node.get("x-kubernetes-preserve-unknown-fields")
        )
        if not typed:
            problems.append(f"{path}: no type")
        if "properties" in node and "additionalProperties" in node:
            problems.append(f"{path}: properties and additionalProperties")
        if node.get("x-kubernetes-int-or-string") and node.get("anyOf") != [
            {"type": "integer"},
            {"type": "string"},
        ]:
            problems.append(f"{path}: int-or-string without the anyOf pair")
        keys = node.get("x-kubernetes-list-map-keys")
        if keys:
            item = node["items"]
            for key in keys:
                if key not in item.get("required", []) and "default" not in item["properties"][key]:
                    problems.append(f"{path}: list-map key {key} neither required nor defaulted")
        for key in node.get("required", []):
            if key not in node.get("properties", {}):
                problems.append(f"{path}: required {key} is not a property")

    for name, crd in generated.items():
        schema = _schema(crd)
        assert schema["properties"]["metadata"] == {"type": "object"}
        _walk(schema, name, visit)
    assert problems == []


def test_crd_serves_v1_with_status_and_kuberay_columns(generated: dict[str, dict[str, Any]]) -> None:
    clusters, services = generated[CRD_FILES[0]], generated[CRD_FILES[1]]
    assert clusters["metadata"]["name"] == "rayclusters.ray.io"
    assert clusters["spec"]["names"]["categories"] == ["all"]
    (version,) = clusters["spec"]["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1", True, True)
    assert version["subresources"] == {"status": {}}
    columns = [c["name"] for c in version["additionalPrinterColumns"]]
    assert columns[:3] == ["desired workers", "available workers", "cpus"]
    assert services["spec"]["names"]["kind"] == "RayService"
    assert (
        services["spec"]["versions"][0]["additionalPrinterColumns"][1]["jsonPath"]
        == ".status.numServeEndpoints"
    )


def test_the_pod_template_is_the_core_v1_schema(generated: dict[str, dict[str, Any]]) -> None:
    spec = _schema(generated[CRD_FILES[0]])["properties"]["spec"]
    template = spec["properties"]["headGroupSpec"]["properties"]["template"]
    pod = template["properties"]["spec"]
    assert pod["required"] == ["containers"]
    containers = pod["properties"]["containers"]
    assert containers["x-kubernetes-list-type"] == "map" and containers["x-kubernetes-list-map-keys"] == [
        "name"
    ]
    container = containers["items"]
    assert container["required"] == ["name"]
    ports = container["properties"]["ports"]
    assert ports["x-kubernetes-list-map-keys"] == ["containerPort", "protocol"]
    assert ports["items"]["properties"]["protocol"]["default"] == "TCP"
    assert ports["items"]["properties"]["containerPort"] == {"format": "int32", "type": "integer"}
    limits = container["properties"]["resources"]["properties"]["limits"]["additionalProperties"]
    assert limits["x-kubernetes-int-or-string"] is True and "pattern" in limits
    probe_port = container["properties"]["readinessProbe"]["properties"]["httpGet"]["properties"]["port"]
    assert probe_port == {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    }
    assert set(template["properties"]["metadata"]["properties"]) == {
        "annotations",
        "finalizers",
        "labels",
        "name",
        "namespace",
    }


def test_generator_is_deterministic() -> None:
    first = json.dumps(generate_crds(), sort_keys=False)
    assert json.dumps(generate_crds(k8s=K8sSchemaBuilder()), sort_keys=False) == first


# The one place our schema knowingly differs from KubeRay's v1 schema: kubernetes_asyncio (the
# upstream OpenAPI document) does not list PortStatus.error as required; controller-gen does.
KNOWN_DIFFERENCES = {
    "spec.headGroupSpec.headService.status.loadBalancer.ingress.items.ports.items: required",
    "spec.rayClusterConfig.headGroupSpec.headService.status.loadBalancer.ingress.items.ports.items: required",
    "spec.serveService.status.loadBalancer.ingress.items.ports.items: required",
    "spec.rayClusterSpec.headGroupSpec.headService.status.loadBalancer.ingress.items.ports.items: required",
    "spec.jobTemplate.rayClusterSpec.headGroupSpec.headService.status.loadBalancer.ingress.items."
    "ports.items: required",
}


def _differences(ours: Any, theirs: Any, path: str, out: list[str]) -> None:
    if not isinstance(ours, dict) or not isinstance(theirs, dict):
        if ours != theirs:
            out.append(f"{path}: value")
        return
    keys = (set(ours) | set(theirs)) - {"description"}
    for key in sorted(keys):
        if key not in ours or key not in theirs:
            out.append(f"{path}: {'missing' if key not in ours else 'extra'} {key}")
        elif key == "properties":
            for prop in sorted(set(ours[key]) | set(theirs[key])):
                if prop not in ours[key] or prop not in theirs[key]:
                    out.append(f"{path}.{prop}: {'missing' if prop not in ours[key] else 'extra'} property")
                else:
                    _differences(ours[key][prop], theirs[key][prop], f"{path}.{prop}".lstrip("."), out)
        elif key in ("items", "additionalProperties"):
            _differences(ours[key], theirs[key], f"{path}.{key}", out)
        elif ours[key] != theirs[key]:
            out.append(f"{path}: {key}")


def test_same_shape_as_kuberay_v1(generated: dict[str, dict[str, Any]]) -> None:
    found: list[str] = []
    for name in CRD_FILES:
        ours, theirs = _schema(generated[name]), _schema(_load(KUBERAY_CRDS / name))
        _differences(ours, theirs, "", found)
        kuberay_v1 = next(v for v in _load(KUBERAY_CRDS / name)["spec"]["versions"] if v["name"] == "v1")
        ours_v1 = generated[name]["spec"]["versions"][0]
        assert ours_v1["additionalPrinterColumns"] == kuberay_v1.get("additionalPrinterColumns", [])
        assert generated[name]["spec"]["names"] == _load(KUBERAY_CRDS / name)["spec"]["names"]
    assert {f.replace("..", ".") for f in found} == KNOWN_DIFFERENCES


def test_committed_overlay_is_what_kuberays_crds_give() -> None:
    overlay, problems = extract_overlay(
        _load(KUBERAY_CRDS / CRD_FILES[0]), _load(KUBERAY_CRDS / CRD_FILES[1])
    )
    assert problems == []
    assert overlay == load_overlay()
