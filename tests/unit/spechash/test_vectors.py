"""Every test vector of docs/reference/spec-hash.md §7, computed by KubeRay's own hash function."""

from __future__ import annotations

import hashlib

import pytest

from controllers.spechash import (
    hash_preimage,
    rayservice_cluster_hash,
    rayservice_partial_hash,
    recreate_hash,
)

from .conftest import as_stored, as_written

EDGE = "spec-hash-edge.yaml"

RS_SAMPLE, RS_INCREMENTAL = "ray-service.sample.yaml", "ray-service.incremental-upgrade.yaml"
RC_COMPLETE, RC_AUTOSCALER, RC_SAMPLE = (
    "ray-cluster.complete.yaml",
    "ray-cluster.autoscaler.yaml",
    "ray-cluster.sample.yaml",
)

S, W = "stored", "written"

# (input, variant, hash, sha-1 of the pre-image, pre-image length); RayService inputs give the
# RayService annotation ("RS"), RayCluster inputs the head-Pod Recreate hash ("RC").
VECTORS = [
    (RS_SAMPLE, S, "Q1055GBNIO0AH4T77DF02RUTJ6K23ASF", "d04052c1779600a893a73b5e016fdd99a821ab8f", 602),
    (RS_SAMPLE, W, "QSRB30VRUVC4FOK6RIIDMUO88FBC58KI", "d736b183fbf7d847e286dca4db7b0843d6c2a292", 574),
    (RC_COMPLETE, S, "PVU9JLPHN46CS60N03QPTFHMGNF9L9DA", "cffc99d731b90cce181700f59ebe3685de9aa5aa", 1048),
    (RC_COMPLETE, W, "GBOBI7DGNK1DPPR3RPIQ2C97VLRAP332", "82f0b91db0bd02dce763de65a13127fd76ac8c62", 969),
    (RC_AUTOSCALER, S, "GRR87A8OPSH02C8J0UGQCM4B34R4JDS0", "86f683a918cf2201311307a1a6588b193649b780", 1367),
    (RC_AUTOSCALER, W, "6NDGTJ6LLHVKPAQEP2MMAIJKM12OJOKR", "35db0eccd5ac7f4cab4ec8ad654a74b04589e29b", 1288),
    (RC_SAMPLE, S, "VRDUODNPCRQASSKPTQ9TLQ1NQ1IFS5UO", "fedbec36f966f4ae7299ee93dae837d064fe17d8", 785),
    (RC_SAMPLE, W, "6RKSSRH0TUUOPMDVECMHUNDSDORCPGVT", "36e9ce6e20efbd8cd9bf732d1f5dbc6e36ccc3fd", 706),
    (RS_INCREMENTAL, S, "8KCPNG21DG7BNQSKV0AEJPAIFB1EP70P", "45199bc0416c0ebbeb94f814e9e5527ac2ec9c19", 961),
    (RS_INCREMENTAL, W, "HKI4N0QO8T75KSU3DTFNJ0M0J4D1L3C7", "8d244b8358474e5a73c36f5f7982c0991a1a8d87", 865),
    (EDGE, S, "78VG7OT3L5J3G3KB3NG0VRTVNA8H4BBT", "3a3f03e3a3a966380e8b1de00fefbfba91122d7d", 931),
    (EDGE, W, "G8O7GVL0DRJAVU0MN5S5MI60Q2E2DDMQ", "8230787ea06ee6aff816b9785b48c0d09c26b6da", 886),
]  # fmt: skip

PREIMAGE_1 = (
    '{"headGroupSpec":{"template":{"metadata":{},"spec":{"containers":[{"name":"ray-head",'
    '"image":"rayproject/ray:2.52.0","resources":{"limits":{"cpu":"2","memory":"5Gi"},'
    '"requests":{"cpu":"2","memory":"2Gi"}}}]}},"rayStartParams":{}},"rayVersion":"2.52.0",'
    '"workerGroupSpecs":[{"groupName":"small-group","minReplicas":null,"maxReplicas":null,'
    '"priority":0,"rayStartParams":{},"template":{"metadata":{},"spec":{"containers":[{"name":'
    '"ray-worker","image":"rayproject/ray:2.52.0","resources":{"limits":{"cpu":"1","memory":"2Gi"},'
    '"requests":{"cpu":"500m","memory":"2Gi"}}}]}},"scaleStrategy":{},"numOfHosts":1}]}'
)

