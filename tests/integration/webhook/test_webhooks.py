"""KubeRay's validating webhooks through the API server: what a user sees on ``kubectl apply``.

The operator runs with ``ENABLE_WEBHOOKS=true`` and the API server calls it through the installed
``config/webhook`` configuration, so every assertion is on the API server's answer (status code,
the message kube-apiserver composes), on what is stored, and on the operator's /metrics.
"""

from __future__ import annotations

import copy
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from controllers.constants import RAYCLUSTERS, RAYJOBS, RAYSERVICES
from kuberay_py.client import ApiError, Client
from tests.api_objects import get_or_none, refused
from tests.integration.webhook.conftest import Operator, sample
from tests.polling import eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

DENIED = 'admission webhook "{hook}" denied the request: '


async def _absent(client: Client, res: Any, name: str) -> bool:
    return await get_or_none(client, res, name, "default") is None


async def test_duplicate_worker_group_names_are_refused_and_nothing_is_stored(client: Client) -> None:
    body = sample("ray-cluster.sample.yaml", name="dup-groups")
    group = body["spec"]["workerGroupSpecs"][0]
    body["spec"]["workerGroupSpecs"].append(copy.deepcopy(group))
    err = await refused(client.create(RAYCLUSTERS, body, "default"))
    assert err.status == 422 and err.reason == "Invalid"
    assert err.message.startswith(
        DENIED.format(hook="vraycluster.kb.io") + 'RayCluster.ray.io "dup-groups" is invalid: '
        "spec.workerGroupSpecs[1]: Invalid value: "
    )
    assert err.message.endswith(": worker group names must be unique")
    causes = (err.body or {})["details"]["causes"]
    assert [(c["field"], c["reason"]) for c in causes] == [("spec.workerGroupSpecs[1]", "FieldValueInvalid")]
    assert await _absent(client, RAYCLUSTERS, "dup-groups")


async def test_a_raycluster_name_that_is_not_a_dns1035_label_is_refused(client: Client) -> None:
    err = await refused(
        client.create(RAYCLUSTERS, sample("ray-cluster.sample.yaml", name="1cluster"), "default")
    )
    assert err.status == 422
    assert err.message == (
        DENIED.format(hook="vraycluster.kb.io")
        + 'RayCluster.ray.io "1cluster" is invalid: metadata.name: Invalid value: "1cluster": '
        "RayCluster name should be a valid DNS1035 label: [a DNS-1035 label must consist of lower case "
        "alphanumeric characters or '-', start with an alphabetic character, and end with an "
        "alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
        "'[a-z]([-a-z0-9]*[a-z0-9])?')]"
    )
    assert await _absent(client, RAYCLUSTERS, "1cluster")


async def test_a_valid_raycluster_is_stored_and_an_invalid_update_is_refused(client: Client) -> None:
    body = sample("ray-cluster.sample.yaml", name="valid-cluster")
    created = await client.create(RAYCLUSTERS, body, "default")
    assert created["metadata"]["name"] == "valid-cluster"
    groups = created["spec"]["workerGroupSpecs"]

    async def refused_update() -> ApiError | None:
        # Read-modify-write; the operator's own writes can make a read stale (409), then read again.
        current = await client.get(RAYCLUSTERS, "valid-cluster", "default")
        current["spec"]["workerGroupSpecs"] = [*groups, copy.deepcopy(groups[0])]
        err = await refused(client.update(RAYCLUSTERS, current))
        return None if err.status == 409 else err

    err = await eventually(refused_update, "the update refused by the webhook", tolerate=())
    assert err.status == 422 and "worker group names must be unique" in err.message
    stored = await client.get(RAYCLUSTERS, "valid-cluster", "default")
    assert len(stored["spec"]["workerGroupSpecs"]) == len(groups)
    # A patch is an update too.
    err = await refused(
        client.patch(
            RAYCLUSTERS,
            "valid-cluster",
            {"spec": {"workerGroupSpecs": [*groups, copy.deepcopy(groups[0])]}},
            "default",
        )
    )
    assert err.status == 422
    await client.delete(RAYCLUSTERS, "valid-cluster", "default")  # deletes are always allowed


