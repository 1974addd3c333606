"""The Job that deletes a GCS-FT cluster's keys from Redis after the cluster is gone.

It is a copy of the head Pod reduced to the Ray container, running Ray's own
``cleanup_redis_storage`` with the head's Redis address, credentials and storage namespace
(KubeRay ``buildRedisCleanupJob``): the head Pod's metadata, labels and annotations with
``ray.io/node-type=redis-cleanup``, so the label-scoped Pod cache still sees its Pod.
"""

from __future__ import annotations

from typing import Any

from controllers import constants as C
from controllers.common import cluster as common
from controllers.common.objects import new_child
from controllers.raycluster.mtls import WAIT_FOR_TLS_IP_SAN
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.pod import build_head_pod, env_exists
from kuberay_py.client.resources import JOBS

__all__ = ["build_redis_cleanup_job", "cleanup_python", "redis_cleanup_job_name"]

_CLEANUP_PY_PREFIX = (
    "from ray._private.gcs_utils import cleanup_redis_storage; "
    "from urllib.parse import urlparse; import os; import sys; "
    "redis_address = os.getenv('RAY_REDIS_ADDRESS', '').split(',')[0]; "
    "redis_address = redis_address if '://' in redis_address else 'redis://' + redis_address; "
    "parsed = urlparse(redis_address); "
    "sys.exit(1) if not cleanup_redis_storage("
    "host=parsed.hostname, port=parsed.port, "
)
# Ray's ``cleanup_redis_storage`` rejects a password that is not a string (``None`` without one);
# a username is passed only when the head has ``REDIS_USERNAME``, as KubeRay does.
_CLEANUP_PY_USERNAME = "username=os.getenv('REDIS_USERNAME', parsed.username), "
_CLEANUP_PY_SUFFIX = (
    "password=os.getenv('REDIS_PASSWORD', parsed.password or ''), "
    "use_ssl=parsed.scheme=='rediss', "
    "storage_namespace=os.getenv('RAY_external_storage_namespace')) else None"
)
_DOCS = "https://docs.ray.io/en/master/cluster/kubernetes/user-guides/kuberay-gcs-ft.html"


def cleanup_python(*, has_username: bool) -> str:
    """The ``python -c`` program of the Job (KubeRay's, byte for byte)."""
    username = _CLEANUP_PY_USERNAME if has_username else ""
    return _CLEANUP_PY_PREFIX + username + _CLEANUP_PY_SUFFIX


def redis_cleanup_job_name(cluster: dict[str, Any]) -> str:
    return common.check_label(f"{cluster['metadata']['name']}-{C.REDIS_CLEANUP_JOB_SUFFIX}")


def build_redis_cleanup_job(cluster: dict[str, Any], opts: RayClusterOptions) -> dict[str, Any]:
    head = build_head_pod(cluster, opts)
    ray = head["spec"]["containers"][C.RAY_CONTAINER_INDEX]
    ray["command"] = ["/bin/bash", "-lc", "--"]
    ray["args"] = [
        f'echo "To get more information about manually deleting the storage namespace in Redis and '
        f"removing the RayCluster's finalizer, please check {_DOCS} for more details.\" && "
        f'python -c "{cleanup_python(has_username=env_exists(ray, C.REDIS_USERNAME))}"'
    ]
    ray.pop("livenessProbe", None)
    ray.pop("readinessProbe", None)
    ray["resources"] = {
        "limits": {"cpu": "200m", "memory": "256Mi"},
        "requests": {"cpu": "200m", "memory": "256Mi"},
    }
    # Appended as KubeRay does: a value the user set earlier in the list is overridden (last wins).
    ray.setdefault("env", []).append({"name": C.RAY_REDIS_DB_CONNECT_RETRIES, "value": "120"})
    ray["env"].append({"name": C.RAY_REDIS_DB_CONNECT_WAIT_MILLISECONDS, "value": "500"})
    pod_spec = head["spec"]
    pod_spec["containers"] = [ray]
    pod_spec["restartPolicy"] = "Never"
    # The cleanup Pod's IP is never in the head certificate's SANs: that init container would
    # block it until its timeout. The user's own init containers stay, as in KubeRay.
    init = [c for c in pod_spec.get("initContainers") or [] if c.get("name") != WAIT_FOR_TLS_IP_SAN]
    if init:
        pod_spec["initContainers"] = init
    else:
        pod_spec.pop("initContainers", None)
    # KubeRay: the Job carries the head Pod's labels and annotations, its template the head Pod's
    # whole metadata (generateName, namespace and owner reference included).
    template_meta = head["metadata"]
    template_meta["labels"][C.RAY_NODE_TYPE_LABEL_KEY] = C.NODE_TYPE_REDIS_CLEANUP
    spec = {
        "backoffLimit": 0,
        "template": {"metadata": template_meta, "spec": pod_spec},
        "activeDeadlineSeconds": 300,
    }
    annotations = template_meta.get("annotations")
    return new_child(
        JOBS,
        redis_cleanup_job_name(cluster),
        cluster,
        labels=dict(template_meta["labels"]),
        annotations=dict(annotations) if annotations else None,
        spec=spec,
    )
