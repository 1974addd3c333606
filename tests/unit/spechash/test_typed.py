"""The Go round trip behind KubeRay's whole-object writes (``controllers.spechash.typed``).

The finalizer write sends the spec as KubeRay's Go types encode it; kube-apiserver bumps
``generation`` exactly when that differs from the stored spec. The golden files hold what KubeRay
v1.7.0 stored: its child RayClusters (created from the typed RayService spec) and the
``observedGeneration`` that its finalizer write produced.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import orjson
import pytest
import yaml

from controllers.common.finalizers import finalizer_update
from controllers.spechash import (
    RAYCLUSTER_SPEC_TYPE,
    RAYJOB_SPEC_TYPE,
    SPEC_TYPES,
    go_round_trip,
    go_typed_spec,
    kuberay_cluster_defaults,
)
from controllers.spechash.gojson import GoJsonError, default_encoder

from .conftest import FIXTURES, ROOT, admitted, ray_object

GOLDEN = FIXTURES / "golden"
SAMPLES = sorted(
    p.name
    for p in (FIXTURES / "samples").glob("*.yaml")
    if p.name.startswith(("ray-cluster", "ray-service", "ray-job"))
)
RAYSERVICE_GOLDEN = sorted(p.name for p in GOLDEN.glob("ray-service.*.yaml"))


def golden_objects(name: str) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = yaml.safe_load((GOLDEN / name).read_text())["objects"]
    return objects


def stored(name: str) -> dict[str, Any]:
    return admitted(ray_object(name))


def after_typed_write(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as stored after KubeRay's typed Update of it."""
    return admitted({**obj, "spec": go_typed_spec(obj["kind"], obj["spec"])})


@pytest.mark.parametrize("name", RAYSERVICE_GOLDEN)
def test_kuberays_child_raycluster_spec_is_the_typed_rayclusterconfig(name: str) -> None:
    """KubeRay creates the child from the typed RayService spec: the round trip reproduces it."""
    svc = stored(name)
    typed = go_typed_spec("RayService", svc["spec"])["rayClusterConfig"]
    child = admitted({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {}, "spec": typed})
    (theirs,) = [o for o in golden_objects(name) if o["kind"] == "RayCluster"]
    assert child["spec"] == theirs["spec"]


def sample_object_in_golden(name: str) -> dict[str, Any]:
    """What KubeRay stored for the sample's own RayCluster/RayService (not a child it created)."""
    kind = ray_object(name)["kind"]
    (theirs,) = [
        o for o in golden_objects(name) if o["kind"] == kind and "ownerReferences" not in o["metadata"]
    ]
    return theirs


# The samples KubeRay wrote back with its typed finalizer Update (every RayService; a RayCluster
# only with a Redis-backed GCS); the others it never updates, so their generation cannot move.
UPDATED_BY_KUBERAY = [
    p.name
    for p in sorted(GOLDEN.glob("*.yaml"))
    if sample_object_in_golden(p.name)["metadata"].get("finalizers")
]


@pytest.mark.parametrize("name", UPDATED_BY_KUBERAY)
def test_the_typed_write_changes_the_spec_exactly_where_kuberays_generation_moved(name: str) -> None:
    theirs = sample_object_in_golden(name)
    before = stored(name)
    changed = after_typed_write(before)["spec"] != before["spec"]
    assert changed is (theirs["status"]["observedGeneration"] == 2)


def test_the_golden_files_hold_both_kinds_of_finalizer_write() -> None:
    assert "ray-cluster.external-redis.yaml" in UPDATED_BY_KUBERAY
    assert set(RAYSERVICE_GOLDEN) <= set(UPDATED_BY_KUBERAY)


@pytest.mark.parametrize("name", SAMPLES)
def test_a_typed_spec_is_a_fixed_point(name: str) -> None:
    """Once KubeRay's form is stored, a second typed write (the finalizer's removal, a takeover)
    changes nothing and bumps no generation."""
    once = after_typed_write(stored(name))
    assert after_typed_write(once) == once


def test_what_the_go_structs_add_and_normalise() -> None:
    spec = {
        "headGroupSpec": {"template": {"spec": {"containers": [{"name": "head", "image": "ray"}]}}},
        "workerGroupSpecs": [
            {
                "groupName": "w",
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "w", "resources": {"limits": {"cpu": "0.5", "memory": "1024Mi"}}}
                        ]
                    }
                },
                "notAField": True,
            }
        ],
    }
    typed = go_typed_spec("RayCluster", spec)
    head, worker = typed["headGroupSpec"], typed["workerGroupSpecs"][0]
    assert head["template"]["metadata"] == {}  # ObjectMeta: a struct, never omitted
    assert head["template"]["spec"]["containers"][0]["resources"] == {}
    assert head["rayStartParams"] == {} and worker["rayStartParams"] == {}  # setDefaults, no omitempty
    assert worker["scaleStrategy"] == {}
    assert worker["template"]["spec"]["containers"][0]["resources"]["limits"] == {
        "cpu": "500m",
        "memory": "1Gi",
    }
    assert "notAField" not in worker
    assert "minReplicas" not in worker  # nil without omitempty is null, which the API server drops


def test_a_rayservice_cluster_gets_no_setdefaults_and_upgrade_options_emit_their_plain_fields() -> None:
    spec = {
        "upgradeStrategy": {
            "type": "NewClusterWithIncrementalUpgrade",
            "clusterUpgradeOptions": {"maxSurgePercent": 50},
        },
        "rayClusterConfig": {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "h"}]}}}},
    }
    typed = go_typed_spec("RayService", spec)
    assert "rayStartParams" not in typed["rayClusterConfig"]["headGroupSpec"]
    # gatewayClassName is a string without omitempty; stepSizePercent/intervalSeconds are nil.
    assert typed["upgradeStrategy"]["clusterUpgradeOptions"] == {
        "maxSurgePercent": 50,
        "gatewayClassName": "",
    }


