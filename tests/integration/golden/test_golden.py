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

The files under ``golden/derived/<operator>/`` were not produced by a KubeRay run (the features
need components no test cluster here runs: a batch scheduler, OpenShift, cert-manager, the
alpha ``scheduling.k8s.io/v1alpha2``); they are derived from KubeRay v1.7.0's source
(``golden/derived/README.md``). Each directory is one operator flag set (``DERIVED_OPERATORS``),
run on its own API server serving that feature's external API; its samples are compared on
the objects the feature creates, whole, and on the fields the feature writes into the others.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio
import yaml

from controllers import constants as c
from controllers.api.gates import ClusterGates
from controllers.batchscheduler import from_options, kubernetes_was, scheduler_plugins, volcano
from controllers.raycluster.mtls_pki import CERTIFICATES, ISSUERS
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.route import ROUTES, OpenShift
from controllers.rayjob.builders import submitter_pod_spec
from controllers.rayjob.options import RayJobOptions
from kuberay_py.client import Client, NotFound, Resource
from kuberay_py.client.resources import (
    CONFIGMAPS,
    CRDS,
    EVENTS,
    INGRESSES,
    NETWORKPOLICIES,
    PODS,
    ROLEBINDINGS,
    ROLES,
    SECRETS,
    SERVICEACCOUNTS,
    SERVICES,
)
from kuberay_py.envtest import Environment
from tests import external_apis, golden, polling
from tests.rayservice_harness import CRD_DIR, SAMPLES, start_operator, stop_operator

GATED = "gated/"  # golden files produced with KubeRay's alpha gates on (golden/gated/README.md)
COMPARED = "compared/"  # default gates; from KubeRay's source and issue 29's run (golden/compared/README.md)
SAMPLE_NAMES = sorted(p.name for p in golden.GOLDEN.glob("*.yaml"))
SAMPLE_NAMES += sorted(GATED + p.name for p in (golden.GOLDEN / "gated").glob("*.yaml"))
SAMPLE_NAMES += sorted(COMPARED + p.name for p in (golden.GOLDEN / "compared").glob("*.yaml"))
DERIVED = golden.GOLDEN / "derived"
DERIVED_SAMPLES = DERIVED / "samples"  # inputs KubeRay ships no sample for (golden/derived/README.md)
DERIVED_NAMES = sorted(
    str(p.relative_to(DERIVED)) for p in DERIVED.glob("*/*.yaml") if p.parent != DERIVED_SAMPLES
)
_APPLIED_FIRST = {"ConfigMap": CONFIGMAPS, "Secret": SECRETS, "Service": SERVICES, "Pod": PODS}
_RAY = {"RayCluster": c.RAYCLUSTERS, "RayService": c.RAYSERVICES, "RayJob": c.RAYJOBS}
_READ = [
    c.RAYSERVICES, c.RAYCLUSTERS, PODS, SERVICES, SERVICEACCOUNTS, ROLES, ROLEBINDINGS, SECRETS,
    NETWORKPOLICIES,
]  # fmt: skip

