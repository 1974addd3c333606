"""Swapping operators changes nothing: kuberay-py adopts what KubeRay v1.7 left, and the reverse.

Forward: the objects of KubeRay's golden run of ``ray-service.sample.yaml`` (the RayCluster with
its hash annotations, the head and worker Pods, the head Service), made to serve the way KubeRay
makes them serve (Serve config PUT to the head's dashboard, head labelled ``ray.io/serve=true``,
the RayService's Services and a Ready status) are running in the simulator when kuberay-py starts.
It must adopt them with zero creates or deletes of RayClusters or Pods, while the serve Service
never loses its endpoints.

Reverse: what kuberay-py created carries everything KubeRay's decisions read (hashes, group
count, version, labels, status), so a KubeRay taking over would neither upgrade nor recreate.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import aiohttp
import pytest
import yaml

from controllers import constants as c
from controllers.constants import RAYCLUSTERS, RAYSERVICES
from controllers.raysim import RayPodRuntime
from kuberay_py.client.resources import ENDPOINTSLICES, PODS, SERVICES
from kuberay_py.envtest import Environment
from kuberay_py.metrics import registry
from tests import golden
from tests.live import update_live
from tests.rayservice_harness import (
    CRD_DIR,
    Operator,
    ServingNamespace,
    ready_in,
    sample,
    serve_config,
    service_slices,
    start_operator,
    stop_operator,
)

from .conftest import PROBE_SCALE, TIMINGS, condition, eventually

SAMPLE = "ray-service.sample.yaml"


def reconciles(controller: str) -> float:
    """Finished reconciles so far, whatever their result (in-process operators share the registry)."""
    metric = "controller_runtime_reconcile_total"
    results = ("success", "error", "requeue", "requeue_after")
    values = (registry.get_sample_value(metric, {"controller": controller, "result": r}) for r in results)
    return sum(v or 0.0 for v in values)


# Once converged neither controller requeues on its own (the RayService's idle refresh is minutes
# away): a starting operator reconciles each object once from its initial list, and that is all a
# wait may count on. More reconciles are made deterministic by poking the object (see _poke).
_MORE = {"raycluster-controller": 1, "rayservice": 1}


async def _more_reconciles(since: dict[str, float]) -> bool:
    """Both controllers reconciled again since ``since``: enough for any delayed write to show."""
    return all(reconciles(name) >= count + _MORE[name] for name, count in since.items())


POKE = "test.kuberay-py.io/poke"  # an annotation change: the RayService predicate lets it through


def _counts() -> dict[str, float]:
    return {name: reconciles(name) for name in _MORE}


CLUSTER = "rayservice-sample-x7k2m"  # KubeRay's <RayService>-<5 random characters>
# The spec hash of this sample as stored: vector #1 of tests/unit/spechash/test_vectors.py, and what
# KubeRay v1.7.0 wrote on its cluster and head Pod in the golden run (checked below).
KUBERAY_HASH = "Q1055GBNIO0AH4T77DF02RUTJ6K23ASF"
WATCH_PROBE = "test.kuberay-py.io/watch-probe"  # an annotation write each watch must see first
_probes = itertools.count()


def _golden_objects() -> dict[str, list[dict[str, Any]]]:
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for obj in golden.golden(SAMPLE)["objects"]:
        by_kind.setdefault(obj["kind"], []).append(obj)
    return by_kind


def _golden_head(by_kind: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    (head,) = [p for p in by_kind["Pod"] if p["metadata"]["labels"]["ray.io/node-type"] == "head"]
    return head


@dataclass
class Rig(ServingNamespace):
    env: Environment
    operator: Operator | None = None


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    runtime = RayPodRuntime(timings=TIMINGS)
    async with Environment(
        [str(CRD_DIR)], simulate=True, pod_runtime=runtime, probe_period_scale=PROBE_SCALE
    ) as env:
        client = env.new_client()
        out = Rig(client=client, namespace=await env.create_namespace(), env=env)
        try:
            yield out
        finally:
            if out.operator is not None:
                await stop_operator(out.operator)
            await client.close()
            await runtime.close()


@dataclass
class Churn:
    """Creates and deletes of Pods and RayClusters seen by a watch, the serve endpoints (distinct
    ready Pods) in each state of the serve Service's EndpointSlices the watch delivered, and each
    value the head Pod's ``ray.io/serve`` label took."""

    events: list[tuple[str, str, str]] = field(default_factory=list)  # (type, kind, name)
    # the ready Pods of each EndpointSlice state seen, in order: the list, then one per watch event
    serving: list[list[str]] = field(default_factory=list)
    head_serve_labels: list[str | None] = field(default_factory=list)

    @property
    def samples(self) -> int:
        return len(self.serving)

    @property
    def min_endpoints(self) -> int | None:
        return min((len(ready) for ready in self.serving), default=None)

    def sample(self, slices: dict[str, dict[str, Any]]) -> None:
        self.serving.append(sorted({pod for _, _, pod in ready_in(slices.values())}))

    def pod(self, pod: dict[str, Any]) -> None:
        labels = pod["metadata"].get("labels") or {}
        if labels.get(c.RAY_NODE_TYPE_LABEL_KEY) != "head":
            return
        value = labels.get(c.RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY)
        if not self.head_serve_labels or self.head_serve_labels[-1] != value:
            self.head_serve_labels.append(value)


