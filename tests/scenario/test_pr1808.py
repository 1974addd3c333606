"""KubeRay PR #1808's acceptance cases, replayed on envtest + simulator + fake Ray nodes."""

from __future__ import annotations

from controllers.constants import RAYSERVICES
from kuberay_py.client.resources import SERVICES
from tests.rayservice_harness import rayservice, serve_config, with_serve_config

from .conftest import Scenario, Traffic, eventually, sample, wait_ready

RAYLET = "wget --tries 1 -T 2 -q -O- http://localhost:52365/api/local_raylet_healthz | grep success"
GCS = "wget --tries 1 -T 10 -q -O- http://localhost:8265/api/gcs_healthz | grep success"


def serve_check(port: int) -> str:
    return f"wget --tries 1 -T 10 -q -O- http://localhost:{port}/-/healthz | grep success"


def probe(command: str, delay: int, timeout: int, failure: int) -> dict:
    return {
        "exec": {"command": ["bash", "-c", command]},
        "initialDelaySeconds": delay,
        "timeoutSeconds": timeout,
        "periodSeconds": 5,
        "successThreshold": 1,
        "failureThreshold": failure,
    }


async def test_default_rayservice_probes_endpoints_and_scale_down_without_failures(
    scenario: Scenario,
) -> None:
    sc = scenario
    await sc.client.create(RAYSERVICES, rayservice(), sc.namespace)
    svc = await wait_ready(sc, "rs", endpoints=4)
    cluster = svc["status"]["activeServiceStatus"]["rayClusterName"]

    # the probes, exactly (Ray 2.52 in the sample: exec probes)
    head = (await sc.pods(cluster, "head"))[0]["spec"]["containers"][0]
    assert head["livenessProbe"] == probe(f"{RAYLET} && {GCS}", 30, 5, 120)
    assert head["readinessProbe"] == probe(f"{RAYLET} && {GCS}", 10, 5, 10)
    workers = await sc.pods(cluster, "worker")
    assert len(workers) == 3
    for w in workers:
        container = w["spec"]["containers"][0]
        assert container["livenessProbe"] == probe(RAYLET, 30, 2, 120)
        assert container["readinessProbe"] == probe(f"{RAYLET} && {serve_check(8000)}", 10, 2, 1)

    endpoints = await sc.ready_endpoints("rs-serve-svc")
    assert len({pod for _, _, pod in endpoints}) == 4
    assert {port for _, port, _ in endpoints} == {8000}

    # num_replicas 3 -> 1 with traffic flowing through the current ready endpoints
    async with Traffic(sc, "rs-serve-svc", "/fruit", max_requests=3000, max_seconds=30) as traffic:
        await sc.edit_rayservice("rs", with_serve_config(serve_config(1)))
        await wait_ready(sc, "rs", endpoints=2)
        # the drained workers' proxies go away; keep sending until they have
        await eventually(
            lambda: _endpoint_count(sc, "rs-serve-svc", 2), what="2 endpoints in the EndpointSlices"
        )
        # enough requests span the scale-down however fast it went (a loaded machine sends fewer)
        await eventually(lambda: traffic.sent_at_least(51), what="51 requests across the scale-down")
    report = traffic.report
    assert report.sent > 50
    assert report.failures == []
    assert report.ok == report.sent
    svc = await sc.get("rs")
    assert svc["status"]["activeServiceStatus"]["rayClusterName"] == cluster  # no new cluster


async def _endpoint_count(sc: Scenario, service: str, n: int) -> bool:
    return len({pod for _, _, pod in await sc.ready_endpoints(service)}) == n


