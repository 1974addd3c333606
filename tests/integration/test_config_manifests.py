"""The manifests under config/ install cleanly: server-side dry-run apply against the envtest API
server, in the order `kubectl apply -k config/default` would use, plus the structural promises of
the manager Deployment (probes, security context, drain time) and the monitoring objects.
"""

from __future__ import annotations

import copy
import functools
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio.client import models

from controllers.cli.flags import operator_flags, parse_args
from kuberay_py.client import Client, NotFound, Resource, resources

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config"
DEPLOYMENTS = Resource("apps", "v1", "Deployment", "deployments")
KINDS: dict[str, Resource] = {
    r.kind: r
    for r in (
        resources.CRDS,
        resources.NAMESPACES,
        resources.SERVICEACCOUNTS,
        resources.CLUSTERROLES,
        resources.CLUSTERROLEBINDINGS,
        resources.ROLES,
        resources.ROLEBINDINGS,
        resources.SERVICES,
        DEPLOYMENTS,
    )
}
# kustomize's legacy ordering (what `kubectl apply -k` sends first): namespaces and CRDs before
# anything that lives in them or is made of them, RBAC before the workload that needs it.
ORDER = [
    "Namespace",
    "CustomResourceDefinition",
    "ServiceAccount",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
    "Service",
    "Deployment",
]
FIELD_MANAGER = "kubectl"


