"""Head and worker Pod manifests, built from a RayCluster dict (pure: no I/O, no mutation).

Order of work follows KubeRay's ``DefaultHeadPodTemplate``/``DefaultWorkerPodTemplate`` then
``BuildPod``: template defaults (name, namespace, labels, annotations, autoscaler sidecar,
init container, metrics port), then volumes, the container command, env vars and probes.
"""

from __future__ import annotations

from typing import Any

from controllers import constants as C
from controllers.common import cluster as common
from controllers.raycluster import gcs_embedded, history_server, mtls
from controllers.raycluster.auth import auth_enabled, configure_token_auth, set_token_auth_env
from controllers.raycluster.autoscaler import autoscaler_container, autoscaler_service_account_name
from controllers.raycluster.command import (
    container_command,
    fold_group_labels,
    fold_group_resources,
    generate_ray_start_command,
    set_missing_ray_start_params,
)
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.pod_defaults import apply_container_env_defaults, apply_template_defaults
from controllers.raycluster.probes import inject_probes
from controllers.spechash import recreate_hash
from kuberay_py.objects import json_copy

__all__ = [
    "WorkerPods",
    "build_head_pod",
    "build_worker_pod",
    "env_exists",
    "pod_labels",
    "ray_start_params_for",
]

SHARED_MEMORY_VOLUME = "shared-mem"
SHARED_MEMORY_PATH = "/dev/shm"
RAY_LOG_VOLUME = "ray-logs"
RAY_LOG_PATH = "/tmp/ray"

# KubeRay v1.7's script byte for byte (tab-indented, as its Go raw string is): users' log
# scrapers match its lines, and any difference would show as a Pod spec drift on takeover.
_FAQ = "the FAQ at https://docs.ray.io/en/master/cluster/kubernetes/troubleshooting.html"
_WAIT_GCS_SCRIPT = (
    "\n\t\t\t\t\tSECONDS=0"
    "\n\t\t\t\t\twhile true; do"
    "\n\t\t\t\t\t\tif (( SECONDS <= 120 )); then"
    "\n\t\t\t\t\t\t\tif ray health-check --address {addr} > /dev/null 2>&1; then"
    '\n\t\t\t\t\t\t\t\techo "GCS is ready."'
    "\n\t\t\t\t\t\t\t\tbreak"
    "\n\t\t\t\t\t\t\tfi"
    '\n\t\t\t\t\t\t\techo "$SECONDS seconds elapsed: Waiting for GCS to be ready."'
    "\n\t\t\t\t\t\telse"
    "\n\t\t\t\t\t\t\tif ray health-check --address {addr}; then"
    '\n\t\t\t\t\t\t\t\techo "GCS is ready. Any error messages above can be safely ignored."'
    "\n\t\t\t\t\t\t\t\tbreak"
    "\n\t\t\t\t\t\t\tfi"
    '\n\t\t\t\t\t\t\techo "$SECONDS seconds elapsed: Still waiting for GCS to be ready. '
    'For troubleshooting, refer to {faq}."'
    "\n\t\t\t\t\t\tfi"
    "\n\t\t\t\t\t\tsleep 5"
    "\n\t\t\t\t\tdone"
    "\n\t\t\t\t"
)


def pod_labels(
    node_type: str, cluster_name: str, group_name: str, template_labels: dict[str, str] | None
) -> dict[str, str]:
    """KubeRay's labels merged with the template's; the selector labels always win."""
    ours = {
        C.RAY_NODE_LABEL_KEY: C.RAY_NODE_LABEL_VALUE,
        C.RAY_CLUSTER_LABEL_KEY: cluster_name,
        C.RAY_NODE_TYPE_LABEL_KEY: node_type,
        C.RAY_NODE_GROUP_LABEL_KEY: group_name,
        C.RAY_ID_LABEL_KEY: common.check_name(f"{cluster_name}-{node_type}")[:63],
        C.KUBERNETES_APPLICATION_NAME_LABEL_KEY: C.APPLICATION_NAME,
        C.KUBERNETES_CREATED_BY_LABEL_KEY: C.COMPONENT_NAME,
    }
    labels = dict(ours)
    labels.update(template_labels or {})
    for key in (*C.PROTECTED_POD_LABEL_KEYS, C.RAY_ID_LABEL_KEY, C.RAY_NODE_LABEL_KEY):
        labels[key] = ours[key]
    return labels