# (sample glob, path regex, value regex or None, why; the docs/differences.md entry). The glob
# is matched against the golden file's path under golden/ ("gated/x.yaml"). Paths look like
# "Pod/<name>#<i>.spec.containers[0].env[3].name" or "events"; the value regex is matched
# against the side that is not "<absent>" (KubeRay's value, else ours).
ALLOWED: list[tuple[str, str, str | None, str]] = [
    # An invalid spec (here: a gated field with its gate off): KubeRay writes no status, we write
    # the problem into status.reason (stamped, as every status write); observedGeneration is left
    # alone (docs/differences.md, "Validation reports every problem").
    (COMPARED + "*", r"RayCluster/[^#]*#0\.status\.(reason|lastUpdateTime)", None, "reason"),
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
            applied = await _apply_sample(client, namespace, sample.rsplit("/", 1)[-1])
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
    path = SAMPLES / sample if (SAMPLES / sample).exists() else DERIVED_SAMPLES / sample
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    ray = [d for d in docs if d["kind"] in _RAY]
    applied: set[tuple[str, str]] = set()
    for doc in [d for d in docs if d not in ray] + ray:
        res = {**_RAY, **_APPLIED_FIRST}.get(doc["kind"])
        applied.add((doc["kind"], doc["metadata"]["name"]))
        if res is None:
            continue  # kinds the golden run's apiserver lacked too are skipped (README)
        await client.create(res, doc, namespace)
    return applied


async def _read(
    client: Client, namespace: str, applied: set[tuple[str, str]], extra: tuple[Resource, ...] = ()
) -> tuple[list[Any], list[Any]]:
    """The namespace's objects and Events; ``extra`` kinds the server does not serve have none."""
    objects: list[dict[str, Any]] = []
    for res in [*_READ, *extra]:
        try:
            items = (await client.list(res, namespace))["items"]
        except NotFound:
            if res in extra:
                continue
            raise
        for item in items:
            item.setdefault("kind", res.kind)
            item.setdefault("apiVersion", res.api_version)
            key = (res.kind, item["metadata"]["name"])
            if key in applied and res.kind not in _RAY:
                continue
            objects.append(item)
    events = (await client.list(EVENTS, namespace))["items"]
    return objects, events


def _allowed(sample: str, difference: tuple[str, Any, Any]) -> str | None:
    path, theirs, ours = difference
    value = str(ours if theirs == "<absent>" else theirs)
    for pattern, path_re, value_re, why in ALLOWED:
        if not (re.fullmatch(pattern.replace("*", ".*"), sample) and re.fullmatch(path_re, path)):
            continue
        if value_re is None or re.fullmatch(value_re, value):
            return why
    return None


@pytest.mark.parametrize("sample", SAMPLE_NAMES)
async def test_objects_equal_kuberays(sample: str, applied: dict[str, Applied], k8s: Client) -> None:
    expected = golden.golden(sample)
    namespace, created = applied[sample].namespace, applied[sample].objects
    ray_objects = {k for k in created if k[0] in _RAY}

    async def unexplained() -> list[tuple[str, Any, Any]]:
        objects, events = await _read(k8s, namespace, created)
        ours = golden.normalise(namespace, objects, events, from_sample=ray_objects)
        return [d for d in golden.diff(expected, ours) if _allowed(sample, d) is None]

    await _assert_converges(f"{sample}: KubeRay's objects", unexplained)


Difference = tuple[str, Any, Any]  # (path, KubeRay's value, ours)


async def _assert_converges(what: str, differences: Callable[[], Awaitable[list[Difference]]]) -> None:
    """Statuses and Events are written asynchronously (status writes coalesce for a few seconds),
    so poll until no difference is left; the bound turns "never" into the list of differences."""
    left: list[tuple[str, Any, Any]] = [("<nothing read>", "<objects>", "<absent>")]

    async def none_left() -> bool:
        nonlocal left
        left = await differences()
        return not left

    try:
        await polling.eventually(none_left, what, timeout=20)
    except AssertionError:
        pass
    assert not left, "\n".join(f"{p}: KubeRay {a!r} / ours {b!r}" for p, a, b in left)


# -- derived from KubeRay v1.7.0's source (golden/derived/README.md) -------------------------------


@dataclass(frozen=True)
class DerivedOperator:
    """One directory of golden/derived: the external APIs its server serves and KubeRay's flags
    and gates for that feature."""

    apis: tuple[str, ...]
    batch_scheduler: str = ""  # --batch-scheduler
    kubernetes_was: bool = False  # gate KubernetesWAS
    openshift: bool = False  # route.openshift.io served
    mtls: bool = False  # gate RayClusterMTLS; cert-manager's issuing is simulated (external_apis.issue)

    def options(self, client: Client) -> tuple[RayClusterOptions, RayJobOptions]:
        name, was, submitter = self.batch_scheduler, self.kubernetes_was, submitter_pod_spec
        scheduler = from_options(False, name, submitter_pod_spec=submitter, kubernetes_was=was)
        cluster = external_apis.with_options(
            batch_scheduler=scheduler,
            gates=ClusterGates(mtls=self.mtls),
            openshift=OpenShift(client) if self.openshift else None,
        )
        return cluster, RayJobOptions(batch_scheduler=scheduler)


DERIVED_OPERATORS: dict[str, DerivedOperator] = {
    "volcano": DerivedOperator(("volcano",), batch_scheduler="volcano"),
    "yunikorn": DerivedOperator((), batch_scheduler="yunikorn"),
    "kai-scheduler": DerivedOperator((), batch_scheduler="kai-scheduler"),
    "scheduler-plugins": DerivedOperator(("scheduler-plugins",), batch_scheduler="scheduler-plugins"),
    "kubernetes-was": DerivedOperator(("kubernetes-was",), kubernetes_was=True),
    "openshift": DerivedOperator(("openshift",), openshift=True),
    "mtls": DerivedOperator(("cert-manager",), mtls=True),
}
#: The kinds the derived files hold whole, by (apiVersion, kind).
_FEATURE_KINDS = {
    (r.api_version, r.kind): r
    for r in (
        volcano.PODGROUPS, scheduler_plugins.PODGROUPS, kubernetes_was.WORKLOADS, kubernetes_was.PODGROUPS,
        ROUTES, INGRESSES, CERTIFICATES, ISSUERS,
    )
}  # fmt: skip


@dataclass
class DerivedRun:
    applied: Applied
    client: Client


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def derived_applied(request: pytest.FixtureRequest) -> AsyncIterator[dict[str, DerivedRun]]:
    """One directory of golden/derived (the param) on its own API server with its own operator,
    every sample of it in its own namespace. pytest groups the tests by directory, so one server
    runs at a time."""
    directory: str = request.param
    spec = DERIVED_OPERATORS[directory]
    names = [n for n in DERIVED_NAMES if n.startswith(directory + "/")]
    out: dict[str, DerivedRun] = {}
    async with contextlib.AsyncExitStack() as stack:
        env = await stack.enter_async_context(external_apis.environment(*spec.apis))
        client = env.new_client()
        stack.push_async_callback(client.close)
        namespaces = {name: await env.create_namespace() for name in names}
        raycluster, rayjob = spec.options(client)
        await stack.enter_async_context(
            external_apis.operator(env, list(namespaces.values()), raycluster, rayjob=rayjob)
        )
        for name, namespace in namespaces.items():
            sample = golden.golden("derived/" + name)["sample"]
            applied = await _apply_sample(client, namespace, sample)
            out[name] = DerivedRun(Applied(namespace, applied), client)
        yield out


def derived_diff(expected: dict[str, Any], ours: list[dict[str, Any]]) -> list[tuple[str, Any, Any]]:
    """Whole objects of the feature's kinds (both ways), then the listed fields of the others.

    A ``fields`` entry is a partial object (kind, normalised metadata.name, and only the fields
    the feature writes); every object of ours with that key (the worker Pods of a group share
    one) must hold each of its leaves with exactly that value."""
    kinds = {o["kind"] for o in expected["objects"]}
    feature = [o for o in ours if o["kind"] in kinds]
    out = golden.diff({"objects": expected["objects"], "events": []}, {"objects": feature, "events": []})
    for partial in expected.get("fields") or []:
        key = golden.object_key(partial)
        matching = [o for o in ours if golden.object_key(o) == key]
        if not matching:
            out.append((key, "<object>", "<absent>"))
        for i, obj in enumerate(matching):
            have = dict(golden.leaves(obj))
            for path, value in golden.leaves(partial):
                if have.get(path, "<absent>") != value:
                    out.append((f"{key}#{i}.{path}", value, have.get(path, "<absent>")))
    return out


@pytest.mark.parametrize(
    ("derived_applied", "derived"),
    [pytest.param(n.split("/")[0], n, id=n) for n in DERIVED_NAMES],
    indirect=["derived_applied"],
)
async def test_objects_equal_derived_from_kuberays_source(
    derived: str, derived_applied: dict[str, DerivedRun]
) -> None:
    expected = golden.golden("derived/" + derived)
    run = derived_applied[derived]
    namespace, created = run.applied.namespace, run.applied.objects
    extra = tuple(_FEATURE_KINDS[(o["apiVersion"], o["kind"])] for o in expected["objects"])
    mtls = DERIVED_OPERATORS[derived.split("/")[0]].mtls

    async def differences() -> list[tuple[str, Any, Any]]:
        if mtls:
            await external_apis.issue_pending(run.client, namespace)
        objects, _events = await _read(run.client, namespace, created, tuple(dict.fromkeys(extra)))
        ours = golden.normalise(namespace, objects, [], from_sample={k for k in created if k[0] in _RAY})
        return derived_diff(expected, ours["objects"])

    await _assert_converges(f"{derived}: the objects derived from KubeRay's source", differences)