def kustomize_files(directory: Path) -> list[Path]:
    """The files a kustomization uses (resources, following nested ones, and generator files)."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unsupported = set(kustomization) - {"apiVersion", "kind", "resources", "configMapGenerator"}
    assert not unsupported, f"{directory}: plain lists only, so `kubectl apply -f` in order works too"
    files: list[Path] = []
    for entry in kustomization.get("resources") or []:
        path = (directory / entry).resolve()
        files.extend(kustomize_files(path) if path.is_dir() else [path])
    for generator in kustomization.get("configMapGenerator") or []:
        files.extend((directory / f).resolve() for f in generator.get("files") or [])
    for path in files:
        assert path.exists(), f"{directory}/kustomization.yaml lists a missing file: {path}"
    return files


def default_install() -> list[dict[str, Any]]:
    """A fresh copy each call (tests may mutate); the CRDs are large, so parse once with libyaml."""
    return copy.deepcopy(_parsed_default_install())


@functools.cache
def _parsed_default_install() -> list[dict[str, Any]]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    files = [f for f in kustomize_files(CONFIG / "default") if f.suffix == ".yaml"]
    docs = [d for f in files for d in yaml.load_all(f.read_text(), Loader=loader) if d]
    return sorted(docs, key=lambda d: ORDER.index(d["kind"]))


def deployment() -> dict[str, Any]:
    return next(d for d in default_install() if d["kind"] == "Deployment")


def test_every_manifest_file_is_listed_in_its_kustomization() -> None:
    for directory in ("rbac", "manager", "prometheus", "grafana", "crd"):
        listed = {p.resolve() for p in kustomize_files(CONFIG / directory)}
        present = {
            p.resolve() for p in (CONFIG / directory).rglob("*.yaml") if p.name != "kustomization.yaml"
        }
        present |= {p.resolve() for p in (CONFIG / directory).glob("*.json")}
        assert present <= listed, f"config/{directory}: not in kustomization.yaml: {sorted(present - listed)}"


def test_default_install_has_every_kind_once_in_order() -> None:
    kinds = [d["kind"] for d in default_install()]
    assert kinds[0] == "Namespace" and kinds[-1] == "Deployment"
    assert kinds.count("CustomResourceDefinition") == 4


async def test_config_default_applies_server_side_dry_run(k8s: Client) -> None:
    docs = default_install()
    namespace = next(d for d in docs if d["kind"] == "Namespace")["metadata"]["name"]
    created_namespace = False
    try:
        for doc in docs:
            res = KINDS[doc["kind"]]
            ns = doc["metadata"].get("namespace") if res.namespaced else None
            assert (ns is not None) == res.namespaced, f"{doc['kind']}/{doc['metadata']['name']} namespace"
            applied = await k8s.patch(
                res,
                doc["metadata"]["name"],
                doc,
                ns,
                patch_type="apply",
                field_manager=FIELD_MANAGER,
                force=True,
                dry_run=True,
            )
            assert applied["metadata"]["name"] == doc["metadata"]["name"]
            if doc["kind"] == "Namespace":
                # Dry-run objects are not stored; the namespaced ones need the namespace to exist.
                try:
                    await k8s.get(resources.NAMESPACES, namespace)
                except NotFound:
                    await k8s.create(resources.NAMESPACES, doc)
                    created_namespace = True
        # Nothing was persisted by the dry runs.
        with pytest.raises(NotFound):
            await k8s.get(DEPLOYMENTS, "kuberay-operator", namespace)
        # The Deployment's pod template passes the server's Pod validation (the built-in API server
        # stores Deployments without validating their template; a Pod dry-run checks it).
        template = deployment()["spec"]["template"]
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "template-check", **template["metadata"]},
            "spec": template["spec"],
        }
        await k8s.create(resources.PODS, pod, namespace, dry_run=True)
    finally:
        if created_namespace:
            await k8s.delete(resources.NAMESPACES, namespace)


def _check_schema(value: Any, type_name: str, path: str) -> list[str]:
    """Unknown fields and wrong primitive types, against the Kubernetes OpenAPI models."""
    if type_name.startswith("list["):
        if not isinstance(value, list):
            return [f"{path}: expected a list"]
        return [e for i, v in enumerate(value) for e in _check_schema(v, type_name[5:-1], f"{path}[{i}]")]
    if type_name.startswith("dict("):
        if not isinstance(value, dict):
            return [f"{path}: expected a map"]
        inner = type_name[5:-1].split(", ", 1)[1]
        return [e for k, v in value.items() for e in _check_schema(v, inner, f"{path}.{k}")]
    primitives = {"str": str, "int": int, "bool": bool, "float": (int, float), "datetime": str}
    if type_name in primitives:
        ok = isinstance(value, primitives[type_name]) and not (type_name == "int" and isinstance(value, bool))
        return [] if ok else [f"{path}: expected {type_name}, got {value!r}"]
    if type_name == "object":
        return []
    model = getattr(models, type_name)
    if not isinstance(value, dict):
        return [f"{path}: expected an object ({type_name})"]
    by_json = {json_key: attr for attr, json_key in model.attribute_map.items()}
    errors = []
    for key, item in value.items():
        if key not in by_json:
            errors.append(f"{path}.{key}: unknown field in {type_name}")
        else:
            errors.extend(_check_schema(item, model.openapi_types[by_json[key]], f"{path}.{key}"))
    return errors


def test_schema_check_catches_a_typo() -> None:
    broken = deployment()
    broken["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    broken["spec"]["replicas"] = "1"
    errors = _check_schema(broken, "V1Deployment", "deployment")
    assert any("readinesProbe: unknown field" in e for e in errors), errors
    assert any("spec.replicas: expected int" in e for e in errors), errors


@pytest.mark.parametrize(
    "kind",
    [
        "Deployment",
        "Service",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Namespace",
    ],
)
def test_manifests_match_the_kubernetes_schema(kind: str) -> None:
    for doc in (d for d in default_install() if d["kind"] == kind):
        assert _check_schema(doc, f"V1{kind}", kind) == []


def test_deployment_probes_security_and_drain_time() -> None:
    pod = deployment()["spec"]["template"]["spec"]
    [container] = pod["containers"]
    args = container["args"]
    flags = operator_flags(parse_args(args))  # the args are valid flags of this very CLI
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert int(flags.health_probe_bind_address.rsplit(":", 1)[1]) == ports["health"]
    assert int(flags.metrics_addr.rsplit(":", 1)[1]) == ports["http-metrics"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert flags.enable_leader_election is True
    assert pod["terminationGracePeriodSeconds"] > flags.graceful_shutdown_timeout
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"] and not sc["capabilities"].get("add")
    assert container["resources"]["requests"] and container["resources"]["limits"]
    env = {e["name"]: e for e in container.get("env") or []}
    assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"


def test_metrics_service_and_service_monitor_select_the_operator() -> None:
    docs = default_install()
    dep = deployment()
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert dep["spec"]["selector"]["matchLabels"].items() <= labels.items()
    service = next(d for d in docs if d["kind"] == "Service")
    assert service["spec"]["selector"].items() <= labels.items()
    [port] = service["spec"]["ports"]
    assert port["targetPort"] in {
        p["name"] for p in dep["spec"]["template"]["spec"]["containers"][0]["ports"]
    }
    monitor = yaml.safe_load((CONFIG / "prometheus" / "monitor.yaml").read_text())
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == [port["name"]]
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == [service["metadata"]["namespace"]]
    assert re.fullmatch(r"\d+s", monitor["spec"]["endpoints"][0]["interval"])


def test_grafana_dashboard_is_importable_and_uses_the_datasource_variable() -> None:
    import json

    dashboard = json.loads((CONFIG / "grafana" / "kuberay-operator-dashboard.json").read_text())
    assert dashboard["uid"] and dashboard["title"] and isinstance(dashboard["schemaVersion"], int)
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert (
        variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    )
    panels = dashboard["panels"]
    assert len({p["id"] for p in panels}) == len(panels), "panel ids must be unique"
    occupied: set[tuple[int, int]] = set()
    for panel in panels:
        grid = panel["gridPos"]
        assert 0 <= grid["x"] and grid["x"] + grid["w"] <= 24, panel["title"]
        cells = {
            (x, y)
            for x in range(grid["x"], grid["x"] + grid["w"])
            for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not cells & occupied, f"panel {panel['title']!r} overlaps another"
        occupied |= cells
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == panel["datasource"] and target["expr"].strip(), panel["title"]