def failed_head_checks() -> float:
    """Head-proxy checks so far that did not find the proxy healthy (the registry is shared)."""
    metric = "kuberay_head_proxy_health_checks_total"
    values = (registry.get_sample_value(metric, {"result": r}) for r in ("unhealthy", "timeout", "error"))
    return sum(v or 0.0 for v in values)


def assert_head_kept_serving(churn: Churn, failed_checks_before: float) -> None:
    """The operator took the head out of the serve Service only if one of its checks failed."""
    if failed_head_checks() == failed_checks_before:
        assert churn.head_serve_labels == ["true"], churn


@contextlib.asynccontextmanager
async def watching(rig: Rig, serve_service: str) -> AsyncIterator[Churn]:
    """Watch Pods, RayClusters and the serve Service's EndpointSlices from a list taken before
    anything happens. A probe (an annotation on an existing object of each kind) goes through
    every watch first, so an empty ``churn.events`` means that nothing was created or deleted, and
    again at the end, so every change up to then has been seen."""
    churn = Churn()
    slices_of = {ENDPOINTSLICES.kind: service_slices(serve_service)}
    kinds = (PODS, RAYCLUSTERS, ENDPOINTSLICES)
    listed = {
        res.kind: await rig.client.list(res, rig.namespace, label_selector=slices_of.get(res.kind))
        for res in kinds
    }
    slices = {s["metadata"]["name"]: s for s in listed[ENDPOINTSLICES.kind]["items"]}
    churn.sample(slices)
    for pod in listed[PODS.kind]["items"]:
        churn.pod(pod)
    seen: dict[tuple[str, str], asyncio.Event] = {}  # (kind, probe token) -> delivered

    async def watch(res: Any) -> None:
        rv = listed[res.kind]["metadata"]["resourceVersion"]
        events = rig.client.watch(
            res, rig.namespace, resource_version=rv, label_selector=slices_of.get(res.kind)
        )
        async for event in events:
            if event["type"] == "BOOKMARK":  # a resourceVersion only (the client asks for them)
                continue
            meta = event["object"]["metadata"]
            if res is ENDPOINTSLICES:
                if event["type"] == "DELETED":
                    slices.pop(meta["name"], None)
                else:
                    slices[meta["name"]] = event["object"]
                churn.sample(slices)
            elif event["type"] in ("ADDED", "DELETED"):
                churn.events.append((event["type"], res.kind, meta["name"]))
            if res is PODS:
                churn.pod(event["object"])
            token = (meta.get("annotations") or {}).get(WATCH_PROBE)
            if token is not None:
                seen.setdefault((res.kind, token), asyncio.Event()).set()

    async def probe() -> None:
        """Annotate one object of each kind and wait until every watch delivered it (or one ended)."""
        token = str(next(_probes))
        for res in kinds:
            first = listed[res.kind]["items"][0]["metadata"]["name"]
            await rig.client.patch(
                res, first, {"metadata": {"annotations": {WATCH_PROBE: token}}}, rig.namespace
            )
        waits = [seen.setdefault((res.kind, token), asyncio.Event()) for res in kinds]
        delivered = asyncio.gather(*(e.wait() for e in waits))
        await asyncio.wait([delivered, *watches], timeout=30, return_when=asyncio.FIRST_COMPLETED)
        delivered.cancel()
        assert all(e.is_set() for e in waits), ("a watch missed the probe", watches)

    watches = [asyncio.create_task(watch(res)) for res in kinds]
    try:
        await probe()
        yield churn
        await probe()
        for task in watches:  # a watch that ended early would have stopped counting
            assert not task.done(), task
    finally:
        for task in watches:
            task.cancel()
        await asyncio.gather(*watches, return_exceptions=True)