def ray_start_params_for(
    cluster: dict[str, Any], group: dict[str, Any], node_type: str, opts: RayClusterOptions
) -> dict[str, str]:
    # KubeRay folds the group's top-level resources and labels in before its defaults.
    folded = {str(k): str(v) for k, v in (group.get("rayStartParams") or {}).items()}
    fold_group_resources(folded, group.get("resources"))
    fold_group_labels(folded, group.get("labels"))
    params = set_missing_ray_start_params(
        folded,
        node_type,
        common.head_port(cluster),
        common.fqdn_ray_ip(cluster, opts.cluster_domain),
    )
    if node_type == C.NODE_TYPE_HEAD and common.is_autoscaling(cluster):
        params["no-monitor"] = "true"
    if node_type == C.NODE_TYPE_HEAD and common.spec_of(cluster).get("gcsFaultToleranceOptions") is not None:
        ft = common.spec_of(cluster)["gcsFaultToleranceOptions"]
        if ft.get("redisPassword") is not None and "redis-password" not in params:
            params["redis-password"] = "$" + C.REDIS_PASSWORD
        if ft.get("redisUsername") is not None and "redis-username" not in params:
            params["redis-username"] = "$" + C.REDIS_USERNAME
    return params


def env_exists(container: dict[str, Any], name: str) -> bool:
    return any(e.get("name") == name for e in container.get("env") or [])


def _append_env(container: dict[str, Any], name: str, value: str | None = None, **source: Any) -> None:
    entry: dict[str, Any] = {"name": name}
    if source:
        entry["valueFrom"] = source
    else:
        entry["value"] = value if value is not None else ""
    container.setdefault("env", []).append(entry)


def _field_ref(path: str) -> dict[str, Any]:
    return {"fieldRef": {"fieldPath": path}}


def _add_empty_dir(
    pod_spec: dict[str, Any], container: dict[str, Any], name: str, path: str, medium: str
) -> None:
    """Mount an emptyDir unless the path is already mounted; reuse a same-named volume if present."""
    mounts = container.setdefault("volumeMounts", [])
    if any(m.get("mountPath") == path for m in mounts):
        return
    volumes = pod_spec.setdefault("volumes", [])
    if not any(v.get("name") == name for v in volumes):
        empty_dir: dict[str, Any] = {}
        if medium:
            empty_dir["medium"] = medium
            resources = container.get("resources") or {}
            size = (resources.get("limits") or {}).get("memory") or (resources.get("requests") or {}).get(
                "memory"
            )
            if size is not None:
                empty_dir["sizeLimit"] = size
        volumes.append({"name": name, "emptyDir": empty_dir})
    mounts.append({"name": name, "mountPath": path})