async def test_a_dry_run_is_validated_and_stores_nothing(client: Client) -> None:
    body = sample("ray-cluster.sample.yaml", name="dry-run-ok")
    answer = await client.create(RAYCLUSTERS, body, "default", dry_run=True)
    assert answer["metadata"]["name"] == "dry-run-ok"
    assert await _absent(client, RAYCLUSTERS, "dry-run-ok")
    err = await refused(
        client.create(RAYCLUSTERS, sample("ray-cluster.sample.yaml", name="dry.run"), "default", dry_run=True)
    )
    assert err.status == 422 and "vraycluster.kb.io" in err.message


async def test_rayjob_name_too_long_is_refused_with_kuberays_message(client: Client) -> None:
    name = "j" * 48
    err = await refused(client.create(RAYJOBS, sample("ray-job.sample.yaml", name=name), "default"))
    assert err.status == 422
    assert err.message == (
        DENIED.format(hook="vrayjob.kb.io")
        + f'RayJob.ray.io "{name}" is invalid: metadata.name: Invalid value: "{name}": The RayJob metadata '
        "is invalid: RayJob name should be no more than 47 characters"
    )
    assert await _absent(client, RAYJOBS, name)
    job = await client.create(RAYJOBS, sample("ray-job.sample.yaml", name="j" * 47), "default")
    assert job["metadata"]["name"] == "j" * 47
    await client.delete(RAYJOBS, "j" * 47, "default")


async def test_rayservice_bad_initializing_timeout_is_refused(client: Client) -> None:
    body = sample(
        "ray-service.sample.yaml", name="svc-timeout", annotations={"ray.io/initializing-timeout": "soon"}
    )
    err = await refused(client.create(RAYSERVICES, body, "default"))
    assert err.status == 422
    assert err.message == (
        DENIED.format(hook="vrayservice.kb.io")
        + 'RayService.ray.io "svc-timeout" is invalid: metadata.name: Invalid value: "svc-timeout": The '
        "RayService metadata is invalid: RayService annotations is invalid: annotation "
        "ray.io/initializing-timeout has invalid format: soon. Expected Go duration format (e.g., '5m', "
        "'1h') or positive integer seconds"
    )
    assert await _absent(client, RAYSERVICES, "svc-timeout")
    body["metadata"]["annotations"]["ray.io/initializing-timeout"] = "5m"
    created = await client.create(RAYSERVICES, body, "default")
    assert created["metadata"]["annotations"]["ray.io/initializing-timeout"] == "5m"
    await client.delete(RAYSERVICES, "svc-timeout", "default")


async def _metrics(operator: Operator) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    url = operator.manager.metrics_url
    assert url is not None
    async with aiohttp.ClientSession() as http, http.get(f"{url}/metrics") as resp:
        text = await resp.text()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def test_webhook_metrics_count_each_review(operator: Operator, client: Client) -> None:
    path = "/validate-ray-io-v1-raycluster"
    total = ("controller_runtime_webhook_requests_total", (("code", "200"), ("webhook", path)))
    latency = ("controller_runtime_webhook_latency_seconds_count", (("webhook", path),))
    in_flight = ("controller_runtime_webhook_requests_in_flight", (("webhook", path),))
    before = await _metrics(operator)
    await refused(client.create(RAYCLUSTERS, sample("ray-cluster.sample.yaml", name="m.1"), "default"))
    await client.create(RAYCLUSTERS, sample("ray-cluster.sample.yaml", name="metrics-ok"), "default")
    after = await _metrics(operator)
    assert after[total] - before.get(total, 0.0) == 2  # a denial is an HTTP 200 carrying allowed=false
    assert after[latency] - before.get(latency, 0.0) == 2
    assert after[in_flight] == 0
    await client.delete(RAYCLUSTERS, "metrics-ok", "default")


async def test_readyz_includes_the_webhook_server(operator: Operator) -> None:
    url = operator.manager.health_url
    async with aiohttp.ClientSession() as http, http.get(f"{url}/readyz/webhook") as resp:
        assert resp.status == 200 and await resp.text() == "ok"
