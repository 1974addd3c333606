"""One RayCluster's scale-up does not hold another's (KubeRay #3909), with one reconcile worker.

A pass creates at most ``worker_creates_per_pass`` worker Pods; the rest come in later passes,
behind every other RayCluster queued meanwhile. Observed as the API server's own order of Pod
creations (one watch stream): the small cluster's Pods all come before the big cluster's last one,
and the big cluster still ends with exactly its replicas (expectations keep the passes from
double-creating). Seconds are measured by ``bench/quota_fairness.py``, not here.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses

import pytest

from controllers import constants as C
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.setup import setup
from kuberay_py.client import Client
from kuberay_py.client.resources import PODS
from kuberay_py.envtest import Environment
from tests.in_loop_manager import in_loop_manager, running_in_loop
from tests.polling import consistently, eventually

from .conftest import WAIT, sample_cluster, worker_pods

pytestmark = pytest.mark.asyncio(loop_scope="session")

PER_PASS = 2
BIG = 20  # 10 passes of PER_PASS workers
SMALL = 3


async def record_creations(client: Client, ns: str, order: list[str]) -> None:
    """Append ``cluster/pod`` for every Pod the API server reports created, in its order."""
    rv = (await client.list(PODS, ns))["metadata"].get("resourceVersion")
    while True:
        async for event in client.watch(PODS, ns, resource_version=rv, timeout_seconds=300):
            meta = event["object"]["metadata"]
            rv = meta.get("resourceVersion") or rv
            if event["type"] == "ADDED":
                order.append(f"{(meta.get('labels') or {}).get(C.RAY_CLUSTER_LABEL_KEY)}/{meta['name']}")


async def test_small_cluster_is_not_held_behind_a_big_scale_up(
    crd_env: Environment, rc_client: Client, rc_namespace: str
) -> None:
    ns = rc_namespace
    manager = in_loop_manager(crd_env.client_config, namespaces=[ns])
    options = dataclasses.replace(RayClusterOptions.from_env({}), worker_creates_per_pass=PER_PASS)
    setup(manager, max_concurrent_reconciles=1, options=options)
    order: list[str] = []
    recorder = asyncio.create_task(record_creations(rc_client, ns, order))
    try:
        async with running_in_loop(manager):
            await rc_client.create(
                C.RAYCLUSTERS, sample_cluster("big", ns, replicas=BIG, max_replicas=BIG), ns
            )
            # The big cluster is under way (its first pass is done) before the small one exists.
            await eventually(
                lambda: sum(o.startswith("big/") for o in order) >= 1 + PER_PASS, "big's 1st pass"
            )
            await rc_client.create(C.RAYCLUSTERS, sample_cluster("small", ns, replicas=SMALL), ns)
            await eventually(lambda: len(order) == 1 + BIG + 1 + SMALL, "every Pod of both", WAIT * 3)

            async def exactly_big() -> bool:
                return len(await worker_pods(rc_client, ns, "big")) == BIG

            await consistently(exactly_big, f"exactly {BIG} big workers", 0.5)
    finally:
        recorder.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await recorder
    last_big = max(i for i, o in enumerate(order) if o.startswith("big/"))
    small = [i for i, o in enumerate(order) if o.startswith("small/")]
    assert len(small) == 1 + SMALL
    assert max(small) < last_big, f"the small cluster waited for the big one: {order}"
    assert len(await worker_pods(rc_client, ns, "small")) == SMALL