def _set_ray_env(
    container: dict[str, Any],
    cluster: dict[str, Any],
    node_type: str,
    ray_start_cmd: str,
    opts: RayClusterOptions,
) -> None:
    fqdn = common.fqdn_ray_ip(cluster, opts.cluster_domain)
    port = common.head_port(cluster)
    ip = "127.0.0.1"
    if node_type == C.NODE_TYPE_WORKER:
        ip = fqdn
        _append_env(container, C.FQ_RAY_IP, fqdn)
        _append_env(container, C.RAY_IP, fqdn.split(".", 1)[0])
    _append_env(container, C.RAY_CLUSTER_NAME, **_field_ref(f"metadata.labels['{C.RAY_CLUSTER_LABEL_KEY}']"))
    _append_env(container, C.RAY_CLUSTER_NAMESPACE, **_field_ref("metadata.namespace"))
    _append_env(container, C.RAY_CLOUD_INSTANCE_ID, **_field_ref("metadata.name"))
    _append_env(
        container, C.RAY_NODE_TYPE_NAME, **_field_ref(f"metadata.labels['{C.RAY_NODE_GROUP_LABEL_KEY}']")
    )
    _append_env(container, C.KUBERAY_GEN_RAY_START_CMD, ray_start_cmd)
    if not env_exists(container, C.RAY_PORT):
        _append_env(container, C.RAY_PORT, port)
    if common.created_by_rayservice(cluster):
        for name, value in (
            (C.RAY_TIMEOUT_MS_TASK_WAIT_FOR_DEATH_INFO, "0"),
            (C.RAY_GCS_SERVER_REQUEST_TIMEOUT_SECONDS, "5"),
            (C.RAY_SERVE_KV_TIMEOUT_S, "5"),
        ):
            if not env_exists(container, name):
                _append_env(container, name, value)
    if not env_exists(container, C.RAY_ADDRESS):
        _append_env(container, C.RAY_ADDRESS, f"{ip}:{port}")
    if not env_exists(container, C.RAY_USAGE_STATS_KUBERAY_IN_USE):
        _append_env(container, C.RAY_USAGE_STATS_KUBERAY_IN_USE, "1")
    if node_type == C.NODE_TYPE_HEAD and not env_exists(container, C.RAY_USAGE_STATS_EXTRA_TAGS):
        _append_env(
            container,
            C.RAY_USAGE_STATS_EXTRA_TAGS,
            f"kuberay_version={C.KUBERAY_VERSION};kuberay_crd={common.creator_crd(cluster)}",
        )
    if not env_exists(container, C.RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE):
        _append_env(container, C.RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE, "1")


def _set_gcs_ft_env(
    container: dict[str, Any], cluster: dict[str, Any], node_type: str, storage_ns: str
) -> None:
    if node_type == C.NODE_TYPE_WORKER:
        if not env_exists(container, C.RAY_GCS_RPC_SERVER_RECONNECT_TIMEOUT_S):
            _append_env(
                container,
                C.RAY_GCS_RPC_SERVER_RECONNECT_TIMEOUT_S,
                C.DEFAULT_WORKER_RAY_GCS_RECONNECT_TIMEOUT_S,
            )
        return
    if not env_exists(container, C.RAY_EXTERNAL_STORAGE_NS):
        _append_env(container, C.RAY_EXTERNAL_STORAGE_NS, storage_ns)
    options = common.spec_of(cluster).get("gcsFaultToleranceOptions")
    if options is None:
        # A literal ``redis-password`` in rayStartParams (the annotation path): KubeRay copies it
        # into REDIS_PASSWORD, which is what the Redis cleanup Job authenticates with.
        head_params = (common.spec_of(cluster).get("headGroupSpec") or {}).get("rayStartParams") or {}
        if "redis-password" in head_params and not env_exists(container, C.REDIS_PASSWORD):
            _append_env(container, C.REDIS_PASSWORD, str(head_params["redis-password"]))
        return
    if options.get("redisAddress") and not env_exists(container, C.RAY_REDIS_ADDRESS):
        _append_env(container, C.RAY_REDIS_ADDRESS, str(options["redisAddress"]))
    for key, env_name in (("redisPassword", C.REDIS_PASSWORD), ("redisUsername", C.REDIS_USERNAME)):
        source = options.get(key)
        if source is None or env_exists(container, env_name):
            continue
        if source.get("valueFrom") is not None:
            container.setdefault("env", []).append(
                {"name": env_name, "valueFrom": json_copy(source["valueFrom"])}
            )
        else:
            _append_env(container, env_name, str(source.get("value", "")))


def external_storage_namespace(cluster: dict[str, Any]) -> str:
    options = common.spec_of(cluster).get("gcsFaultToleranceOptions") or {}
    if options.get("externalStorageNamespace"):
        return str(options["externalStorageNamespace"])
    annotations = cluster["metadata"].get("annotations") or {}
    if annotations.get(C.RAY_EXTERNAL_STORAGE_NS_ANNOTATION_KEY):
        return str(annotations[C.RAY_EXTERNAL_STORAGE_NS_ANNOTATION_KEY])
    return str(cluster["metadata"].get("uid", ""))


