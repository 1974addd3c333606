"""What a control-plane reset asks etcd to do (``kuberay_py.envtest.reuse.reset_ops``).

The end-to-end behaviour on real etcd + kube-apiserver is
``tests/integration/test_control_plane_reuse.py``; this pins the rules key by key.
"""

from __future__ import annotations

import base64
from typing import Any

from kuberay_py.envtest.reuse import EtcdSnapshot, reset_ops


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _kv(key: str, mod_revision: int) -> dict[str, Any]:
    return {"key": _b64(key), "mod_revision": str(mod_revision)}


SNAPSHOT = EtcdSnapshot(
    revision=100,
    values={
        b"/registry/clusterroles/view": _b64("view-at-ready"),
        b"/registry/clusterroles/edit": _b64("edit-at-ready"),
        b"/registry/clusterroles/admin": _b64("admin-at-ready"),
        b"/registry/leases/kube-system/apiserver-x": _b64("lease-at-ready"),
    },
    namespaces=frozenset({"default"}),
    groups=frozenset(),
)


def test_created_keys_go_changed_and_deleted_ones_come_back_leases_and_crds_stay() -> None:
    now = [
        _kv("/registry/clusterroles/view", 150),  # changed since: put back
        _kv("/registry/clusterroles/edit", 90),  # untouched
        # admin was deleted since: put back
        _kv("/registry/leases/kube-system/apiserver-x", 160),  # renewed: kube-apiserver's own
        _kv("/registry/namespaces/test-abc", 120),  # created since: deleted
        _kv("/registry/configmaps/test-abc/held", 130),
        _kv("/registry/apiextensions.k8s.io/customresourcedefinitions/rayclusters.ray.io", 110),
        _kv("/registry/apiregistration.k8s.io/apiservices/v1.ray.io", 111),
    ]
    ops = reset_ops(SNAPSHOT, now)
    deleted = {base64.b64decode(o["request_delete_range"]["key"]) for o in ops if "request_delete_range" in o}
    put = {
        base64.b64decode(o["request_put"]["key"]): base64.b64decode(o["request_put"]["value"])
        for o in ops
        if "request_put" in o
    }
    assert deleted == {b"/registry/namespaces/test-abc", b"/registry/configmaps/test-abc/held"}
    assert put == {
        b"/registry/clusterroles/view": b"view-at-ready",
        b"/registry/clusterroles/admin": b"admin-at-ready",
    }
    assert len(ops) == 4


def test_an_untouched_control_plane_needs_nothing() -> None:
    now = [_kv(k.decode(), 50) for k in SNAPSHOT.values]
    assert reset_ops(SNAPSHOT, now) == []
