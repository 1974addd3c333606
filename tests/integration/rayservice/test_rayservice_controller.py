"""KubeRay's RayService envtest scenarios ("After a RayService is running") on our envtest."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import yaml

from controllers import constants as c
from controllers.constants import RAYCLUSTERS, RAYSERVICES
from controllers.rayservice.cluster import DELETION_DEADLINE_ANNOTATION_KEY
from controllers.rayservice.reconciler import refresh_delay
from kuberay_py.client import Client, NotFound
from kuberay_py.client.resources import EVENTS, PODS, SECRETS, SERVICES
from kuberay_py.controller import Request, Result
from kuberay_py.metrics import registry
from tests.live import update_live
from tests.polling import condition as cond

from .conftest import eventually, mark_pods_ready, put_endpoint_slice, rayservice_manifest, stop_operator


def _spec(**fields: Any) -> Callable[[dict[str, Any]], None]:
    """An edit of the RayService spec's top-level fields, for ``update_live``."""
    return lambda rs: rs["spec"].update(**fields)


def _ray_version(version: str) -> Callable[[dict[str, Any]], None]:
    return lambda rs: rs["spec"]["rayClusterConfig"].update(rayVersion=version)


def _workers(**fields: Any) -> Callable[[dict[str, Any]], None]:
    return lambda rs: rs["spec"]["rayClusterConfig"]["workerGroupSpecs"][0].update(**fields)


def _deadline(when: str) -> Callable[[dict[str, Any]], None]:
    return lambda cluster: cluster["metadata"]["annotations"].update({DELETION_DEADLINE_ANNOTATION_KEY: when})


async def pending_cluster(k8s: Client, namespace: str, *, other_than: str = "", name: str = "rs") -> str:
    """The RayService's pending cluster ("" while it has none, or while it is still ``other_than``)."""
    svc = await k8s.get(RAYSERVICES, name, namespace)
    cluster = str(((svc.get("status") or {}).get("pendingServiceStatus") or {}).get("rayClusterName") or "")
    return "" if cluster == other_than else cluster


async def pods_ready(k8s: Client, namespace: str, cluster: str) -> list[dict[str, Any]]:
    """Play kubelet for the cluster's head and worker; both Pods once both exist."""
    pods = await mark_pods_ready(k8s, namespace, cluster)
    return pods if len(pods) == 2 else []


async def with_condition(k8s: Client, namespace: str, type_: str, name: str = "rs") -> dict[str, Any] | None:
    """The RayService once its ``type_`` condition is True."""
    svc: dict[str, Any] = await k8s.get(RAYSERVICES, name, namespace)
    return svc if cond(svc, type_).get("status") == "True" else None


async def deleted_or_deleting(k8s: Client, namespace: str, cluster: str) -> bool:
    try:
        cur = await k8s.get(RAYCLUSTERS, cluster, namespace)
    except NotFound:
        return True
    return bool(cur["metadata"].get("deletionTimestamp"))


async def events_for(client: Client, namespace: str, name: str) -> list[dict[str, Any]]:
    items = (await client.list(EVENTS, namespace))["items"]
    return [e for e in items if (e.get("regarding") or {}).get("name") == name]


async def reasons_once_written(client: Client, namespace: str, name: str, *wanted: str) -> list[str]:
    """The reasons of ``name``'s events once each of ``wanted`` is among them: the recorder writes
    an event after the change it reports, so a list can see the change before its event."""

    async def written() -> list[str] | None:
        reasons = [e["reason"] for e in await events_for(client, namespace, name)]
        return reasons if set(wanted) <= set(reasons) else None

    found: list[str] = await eventually(written, what=f"events {wanted} of {name}")
    return found


