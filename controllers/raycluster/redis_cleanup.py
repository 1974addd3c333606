"""The Job that deletes a GCS-FT cluster's keys from Redis after the cluster is gone.

It is a copy of the head Pod reduced to the Ray container, running Ray's own
``cleanup_redis_storage`` with the head's Redis address, credentials and storage namespace
(KubeRay ``buildRedisCleanupJob``). Labelled ``ray.io/node-type=redis-cleanup`` so the
label-scoped Pod cache still sees its Pod.
"""

from __future__ import annotations

from typing import Any

from controllers import constants as C
from controllers.common import cluster as common
from controllers.common.objects import new_child
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
    env = [
        e
        for e in ray.get("env") or []
        if e.get("name") not in (C.RAY_REDIS_DB_CONNECT_RETRIES, C.RAY_REDIS_DB_CONNECT_WAIT_MILLISECONDS)
    ]
    env.append({"name": C.RAY_REDIS_DB_CONNECT_RETRIES, "value": "120"})
    env.append({"name": C.RAY_REDIS_DB_CONNECT_WAIT_MILLISECONDS, "value": "500"})
    ray["env"] = env
    pod_spec = head["spec"]
    pod_spec["containers"] = [ray]
    pod_spec["restartPolicy"] = "Never"
    pod_spec.pop("initContainers", None)
    labels = dict(head["metadata"]["labels"])
    labels[C.RAY_NODE_TYPE_LABEL_KEY] = C.NODE_TYPE_REDIS_CLEANUP
    template_meta: dict[str, Any] = {"labels": labels}
    if head["metadata"].get("annotations"):
        template_meta["annotations"] = head["metadata"]["annotations"]
    labels = {
        C.RAY_CLUSTER_LABEL_KEY: cluster["metadata"]["name"],
        C.RAY_NODE_TYPE_LABEL_KEY: C.NODE_TYPE_REDIS_CLEANUP,
        C.KUBERNETES_CREATED_BY_LABEL_KEY: C.COMPONENT_NAME,
    }
    spec = {
        "backoffLimit": 0,
        "activeDeadlineSeconds": 300,
        "template": {"metadata": template_meta, "spec": pod_spec},
    }
    return new_child(JOBS, redis_cleanup_job_name(cluster), cluster, labels=labels, spec=spec)
