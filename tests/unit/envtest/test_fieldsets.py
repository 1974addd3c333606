from __future__ import annotations

from typing import Any

from kuberay_py.envtest.apiserver.fieldsets import (
    MISSING,
    delete_path,
    format_path,
    from_fields_v1,
    get_path,
    leaves,
    to_fields_v1,
)


def pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"a": "b"}, "finalizers": ["x/y"], "uid": "u"},
        "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}]}], "empty": {}},
        "status": {"phase": "Running"},
    }


def test_leaves_use_merge_keys_and_skip_server_fields() -> None:
    paths = leaves(pod(), strategic=True)
    item = ("f:spec", "f:containers", 'k:{"name":"c"}')
    assert (*item, ".") in paths
    assert (*item, "f:image") in paths
    assert (*item, "f:ports", 'k:{"containerPort":80}', "f:containerPort") in paths
    assert ("f:metadata", "f:labels", "f:a") in paths
    assert ("f:metadata", "f:finalizers", 'v:"x/y"') in paths
    assert ("f:spec", "f:empty") in paths
    assert not any(p[:2] == ("f:metadata", "f:uid") for p in paths)
    assert not any(p[0] == "f:status" for p in paths)
    assert leaves(pod(), strategic=True, subresource="status") == {("f:status", "f:phase")}
    atomic = leaves(pod(), strategic=False)
    assert ("f:spec", "f:containers") in atomic


def test_fields_v1_round_trip() -> None:
    paths = leaves(pod(), strategic=True)
    doc = to_fields_v1(paths)
    assert doc["f:spec"]["f:containers"]['k:{"name":"c"}']["."] == {}
    assert from_fields_v1(doc) == paths


def test_get_delete_and_format() -> None:
    obj = pod()
    item = ("f:spec", "f:containers", 'k:{"name":"c"}')
    assert get_path(obj, (*item, "f:image")) == "i"
    assert format_path((*item, "f:image")) == '.spec.containers[name="c"].image'
    delete_path(obj, (*item, "."))
    assert obj["spec"]["containers"] == []
    assert get_path(obj, (*item, "f:image")) is MISSING
    delete_path(obj, ("f:metadata", "f:finalizers", 'v:"x/y"'))
    assert obj["metadata"]["finalizers"] == []