def _from_golden(obj: dict[str, Any], namespace: str, names: dict[str, str]) -> dict[str, Any]:
    """A golden object made concrete again: placeholders back to real names, no status."""
    text = json.dumps(obj)
    for placeholder, real in names.items():
        text = text.replace(placeholder, real)
    text = re.sub(r"(?<![A-Za-z0-9-])NS(?![A-Za-z0-9-])", namespace, text)
    out: dict[str, Any] = json.loads(text)
    out.pop("status", None)
    return out


def _owned_by(obj: dict[str, Any], owner: dict[str, Any]) -> dict[str, Any]:
    """The golden owner reference (uids were normalised away) pointed at the live owner."""
    (ref,) = obj["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["name"]) == (owner["kind"], owner["metadata"]["name"]), ref
    ref["uid"] = owner["metadata"]["uid"]
    return obj


def _rayservice_services(cluster_head_service: dict[str, Any], svc: dict[str, Any]) -> list[dict[str, Any]]:
    """KubeRay's two Services of a serving RayService, made from its golden cluster head Service.

    The golden run never got that far (no kubelet, so nothing served), so these follow KubeRay
    v1.7.0's builders in ``controllers/ray/common/service.go``: ``<svc>-head-svc`` is the cluster's
    head Service renamed, with the RayService's four labels (BuildHeadServiceForRayService);
    ``<svc>-serve-svc`` carries the head's ``serve``/``serve-*`` ports and selects the cluster's
    Pods labelled ``ray.io/serve=true`` (BuildServeService). Both are owned by the RayService
    (``reconcileServices`` sets the controller reference)."""
    name, ns = svc["metadata"]["name"], svc["metadata"]["namespace"]
    ref = {
        "apiVersion": svc["apiVersion"], "kind": svc["kind"], "name": name, "uid": svc["metadata"]["uid"],
        "controller": True, "blockOwnerDeletion": True,
    }  # fmt: skip
    cluster = cluster_head_service["spec"]["selector"]["ray.io/cluster"]
    head = json.loads(json.dumps(cluster_head_service))
    head["metadata"] = {
        "name": f"{name}-head-svc",
        "namespace": ns,
        "labels": {
            "ray.io/originated-from-cr-name": name,
            "ray.io/originated-from-crd": "RayService",
            "ray.io/node-type": "head",
            "ray.io/identifier": f"{name}-head",
        },
        "ownerReferences": [ref],
    }
    ports = [
        {"name": p["name"], "port": p["port"]}
        for p in cluster_head_service["spec"]["ports"]
        if p["name"] == "serve" or p["name"].startswith("serve-")
    ]
    serve = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": f"{name}-serve-svc",
            "namespace": ns,
            "labels": {
                "ray.io/originated-from-cr-name": name,
                "ray.io/originated-from-crd": "RayService",
                "ray.io/serve": f"{name}-serve",
            },
            "ownerReferences": [ref],
        },
        "spec": {
            "selector": {"ray.io/cluster": cluster, "ray.io/serve": "true"},
            "ports": ports,
            "type": "ClusterIP",
        },
    }
    return [head, serve]


