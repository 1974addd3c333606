"""kubectl works unchanged against the environment (skipped where kubectl is not installed)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from kuberay_py.envtest import Environment

KUBECTL = shutil.which("kubectl")
SAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "kuberay" / "samples" / "ray-cluster.sample.yaml"
SAMPLE_TEXT = SAMPLE.read_text()
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed")


async def kubectl(env: Environment, *args: str, stdin: bytes | None = None) -> tuple[int, str]:
    assert KUBECTL is not None
    proc = await asyncio.create_subprocess_exec(
        KUBECTL,
        f"--kubeconfig={env.kubeconfig_path}",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate(stdin)
    return proc.returncode or 0, out.decode()


async def test_kubectl_apply_get_delete(envtest: Environment, namespace: str, tmp_path: Path) -> None:
    manifest = tmp_path / "cm.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-kubectl}\ndata: {a: b}\n")
    code, out = await kubectl(envtest, "-n", namespace, "apply", "-f", str(manifest))
    assert code == 0, out
    assert "configmap/from-kubectl created" in out
    code, out = await kubectl(
        envtest, "-n", namespace, "get", "configmap", "from-kubectl", "-o", "jsonpath={.data.a}"
    )
    assert (code, out) == (0, "b")
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-kubectl}\ndata: {a: c}\n")
    code, out = await kubectl(envtest, "-n", namespace, "apply", "--server-side", "-f", str(manifest))
    assert code == 0, out
    code, out = await kubectl(envtest, "-n", namespace, "delete", "configmap", "from-kubectl")
    assert code == 0 and "deleted" in out, out


async def test_kubectl_api_resources_lists_core_kinds(envtest: Environment) -> None:
    code, out = await kubectl(envtest, "api-resources", "-o", "name")
    assert code == 0, out
    names = set(out.split())
    assert {"pods", "services", "configmaps", "leases.coordination.k8s.io", "jobs.batch"} <= names


async def test_kubectl_rejects_misspelled_type_with_field_path(envtest: Environment, namespace: str) -> None:
    await envtest.install_crds([SAMPLE.parent.parent / "crd"])
    bad = SAMPLE_TEXT.replace("replicas: 1", 'replicas: "1"', 1)
    code, out = await kubectl(envtest, "-n", namespace, "apply", "-f", "-", stdin=bad.encode())
    assert code != 0
    assert "spec.workerGroupSpecs[0].replicas" in out and "must be of type integer" in out, out


async def test_kubectl_get_prints_printer_columns(envtest: Environment, namespace: str) -> None:
    await envtest.install_crds([SAMPLE.parent.parent / "crd"])
    code, out = await kubectl(envtest, "-n", namespace, "apply", "-f", "-", stdin=SAMPLE_TEXT.encode())
    assert code == 0, out
    code, out = await kubectl(envtest, "-n", namespace, "get", "rayclusters")
    assert code == 0, out
    header = out.splitlines()[0].split()
    assert header[:3] == ["NAME", "DESIRED", "WORKERS"] and "STATUS" in header and "AGE" in header, out


async def test_kubectl_explain_custom_resource(envtest: Environment) -> None:
    await envtest.install_crds([SAMPLE.parent.parent / "crd"])
    code, out = await kubectl(envtest, "explain", "rayclusters.spec.workerGroupSpecs.numOfHosts")
    assert code == 0, out
    assert "KIND:       RayCluster" in out and "numOfHosts <integer>" in out, out


async def test_kubectl_describe_shows_events_recorded_through_events_k8s_io(
    envtest: Environment, namespace: str, tmp_path: Path
) -> None:
    """The operator records through events.k8s.io/v1; ``kubectl describe`` reads core/v1 Events."""
    manifest = tmp_path / "cm.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: described}\ndata: {a: b}\n")
    code, out = await kubectl(envtest, "-n", namespace, "apply", "-f", str(manifest))
    assert code == 0, out
    code, uid = await kubectl(
        envtest, "-n", namespace, "get", "configmap", "described", "-o", "jsonpath={.metadata.uid}"
    )
    assert code == 0, uid
    event = (
        "apiVersion: events.k8s.io/v1\nkind: Event\nmetadata: {name: described.1}\n"
        "eventTime: '2026-01-01T00:00:00.000000Z'\nreportingController: ray.io/kuberay-operator\n"
        "reportingInstance: op-0\naction: Create\nreason: CreatedSomething\ntype: Normal\n"
        "note: the operator said something\n"
        f"regarding: {{kind: ConfigMap, apiVersion: v1, namespace: {namespace}, name: described, "
        f"uid: {uid}}}\n"
    )
    manifest.write_text(event)
    code, out = await kubectl(envtest, "-n", namespace, "create", "-f", str(manifest))
    assert code == 0, out
    code, out = await kubectl(envtest, "-n", namespace, "describe", "configmap", "described")
    assert code == 0, out
    assert "CreatedSomething" in out and "the operator said something" in out, out
    assert "Events:  <none>" not in out, out