def test_a_rayjob_spec_keeps_go_field_order_and_float32_values() -> None:
    spec = {
        "entrypoint": "python x.py",
        "entrypointNumCpus": 0.1,
        "shutdownAfterJobFinishes": True,
        "submitterPodTemplate": {"spec": {"containers": [{"name": "s"}]}},
        "deletionStrategy": {
            "deletionRules": [{"policy": "DeleteCluster", "condition": {"jobStatus": "FAILED"}}]
        },
        "activeDeadlineSeconds": 60,
    }
    typed = go_round_trip(spec, RAYJOB_SPEC_TYPE)
    assert list(typed) == [
        "activeDeadlineSeconds",
        "submitterPodTemplate",
        "deletionStrategy",
        "entrypoint",
        "entrypointNumCpus",
        "shutdownAfterJobFinishes",
    ]
    assert typed["entrypointNumCpus"] == 0.1
    assert typed["submitterPodTemplate"]["metadata"] == {}
    assert typed["deletionStrategy"]["deletionRules"][0]["condition"] == {"jobStatus": "FAILED"}


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.1, "0.1"),
        (1, "1"),
        (2.5, "2.5"),
        (1e-7, "1e-7"),
        (1e21, "1e+21"),
        (16777217, "16777216"),
        (123456789, "123456790"),
    ],
)
def test_float32_is_written_as_go_writes_it(value: float, text: str) -> None:
    encoded = default_encoder().encode({"entrypointNumCpus": value}, RAYJOB_SPEC_TYPE)
    assert encoded == f'{{"entrypointNumCpus":{text}}}'.encode()


def test_a_value_go_would_refuse_is_an_error_naming_its_path() -> None:
    with pytest.raises(GoJsonError, match=r"entrypointNumCpus"):
        default_encoder().encode({"entrypointNumCpus": "one"}, RAYJOB_SPEC_TYPE)


def test_setdefaults_does_not_mutate_and_keeps_given_params() -> None:
    spec = {"headGroupSpec": {"rayStartParams": {"num-cpus": "0"}}, "workerGroupSpecs": [{"groupName": "w"}]}
    out = kuberay_cluster_defaults(spec)
    assert out["headGroupSpec"]["rayStartParams"] == {"num-cpus": "0"}
    assert out["workerGroupSpecs"][0]["rayStartParams"] == {}
    assert "rayStartParams" not in spec["workerGroupSpecs"][0]


def test_the_finalizer_update_body() -> None:
    obj = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "rc", "namespace": "ns", "resourceVersion": "7", "finalizers": ["other"]},
        "spec": {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "h"}]}}}},
        "status": {"state": "ready"},
    }
    added = finalizer_update("RayCluster", obj, add="ray.io/x")
    assert added["metadata"] == {
        **obj["metadata"],
        "finalizers": ["other", "ray.io/x"],
    }  # resourceVersion kept
    assert added["spec"] == go_round_trip(kuberay_cluster_defaults(obj["spec"]), RAYCLUSTER_SPEC_TYPE)
    assert added["status"] == obj["status"]
    assert (
        obj["metadata"]["finalizers"] == ["other"]
        and "metadata" not in obj["spec"]["headGroupSpec"]["template"]
    )
    removed = finalizer_update(
        "RayCluster",
        {**added, "metadata": {**added["metadata"], "finalizers": ["ray.io/x"]}},
        remove="ray.io/x",
    )
    assert "finalizers" not in removed["metadata"]  # an emptied list is not sent (omitempty)


def _go_fields(type_key: str) -> dict[str, dict[str, Any]]:
    table = default_encoder_table()
    out: dict[str, dict[str, Any]] = {}
    for field in table[type_key].get("fields") or []:
        out.update(_go_fields(field["type_ref"]) if field["inline"] else {field["json"]: field})
    return out


@cache
def default_encoder_table() -> dict[str, Any]:
    types: dict[str, Any] = {}
    for name in ("go_json_field_order.json", "go_json_field_order_ray_v1.json"):
        types.update(orjson.loads((ROOT / "controllers" / "spechash" / name).read_bytes())["types"])
    return types


def _unknown_to_go(schema: dict[str, Any], type_key: str, path: str) -> list[str]:
    table = default_encoder_table()
    if table.get(type_key, {}).get("kind") != "struct" or "fields" not in table[type_key]:
        return []
    fields = _go_fields(type_key)
    missing: list[str] = []
    for key, sub in (schema.get("properties") or {}).items():
        if key not in fields:
            missing.append(f"{path}.{key}")
            continue
        if sub.get("type") == "array":
            sub = sub.get("items") or {}
        if fields[key]["type_ref"]:
            missing += _unknown_to_go(sub, fields[key]["type_ref"], f"{path}.{key}")
    return missing


@pytest.mark.parametrize(
    ("plural", "kind"),
    [
        ("rayclusters", "RayCluster"),
        ("rayservices", "RayService"),
        ("rayjobs", "RayJob"),
        ("raycronjobs", "RayCronJob"),
    ],
)
def test_the_typed_write_never_drops_a_field_the_crd_stores(plural: str, kind: str) -> None:
    """Every spec field our CRD keeps is a field of KubeRay's Go types, so the round trip loses
    nothing a user wrote (the tables and the CRD describe the same API)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crd = yaml.load((ROOT / "config" / "crd" / "bases" / f"ray.io_{plural}.yaml").read_text(), Loader=loader)
    (v1,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    spec_schema = v1["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert _unknown_to_go(spec_schema, SPEC_TYPES[kind], "spec") == []
