from __future__ import annotations

from typing import Any

import pytest

from kuberay_py.envtest.apiserver.errors import StatusError
from kuberay_py.envtest.apiserver.patch import (
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
)


@pytest.mark.parametrize(
    ("target", "patch", "result"),
    [  # RFC 7386 appendix A
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ],
)
def test_merge_patch(target: dict[str, Any], patch: dict[str, Any], result: dict[str, Any]) -> None:
    assert apply_merge_patch(target, patch) == result


def test_json_patch_errors() -> None:
    with pytest.raises(StatusError) as e:
        apply_json_patch({"a": 1}, [{"op": "test", "path": "/a", "value": 2}])
    assert e.value.code == 422
    with pytest.raises(StatusError) as e:
        apply_json_patch({"a": 1}, [{"op": "bogus", "path": "/a"}])
    assert e.value.code == 422
    with pytest.raises(StatusError) as e:
        apply_json_patch({"a": 1}, {"op": "add"})
    assert e.value.code == 400


def pod_spec() -> dict[str, Any]:
    return {
        "spec": {
            "containers": [
                {
                    "name": "a",
                    "image": "i",
                    "ports": [{"containerPort": 80, "name": "http"}],
                    "env": [{"name": "X", "value": "1"}],
                },
                {"name": "b", "image": "j"},
            ],
            "volumes": [{"name": "v1", "emptyDir": {}}],
        },
        "metadata": {"ownerReferences": [{"uid": "u1", "name": "o1"}], "finalizers": ["f1"]},
    }


def test_smp_merges_containers_ports_env_by_key() -> None:
    out = apply_strategic_merge_patch(
        pod_spec(),
        {
            "spec": {
                "containers": [
                    {
                        "name": "a",
                        "ports": [{"containerPort": 81}],
                        "env": [{"name": "X", "value": "2"}, {"name": "Y"}],
                    }
                ]
            }
        },
    )
    a = out["spec"]["containers"][0]
    # strategicpatch's mergeSortedSlice: a patched item the live list lacks precedes live-only ones
    assert [p["containerPort"] for p in a["ports"]] == [81, 80]
    assert a["env"] == [{"name": "X", "value": "2"}, {"name": "Y"}]
    assert out["spec"]["containers"][1] == {"name": "b", "image": "j"}


def test_smp_directives() -> None:
    out = apply_strategic_merge_patch(
        pod_spec(),
        {
            "spec": {
                "containers": [{"name": "b", "$patch": "delete"}],
                "volumes": [{"$patch": "replace"}, {"name": "v2"}],
            },
            "metadata": {"ownerReferences": [{"uid": "u2", "name": "o2"}], "finalizers": ["f2"]},
        },
    )
    assert [c["name"] for c in out["spec"]["containers"]] == ["a"]
    assert out["spec"]["volumes"] == [{"name": "v2"}]
    assert [o["uid"] for o in out["metadata"]["ownerReferences"]] == ["u2", "u1"]
    assert out["metadata"]["finalizers"] == ["f2", "f1"]
    out = apply_strategic_merge_patch(pod_spec(), {"spec": {"$patch": "replace", "containers": []}})
    assert out["spec"] == {"containers": []}
    out = apply_strategic_merge_patch({"spec": {"a": 1, "b": 2}}, {"spec": {"$retainKeys": ["b"], "b": 3}})
    assert out["spec"] == {"b": 3}


def test_smp_service_ports_merge_on_port() -> None:
    svc = {"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}}
    out = apply_strategic_merge_patch(svc, {"spec": {"ports": [{"port": 443, "targetPort": 8443}]}})
    assert out["spec"]["ports"][1] == {"port": 443, "name": "https", "targetPort": 8443}


def test_smp_list_item_without_merge_key_is_bad_request() -> None:
    with pytest.raises(StatusError) as e:
        apply_strategic_merge_patch(pod_spec(), {"spec": {"containers": [{"image": "x"}]}})
    assert e.value.code == 400
