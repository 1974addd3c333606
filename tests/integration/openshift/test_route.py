"""The head Route on OpenShift, the Ingress elsewhere (KubeRay v1.7.0's reconcileIngress).

The expected Route is derived from v1.7.0 source (controllers/ray/common/openshift.go
``BuildRouteForHeadService``, raycluster_controller.go ``reconcileRouteOpenShift``). "OpenShift"
here is an API server serving ``route.openshift.io`` (the minimal Route CRD from
tests/fixtures/external-crds/openshift installed); the other server has no such group.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio

from controllers import constants as C
from controllers.raycluster.route import ROUTES, OpenShift
from kuberay_py.client import Client
from kuberay_py.client.resources import INGRESSES, SERVICES
from kuberay_py.envtest import Environment
from tests import external_apis
from tests.api_objects import controller_refs, get_or_none
from tests.polling import eventually


def cluster(name: str, ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": ns, "annotations": {"team": "ml"}},
        "spec": {
            "headGroupSpec": {
                "enableIngress": True,
                "rayStartParams": {},
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "ray-head",
                                "image": "rayproject/ray:2.52.0",
                                "ports": [{"name": "dashboard", "containerPort": 8266}],
                            }
                        ]
                    }
                },
            }
        },
    }


@contextlib.asynccontextmanager
async def run(env: Environment, ns: str, *, use_ingress: bool = False) -> AsyncIterator[Client]:
    client = env.new_client()
    try:
        options = external_apis.with_options(openshift=OpenShift(client, use_ingress=use_ingress))
        async with external_apis.operator(env, [ns], options):
            yield client
    finally:
        await client.close()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def openshift_env() -> AsyncIterator[Environment]:
    async with external_apis.environment("openshift") as env:
        yield env


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def plain_env() -> AsyncIterator[Environment]:
    async with external_apis.environment() as env:
        yield env


async def test_openshift_gets_a_route_and_no_ingress(openshift_env: Environment) -> None:
    ns = await openshift_env.create_namespace(generate_name="route-")
    async with run(openshift_env, ns) as client:
        created = await client.create(C.RAYCLUSTERS, cluster("rc", ns), ns)
        route = await eventually(lambda: get_or_none(client, ROUTES, "rc-head-route", ns), "the head Route")
        assert route["metadata"]["labels"] == {
            "ray.io/cluster": "rc",
            "ray.io/identifier": "rc-head",
            "app.kubernetes.io/name": "kuberay",
            "app.kubernetes.io/created-by": "kuberay-operator",
        }
        assert route["metadata"]["annotations"] == {"team": "ml"}
        assert route["metadata"]["ownerReferences"] == controller_refs(created)
        assert route["spec"] == {
            "to": {"kind": "Service", "name": "rc-head-svc", "weight": 100},
            "port": {"targetPort": 8266},
            "wildcardPolicy": "None",
        }
        # The head Service exists by now (same reconcile, after the Route), and no Ingress is made.
        await eventually(lambda: get_or_none(client, SERVICES, "rc-head-svc", ns), "the head Service")
        assert (await client.list(INGRESSES, ns))["items"] == []
    await openshift_env.delete_namespace(ns)


async def test_use_ingress_on_openshift_keeps_the_ingress(openshift_env: Environment) -> None:
    ns = await openshift_env.create_namespace(generate_name="route-")
    async with run(openshift_env, ns, use_ingress=True) as client:
        await client.create(C.RAYCLUSTERS, cluster("rc", ns), ns)
        await eventually(lambda: get_or_none(client, INGRESSES, "rc-head-ingress", ns), "the head Ingress")
        assert (await client.list(ROUTES, ns))["items"] == []
    await openshift_env.delete_namespace(ns)


async def test_without_openshift_the_ingress_as_before(plain_env: Environment) -> None:
    ns = await plain_env.create_namespace(generate_name="route-")
    async with run(plain_env, ns) as client:
        await client.create(C.RAYCLUSTERS, cluster("rc", ns), ns)
        ingress = await eventually(
            lambda: get_or_none(client, INGRESSES, "rc-head-ingress", ns), "the head Ingress"
        )
        assert ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["port"] == {
            "number": 8266
        }
    await plain_env.delete_namespace(ns)
