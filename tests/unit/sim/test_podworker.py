"""The pod worker frees a deleted Pod's address whatever order the API's answers arrive in.

A real kube-apiserver answers the kubelet's grace-0 DELETE before it sends the DELETED watch
event; the built-in server tends to do the opposite. The worker must free the address either way.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from kuberay_py.clock import FakeClock
from kuberay_py.envtest.sim.addresses import AddressAllocator
from kuberay_py.envtest.sim.nodecontext import NodeContext
from kuberay_py.envtest.sim.podworker import PodWorker


class DeleteAnswersFirst:
    """A client whose DELETE returns, and the DELETED event is delivered just after (real order)."""

    def __init__(self) -> None:
        self.statuses: list[dict[str, Any]] = []
        self.deletes: list[tuple[str, str]] = []
        self.worker: PodWorker | None = None
        self.running = asyncio.Event()

    async def update_status(self, res: Any, body: dict[str, Any]) -> dict[str, Any]:
        self.statuses.append(body)
        self.running.set()
        return copy.deepcopy(body)

    async def delete(self, res: Any, name: str, namespace: str, **_: Any) -> None:
        self.deletes.append((namespace, name))
        assert self.worker is not None
        asyncio.get_running_loop().call_soon(self.worker.removed)  # the watch event, right after


def pod() -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u-1"},
        "spec": {"nodeName": "node", "containers": [{"name": "c", "image": "img"}]},
    }


async def test_the_address_is_freed_when_the_deleted_event_follows_the_delete_answer() -> None:
    client = DeleteAnswersFirst()
    addresses = AddressAllocator("10.244.0.2", "10.244.0.20")
    released: list[str] = []
    node = NodeContext(
        client=client,  # type: ignore[arg-type]
        clock=FakeClock(),
        runtime=None,
        scale=1.0,
        node_name="node",
        host_ip="10.0.0.1",
        addresses=addresses,
        session=lambda: None,  # type: ignore[arg-type,return-value]
        spawn=lambda coro: asyncio.get_running_loop().create_task(coro),
        round_done=lambda *_: None,
        release_worker=lambda uid, _worker: released.append(uid),
    )
    worker = PodWorker(node, pod())
    client.worker = worker
    worker.task = asyncio.get_running_loop().create_task(worker.run())
    await asyncio.wait_for(client.running.wait(), 5)
    ip = client.statuses[-1]["status"]["podIP"]
    assert addresses.in_use(ip)

    deleting = pod()
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    worker.update(deleting)
    async with asyncio.timeout(5):
        await asyncio.gather(worker.task, return_exceptions=True)
    assert client.deletes == [("ns", "p")]
    assert not addresses.in_use(ip), "the deleted Pod's address is free again"
    assert released == ["u-1"]
