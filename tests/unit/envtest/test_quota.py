"""ResourceQuota admission of Pods in the built-in server: kube's 403 answers."""

from __future__ import annotations

from typing import Any

import pytest

from kuberay_py.envtest.apiserver.errors import StatusError
from kuberay_py.envtest.apiserver.quota import admit_pod
from kuberay_py.envtest.apiserver.store import Storage


def pod(name: str, cpu: str | None = "500m", phase: str = "Running") -> dict[str, Any]:
    resources = {"limits": {"cpu": cpu, "memory": "1Gi"}} if cpu else {}
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"containers": [{"name": "ray-head", "resources": resources}]},
        "status": {"phase": phase},
    }


def storage(hard: dict[str, str], *pods: dict[str, Any]) -> Storage:
    s = Storage()
    s.bucket(("", "resourcequotas")).objects[("ns", "q")] = {
        "metadata": {"name": "q"},
        "spec": {"hard": hard},
    }
    for p in pods:
        s.bucket(("", "pods")).objects[("ns", p["metadata"]["name"])] = p
    return s


def test_a_pod_past_the_quota_is_forbidden() -> None:
    with pytest.raises(StatusError) as err:
        admit_pod(storage({"limits.cpu": "0.1", "limits.memory": "0.1Gi"}), pod("head"))
    assert err.value.code == 403
    assert 'pods "head" is forbidden: exceeded quota: q, requested: limits.cpu=500m' in err.value.message


def test_usage_counts_live_pods_only() -> None:
    hard = {"pods": "1", "limits.cpu": "1"}
    admit_pod(storage(hard, pod("done", phase="Succeeded")), pod("new"))
    with pytest.raises(StatusError, match="exceeded quota: q, requested: pods=1"):
        admit_pod(storage(hard, pod("live")), pod("new"))


def test_a_quota_on_cpu_needs_every_container_to_declare_it() -> None:
    with pytest.raises(StatusError, match=r"failed quota: q: must specify limits\.cpu for: ray-head"):
        admit_pod(storage({"limits.cpu": "4"}), pod("head", cpu=None))