async def _kuberay_state(rig: Rig) -> dict[str, Any]:
    """Create exactly what KubeRay v1.7 left for the sample, serving, and return the RayService."""
    ns, client = rig.namespace, rig.client
    by_kind = _golden_objects()

    manifest = sample(SAMPLE)
    manifest["spec"]["serveConfigV2"] = yaml.safe_dump(serve_config(2))
    await client.create(RAYSERVICES, manifest, ns)
    finalizer = ["ray.io/rayservice-finalizer"]  # as KubeRay adds it
    svc = await update_live(
        client, RAYSERVICES, "rayservice-sample", ns, lambda o: o["metadata"].update(finalizers=finalizer)
    )

    names = {"rayservice-sample-RAND-head-RAND": f"{CLUSTER}-head-h4w8q"}
    workers = [p for p in by_kind["Pod"] if p["metadata"]["labels"]["ray.io/node-type"] == "worker"]
    names["rayservice-sample-RAND"] = CLUSTER

    cluster = await client.create(
        RAYCLUSTERS, _owned_by(_from_golden(by_kind["RayCluster"][0], ns, names), svc), ns
    )

    head = _from_golden(_golden_head(by_kind), ns, names)
    pods = [head]
    for i, worker in enumerate(workers):
        pods.append(
            _from_golden(worker, ns, {**names, "small-group-worker-RAND": f"small-group-worker-w{i}z9k"})
        )
    for pod in pods:
        await client.create(PODS, _owned_by(pod, cluster), ns)
    head_service = _owned_by(_from_golden(by_kind["Service"][0], ns, names), cluster)
    await client.create(SERVICES, head_service, ns)

    # Serving, as KubeRay gets there: Serve config PUT to the head's dashboard once it is up, the
    # head labelled ray.io/serve=true once its proxy answers, the RayService's own Services.
    async def head_ip() -> str | None:
        got = await client.get(PODS, names["rayservice-sample-RAND-head-RAND"], ns)
        ready = condition(got, "Ready").get("status") == "True"
        return str(got["status"]["podIP"]) if ready and (got.get("status") or {}).get("podIP") else None

    ip = await eventually(head_ip, "the KubeRay head Pod Ready", timeout=40)
    config = yaml.safe_load(manifest["spec"]["serveConfigV2"])
    async with aiohttp.ClientSession() as session:
        async with session.put(f"http://{ip}:8265/api/serve/applications/", json=config) as response:
            assert response.status == 200, await response.text()

        async def head_proxy_healthy() -> bool:
            try:
                async with session.get(f"http://{ip}:8000/-/healthz") as response:
                    return response.status == 200
            except aiohttp.ClientConnectionError:
                return False

        # KubeRay labels the head only once its proxy answers 200 (not while Serve still deploys and
        # the proxy says "Route table is not populated yet"); labelling earlier would hand the
        # adopting operator a head it must rightly take out of the serve Service.
        await eventually(head_proxy_healthy, "the KubeRay head's Serve proxy healthy", timeout=40)
    await client.patch(
        PODS,
        names["rayservice-sample-RAND-head-RAND"],
        {"metadata": {"labels": {"ray.io/serve": "true"}}},
        ns,
    )
    for service in _rayservice_services(head_service, svc):
        await client.create(SERVICES, service, ns)

    # Converged as KubeRay leaves it: the head and every worker serving (a worker joins once its
    # readiness probe finds a Serve proxy on it). A takeover that starts earlier, with the head the
    # only endpoint, would count any passing readiness flap of a loaded simulator against it.
    endpoints = await eventually(
        partial(_every_pod_serving, rig, pods), "KubeRay's serve endpoints on every Ray Pod", timeout=40
    )
    now = "2026-12-01T10:00:00Z"
    status = {
        "activeServiceStatus": {"rayClusterName": CLUSTER, "rayClusterStatus": {"desiredCPU": "0"}},
        "pendingServiceStatus": {"rayClusterStatus": {"desiredCPU": "0"}},
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "NonZeroServeEndpoints",
             "message": "Number of serve endpoints is greater than 0", "observedGeneration": 2,
             "lastTransitionTime": now},
            {"type": "UpgradeInProgress", "status": "False", "reason": "NoPendingCluster",
             "message": "Active Ray cluster exists and no pending Ray cluster", "observedGeneration": 2,
             "lastTransitionTime": now},
        ],
        "numServeEndpoints": len(endpoints),
        "observedGeneration": 2,
        "serviceStatus": "Running",
        "lastUpdateTime": now,
    }  # fmt: skip
    return await update_live(
        client, RAYSERVICES, "rayservice-sample", ns, lambda o: o.update(status=status), status=True
    )


