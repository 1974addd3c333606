"""Whether a rollback waits on the pending cluster's head, with RayClusterStatusConditions on and off.

KubeRay reads the pending RayCluster's HeadPodReady condition. With the gate on we read the head
Pod (the same answer, one status write sooner); with it off KubeRay never writes the condition, so
a rollback does not wait on the pending head, and neither do we.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from controllers import constants as c
from controllers.api.gates import ClusterGates
from controllers.rayservice.context import ServiceContext
from controllers.rayservice.incremental_phase import pending_head_ready
from controllers.rayservice.options import RayServiceOptions
from kuberay_py.client.resources import PODS
from kuberay_py.objects import Obj
from tests.unit.rayservice.phase_kit import head_pod, make_kit, owned_cluster


@pytest.fixture
def svc(samples: Any) -> Obj:
    obj: Obj = samples("ray-service.sample.yaml")
    return obj


def context(service: Obj, conditions_gate: bool, pending: Obj) -> ServiceContext:
    kit = make_kit(service)
    kit.cache.put(PODS, head_pod(pending["metadata"]["name"], ready=True))
    options = RayServiceOptions(env={}, cluster_gates=ClusterGates(status_conditions=conditions_gate))
    return dataclasses.replace(kit.ctx, deps=dataclasses.replace(kit.ctx.deps, options=options))


def test_gate_on_the_head_pod_decides(svc: Obj) -> None:
    pending = owned_cluster(svc, "rs-b")
    assert pending_head_ready(context(svc, True, pending), pending)


def test_gate_off_the_clusters_head_pod_ready_condition_decides_as_in_kuberay(svc: Obj) -> None:
    pending = owned_cluster(svc, "rs-b")
    assert not pending_head_ready(context(svc, False, pending), pending)  # never written gate off
    pending["status"] = {"conditions": [{"type": c.COND_HEAD_POD_READY, "status": "True"}]}
    assert pending_head_ready(context(svc, False, pending), pending)