async def bring_up(k8s: Client, namespace: str, fake: Any, name: str = "rs") -> dict[str, Any]:
    """Create the RayService, play kubelet and EndpointSlice controller, wait until Ready."""
    await k8s.create(RAYSERVICES, rayservice_manifest(fake, name), namespace)

    cluster = await eventually(
        lambda: pending_cluster(k8s, namespace, name=name), what="a pending cluster name"
    )
    await eventually(lambda: k8s.get(RAYCLUSTERS, cluster, namespace), what="the RayCluster")

    pods = await eventually(lambda: pods_ready(k8s, namespace, cluster), what="head and worker Pods")

    async def head_labelled() -> bool:
        head = await k8s.get(
            PODS, next(p for p in pods if "head" in p["metadata"]["name"])["metadata"]["name"], namespace
        )
        return head["metadata"]["labels"].get(c.RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY) == "true"

    await eventually(head_labelled, what="the head labelled ray.io/serve=true")
    await eventually(lambda: k8s.get(SERVICES, f"{name}-serve-svc", namespace), what="the serve Service")
    await put_endpoint_slice(k8s, namespace, f"{name}-serve-svc", pods, fake.proxy_port)

    return dict(await eventually(lambda: with_condition(k8s, namespace, "Ready", name), what="Ready=True"))


async def test_rayservice_comes_up_and_is_ready(
    start_operator, fake_ray, k8s: Client, namespace: str
) -> None:
    await start_operator()
    svc = await bring_up(k8s, namespace, fake_ray)
    status = svc["status"]
    cluster_name = status["activeServiceStatus"]["rayClusterName"]
    assert cluster_name.startswith("rs-") and len(cluster_name) == len("rs-") + 5
    assert not (status.get("pendingServiceStatus") or {}).get("rayClusterName")
    assert status["numServeEndpoints"] == 2
    assert status["serviceStatus"] == "Running"
    assert status["observedGeneration"] == svc["metadata"]["generation"]
    assert cond(svc, "Ready")["reason"] == "NonZeroServeEndpoints"
    assert cond(svc, "UpgradeInProgress")["reason"] == "NoPendingCluster"
    assert status["activeServiceStatus"]["applicationStatuses"]["fruit_app"]["status"] == "RUNNING"
    assert c.RAYSERVICE_FINALIZER in svc["metadata"]["finalizers"]

    # the config went to the dashboard as JSON, exactly serveConfigV2
    assert fake_ray.puts == [yaml.safe_load(svc["spec"]["serveConfigV2"])]

    cluster = await k8s.get(RAYCLUSTERS, cluster_name, namespace)
    assert cluster["metadata"]["labels"]["ray.io/originated-from-cr-name"] == "rs"
    assert cluster["metadata"]["labels"]["ray.io/originated-from-crd"] == "RayService"
    assert c.HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE_KEY in cluster["metadata"]["annotations"]
    assert cluster["metadata"]["ownerReferences"][0]["uid"] == svc["metadata"]["uid"]

    serve = await k8s.get(SERVICES, "rs-serve-svc", namespace)
    assert serve["spec"]["selector"] == {"ray.io/cluster": cluster_name, "ray.io/serve": "true"}
    assert [p["port"] for p in serve["spec"]["ports"]] == [fake_ray.proxy_port]
    head = await k8s.get(SERVICES, "rs-head-svc", namespace)
    assert head["spec"]["selector"]["ray.io/cluster"] == cluster_name

    await reasons_once_written(
        k8s,
        namespace,
        "rs",
        "CreatedRayCluster",
        "UpdatedServeApplications",
        "UpdatedHeadPodServeLabel",
        "CreatedService",
    )


