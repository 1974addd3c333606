"""A batch scheduler selected while the API server does not serve its API, as KubeRay v1.7.0 reacts.

KubeRay (main.go, batchscheduler/schedulermanager.go):

* KubernetesWAS: the scheduler is created before the manager, by discovery of a served
  ``scheduling.k8s.io`` version; none served, ``NewSchedulerManager`` fails and the operator logs
  "unable to create batch scheduler manager" and exits 1 before creating anything.
* Volcano: nothing is checked at start, but the RayCluster controller owns ``PodGroup``; its watch
  never syncs, so the controller reconciles nothing and, when the cache sync times out (two
  minutes), the manager fails and the operator exits 1 ("problem running manager").
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from controllers import constants as C
from controllers.batchscheduler import from_options
from controllers.rayjob.builders import submitter_pod_spec
from kuberay_py.client.resources import PODS, SERVICES
from kuberay_py.clock import FakeClock
from kuberay_py.manager import ManagerOptions
from tests import external_apis
from tests.integration.batchscheduler.test_batch_schedulers import raycluster
from tests.integration.cli.procs import LOOPBACK, run_to_exit
from tests.polling import eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_kubernetes_was_without_its_api_exits_1_at_start(tmp_path: Path) -> None:
    async with external_apis.environment() as env:  # no scheduling.k8s.io/v1alpha2
        kubeconfig = Path(env.kubeconfig_path)
        # The API server runs on this loop: wait for the process off it.
        args = ("run", "--kubeconfig", str(kubeconfig), "--feature-gates=KubernetesWAS=true", *LOOPBACK)
        code, op = await asyncio.to_thread(run_to_exit, *args, timeout=60)
        assert code == 1, str(op)
        logged = op.json_log("operator.batch_scheduler_unavailable", timeout=5)
        assert logged["error"] == (
            "no served scheduling.k8s.io API version available for kubernetes-was-v1alpha2: "
            "scheduling.k8s.io/v1alpha2 API is not available"
        )
        assert not [line for line in op.stderr if "operator.starting" in line], "stopped before the manager"
        assert not [line for line in op.stderr if "Traceback" in line], str(op)


async def test_volcano_without_its_crd_reconciles_nothing_then_the_manager_fails() -> None:
    clock = FakeClock()
    scheduler = from_options(False, "volcano", submitter_pod_spec=submitter_pod_spec)
    async with external_apis.environment() as env:  # no scheduling.volcano.sh
        ns = await env.create_namespace(generate_name="novolcano-")
        client = env.new_client()
        try:
            options = external_apis.with_options(batch_scheduler=scheduler)
            with pytest.raises(TimeoutError) as failed:
                async with external_apis.operator(env, [ns], options, clock=clock) as running:
                    await client.create(C.RAYCLUSTERS, raycluster("rc", ns), ns)

                    async def gave_up() -> bool:
                        # Virtual time moves on until the cache sync times out (the PodGroup
                        # watch never syncs); the bound of ``eventually`` is real time.
                        await clock.advance(ManagerOptions().cache_sync_timeout / 4)
                        return running.task.done()

                    await eventually(gave_up, "the manager giving up on the PodGroup watch")
            # Named as controller-runtime names it (the kind), with where it was watched; only
            # the watch of the API nobody serves is pending.
            assert "timed out waiting for cache to be synced for PodGroup " in str(failed.value)
            pending = str(failed.value).split("synced for ", 1)[1].split("; check", 1)[0]
            assert pending == f"PodGroup (podgroups.scheduling.volcano.sh/v1beta1) in namespace {ns}"
            assert (await client.list(PODS, ns))["items"] == []
            assert (await client.list(SERVICES, ns))["items"] == []
            cluster = await client.get(C.RAYCLUSTERS, "rc", ns)
            assert "status" not in cluster, "never reconciled"
        finally:
            await client.close()