async def test_different_port_sample_serves_on_9000(scenario: Scenario) -> None:
    sc = scenario
    svc = sample("ray-service.different-port.yaml")
    svc["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["replicas"] = 1
    await sc.client.create(RAYSERVICES, svc, sc.namespace)
    ready = await wait_ready(sc, "rayservice-sample")
    cluster = ready["status"]["activeServiceStatus"]["rayClusterName"]

    worker = (await sc.pods(cluster, "worker"))[0]["spec"]["containers"][0]
    assert serve_check(9000) in worker["readinessProbe"]["exec"]["command"][2]
    service = await sc.client.get(SERVICES, "rayservice-sample-serve-svc", sc.namespace)
    assert [(p["name"], p["port"]) for p in service["spec"]["ports"]] == [("serve", 9000)]
    endpoints = await sc.ready_endpoints("rayservice-sample-serve-svc")
    assert endpoints and {port for _, port, _ in endpoints} == {9000}
    async with Traffic(sc, "rayservice-sample-serve-svc", "/fruit", max_requests=30, max_seconds=10) as t:
        await eventually(lambda: t.sent_at_least(30), what="30 requests")
    assert t.report.failures == [] and t.report.ok == t.report.sent


async def test_custom_serve_service_sample(scenario: Scenario) -> None:
    sc = scenario
    await sc.client.create(RAYSERVICES, sample("ray-service.custom-serve-service.yaml"), sc.namespace)
    ready = await wait_ready(sc, "rayservice-sample")
    cluster = ready["status"]["activeServiceStatus"]["rayClusterName"]
    service = await sc.client.get(SERVICES, "custom-ray-serve-service-name", sc.namespace)
    assert service["spec"]["type"] == "LoadBalancer"
    assert service["spec"]["selector"] == {"ray.io/cluster": cluster, "ray.io/serve": "true"}
    assert service["metadata"]["labels"]["custom-label"] == "custom-ray-serve-service-label"
    endpoints = await sc.ready_endpoints("custom-ray-serve-service-name")
    pods = {p["metadata"]["name"] for p in await sc.pods(cluster)}
    assert endpoints and {pod for _, _, pod in endpoints} <= pods
    assert ready["status"]["numServeEndpoints"] == len({pod for _, _, pod in endpoints})
    assert {port for _, port, _ in endpoints} == {8000}


def http_probe(path: str, port: int, *, delay: int, period: int, failure: int, timeout: int) -> dict:
    """A user's own HTTP probe (values the operator's defaults never use)."""
    return {
        "httpGet": {"path": path, "port": port},
        "initialDelaySeconds": delay,
        "periodSeconds": period,
        "failureThreshold": failure,
        "timeoutSeconds": timeout,
        "successThreshold": 1,
    }


async def test_user_defined_probes_are_kept_byte_for_byte(scenario: Scenario) -> None:
    sc = scenario
    svc = rayservice()
    head_probe = http_probe("/api/local_raylet_healthz", 52365, delay=3, period=7, failure=4, timeout=3)
    worker_readiness = http_probe("/-/healthz", 8000, delay=2, period=3, failure=2, timeout=1)
    spec = svc["spec"]["rayClusterConfig"]
    spec["headGroupSpec"]["template"]["spec"]["containers"][0].update(
        livenessProbe=head_probe, readinessProbe=head_probe
    )
    spec["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["readinessProbe"] = worker_readiness
    await sc.client.create(RAYSERVICES, svc, sc.namespace)
    ready = await wait_ready(sc, "rs", endpoints=4)
    cluster = ready["status"]["activeServiceStatus"]["rayClusterName"]
    # byte for byte as the user wrote them, plus only what the API server's Pod defaulting adds
    head_probe["httpGet"]["scheme"] = "HTTP"
    worker_readiness["httpGet"]["scheme"] = "HTTP"
    head = (await sc.pods(cluster, "head"))[0]["spec"]["containers"][0]
    assert head["livenessProbe"] == head_probe and head["readinessProbe"] == head_probe
    for w in await sc.pods(cluster, "worker"):
        container = w["spec"]["containers"][0]
        assert container["readinessProbe"] == worker_readiness
        assert container["livenessProbe"] == probe(RAYLET, 30, 2, 120)  # not set by the user: injected