async def _serving(rig: Rig, service: str) -> set[str]:
    return {pod for _, _, pod in await rig.ready_endpoints(service)}


async def _every_pod_serving(rig: Rig, pods: list[dict[str, Any]]) -> set[str]:
    """The serve endpoints once they are exactly these Pods (the converged state), else empty."""
    serving = await _serving(rig, "rayservice-sample-serve-svc")
    return serving if serving == {p["metadata"]["name"] for p in pods} else set()


async def _adopted(rig: Rig) -> dict[str, Any] | None:
    """The RayService once kuberay-py has written its own status for the adopted cluster."""
    svc = await rig.client.get(RAYSERVICES, "rayservice-sample", rig.namespace)
    status = svc.get("status") or {}
    active = status.get("activeServiceStatus") or {}
    if active.get("rayClusterName") != CLUSTER or not active.get("applicationStatuses"):
        return None
    if condition(svc, "Ready").get("status") != "True":
        return None
    return dict(svc)


async def test_kuberay_state_is_adopted_with_no_creates_or_deletes_and_no_lost_endpoints(rig: Rig) -> None:
    ns = rig.namespace
    await _kuberay_state(rig)
    before = {p["metadata"]["uid"] for p in (await rig.client.list(PODS, ns))["items"]}
    failed_checks = failed_head_checks()
    async with watching(rig, "rayservice-sample-serve-svc") as churn:
        rig.operator = start_operator(rig.env.client_config)
        adopted = await eventually(lambda: _adopted(rig), "kuberay-py's status for the adopted cluster", 40)
        # a few more RayService reconciles (each reads Serve and the cluster again) change nothing either
        for poke in range(3):
            since = {"rayservice": reconciles("rayservice")}
            await rig.client.patch(
                RAYSERVICES, "rayservice-sample", {"metadata": {"annotations": {POKE: str(poke)}}}, ns
            )
            await eventually(partial(_more_reconciles, since), "one more RayService reconcile", 30)
    assert churn.events == [], churn.events
    assert churn.samples >= 2 and churn.min_endpoints is not None and churn.min_endpoints >= 1, churn
    assert_head_kept_serving(churn, failed_checks)
    after = {p["metadata"]["uid"] for p in (await rig.client.list(PODS, ns))["items"]}
    assert after == before
    cluster = await rig.client.get(RAYCLUSTERS, CLUSTER, ns)
    annotations = cluster["metadata"]["annotations"]
    assert annotations[c.HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE_KEY] == KUBERAY_HASH
    assert annotations[c.KUBERAY_VERSION_KEY] == "v1.7.0"
    assert adopted["status"]["numServeEndpoints"] >= 1
    clusters = (await rig.client.list(RAYCLUSTERS, ns))["items"]
    assert [x["metadata"]["name"] for x in clusters] == [CLUSTER]


async def test_a_cluster_stamped_by_an_older_version_is_restamped_in_place(rig: Rig) -> None:
    ns = rig.namespace
    await _kuberay_state(rig)
    stale = {
        c.KUBERAY_VERSION_KEY: "v1.6.0",
        c.HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE_KEY: "OLDENCODING0000000000000000000000",
    }
    await rig.client.patch(RAYCLUSTERS, CLUSTER, {"metadata": {"annotations": stale}}, ns)
    failed_checks = failed_head_checks()
    async with watching(rig, "rayservice-sample-serve-svc") as churn:
        rig.operator = start_operator(rig.env.client_config)

        async def restamped() -> bool:
            cluster = await rig.client.get(RAYCLUSTERS, CLUSTER, ns)
            annotations = cluster["metadata"]["annotations"]
            return annotations[c.KUBERAY_VERSION_KEY] == "v1.7.0" and (
                annotations[c.HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE_KEY] == KUBERAY_HASH
            )

        await eventually(restamped, "the annotations re-stamped", 40)
        await eventually(lambda: _adopted(rig), "kuberay-py's status for the adopted cluster", 40)
    assert churn.events == [], churn.events
    assert churn.min_endpoints is not None and churn.min_endpoints >= 1, churn
    assert_head_kept_serving(churn, failed_checks)