async def test_replica_change_and_serve_config_update_stay_in_place(
    start_operator, fake_ray, k8s: Client, namespace: str
) -> None:
    await start_operator()
    svc = await bring_up(k8s, namespace, fake_ray)
    active = svc["status"]["activeServiceStatus"]["rayClusterName"]

    svc = await update_live(k8s, RAYSERVICES, "rs", namespace, _workers(replicas=3))

    cur = await eventually(
        lambda: _observed(k8s, namespace, svc["metadata"]["generation"]), what="the replica change observed"
    )
    assert not (cur["status"].get("pendingServiceStatus") or {}).get("rayClusterName")
    assert len((await k8s.list(RAYCLUSTERS, namespace))["items"]) == 1

    config = yaml.safe_load(cur["spec"]["serveConfigV2"])
    config["applications"].append({"name": "veggie_app", "import_path": "veggie:app", "route_prefix": "/veg"})
    cur = await update_live(k8s, RAYSERVICES, "rs", namespace, _spec(serveConfigV2=yaml.safe_dump(config)))

    async def new_app_reported() -> dict[str, Any] | None:
        s = await k8s.get(RAYSERVICES, "rs", namespace)
        apps = s["status"]["activeServiceStatus"].get("applicationStatuses") or {}
        return s if "veggie_app" in apps else None

    cur = await eventually(new_app_reported, what="the in-place serve config update")
    assert cur["status"]["activeServiceStatus"]["rayClusterName"] == active
    assert not (cur["status"].get("pendingServiceStatus") or {}).get("rayClusterName")
    assert fake_ray.puts[-1] == config
    assert len((await k8s.list(RAYCLUSTERS, namespace))["items"]) == 1


async def test_zero_downtime_upgrade_promotes_then_deletes_the_old_cluster(
    start_operator, fake_ray, k8s: Client, namespace: str
) -> None:
    await start_operator()
    svc = await bring_up(k8s, namespace, fake_ray)
    old = svc["status"]["activeServiceStatus"]["rayClusterName"]

    def upgrade_now(rs: dict[str, Any]) -> None:
        rs["spec"]["rayClusterDeletionDelaySeconds"] = 0
        rs["spec"]["rayClusterConfig"]["rayVersion"] = "2.60.0"

    await update_live(k8s, RAYSERVICES, "rs", namespace, upgrade_now)

    new = await eventually(lambda: pending_cluster(k8s, namespace), what="a pending cluster for the upgrade")
    assert new != old
    upgrading = await k8s.get(RAYSERVICES, "rs", namespace)
    assert cond(upgrading, "UpgradeInProgress")["status"] == "True"
    serve = await k8s.get(SERVICES, "rs-serve-svc", namespace)
    assert serve["spec"]["selector"]["ray.io/cluster"] == old  # not switched before the new one is ready

    await eventually(lambda: pods_ready(k8s, namespace, new), what="the new cluster's Pods")

    async def promoted() -> dict[str, Any] | None:
        s = await k8s.get(RAYSERVICES, "rs", namespace)
        return s if s["status"]["activeServiceStatus"].get("rayClusterName") == new else None

    done = await eventually(promoted, what="promotion")
    assert not (done["status"].get("pendingServiceStatus") or {}).get("rayClusterName")
    serve = await k8s.get(SERVICES, "rs-serve-svc", namespace)
    assert serve["spec"]["selector"]["ray.io/cluster"] == new

    await eventually(lambda: deleted_or_deleting(k8s, namespace, old), what="the old cluster deleted")


async def test_deletion_deadline_survives_an_operator_restart(
    start_operator, fake_ray, k8s: Client, namespace: str
) -> None:
    op = await start_operator()
    svc = await bring_up(k8s, namespace, fake_ray)
    old = svc["status"]["activeServiceStatus"]["rayClusterName"]
    # the default 60 s deletion delay
    await update_live(k8s, RAYSERVICES, "rs", namespace, _ray_version("2.60.0"))

    new = await eventually(lambda: pending_cluster(k8s, namespace), what="a pending cluster")

    await eventually(lambda: pods_ready(k8s, namespace, new), what="the new cluster's Pods")

    async def deadline() -> str:
        cluster = await k8s.get(RAYCLUSTERS, old, namespace)
        return str((cluster["metadata"].get("annotations") or {}).get(DELETION_DEADLINE_ANNOTATION_KEY) or "")

    first = await eventually(deadline, what="a deletion deadline on the old cluster")
    submitted_before = len(fake_ray.puts)
    await stop_operator(op)
    await start_operator()
    # a restarted operator remembers no submission: it re-sends serveConfigV2 once (Ray's PUT is declarative)
    await eventually(
        lambda: _more_puts(fake_ray, submitted_before), what="the config re-submitted after restart"
    )
    # the restarted operator keeps the deadline it finds (the cluster still exists, not re-armed) ...
    await eventually(lambda: k8s.get(RAYSERVICES, "rs", namespace), what="the RayService")
    cluster = await k8s.get(RAYCLUSTERS, old, namespace)
    assert cluster["metadata"]["annotations"][DELETION_DEADLINE_ANNOTATION_KEY] == first
    assert not cluster["metadata"].get("deletionTimestamp")
    # ... and deletes the cluster once it has passed.
    await update_live(k8s, RAYCLUSTERS, old, namespace, _deadline("2000-01-01T00:00:00Z"))

    await eventually(
        lambda: deleted_or_deleting(k8s, namespace, old), what="the old cluster deleted after its deadline"
    )


