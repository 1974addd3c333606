"""The EndpointSlice controller's bookkeeping when its cache lags behind its own writes."""

from typing import Any

from kuberay_py.client import Resource, resources
from kuberay_py.envtest.sim.endpointslices import EndpointSliceController


class LaggingCache:
    """Cached reads from dicts the test fills; nothing arrives unless the test puts it there."""

    def __init__(self) -> None:
        self.objects: dict[Resource, list[dict[str, Any]]] = {
            resources.SERVICES: [],
            resources.PODS: [],
            resources.ENDPOINTSLICES: [],
        }

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return next((o for o in self.objects[res] if o["metadata"]["name"] == name), None)

    def list(
        self, res: Resource, namespace: str | None = None, *, labels: dict[str, str] | None = None
    ) -> list[Any]:
        return [
            o
            for o in self.objects[res]
            if all((o["metadata"].get("labels") or {}).get(k) == v for k, v in (labels or {}).items())
        ]


class RecordingClient:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.rv = 100

    async def create(
        self, res: Resource, body: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        self.rv += 1
        obj = {
            **body,
            "metadata": {**body["metadata"], "name": f"svc-{self.rv}", "resourceVersion": str(self.rv)},
        }
        self.calls.append(("create", obj["metadata"]["name"]))
        return obj

    async def update(self, res: Resource, body: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        self.calls.append(("update", body["metadata"]["name"]))
        return {**body, "metadata": {**body["metadata"], "resourceVersion": str(self.rv)}}

    async def delete(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        self.calls.append(("delete", name))
        return {}


SERVICE = {
    "metadata": {"name": "svc", "namespace": "ns", "uid": "svc-uid"},
    "spec": {"selector": {"app": "a"}, "ports": [{"port": 80, "targetPort": 8080}]},
}


def pod(ready: bool) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "p-uid", "labels": {"app": "a"}},
        "spec": {"containers": [{"name": "c"}]},
        "status": {"podIP": "127.9.0.1", "conditions": [{"type": "Ready", "status": str(ready)}]},
    }


async def test_own_writes_win_over_a_lagging_cache_and_expire_when_it_catches_up() -> None:
    cache, client = LaggingCache(), RecordingClient()
    ctrl = EndpointSliceController(client, cache)  # type: ignore[arg-type]
    cache.objects[resources.SERVICES] = [SERVICE]
    cache.objects[resources.PODS] = [pod(ready=False)]

    await ctrl.reconcile("ns", "svc")
    await ctrl.reconcile("ns", "svc")  # the cache still has no slice: no second create
    assert client.calls == [("create", "svc-101")]

    cache.objects[resources.PODS] = [pod(ready=True)]
    await ctrl.reconcile("ns", "svc")
    assert client.calls[-1] == ("update", "svc-101")
    (written,) = ctrl._written.values()
    assert written["endpoints"][0]["conditions"]["ready"] is True

    # The cache catches up with an older version first (ignored), then with ours (tracking ends).
    stale = {**written, "metadata": {**written["metadata"], "resourceVersion": "101"}}
    cache.objects[resources.ENDPOINTSLICES] = [stale]
    await ctrl.reconcile("ns", "svc")
    assert len(client.calls) == 2 and ctrl._written
    cache.objects[resources.ENDPOINTSLICES] = [written]
    await ctrl.reconcile("ns", "svc")
    assert len(client.calls) == 2 and not ctrl._written


async def test_service_without_selector_loses_its_managed_slices() -> None:
    cache, client = LaggingCache(), RecordingClient()
    ctrl = EndpointSliceController(client, cache)  # type: ignore[arg-type]
    cache.objects[resources.SERVICES] = [SERVICE]
    await ctrl.reconcile("ns", "svc")
    cache.objects[resources.SERVICES] = [{**SERVICE, "spec": {"ports": SERVICE["spec"]["ports"]}}]
    await ctrl.reconcile("ns", "svc")
    assert client.calls == [("create", "svc-101"), ("delete", "svc-101")]
    await ctrl.reconcile("ns", "svc")  # the deleted slice is not acted on again while the cache lags
    assert len(client.calls) == 2
