"""Authorization-related answers where the built-in server once differed from kube-apiserver 1.36.

ClusterRole aggregation is kube-controller-manager's work: an API server alone stores the
``aggregationRule`` and leaves ``rules`` empty (the built-in server used to fill them in), and
an empty ``rules`` reads back as ``null`` (the built-in server left the key out).
"""

from __future__ import annotations

from kuberay_py.client import Client
from kuberay_py.client import resources as r


async def test_an_api_server_alone_never_fills_in_an_aggregated_cluster_role(k8s: Client) -> None:
    label = {"conformance.kuberay.io/aggregate-to-reader": "true"}
    part = {
        "metadata": {"name": "conformance-agg-part", "labels": label},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    }
    aggregate = {
        "metadata": {"name": "conformance-agg-reader"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": label}]},
    }
    try:
        await k8s.create(r.CLUSTERROLES, part)
        created = await k8s.create(r.CLUSTERROLES, aggregate)
        assert created["rules"] is None  # rbac/v1 has no omitempty on rules
        # The part existed before the aggregate was written: a server that aggregated would
        # have done so by now; kube-apiserver leaves it to the controller manager.
        stored = await k8s.get(r.CLUSTERROLES, "conformance-agg-reader")
        assert stored["aggregationRule"] == aggregate["aggregationRule"]
        assert stored["rules"] is None
    finally:
        for name in ("conformance-agg-reader", "conformance-agg-part"):
            await k8s.delete(r.CLUSTERROLES, name)