async def test_unhealthy_head_proxy_flips_the_label(
    start_operator, fake_ray, k8s: Client, namespace: str
) -> None:
    await start_operator()
    svc = await bring_up(k8s, namespace, fake_ray)
    cluster = svc["status"]["activeServiceStatus"]["rayClusterName"]
    fake_ray.proxy_status = 503

    async def head_label() -> str:
        pods = await k8s.list(
            PODS, namespace, label_selector=f"ray.io/cluster={cluster},ray.io/node-type=head"
        )
        return str(pods["items"][0]["metadata"]["labels"].get("ray.io/serve"))

    await eventually(lambda: _equals(head_label, "false"), what="ray.io/serve=false")
    fake_ray.proxy_status = 200
    await eventually(lambda: _equals(head_label, "true"), what="ray.io/serve=true again")


async def _equals(fn: Any, value: str) -> bool:
    return bool(await fn() == value)


async def test_invalid_spec_is_reported_without_a_cluster(
    start_operator, fake_ray, k8s: Client, namespace: str
) -> None:
    await start_operator()
    body = rayservice_manifest(fake_ray, "bad")
    body["spec"]["rayClusterConfig"]["headGroupSpec"]["headService"] = {"metadata": {"name": "custom"}}
    await k8s.create(RAYSERVICES, body, namespace)

    async def failed() -> dict[str, Any] | None:
        s = await k8s.get(RAYSERVICES, "bad", namespace)
        return s if cond(s, "Ready").get("reason") == "ValidationFailed" else None

    svc = await eventually(failed, what="ValidationFailed")
    assert "headService.metadata.name" in cond(svc, "Ready")["message"]
    assert (await k8s.list(RAYCLUSTERS, namespace))["items"] == []
    reasons = await reasons_once_written(k8s, namespace, "bad", "InvalidRayServiceSpec")
    assert reasons.count("InvalidRayServiceSpec") == 1


async def test_deleting_the_rayservice_deletes_its_clusters(
    start_operator, fake_ray, k8s: Client, namespace: str
) -> None:
    await start_operator()
    svc = await bring_up(k8s, namespace, fake_ray)
    active = svc["status"]["activeServiceStatus"]["rayClusterName"]
    clusters = [cl["metadata"]["name"] for cl in (await k8s.list(RAYCLUSTERS, namespace))["items"]]
    assert active in clusters
    await k8s.delete(RAYSERVICES, "rs", namespace)

    async def gone() -> bool:
        try:
            await k8s.get(RAYSERVICES, "rs", namespace)
        except NotFound:
            return True
        return False

    await eventually(gone, what="the RayService gone (finalizer removed)")
    # The finalizer goes only once every cluster is deleted (or being deleted), by the operator:
    # each of them got a DeletedRayCluster event on the RayService.
    for name in clusters:
        assert await deleted_or_deleting(k8s, namespace, name), f"{name} outlived its RayService"

    async def deletion_events() -> bool:
        messages = [
            e.get("note", "")
            for e in await events_for(k8s, namespace, "rs")
            if e["reason"] == c.EVENT_DELETED_RAYCLUSTER
        ]
        return all(any(f"{namespace}/{name}" in m for m in messages) for name in clusters)

    await eventually(deletion_events, what="a DeletedRayCluster event for every cluster")