def _wait_gcs_ready_container(
    ray: dict[str, Any], fqdn: str, port: str, *, login_shell: bool
) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": C.WAIT_GCS_READY_INIT_CONTAINER_NAME,
        "image": ray.get("image"),
        "command": ["/bin/bash", "-lc" if login_shell else "-c", "--"],
        "args": [_WAIT_GCS_SCRIPT.format(addr=f"{fqdn}:{port}", faq=_FAQ)],
        "resources": {
            "limits": {"cpu": "200m", "memory": "256Mi"},
            "requests": {"cpu": "200m", "memory": "256Mi"},
        },
    }
    for key in ("imagePullPolicy", "securityContext", "env", "volumeMounts"):
        if ray.get(key) is not None:
            container[key] = json_copy(ray[key])
    return container


def _base_pod(
    cluster: dict[str, Any], group: dict[str, Any], node_type: str, group_name: str, generate_name: str
) -> dict[str, Any]:
    template = json_copy(group.get("template") or {})
    meta = template.get("metadata") or {}
    pod_spec = template.get("spec") or {}
    metadata: dict[str, Any] = {
        "generateName": generate_name,
        "namespace": cluster["metadata"]["namespace"],
        # The group's top-level labels are Pod labels too, over the template's (KubeRay's mergeLabels).
        "labels": pod_labels(
            node_type,
            cluster["metadata"]["name"],
            group_name,
            {**(meta.get("labels") or {}), **(group.get("labels") or {})},
        ),
        "annotations": dict(meta.get("annotations") or {}),
        "ownerReferences": [common.controller_ref(cluster)],
    }
    for key in ("finalizers",):
        if meta.get(key):
            metadata[key] = meta[key]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec}


def _finish_pod(
    pod: dict[str, Any],
    cluster: dict[str, Any],
    group: dict[str, Any],
    node_type: str,
    opts: RayClusterOptions,
) -> dict[str, Any]:
    spec = pod["spec"]
    containers = spec.setdefault("containers", [])
    if not containers:
        raise ValueError(f"{node_type} Pod template has no containers")
    ray = containers[C.RAY_CONTAINER_INDEX]
    params = ray_start_params_for(cluster, group, node_type, opts)
    # KubeRay adds these while defaulting the Pod template, before the Ray env, so they come first.
    # Only the Ray container learns the autoscaler version, and only when it is explicit.
    if node_type == C.NODE_TYPE_HEAD and common.is_autoscaling(cluster):
        version = (common.spec_of(cluster).get("autoscalerOptions") or {}).get("version")
        if version in ("v1", "v2"):
            _append_env(ray, C.RAY_ENABLE_AUTOSCALER_V2, "true" if version == "v2" else "false")
    if common.gcs_ft_enabled(cluster):
        if node_type == C.NODE_TYPE_HEAD and gcs_embedded.is_embedded(cluster):
            gcs_embedded.configure_head(spec, ray, cluster)
        else:
            _set_gcs_ft_env(ray, cluster, node_type, external_storage_namespace(cluster))
    annotations = pod["metadata"]["annotations"]
    cluster_annotations = cluster["metadata"].get("annotations") or {}
    if C.RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION_KEY in cluster_annotations:
        annotations[C.RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION_KEY] = cluster_annotations[
            C.RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION_KEY
        ]
    # Metrics port for Prometheus, unless the user declared one.
    if common.find_container_port(ray, C.METRICS_PORT_NAME, -1) == -1:
        ray.setdefault("ports", []).append(
            {"name": C.METRICS_PORT_NAME, "containerPort": C.DEFAULT_METRICS_PORT}
        )
    if auth_enabled(cluster):
        configure_token_auth(spec, ray, cluster)
    if mtls.tls_enabled(cluster, opts):
        mtls.configure_pod(spec, cluster, node_type)
    collector_options = history_server.collector_options(cluster, opts)
    if collector_options is not None:
        fqdn = common.fqdn_ray_ip(cluster, opts.cluster_domain)
        collector = history_server.build_collector(collector_options, node_type, cluster, fqdn)
        if auth_enabled(cluster):
            set_token_auth_env(collector, cluster)  # it reads the dashboard
        containers.append(collector)
    # /dev/shm for the object store, unless plasma lives elsewhere.
    if "plasma-directory" not in params:
        _add_empty_dir(spec, ray, SHARED_MEMORY_VOLUME, SHARED_MEMORY_PATH, "Memory")
    if node_type == C.NODE_TYPE_HEAD and common.is_autoscaling(cluster):
        autoscaler = next(c for c in containers if c.get("name") == C.AUTOSCALER_CONTAINER_NAME)
        _add_empty_dir(spec, ray, RAY_LOG_VOLUME, RAY_LOG_PATH, "")
        _add_empty_dir(spec, autoscaler, RAY_LOG_VOLUME, RAY_LOG_PATH, "")
    collector_at = history_server.collector_index(containers, opts)
    if collector_at is not None:
        _add_empty_dir(spec, ray, RAY_LOG_VOLUME, RAY_LOG_PATH, "")
        _add_empty_dir(spec, containers[collector_at], RAY_LOG_VOLUME, RAY_LOG_PATH, "")
    ray_start_cmd = generate_ray_start_command(node_type, params, ray.get("resources") or {})
    overwrite = str(annotations.get(C.RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION_KEY, "")).lower() == "true"
    new_cmd = container_command(ray, ray_start_cmd, overwrite=overwrite, login_shell=opts.enable_login_shell)
    if new_cmd is not None:
        ray["command"], ray["args"] = new_cmd
    fqdn = common.fqdn_ray_ip(cluster, opts.cluster_domain)
    for init in spec.get("initContainers") or []:
        if not env_exists(init, C.FQ_RAY_IP):
            _append_env(init, C.FQ_RAY_IP, fqdn)
        if not env_exists(init, C.RAY_IP):
            _append_env(init, C.RAY_IP, fqdn.split(".", 1)[0])
    apply_container_env_defaults(ray, opts.pod_defaults)  # before ours, only names the user lacks
    _set_ray_env(ray, cluster, node_type, ray_start_cmd, opts)
    if collector_at is not None:
        history_server.set_ray_event_env(ray)
    if opts.enable_probes_injection:
        serve_worker = (
            node_type == C.NODE_TYPE_WORKER
            and common.created_by_rayservice(cluster)
            and common.serve_proxy_on_workers(cluster)
        )
        inject_probes(
            ray,
            node_type,
            params,
            ray_version=common.spec_of(cluster).get("rayVersion"),
            serve_worker=serve_worker,
        )
    if common.created_by_rayservice(cluster):
        pod["metadata"]["labels"][C.RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY] = (
            C.SERVE_LABEL_FALSE if node_type == C.NODE_TYPE_HEAD else C.SERVE_LABEL_TRUE
        )
    if not annotations:
        del pod["metadata"]["annotations"]
    return pod


