"""``/metrics`` of a running Manager exposes the runtime's metric names with non-zero values after work.

The controller does real work against envtest (patches, one failing reconcile, one reconcile held
open while another key waits), then the test scrapes the manager's own ``/metrics`` over HTTP
and parses the exposition, so names, labels and values are checked as Prometheus would see them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from kuberay_py.client import Client, resources
from kuberay_py.controller import Request, Result
from kuberay_py.envtest import Environment
from kuberay_py.manager import EventRecorder, Manager, ManagerOptions
from tests import polling

WAIT = 20.0  # bound for eventual consistency on a loaded machine; not a performance assertion
CONTROLLER = "metrics-probe"


# Any error fails at once: these checks read objects that already exist.
until = functools.partial(polling.eventually, timeout=WAIT, tolerate=())


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def scrape(url: str) -> Samples:
    async with aiohttp.ClientSession() as s, s.get(f"{url}/metrics") as resp:
        assert resp.status == 200
        text = await resp.text()
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def value(samples: Samples, metric: str, /, **labels: str) -> float:
    """Sum of the samples of ``name`` whose labels include ``labels``."""
    want = set(labels.items())
    found = [v for (n, lbls), v in samples.items() if n == metric and want <= set(lbls)]
    assert found, f"{metric}{labels} is not exposed"
    return sum(found)


class Worker:
    def __init__(self, client: Client, recorder: EventRecorder) -> None:
        self.client = client
        self.recorder = recorder
        self.failed_once = False
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def reconcile(self, request: Request) -> Result:
        if request.name == "fail-once" and not self.failed_once:
            self.failed_once = True
            raise RuntimeError("transient failure")
        if request.name == "block":
            self.entered.set()
            await self.release.wait()
        cm = await self.client.patch(
            resources.CONFIGMAPS, request.name, {"data": {"seen": "yes"}}, request.namespace
        )
        self.recorder.event(cm, "Normal", "Seen", f"reconciled {request.name}")
        return Result()


async def test_metrics_endpoint_exposes_runtime_metrics_with_values_after_work(
    envtest: Environment, k8s: Client, namespace: str
) -> None:
    opts = ManagerOptions(
        metrics_bind_address="127.0.0.1:0",
        health_probe_bind_address="0",
        namespaces=[namespace],
        leader_election=True,
        leader_election_namespace=namespace,
        leader_election_id="metrics-lease",
    )
    mgr = Manager(envtest.client_config, opts)
    worker = Worker(mgr.client, mgr.event_recorder("metrics-test"))
    mgr.controller(CONTROLLER).for_(resources.CONFIGMAPS).complete(worker)
    run = asyncio.create_task(mgr.run(install_signal_handlers=False))
    try:
        await asyncio.wait_for(mgr.elected.wait(), WAIT)
        assert mgr.metrics_url is not None
        for name in ("plain", "fail-once"):
            await k8s.create(resources.CONFIGMAPS, {"metadata": {"name": name}}, namespace)

        async def seen(name: str) -> bool:
            cm = await k8s.get(resources.CONFIGMAPS, name, namespace)
            return (cm.get("data") or {}).get("seen") == "yes"

        await until(lambda: seen("plain"), "plain to be reconciled")
        await until(lambda: seen("fail-once"), "fail-once to be retried and reconciled")

        # Hold one reconcile open while another key waits, to catch the in-flight gauges.
        await k8s.create(resources.CONFIGMAPS, {"metadata": {"name": "block"}}, namespace)
        await asyncio.wait_for(worker.entered.wait(), WAIT)
        await k8s.create(resources.CONFIGMAPS, {"metadata": {"name": "waiting"}}, namespace)

        async def in_flight() -> Samples | None:
            s = await scrape(str(mgr.metrics_url))
            busy = (
                value(s, "workqueue_unfinished_work_seconds", name=CONTROLLER) > 0
                and value(s, "workqueue_depth", name=CONTROLLER) > 0
            )
            return s if busy else None

        during = await until(in_flight, "in-flight workqueue gauges")
        assert value(during, "controller_runtime_active_workers", controller=CONTROLLER) == 1
        assert value(during, "workqueue_longest_running_processor_seconds", name=CONTROLLER) > 0
        worker.release.set()
        await until(lambda: seen("waiting"), "the waiting key to be reconciled")
        await mgr.events.wait_idle()

        after = await scrape(str(mgr.metrics_url))
        c = {"controller": CONTROLLER}
        assert value(after, "controller_runtime_reconcile_total", result="success", **c) >= 4
        assert value(after, "controller_runtime_reconcile_total", result="error", **c) >= 1
        assert value(after, "controller_runtime_reconcile_errors_total", **c) >= 1
        assert value(after, "controller_runtime_reconcile_time_seconds_count", **c) >= 5
        assert value(after, "controller_runtime_reconcile_time_seconds_sum", **c) > 0
        assert value(after, "controller_runtime_max_concurrent_reconciles", **c) == 1
        q = {"name": CONTROLLER, "controller": CONTROLLER}
        assert value(after, "workqueue_adds_total", **q) >= 5
        assert value(after, "workqueue_retries_total", **q) >= 1
        assert value(after, "workqueue_queue_duration_seconds_count", **q) >= 5
        assert value(after, "workqueue_work_duration_seconds_count", **q) >= 5
        assert value(after, "workqueue_work_duration_seconds_sum", **q) > 0
        assert value(after, "rest_client_requests_total", code="200", method="PATCH") >= 4
        assert value(after, "rest_client_request_duration_seconds_count", verb="PATCH") >= 4
        assert value(after, "leader_election_master_status", name="metrics-lease") == 1
        assert value(after, "event_recorder_writes_total", verb="create", result="success") >= 1
        assert not any(n.endswith("_created") for n, _ in after)  # disable_created_metrics()
    finally:
        mgr.stop()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(run, WAIT)
