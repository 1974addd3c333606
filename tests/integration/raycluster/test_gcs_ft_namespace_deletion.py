"""A GCS-FT RayCluster deleted with its namespace must not hold the namespace's deletion.

Once a namespace has its deletionTimestamp (phase Terminating), kube-apiserver's
NamespaceLifecycle admission refuses every create in it: 403, cause ``NamespaceTerminating``. The
Redis cleanup Job can then never exist, so the Redis cleanup finalizer has nothing left to wait
for. Issue 29: the operator retried the create (18+ times) and kept the finalizer, so the
namespace stayed Terminating.

envtest runs no namespace controller: in real mode the namespace only turns Terminating, and the
test deletes the RayCluster itself, as that controller would; the built-in server's namespace
controller does it. Either way the RayCluster must go, and no cleanup Job is created.
"""

from __future__ import annotations

import pytest

from controllers import constants as C
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.setup import setup
from kuberay_py.client import Client, Forbidden, NotFound
from kuberay_py.client.resources import CONFIGMAPS, JOBS
from kuberay_py.envtest import Environment
from tests.api_objects import get_or_none
from tests.in_loop_manager import in_loop_manager, running_in_loop
from tests.integration.raycluster.conftest import head_pods, sample_cluster
from tests.polling import eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

NAME = "raycluster-gcsft"


async def creates_refused(client: Client, ns: str) -> bool:
    """NamespaceLifecycle's answer to a create, once its view of the namespace is Terminating."""
    probe = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe"}}
    try:
        await client.create(CONFIGMAPS, probe, ns)
    except Forbidden as exc:
        return exc.has_cause(C.NAMESPACE_TERMINATING_CAUSE)
    await client.delete(CONFIGMAPS, "probe", ns)
    return False


async def test_cluster_deleted_with_its_namespace_releases_the_redis_cleanup_finalizer(
    crd_env: Environment, rc_client: Client
) -> None:
    ns = await crd_env.create_namespace(generate_name="gcsft-ns-")
    manager = in_loop_manager(crd_env.client_config, namespaces=[ns])
    setup(manager, options=RayClusterOptions.from_env({}))
    async with running_in_loop(manager):
        body = sample_cluster(NAME, ns, replicas=1)
        body["spec"]["gcsFaultToleranceOptions"] = {"redisAddress": "redis:6379"}
        await rc_client.create(C.RAYCLUSTERS, body, ns)

        async def finalized() -> bool:
            obj = await rc_client.get(C.RAYCLUSTERS, NAME, ns)
            return C.GCS_FT_REDIS_CLEANUP_FINALIZER in (obj["metadata"].get("finalizers") or [])

        await eventually(finalized, "the Redis cleanup finalizer")
        await eventually(lambda: head_pods(rc_client, ns, NAME), "the head Pod")

        await crd_env.delete_namespace(ns)
        await eventually(lambda: creates_refused(rc_client, ns), "creates refused in the namespace")
        try:
            await rc_client.delete(C.RAYCLUSTERS, NAME, ns)  # the namespace controller's part
        except NotFound:
            pass

        async def gone() -> bool:
            return await get_or_none(rc_client, C.RAYCLUSTERS, NAME, ns) is None

        await eventually(gone, "the RayCluster gone (finalizer released)")
        assert await get_or_none(rc_client, JOBS, f"{NAME}-redis-cleanup", ns) is None