def build_head_pod(cluster: dict[str, Any], opts: RayClusterOptions) -> dict[str, Any]:
    name = cluster["metadata"]["name"]
    head = common.spec_of(cluster).get("headGroupSpec") or {}
    pod = _base_pod(
        cluster,
        head,
        C.NODE_TYPE_HEAD,
        C.RAY_NODE_HEAD_GROUP_LABEL_VALUE,
        common.pod_generate_name(name, C.NODE_TYPE_HEAD),
    )
    if opts.deterministic_head_pod_name:
        del pod["metadata"]["generateName"]
        pod["metadata"]["name"] = common.check_name(f"{name}-head")
    annotations = pod["metadata"]["annotations"]
    if common.gcs_ft_enabled(cluster):
        annotations[C.RAY_FT_ENABLED_ANNOTATION_KEY] = "true"
        if not gcs_embedded.is_embedded(cluster):
            annotations[C.RAY_EXTERNAL_STORAGE_NS_ANNOTATION_KEY] = external_storage_namespace(cluster)
    else:
        annotations[C.RAY_FT_ENABLED_ANNOTATION_KEY] = "false"
    # Every head Pod carries them, whatever the upgrade strategy: the Recreate strategy compares
    # the hash, and an operator (ours or KubeRay) re-stamps both after a version change.
    annotations[C.KUBERAY_VERSION_KEY] = C.KUBERAY_VERSION
    annotations[C.UPGRADE_STRATEGY_RECREATE_HASH_KEY] = recreate_hash(common.spec_of(cluster))
    spec = pod["spec"]
    if common.is_autoscaling(cluster):
        spec["serviceAccountName"] = autoscaler_service_account_name(cluster)
        containers = spec.setdefault("containers", [])
        if containers:
            tls = mtls.tls_enabled(cluster, opts)
            containers.append(autoscaler_container(cluster, containers[C.RAY_CONTAINER_INDEX], tls=tls))
        if common.is_autoscaler_v2(cluster):
            spec["restartPolicy"] = "Never"
    apply_template_defaults(pod, C.NODE_TYPE_HEAD, opts.pod_defaults)  # --config's sidecars, labels...
    return _finish_pod(pod, cluster, head, C.NODE_TYPE_HEAD, opts)