async def _observed(k8s: Client, namespace: str, generation: int) -> dict[str, Any] | None:
    cur = await k8s.get(RAYSERVICES, "rs", namespace)
    return cur if (cur.get("status") or {}).get("observedGeneration") == generation else None


async def test_appended_worker_group_updates_the_cluster_in_place(
    start_operator, fake_ray, k8s: Client, namespace: str
) -> None:
    await start_operator()
    svc = await bring_up(k8s, namespace, fake_ray)
    active = svc["status"]["activeServiceStatus"]["rayClusterName"]
    extra = dict(svc["spec"]["rayClusterConfig"]["workerGroupSpecs"][0], groupName="extra-group", replicas=0)
    svc = await update_live(
        k8s,
        RAYSERVICES,
        "rs",
        namespace,
        lambda o: o["spec"]["rayClusterConfig"]["workerGroupSpecs"].append(extra),
    )

    async def appended() -> dict[str, Any] | None:
        cluster = await k8s.get(RAYCLUSTERS, active, namespace)
        groups = [g["groupName"] for g in cluster["spec"]["workerGroupSpecs"]]
        return cluster if groups == ["small-group", "extra-group"] else None

    cluster = await eventually(appended, what="the new worker group on the active cluster")
    assert cluster["metadata"]["annotations"][c.NUM_WORKER_GROUPS_KEY] == "2"
    cur = await eventually(lambda: _observed(k8s, namespace, svc["metadata"]["generation"]), what="observed")
    assert cur["status"]["activeServiceStatus"]["rayClusterName"] == active
    assert not (cur["status"].get("pendingServiceStatus") or {}).get("rayClusterName")
    assert "UpdatedRayCluster" in await reasons_once_written(k8s, namespace, "rs", "UpdatedRayCluster")


async def test_a_second_change_replaces_the_pending_cluster(
    start_operator, fake_ray, k8s: Client, namespace: str
) -> None:
    await start_operator()
    await bring_up(k8s, namespace, fake_ray)
    await update_live(k8s, RAYSERVICES, "rs", namespace, _ray_version("2.60.0"))

    first = await eventually(lambda: pending_cluster(k8s, namespace), what="a first pending cluster")
    await update_live(k8s, RAYSERVICES, "rs", namespace, _ray_version("2.61.0"))

    second = await eventually(
        lambda: pending_cluster(k8s, namespace, other_than=first), what="the pending cluster replaced"
    )
    await eventually(lambda: k8s.get(RAYCLUSTERS, second, namespace), what="the second pending cluster")

    async def first_scheduled_for_deletion() -> bool:
        cluster = await k8s.get(RAYCLUSTERS, first, namespace)
        return DELETION_DEADLINE_ANNOTATION_KEY in (cluster["metadata"].get("annotations") or {})

    await eventually(first_scheduled_for_deletion, what="the abandoned pending cluster to get a deadline")


async def test_zero_downtime_disabled_applies_no_spec_change(
    start_operator, fake_ray, k8s: Client, namespace: str
) -> None:
    await start_operator(env={"ENABLE_ZERO_DOWNTIME": "false"})
    svc = await bring_up(k8s, namespace, fake_ray)
    active = svc["status"]["activeServiceStatus"]["rayClusterName"]
    svc = await update_live(k8s, RAYSERVICES, "rs", namespace, _ray_version("2.60.0"))
    cur = await eventually(lambda: _observed(k8s, namespace, svc["metadata"]["generation"]), what="observed")
    assert cur["status"]["activeServiceStatus"]["rayClusterName"] == active
    assert not (cur["status"].get("pendingServiceStatus") or {}).get("rayClusterName")
    clusters = (await k8s.list(RAYCLUSTERS, namespace))["items"]
    assert [cl["metadata"]["name"] for cl in clusters] == [active]
    assert clusters[0]["spec"]["rayVersion"] == "2.52.0"


