"""The Endpoints controller's writes, with a cache that lags behind them."""

from typing import Any

from kuberay_py.client import resources
from kuberay_py.envtest.sim.endpoints import EndpointsController
from kuberay_py.envtest.sim.subsets import LAST_CHANGE_TRIGGER_TIME
from tests.unit.sim.test_endpointslice_controller import SERVICE, LaggingCache, RecordingClient, pod


def controller() -> tuple[EndpointsController, LaggingCache, RecordingClient]:
    cache, client = LaggingCache(), RecordingClient()
    cache.objects[resources.ENDPOINTS] = []
    cache.objects[resources.SERVICES] = [
        {**SERVICE, "metadata": {**SERVICE["metadata"], "creationTimestamp": "2026-01-01T00:00:00Z"}}
    ]
    return EndpointsController(client, cache), cache, client  # type: ignore[arg-type]


def written(ctrl: EndpointsController) -> dict[str, Any]:
    return ctrl._written[("ns", "svc")]


async def test_creates_then_updates_its_own_write_while_the_cache_lags() -> None:
    ctrl, cache, client = controller()
    cache.objects[resources.PODS] = [pod(ready=False)]
    await ctrl.reconcile("ns", "svc")
    first = written(ctrl)
    assert first["metadata"]["annotations"] == {LAST_CHANGE_TRIGGER_TIME: "2026-01-01T00:00:00Z"}
    assert [a["ip"] for a in first["subsets"][0]["notReadyAddresses"]] == ["127.9.0.1"]
    await ctrl.reconcile("ns", "svc")  # nothing changed: no second write though the cache is empty
    assert client.calls == [("create", "svc-101")]

    cache.objects[resources.PODS] = [pod(ready=True)]
    await ctrl.reconcile("ns", "svc")
    assert client.calls[-1][0] == "update"
    assert [a["ip"] for a in written(ctrl)["subsets"][0]["addresses"]] == ["127.9.0.1"]
    assert written(ctrl)["subsets"][0]["ports"] == [{"port": 8080, "protocol": "TCP"}]

    # The cache catches up (the recording client names what it creates, as for generateName).
    caught_up = {**written(ctrl), "metadata": {**written(ctrl)["metadata"], "name": "svc"}}
    cache.objects[resources.ENDPOINTS] = [caught_up]  # tracking ends, still no write
    await ctrl.reconcile("ns", "svc")
    assert len(client.calls) == 2 and not ctrl._written


async def test_a_selector_less_service_keeps_its_endpoints_and_a_deleted_one_loses_them() -> None:
    ctrl, cache, client = controller()
    cache.objects[resources.SERVICES] = [{**SERVICE, "spec": {"ports": SERVICE["spec"]["ports"]}}]
    await ctrl.reconcile("ns", "svc")
    assert client.calls == []
    cache.objects[resources.SERVICES] = []
    await ctrl.reconcile("ns", "svc")
    assert client.calls == [("delete", "svc")]
