"""KubeRay v1.7's three spec hashes, byte for byte (docs/reference/spec-hash.md).

The hashes are how an operator recognises "its" cluster: the RayService controller compares
``ray.io/hash-without-replicas-and-workers-to-delete`` on the RayCluster with the hash of the goal
spec (a mismatch means a new cluster and a blue/green upgrade), and the RayCluster controller
compares ``ray.io/upgrade-strategy-recreate-hash`` on the head Pod (a mismatch under the Recreate
strategy deletes every Pod). Matching KubeRay's values exactly is what lets either operator take
over the other's objects without upgrading anything.

All three are ``base32hex(sha1(go_json(muted spec)))`` with different pre-processing:

* RayService annotation: ``rayClusterConfig`` with ``suspend`` cleared;
* partial hash: the same, truncated to the cluster's original number of worker groups;
* Recreate hash: the RayCluster's own spec after KubeRay's ``setDefaults`` (a nil
  ``rayStartParams`` becomes ``{}``).

Inputs are never mutated. A spec's hash is computed once per distinct spec (keyed by its JSON
bytes): the Go-order encoding walks every field of the type table, ~1 ms of CPU, and the same spec
is hashed again on every head Pod build and every RayService reconcile.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from typing import Any

import orjson

from controllers.spechash.gojson import default_encoder
from controllers.spechash.typed import kuberay_cluster_defaults

__all__ = [
    "RAYCLUSTER_SPEC_TYPE",
    "hash_preimage",
    "hash_without_replicas_and_workers_to_delete",
    "muted_spec",
    "rayservice_cluster_hash",
    "rayservice_partial_hash",
    "recreate_hash",
]

RAYCLUSTER_SPEC_TYPE = "github.com/ray-project/kuberay/ray-operator/apis/ray/v1.RayClusterSpec"

# Fields the autoscaler or a user may change on a live cluster without it counting as a new spec.
# Setting them to nil (not to a zero value) matters: minReplicas/maxReplicas have no omitempty, so
# they still appear as ``null`` in the pre-image.
_MUTED_POD_SPEC_FIELDS = ("tolerations", "schedulingGates")
_MUTED_WORKER_FIELDS = ("replicas", "minReplicas", "maxReplicas")


def _without(mapping: Any, keys: tuple[str, ...]) -> Any:
    if not isinstance(mapping, dict):
        return mapping
    return {k: v for k, v in mapping.items() if k not in keys}


def _with_muted_pod_spec(group: Any) -> Any:
    """A copy of a head or worker group whose ``template.spec`` lacks the muted lists."""
    if not isinstance(group, dict):
        return group
    template = group.get("template")
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        return dict(group)
    return {**group, "template": {**template, "spec": _without(template["spec"], _MUTED_POD_SPEC_FIELDS)}}


def muted_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec as ``GenerateHashWithoutReplicasAndWorkersToDelete`` sees it after muting."""
    muted = _without(spec, ("upgradeStrategy",))
    if "headGroupSpec" in muted:
        muted["headGroupSpec"] = _with_muted_pod_spec(muted["headGroupSpec"])
    groups = muted.get("workerGroupSpecs")
    if isinstance(groups, list):
        muted_groups = []
        for group in groups:
            group = _with_muted_pod_spec(group)
            if isinstance(group, dict):
                group = _without(group, _MUTED_WORKER_FIELDS)
                if isinstance(group.get("scaleStrategy"), dict):
                    group["scaleStrategy"] = _without(group["scaleStrategy"], ("workersToDelete",))
            muted_groups.append(group)
        muted["workerGroupSpecs"] = muted_groups
    result: dict[str, Any] = muted
    return result


def hash_preimage(spec: dict[str, Any]) -> bytes:
    """The exact bytes KubeRay feeds to SHA-1 for this (already pre-processed) RayCluster spec."""
    return default_encoder().encode(muted_spec(spec), RAYCLUSTER_SPEC_TYPE)


def hash_without_replicas_and_workers_to_delete(spec: dict[str, Any]) -> str:
    """KubeRay's ``GenerateHashWithoutReplicasAndWorkersToDelete``: 32 characters of ``[0-9A-V]``."""
    return _hash_of_spec_json(orjson.dumps(spec))


@functools.lru_cache(maxsize=512)
def _hash_of_spec_json(spec_json: bytes) -> str:
    digest = hashlib.sha1(hash_preimage(orjson.loads(spec_json)), usedforsecurity=False).digest()
    return base64.b32hexencode(digest).decode("ascii")


def rayservice_cluster_hash(cluster_config: dict[str, Any]) -> str:
    """``ray.io/hash-without-replicas-and-workers-to-delete`` for a RayService's ``rayClusterConfig``."""
    return hash_without_replicas_and_workers_to_delete(_without(cluster_config, ("suspend",)))


def rayservice_partial_hash(cluster_config: dict[str, Any], n_groups: int) -> str:
    """The hash of the goal truncated to its first ``n_groups`` worker groups.

    Empty when the goal has fewer groups, as in KubeRay: it then matches only a cluster that has
    no hash annotation at all.
    """
    groups = cluster_config.get("workerGroupSpecs") or []
    if len(groups) < n_groups:
        return ""
    return rayservice_cluster_hash({**cluster_config, "workerGroupSpecs": list(groups)[:n_groups]})


def recreate_hash(cluster_spec: dict[str, Any]) -> str:
    """``ray.io/upgrade-strategy-recreate-hash``: the RayCluster's spec after KubeRay's setDefaults.

    ``suspend`` is *not* cleared here, unlike the RayService hash.
    """
    return hash_without_replicas_and_workers_to_delete(kuberay_cluster_defaults(cluster_spec))