PREIMAGE_11 = (
    '{"headServiceAnnotations":{"a\\u0026b":"\\u003cx\\u003e","z":"1"},"enableInTreeAutoscaling":true,'
    '"headGroupSpec":{"template":{"metadata":{"labels":{"B":"x","app":"a\\u003cb\\u003e"}},"spec":'
    '{"containers":[{"name":"ray-head","image":"rayproject/ray:2.52.0","ports":[{"name":"serve",'
    '"containerPort":8000,"protocol":"TCP"}],"env":[{"name":"X","value":"é\\u2028"}],"resources":'
    '{"limits":{"cpu":"1","memory":"512Mi","nvidia.com/gpu":"1"},"requests":{"cpu":"500m",'
    '"memory":"1536Mi"}},"livenessProbe":{"tcpSocket":{"port":"serve"}},"readinessProbe":{"httpGet":'
    '{"path":"/-/healthz?a=1\\u0026b=2","port":8000}}}]}},"rayStartParams":null},"rayVersion":"2.52.0",'
    '"workerGroupSpecs":[{"suspend":false,"groupName":"g1","minReplicas":null,"maxReplicas":null,'
    '"priority":0,"rayStartParams":{"num-cpus":"1"},"template":{"metadata":{},"spec":{"containers":'
    '[{"name":"w","image":"rayproject/ray:2.52.0","resources":{}}]}},"scaleStrategy":{},"numOfHosts":1}]}'
)


def _preimage(obj: dict, kind: str) -> bytes:
    if kind == "RS":
        config = {k: v for k, v in obj["spec"]["rayClusterConfig"].items() if k != "suspend"}
        return hash_preimage(config)
    spec = dict(obj["spec"])
    spec["headGroupSpec"] = {"rayStartParams": {}, **spec["headGroupSpec"]}
    return hash_preimage(spec)


@pytest.mark.parametrize(("name", "variant", "expected", "sha1_hex", "length"), VECTORS)
def test_vector(name: str, variant: str, expected: str, sha1_hex: str, length: int) -> None:
    obj = as_stored(name) if variant == S else as_written(name)
    kind = "RS" if obj["kind"] == "RayService" else "RC"
    if kind == "RS":
        got = rayservice_cluster_hash(obj["spec"]["rayClusterConfig"])
    else:
        got = recreate_hash(obj["spec"])
    preimage = _preimage(obj, kind)
    assert (len(preimage), hashlib.sha1(preimage).hexdigest()) == (length, sha1_hex)
    assert got == expected


def test_preimages_byte_for_byte() -> None:
    assert _preimage(as_stored("ray-service.sample.yaml"), "RS").decode() == PREIMAGE_1
    assert _preimage(as_stored(EDGE), "RS").decode() == PREIMAGE_11
    written = PREIMAGE_11.replace(',"protocol":"TCP"', "").replace('"priority":0,', "")
    assert _preimage(as_written(EDGE), "RS").decode() == written.replace(',"numOfHosts":1', "")


def test_inputs_are_not_mutated() -> None:
    obj = as_stored(EDGE)
    before = repr(obj)
    rayservice_cluster_hash(obj["spec"]["rayClusterConfig"])
    recreate_hash(obj["spec"]["rayClusterConfig"])
    assert repr(obj) == before


def test_partial_hash_of_an_appended_group_equals_the_original_hash() -> None:
    config = as_stored("ray-service.sample.yaml")["spec"]["rayClusterConfig"]
    extra = {**config["workerGroupSpecs"][0], "groupName": "appended"}
    grown = {**config, "workerGroupSpecs": [*config["workerGroupSpecs"], extra]}
    assert rayservice_cluster_hash(grown) != "Q1055GBNIO0AH4T77DF02RUTJ6K23ASF"
    assert rayservice_partial_hash(grown, 1) == "Q1055GBNIO0AH4T77DF02RUTJ6K23ASF"
    assert rayservice_partial_hash(config, 2) == ""  # fewer goal groups than the cluster had


def test_nil_and_empty_ray_start_params_differ_only_for_the_rayservice_hash() -> None:
    config = as_stored("ray-service.sample.yaml")["spec"]["rayClusterConfig"]
    head = {k: v for k, v in config["headGroupSpec"].items() if k != "rayStartParams"}
    absent = {**config, "headGroupSpec": head}
    assert rayservice_cluster_hash(absent) != rayservice_cluster_hash(config)
    assert recreate_hash(absent) == recreate_hash(config) == rayservice_cluster_hash(config)


def test_suspend_is_cleared_for_the_rayservice_hash_only() -> None:
    spec = as_stored("ray-cluster.sample.yaml")["spec"]
    suspended = {**spec, "suspend": True}
    assert rayservice_cluster_hash(suspended) == rayservice_cluster_hash(spec)
    assert recreate_hash(suspended) != recreate_hash(spec)