def _set_index_labels(
    labels: dict[str, str], replica_name: str | None, replica_index: int | None, host_index: int | None
) -> None:
    """Multi-host indexing (KubeRay's RayMultiHostIndexing gate, on by default).

    Every worker gets its replica's index; multi-host replicas also their replica name and host
    index. With the gate off the caller passes none of them, and the Pod carries none of these labels.
    """
    if replica_index is not None:
        labels[C.RAY_WORKER_REPLICA_INDEX_LABEL_KEY] = str(replica_index)
    if replica_name is not None:
        labels[C.RAY_WORKER_REPLICA_NAME_LABEL_KEY] = replica_name
        labels[C.RAY_HOST_INDEX_LABEL_KEY] = str(host_index or 0)


class WorkerPods:
    """One worker group's Pod built once per reconcile pass; the Pods of a pass differ only in labels.

    Building a worker Pod (template copy, ray start command, env, probes) cost as much operator
    CPU as sending it; a pass creating N workers of a group now builds one. Each :meth:`body` is
    what :func:`build_worker_pod` returns for the same index arguments (the index labels win over
    ``--config`` default labels in both, as defaults only fill absent keys), with its own
    ``metadata``, labels, annotations and top-level ``spec`` dict, so a batch scheduler stamping
    one body (labels, ``schedulerName``, ``schedulingGroup``) leaves the others alone; deeper
    parts (containers) are shared and must not be modified.
    """

    def __init__(self, cluster: dict[str, Any], group: dict[str, Any], opts: RayClusterOptions) -> None:
        self._template = build_worker_pod(cluster, group, opts)

    def body(
        self,
        *,
        replica_name: str | None = None,
        replica_index: int | None = None,
        host_index: int | None = None,
    ) -> dict[str, Any]:
        template = self._template
        metadata = dict(template["metadata"])
        metadata["labels"] = labels = dict(metadata["labels"])
        if "annotations" in metadata:
            metadata["annotations"] = dict(metadata["annotations"])
        _set_index_labels(labels, replica_name, replica_index, host_index)
        return {**template, "metadata": metadata, "spec": dict(template["spec"])}


def build_worker_pod(
    cluster: dict[str, Any],
    group: dict[str, Any],
    opts: RayClusterOptions,
    *,
    replica_name: str | None = None,
    replica_index: int | None = None,
    host_index: int | None = None,
) -> dict[str, Any]:
    name = cluster["metadata"]["name"]
    group_name = str(group.get("groupName", ""))
    pod = _base_pod(
        cluster,
        group,
        C.NODE_TYPE_WORKER,
        group_name,
        common.pod_generate_name(f"{name}-{group_name}", C.NODE_TYPE_WORKER),
    )
    _set_index_labels(pod["metadata"]["labels"], replica_name, replica_index, host_index)
    spec = pod["spec"]
    containers = spec.get("containers") or []
    if opts.enable_init_container_injection and containers:
        spec.setdefault("initContainers", []).append(
            _wait_gcs_ready_container(
                containers[C.RAY_CONTAINER_INDEX],
                common.fqdn_ray_ip(cluster, opts.cluster_domain),
                common.head_port(cluster),
                login_shell=opts.enable_login_shell,
            )
        )
    if common.is_autoscaler_v2(cluster):
        spec["restartPolicy"] = "Never"
    apply_template_defaults(pod, C.NODE_TYPE_WORKER, opts.pod_defaults)  # --config's sidecars, labels...
    return _finish_pod(pod, cluster, group, C.NODE_TYPE_WORKER, opts)
