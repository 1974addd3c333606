"""The embedded RocksDB GCS backend: head Pod, claim and validation.

The expected values are derived from KubeRay v1.7.0's source (``common/pod.go``
``configureEmbeddedFT``, ``common/gcs_ft.go``, ``utils/validation.go``); the sample itself is
reproduced field by field by the golden test.
"""

from __future__ import annotations

from typing import Any

import pytest

from controllers.api.gates import ClusterGates
from controllers.api.validation import validate_raycluster
from controllers.common.objects import controller_ref
from controllers.raycluster.gcs_embedded import build_gcs_storage_pvc, gcs_storage_pvc_name
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.pod import build_head_pod, build_worker_pod


def cluster(ft: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "c", "namespace": "ns", "uid": "u-1"},
        "spec": {
            "gcsFaultToleranceOptions": ft,
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {
                    "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}
                },
            },
            "workerGroupSpecs": [
                {
                    "groupName": "g",
                    "minReplicas": 0,
                    "maxReplicas": 1,
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [{"name": "w", "image": "rayproject/ray:2.52.0"}]}},
                }
            ],
        },
    }


ROCKSDB = {"backend": "rocksdb"}


def test_head_gets_the_store_env_mount_and_claim_and_no_redis_settings() -> None:
    pod = build_head_pod(cluster({"backend": "rocksdb", "storage": {"subPath": "gcs"}}), RayClusterOptions())
    ray = pod["spec"]["containers"][0]
    assert ray["env"][:2] == [
        {"name": "RAY_gcs_storage", "value": "rocksdb"},
        {"name": "RAY_gcs_storage_path", "value": "/data/gcs"},
    ]
    names = [e["name"] for e in ray["env"]]
    assert "RAY_external_storage_namespace" not in names and "RAY_REDIS_ADDRESS" not in names
    assert {"name": "gcs-storage", "mountPath": "/data/gcs", "subPath": "gcs"} in ray["volumeMounts"]
    assert {"name": "gcs-storage", "persistentVolumeClaim": {"claimName": "c-gcs-pvc"}} in pod["spec"][
        "volumes"
    ]
    assert pod["metadata"]["annotations"]["ray.io/ft-enabled"] == "true"
    assert "ray.io/external-storage-namespace" not in pod["metadata"]["annotations"]


def test_workers_keep_the_ft_reconnect_timeout_and_get_no_volume() -> None:
    c = cluster(ROCKSDB)
    pod = build_worker_pod(c, c["spec"]["workerGroupSpecs"][0], RayClusterOptions())
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    assert env["RAY_gcs_rpc_server_reconnect_timeout_s"] == "600"
    assert "RAY_gcs_storage" not in env
    assert all(v["name"] != "gcs-storage" for v in pod["spec"].get("volumes") or [])


def test_the_users_claim_backs_the_volume() -> None:
    c = cluster({"backend": "rocksdb", "storage": {"claimName": "mine"}})
    assert gcs_storage_pvc_name(c) == "mine"
    volumes = build_head_pod(c, RayClusterOptions())["spec"]["volumes"]
    assert {"name": "gcs-storage", "persistentVolumeClaim": {"claimName": "mine"}} in volumes


def test_operator_claim_defaults_and_settings() -> None:
    c = cluster(ROCKSDB)
    assert build_gcs_storage_pvc(c) == {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": "c-gcs-pvc",
            "namespace": "ns",
            "labels": {"ray.io/cluster": "c"},
            "ownerReferences": [controller_ref(c)],
        },
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    storage = {"size": "20Gi", "storageClassName": "fast", "accessModes": ["ReadWriteMany"]}
    spec = build_gcs_storage_pvc(cluster({"backend": "rocksdb", "storage": storage}))["spec"]
    assert spec == {
        "accessModes": ["ReadWriteMany"],
        "storageClassName": "fast",
        "resources": {"requests": {"storage": "20Gi"}},
    }


ON = ClusterGates(embedded_gcs=True)


def _messages(c: dict[str, Any], gates: ClusterGates = ON) -> list[str]:
    return [e.message for e in validate_raycluster(c, gates=gates)]


def test_gate_off_is_an_invalid_spec() -> None:
    assert _messages(cluster(ROCKSDB), ClusterGates()) == [
        "the embedded RocksDB GCS fault tolerance backend (GcsFaultToleranceOptions.Backend: 'rocksdb') "
        "requires the GCSFaultToleranceEmbeddedStorage feature gate to be enabled"
    ]
    assert _messages(cluster(ROCKSDB)) == []


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda c: c["spec"]["gcsFaultToleranceOptions"].update(redisAddress="redis:6379"),
            "cannot set GcsFaultToleranceOptions.RedisAddress when backend is 'rocksdb'",
        ),
        (
            lambda c: c["spec"]["gcsFaultToleranceOptions"].update(redisPassword={"value": "x"}),
            "cannot set GcsFaultToleranceOptions.RedisPassword when backend is 'rocksdb'",
        ),
        (
            lambda c: c["spec"]["gcsFaultToleranceOptions"].update(externalStorageNamespace="x"),
            "cannot set GcsFaultToleranceOptions.ExternalStorageNamespace when backend is 'rocksdb'",
        ),
        (
            lambda c: c["spec"]["gcsFaultToleranceOptions"].update(storage={"claimName": "a", "size": "1Gi"}),
            "GcsFaultToleranceOptions.Storage.ClaimName is mutually exclusive with size, storageClassName, "
            "and accessModes",
        ),
        (
            lambda c: c["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0].update(
                env=[{"name": "RAY_gcs_storage_path", "value": "/x"}]
            ),
            "cannot set `RAY_gcs_storage` or `RAY_gcs_storage_path` env var in head Pod when the embedded "
            "GCS FT backend is used - these are managed by KubeRay",
        ),
        (
            lambda c: c["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0].update(
                volumeMounts=[{"name": "data", "mountPath": "/data/gcs"}]
            ),
            'cannot set a volume mount named "gcs-storage" or mounted at /data/gcs in the head container '
            "when the embedded GCS FT backend is used - it is managed by KubeRay",
        ),
        (
            lambda c: c["spec"]["headGroupSpec"]["template"]["spec"].update(
                volumes=[{"name": "gcs-storage", "emptyDir": {}}]
            ),
            'cannot set a volume named "gcs-storage" in the head Pod when the embedded GCS FT backend is '
            "used - it is managed by KubeRay",
        ),
    ],
)
def test_settings_the_embedded_backend_owns_are_rejected(edit: Any, message: str) -> None:
    c = cluster(dict(ROCKSDB))
    edit(c)
    assert _messages(c) == [message]


def test_storage_only_applies_to_rocksdb() -> None:
    assert _messages(cluster({"redisAddress": "redis:6379", "storage": {"size": "1Gi"}})) == [
        "cannot set storage when backend is 'redis' - it only applies to the 'rocksdb' backend"
    ]