async def test_steady_state_reconcile_writes_nothing_and_does_not_requeue_soon(
    start_operator, fake_ray, k8s: Client, namespace: str
) -> None:
    op = await start_operator()
    svc = await bring_up(k8s, namespace, fake_ray)

    async def settled() -> dict[str, Any] | None:
        # a reconcile that finds nothing to do returns the slow refresh, not the 2 s serve poll
        result = await op.rayservice.reconciler.reconcile(Request(namespace, "rs"))
        return {"result": result} if result.requeue_after == refresh_delay(f"{namespace}/rs", 300.0) else None

    await eventually(settled, what="a steady reconcile")
    before = (await k8s.get(RAYSERVICES, "rs", namespace))["metadata"]["resourceVersion"]
    result = await op.rayservice.reconciler.reconcile(Request(namespace, "rs"))
    after = (await k8s.get(RAYSERVICES, "rs", namespace))["metadata"]["resourceVersion"]
    assert before == after  # no status write when nothing changed
    assert result.requeue_after == refresh_delay(f"{namespace}/rs", 300.0)
    assert svc["status"]["numServeEndpoints"] == 2
    values = {
        source: registry.get_sample_value(
            "kuberay_serve_endpoints", {"namespace": namespace, "name": "rs", "source": source}
        )
        for source in ("head", "worker")
    }
    assert values == {"head": 1.0, "worker": 1.0}


async def test_excluded_head_is_never_probed_and_stays_false(
    start_operator, fake_ray, k8s: Client, namespace: str
) -> None:
    await start_operator()
    body = rayservice_manifest(fake_ray, "rs")
    body["spec"]["excludeHeadPodFromServeSvc"] = True
    await k8s.create(RAYSERVICES, body, namespace)

    cluster = await eventually(lambda: pending_cluster(k8s, namespace), what="a pending cluster")
    await eventually(lambda: pods_ready(k8s, namespace, cluster), what="Pods")

    async def promoted() -> dict[str, Any] | None:
        s = await k8s.get(RAYSERVICES, "rs", namespace)
        return s if (s["status"].get("activeServiceStatus") or {}).get("rayClusterName") == cluster else None

    await eventually(promoted, what="promotion through the worker alone")
    head = await k8s.list(PODS, namespace, label_selector=f"ray.io/cluster={cluster},ray.io/node-type=head")
    assert head["items"][0]["metadata"]["labels"]["ray.io/serve"] == "false"
    assert fake_ray.healthz_calls == 0


async def test_a_missing_head_pod_is_a_normal_state(
    start_operator, fake_ray, k8s: Client, namespace: str
) -> None:
    """KubeRay #4686: no head Pod must not turn into an error loop (here no RayCluster controller runs)."""
    op = await start_operator(raycluster=False)
    await k8s.create(RAYSERVICES, rayservice_manifest(fake_ray, "rs"), namespace)

    async def cluster_created() -> str:
        s = await k8s.get(RAYSERVICES, "rs", namespace)
        name = ((s.get("status") or {}).get("pendingServiceStatus") or {}).get("rayClusterName")
        if not name:
            return ""
        await k8s.get(RAYCLUSTERS, name, namespace)
        return str(name)

    await eventually(cluster_created, what="the RayCluster")
    errors = counter("controller_runtime_reconcile_errors_total", controller="rayservice")

    async def settled() -> Result | None:
        result = await op.rayservice.reconciler.reconcile(Request(namespace, "rs"))
        return result if result.requeue_after == refresh_delay(f"{namespace}/rs", 300.0) else None

    result = await eventually(settled, what="a reconcile that waits for watches")
    assert result.requeue_after == refresh_delay(
        f"{namespace}/rs", 300.0
    )  # no 2 s loop while the head is missing
    assert counter("controller_runtime_reconcile_errors_total", controller="rayservice") == errors
    cur = await k8s.get(RAYSERVICES, "rs", namespace)
    assert cond(cur, "Ready")["reason"] == "Initializing"


def counter(name: str, **labels: str) -> float:
    total = 0.0
    for metric in registry.collect():
        for sample in metric.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