async def test_what_kuberay_py_creates_is_what_kuberay_would_adopt(rig: Rig) -> None:
    """Reverse direction: our objects carry KubeRay's hashes, labels, annotations and status, so
    KubeRay's own upgrade decisions (the same rules, with byte-identical hashes) change nothing,
    and a second operator instance adopts them with no creates or deletes either."""
    ns = rig.namespace
    manifest = sample(SAMPLE)
    manifest["spec"]["serveConfigV2"] = yaml.safe_dump(serve_config(2))
    rig.operator = start_operator(rig.env.client_config)
    await rig.client.create(RAYSERVICES, manifest, ns)

    async def ready() -> dict[str, Any] | None:
        svc = await rig.client.get(RAYSERVICES, "rayservice-sample", ns)
        return dict(svc) if condition(svc, "Ready").get("status") == "True" else None

    svc = await eventually(ready, "our RayService Ready", 40)
    name = svc["status"]["activeServiceStatus"]["rayClusterName"]
    assert re.fullmatch(r"rayservice-sample-[a-z0-9]{5}", name)
    cluster = await rig.client.get(RAYCLUSTERS, name, ns)
    # KubeRay v1.7.0 neither prepares a new cluster nor updates this one when the cluster's hash
    # annotation equals the hash of the RayService's rayClusterConfig, its worker-group count is the
    # spec's, and its version annotation is KubeRay's own (rayservice_controller.go:
    # shouldPrepareNewCluster, shouldUpdateCluster, isClusterSpecHashEqual). For this sample that
    # hash is the spec-hash vector KUBERAY_HASH (docs/reference/spec-hash.md §7); the golden run
    # shows KubeRay writing exactly it.
    by_kind = _golden_objects()
    theirs = by_kind["RayCluster"][0]["metadata"]
    assert theirs["annotations"][c.HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE_KEY] == KUBERAY_HASH
    assert cluster["metadata"]["annotations"] == theirs["annotations"]
    assert int(theirs["annotations"][c.NUM_WORKER_GROUPS_KEY]) == len(
        svc["spec"]["rayClusterConfig"]["workerGroupSpecs"]
    )
    assert cluster["metadata"]["labels"] == theirs["labels"]
    head = (await rig.pods(name, "head"))[0]
    their_head = _golden_head(by_kind)["metadata"]["annotations"]
    for key in (c.KUBERAY_VERSION_KEY, c.UPGRADE_STRATEGY_RECREATE_HASH_KEY):
        assert head["metadata"]["annotations"][key] == their_head[key], key
    assert head["metadata"]["labels"]["ray.io/serve"] == "true"
    workers = await rig.pods(name, "worker")
    assert sorted(w["metadata"]["labels"][c.RAY_WORKER_REPLICA_INDEX_LABEL_KEY] for w in workers) == ["0"]
    assert svc["metadata"]["finalizers"] == ["ray.io/rayservice-finalizer"]

    # Swap, once every Ray Pod serves: the operator goes away and another one (with no memory of
    # this cluster) takes over.
    await eventually(
        partial(_every_pod_serving, rig, [head, *workers]), "serve endpoints on every Ray Pod", 40
    )
    await stop_operator(rig.operator)
    rig.operator = None
    before = {p["metadata"]["uid"] for p in (await rig.client.list(PODS, ns))["items"]}
    failed_checks = failed_head_checks()
    async with watching(rig, "rayservice-sample-serve-svc") as churn:
        since = _counts()
        rig.operator = start_operator(rig.env.client_config)
        await eventually(lambda: _more_reconciles(since), "the new operator's reconciles", 30)
    assert churn.events == [], churn.events
    assert churn.min_endpoints is not None and churn.min_endpoints >= 1, churn
    assert_head_kept_serving(churn, failed_checks)
    assert {p["metadata"]["uid"] for p in (await rig.client.list(PODS, ns))["items"]} == before
