"""Golden test: what kuberay-py creates from KubeRay's samples equals what KubeRay v1.7.0 created.

Each sample goes into a fresh namespace on envtest with the operator running and no kubelet, as
the golden files were produced (``tests/fixtures/kuberay/golden/README.md``). When the same set
of objects exists and statuses are written, everything is read back, normalised by the same
rules and compared leaf by leaf. The samples under ``golden/gated/`` use alpha features: they run
under a second operator, watching only their namespaces, with those gates on (as KubeRay's run
for them had them on), while the others run with the default gates. Every remaining difference
must match an entry of ``ALLOWED``,
each of which names its reason in docs/differences.md; an allowed entry that no longer matches
anything fails too, so the list only shrinks.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio
import yaml

from controllers import constants as c
from controllers.api.gates import ClusterGates
from controllers.raycluster.options import RayClusterOptions
from kuberay_py.client import Client, NotFound
from kuberay_py.client.resources import (
    CONFIGMAPS,
    CRDS,
    EVENTS,
    NETWORKPOLICIES,
    PODS,
    ROLEBINDINGS,
    ROLES,
    SECRETS,
    SERVICEACCOUNTS,
    SERVICES,
)
from kuberay_py.envtest import Environment
from tests import golden, polling
from tests.rayservice_harness import CRD_DIR, SAMPLES, start_operator, stop_operator

GATED = "gated/"  # golden files produced with KubeRay's alpha gates on (golden/gated/README.md)
SAMPLE_NAMES = sorted(p.name for p in golden.GOLDEN.glob("*.yaml"))
SAMPLE_NAMES += sorted(GATED + p.name for p in (golden.GOLDEN / "gated").glob("*.yaml"))
_APPLIED_FIRST = {"ConfigMap": CONFIGMAPS, "Secret": SECRETS, "Service": SERVICES, "Pod": PODS}
_READ = [
    c.RAYSERVICES, c.RAYCLUSTERS, PODS, SERVICES, SERVICEACCOUNTS, ROLES, ROLEBINDINGS, SECRETS,
    NETWORKPOLICIES,
]  # fmt: skip

# (sample glob, path regex, value regex or None, why; the docs/differences.md entry). Paths look
# like "Pod/<name>#<i>.spec.containers[0].env[3].name" or "events"; the value regex is matched
# against the side that is not "<absent>" (KubeRay's value, else ours).
ALLOWED: list[tuple[str, str, str | None, str]] = [
    # One CreatedWorkerPod event per scale-up round naming every Pod, instead of KubeRay's one
    # per Pod (docs/differences.md, RayCluster controller). A round of one Pod keeps KubeRay's
    # exact message, so only samples with two or more workers in a group differ.
    ("*", "events", r'.*"message":"Created worker Pod NS/[^"]*".*"reason":"CreatedWorkerPod".*', "batch"),
    ("*", "events", r'.*"message":"Created \d+ worker Pods: NS/.*"reason":"CreatedWorkerPod".*', "batch"),
]


@dataclass
class Applied:
    namespace: str
    objects: set[tuple[str, str]]  # (kind, name) of everything the sample itself created


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def applied(envtest: Environment) -> AsyncIterator[dict[str, Applied]]:
    """Every sample in its own namespace at once, with one operator: the samples converge in
    parallel, so the whole module costs about one sample's settling time."""
    client = envtest.new_client()
    try:
        await client.get(CRDS, "rayservices.ray.io")
    except NotFound:
        await envtest.install_crds([str(CRD_DIR)])
        await envtest.wait_for_crds(["rayclusters.ray.io", "rayservices.ray.io"])
    out: dict[str, Applied] = {}
    namespaces = {sample: await envtest.create_namespace() for sample in SAMPLE_NAMES}
    gated = [ns for sample, ns in namespaces.items() if sample.startswith(GATED)]
    plain = [ns for ns in namespaces.values() if ns not in gated]
    all_gates = dataclasses.replace(RayClusterOptions.from_env(), gates=ClusterGates.all_on())
    ops = [
        start_operator(envtest.client_config, namespaces=plain),
        start_operator(envtest.client_config, namespaces=gated, raycluster_options=all_gates),
    ]
    try:
        for sample, namespace in namespaces.items():
            applied = await _apply_sample(client, namespace, sample.removeprefix(GATED))
            out[sample] = Applied(namespace, applied)
        yield out
    finally:
        for op in ops:
            await stop_operator(op)
        for namespace in namespaces.values():
            await envtest.delete_namespace(namespace)
        await client.close()


async def _apply_sample(client: Client, namespace: str, sample: str) -> set[tuple[str, str]]:
    """Create the sample's objects, supporting ones first; returns (kind, name) of all of them."""
    docs = [d for d in yaml.safe_load_all((SAMPLES / sample).read_text()) if d]
    ray = [d for d in docs if d["kind"] in ("RayCluster", "RayService")]
    applied: set[tuple[str, str]] = set()
    for doc in [d for d in docs if d not in ray] + ray:
        res = {"RayCluster": c.RAYCLUSTERS, "RayService": c.RAYSERVICES, **_APPLIED_FIRST}.get(doc["kind"])
        applied.add((doc["kind"], doc["metadata"]["name"]))
        if res is None:
            continue  # kinds the golden run's apiserver lacked too are skipped (README)
        await client.create(res, doc, namespace)
    return applied


async def _read(client: Client, namespace: str, applied: set[tuple[str, str]]) -> tuple[list[Any], list[Any]]:
    objects: list[dict[str, Any]] = []
    for res in _READ:
        for item in (await client.list(res, namespace))["items"]:
            item.setdefault("kind", res.kind)
            item.setdefault("apiVersion", res.api_version)
            key = (res.kind, item["metadata"]["name"])
            if key in applied and res.kind not in ("RayCluster", "RayService"):
                continue
            objects.append(item)
    events = (await client.list(EVENTS, namespace))["items"]
    return objects, events


def _allowed(sample: str, difference: tuple[str, Any, Any]) -> str | None:
    path, theirs, ours = difference
    value = str(ours if theirs == "<absent>" else theirs)
    for pattern, path_re, value_re, why in ALLOWED:
        name = sample.removeprefix(GATED)
        if not (re.fullmatch(pattern.replace("*", ".*"), name) and re.fullmatch(path_re, path)):
            continue
        if value_re is None or re.fullmatch(value_re, value):
            return why
    return None


@pytest.mark.parametrize("sample", SAMPLE_NAMES)
async def test_objects_equal_kuberays(sample: str, applied: dict[str, Applied], k8s: Client) -> None:
    expected = golden.golden(sample)
    namespace, created = applied[sample].namespace, applied[sample].objects
    ray_objects = {k for k in created if k[0] in ("RayCluster", "RayService")}

    unexplained: list[tuple[str, Any, Any]] = []

    async def matches() -> bool:
        # Statuses and Events are written asynchronously (status writes coalesce for a few
        # seconds), so poll until ours converge; the bound turns "never" into the diff below.
        nonlocal unexplained
        objects, events = await _read(k8s, namespace, created)
        ours = golden.normalise(namespace, objects, events, from_sample=ray_objects)
        unexplained = [d for d in golden.diff(expected, ours) if _allowed(sample, d) is None]
        return not unexplained

    try:
        await polling.eventually(matches, f"{sample}: KubeRay's objects", timeout=20)
    except AssertionError:
        pass
    assert not unexplained, "\n".join(f"{p}: KubeRay {a!r} / ours {b!r}" for p, a, b in unexplained)