async def test_initializing_timeout_is_terminal_and_cleans_up(
    start_operator, fake_ray, k8s: Client, namespace: str
) -> None:
    await start_operator(raycluster=False)  # no Pods ever: the RayService cannot become Ready
    body = rayservice_manifest(fake_ray, "rs")
    body["metadata"]["annotations"] = {c.RAYSERVICE_INITIALIZING_TIMEOUT_ANNOTATION_KEY: "1"}
    body["spec"]["rayClusterDeletionDelaySeconds"] = 0
    await k8s.create(RAYSERVICES, body, namespace)

    async def timed_out() -> dict[str, Any] | None:
        s = await k8s.get(RAYSERVICES, "rs", namespace)
        return s if cond(s, "Ready").get("reason") == "InitializingTimeout" else None

    svc = await eventually(timed_out, what="InitializingTimeout")
    assert cond(svc, "Ready")["status"] == "False"
    assert not (svc["status"].get("activeServiceStatus") or {}).get("rayClusterName")
    assert not (svc["status"].get("pendingServiceStatus") or {}).get("rayClusterName")

    async def clusters_deleted() -> bool:
        items = (await k8s.list(RAYCLUSTERS, namespace))["items"]
        return all(cl["metadata"].get("deletionTimestamp") for cl in items)

    await eventually(clusters_deleted, what="its clusters deleted")
    reasons = await reasons_once_written(k8s, namespace, "rs", "RayServiceInitializingTimeout")
    assert reasons.count("RayServiceInitializingTimeout") == 1


async def test_repointing_a_nodeport_serve_service_keeps_its_node_port(
    start_operator, fake_ray, k8s: Client, namespace: str
) -> None:
    await start_operator()
    body = rayservice_manifest(fake_ray, "rs")
    body["spec"]["serveService"] = {"metadata": {"name": "rs-public"}, "spec": {"type": "NodePort"}}
    await k8s.create(RAYSERVICES, body, namespace)

    first = await eventually(lambda: pending_cluster(k8s, namespace), what="a first cluster")
    await eventually(lambda: pods_ready(k8s, namespace, first), what="Pods")
    svc = await eventually(lambda: k8s.get(SERVICES, "rs-public", namespace), what="the serve Service")
    if not svc["spec"]["ports"][0].get("nodePort"):  # the built-in API server allocates none
        svc = await update_live(
            k8s, SERVICES, "rs-public", namespace, lambda o: o["spec"]["ports"][0].update(nodePort=30080)
        )
    node_port = svc["spec"]["ports"][0]["nodePort"]

    await update_live(k8s, RAYSERVICES, "rs", namespace, _ray_version("2.60.0"))

    second = await eventually(
        lambda: pending_cluster(k8s, namespace, other_than=first), what="the upgrade's cluster"
    )
    await eventually(lambda: pods_ready(k8s, namespace, second), what="the new Pods")

    async def repointed() -> dict[str, Any] | None:
        cur = await k8s.get(SERVICES, "rs-public", namespace)
        return cur if cur["spec"]["selector"]["ray.io/cluster"] == second else None

    cur = await eventually(repointed, what="the serve Service re-pointed")
    assert cur["spec"]["type"] == "NodePort"
    assert cur["spec"]["ports"][0]["nodePort"] == node_port


async def test_suspend_tears_down_and_resume_brings_back(
    start_operator, fake_ray, k8s: Client, namespace: str
) -> None:
    await start_operator()
    svc = await bring_up(k8s, namespace, fake_ray)
    old = svc["status"]["activeServiceStatus"]["rayClusterName"]
    await update_live(k8s, RAYSERVICES, "rs", namespace, _spec(suspend=True))

    cur = await eventually(lambda: with_condition(k8s, namespace, "Suspended"), what="Suspended=True")
    assert cond(cur, "Suspending")["status"] == "False"
    assert not (cur["status"].get("activeServiceStatus") or {}).get("rayClusterName")
    assert cur["status"].get("numServeEndpoints", 0) == 0  # omitempty, as KubeRay writes it
    assert cond(cur, "Ready")["status"] == "False"
    for res, name in ((RAYCLUSTERS, old), (SERVICES, "rs-serve-svc"), (SERVICES, "rs-head-svc")):
        try:
            obj = await k8s.get(res, name, namespace)
        except NotFound:
            continue
        assert obj["metadata"].get("deletionTimestamp"), f"{name} still exists"

    await update_live(k8s, RAYSERVICES, "rs", namespace, _spec(suspend=False))

    new = await eventually(
        lambda: pending_cluster(k8s, namespace, other_than=old), what="a fresh cluster after resume"
    )
    resumed = await k8s.get(RAYSERVICES, "rs", namespace)
    assert cond(resumed, "Suspended")["reason"] == "RayServiceResumed"

    pods = await eventually(lambda: pods_ready(k8s, namespace, new), what="the new Pods")
    await eventually(lambda: k8s.get(SERVICES, "rs-serve-svc", namespace), what="the serve Service again")
    await put_endpoint_slice(k8s, namespace, "rs-serve-svc", pods, fake_ray.proxy_port)

    back = await eventually(lambda: with_condition(k8s, namespace, "Ready"), what="Ready again")
    assert back["status"]["activeServiceStatus"]["rayClusterName"] == new


async def test_ray_token_auth_from_a_secret(start_operator, fake_ray, k8s: Client, namespace: str) -> None:
    fake_ray.required_token = "s3cret-token"
    await k8s.create(
        SECRETS,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "ray-token"},
            "data": {"auth_token": base64.b64encode(b"s3cret-token").decode()},
        },
        namespace,
    )
    await start_operator()
    body = rayservice_manifest(fake_ray, "rs")
    env = [
        {"name": "RAY_AUTH_MODE", "value": "token"},
        {"name": "RAY_AUTH_TOKEN", "valueFrom": {"secretKeyRef": {"name": "ray-token", "key": "auth_token"}}},
    ]
    spec = body["spec"]["rayClusterConfig"]
    spec["headGroupSpec"]["template"]["spec"]["containers"][0]["env"] = env
    spec["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["env"] = env
    await k8s.create(RAYSERVICES, body, namespace)

    cluster = await eventually(lambda: pending_cluster(k8s, namespace), what="a cluster")
    await eventually(lambda: pods_ready(k8s, namespace, cluster), what="Pods")
    await eventually(lambda: _submitted(fake_ray), what="the config accepted with the token")
    assert fake_ray.unauthorized == 0


async def _submitted(fake: Any) -> bool:
    return bool(fake.puts)


async def _more_puts(fake: Any, n: int) -> bool:
    return len(fake.puts) > n


async def test_auth_options_token_mode_generates_the_secret_and_the_dashboard_uses_it(
    start_operator, fake_ray, k8s: Client, namespace: str
) -> None:
    fake_ray.required_token = "not-yet-known"  # every dashboard call is refused until set below
    await start_operator()
    body = rayservice_manifest(fake_ray, "rs")
    body["spec"]["rayClusterConfig"]["authOptions"] = {"mode": "token"}
    await k8s.create(RAYSERVICES, body, namespace)

    cluster = await eventually(lambda: pending_cluster(k8s, namespace), what="a cluster")
    secret = await eventually(lambda: k8s.get(SECRETS, cluster, namespace), what="the token Secret")
    owner = secret["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("RayCluster", cluster, True)
    token = base64.b64decode(secret["data"]["auth_token"]).decode()
    assert len(base64.b64decode(token)) == 32  # 32 random bytes, base64-encoded, as KubeRay
    fake_ray.required_token = token

    pods = await eventually(lambda: pods_ready(k8s, namespace, cluster), what="Pods")
    ref = {"secretKeyRef": {"name": cluster, "key": "auth_token"}}
    for pod in pods:
        env = {e["name"]: e.get("value", e.get("valueFrom")) for e in pod["spec"]["containers"][0]["env"]}
        assert env["RAY_AUTH_MODE"] == "token" and env["RAY_AUTH_TOKEN"] == ref
    await eventually(lambda: _submitted(fake_ray), what="the config accepted with the generated token")
