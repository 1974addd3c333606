"""Whole head/worker Pod manifests against hand-written expectations (KubeRay's strings)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.pod import WorkerPods, build_head_pod, build_worker_pod
from controllers.raycluster.pod_defaults import PodDefaults
from controllers.spechash import recreate_hash

OPTS = RayClusterOptions()
FQDN = "rc-head-svc.ns.svc.cluster.local"
RAYLET = "wget --tries 1 -T 2 -q -O- http://localhost:52365/api/local_raylet_healthz | grep success"
GCS = "wget --tries 1 -T 10 -q -O- http://localhost:8265/api/gcs_healthz | grep success"
OWNER = {
    "apiVersion": "ray.io/v1",
    "kind": "RayCluster",
    "name": "rc",
    "uid": "uid-1",
    "controller": True,
    "blockOwnerDeletion": True,
}


def cluster(**extra_meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "rc", "namespace": "ns", "uid": "uid-1", "generation": 1, **extra_meta},
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "ray-head",
                                "image": "rayproject/ray:2.52.0",
                                "resources": {"limits": {"cpu": "1", "memory": "2Gi"}},
                            }
                        ]
                    }
                },
            },
            "workerGroupSpecs": [
                {
                    "groupName": "small",
                    "replicas": 1,
                    "minReplicas": 0,
                    "maxReplicas": 3,
                    "rayStartParams": {},
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "ray-worker",
                                    "image": "rayproject/ray:2.52.0",
                                    "resources": {
                                        "limits": {"cpu": "1500m", "memory": "1Gi", "nvidia.com/gpu": "1"}
                                    },
                                }
                            ]
                        }
                    },
                }
            ],
        },
    }


def rayservice_cluster(**annotations: str) -> dict[str, Any]:
    c = cluster(
        labels={"ray.io/originated-from-crd": "RayService", "ray.io/originated-from-cr-name": "svc"},
        annotations=annotations,
    )
    return c


HEAD_CMD = (
    "ray start --head  --block  --dashboard-agent-listen-port=52365  --dashboard-host=0.0.0.0 "
    " --memory=2147483648  --metrics-export-port=8080  --num-cpus=1 "
)
WORKER_CMD = (
    f"ray start  --address={FQDN}:6379  --block  --dashboard-agent-listen-port=52365 "
    " --memory=1073741824  --metrics-export-port=8080  --num-cpus=2  --num-gpus=1 "
)


def field_env(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def expected_head(crd: str = "RayCluster", serve: bool = False) -> dict[str, Any]:
    env = [
        field_env("RAY_CLUSTER_NAME", "metadata.labels['ray.io/cluster']"),
        field_env("RAY_CLUSTER_NAMESPACE", "metadata.namespace"),
        field_env("RAY_CLOUD_INSTANCE_ID", "metadata.name"),
        field_env("RAY_NODE_TYPE_NAME", "metadata.labels['ray.io/group']"),
        {"name": "KUBERAY_GEN_RAY_START_CMD", "value": HEAD_CMD},
        {"name": "RAY_PORT", "value": "6379"},
    ]
    if serve:
        env += [
            {"name": "RAY_timeout_ms_task_wait_for_death_info", "value": "0"},
            {"name": "RAY_gcs_server_request_timeout_seconds", "value": "5"},
            {"name": "RAY_SERVE_KV_TIMEOUT_S", "value": "5"},
        ]
    env += [
        {"name": "RAY_ADDRESS", "value": "127.0.0.1:6379"},
        {"name": "RAY_USAGE_STATS_KUBERAY_IN_USE", "value": "1"},
        {"name": "RAY_USAGE_STATS_EXTRA_TAGS", "value": f"kuberay_version=v1.7.0;kuberay_crd={crd}"},
        {"name": "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE", "value": "1"},
    ]
    probe_cmd = {"exec": {"command": ["bash", "-c", f"{RAYLET} && {GCS}"]}}
    labels = {
        "ray.io/is-ray-node": "yes",
        "ray.io/cluster": "rc",
        "ray.io/node-type": "head",
        "ray.io/group": "headgroup",
        "ray.io/identifier": "rc-head",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    if serve:
        labels["ray.io/serve"] = "false"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": "rc-head-",
            "namespace": "ns",
            "labels": labels,
            "annotations": {
                "ray.io/ft-enabled": "false",
                "ray.io/kuberay-version": "v1.7.0",
                "ray.io/upgrade-strategy-recreate-hash": recreate_hash(cluster()["spec"]),
            },
            "ownerReferences": [OWNER],
        },
        "spec": {
            "containers": [
                {
                    "name": "ray-head",
                    "image": "rayproject/ray:2.52.0",
                    "resources": {"limits": {"cpu": "1", "memory": "2Gi"}},
                    "ports": [{"name": "metrics", "containerPort": 8080}],
                    "volumeMounts": [{"name": "shared-mem", "mountPath": "/dev/shm"}],
                    "command": ["/bin/bash", "-c", "--"],
                    "args": [f"ulimit -n ${{RAY_START_ULIMIT_OPEN_FILES:-65536}}; {HEAD_CMD}"],
                    "env": env,
                    "livenessProbe": {
                        **probe_cmd,
                        "initialDelaySeconds": 30,
                        "timeoutSeconds": 5,
                        "periodSeconds": 5,
                        "successThreshold": 1,
                        "failureThreshold": 120,
                    },
                    "readinessProbe": {
                        **probe_cmd,
                        "initialDelaySeconds": 10,
                        "timeoutSeconds": 5,
                        "periodSeconds": 5,
                        "successThreshold": 1,
                        "failureThreshold": 10,
                    },
                }
            ],
            "volumes": [{"name": "shared-mem", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}],
        },
    }


def expected_worker(
    serve: bool = False, serve_port: int = 8000, readiness_serve: bool | None = None
) -> dict[str, Any]:
    readiness_serve = serve if readiness_serve is None else readiness_serve
    ray_env_from_template: list[dict[str, Any]] = []
    env = [
        {"name": "FQ_RAY_IP", "value": FQDN},
        {"name": "RAY_IP", "value": "rc-head-svc"},
        field_env("RAY_CLUSTER_NAME", "metadata.labels['ray.io/cluster']"),
        field_env("RAY_CLUSTER_NAMESPACE", "metadata.namespace"),
        field_env("RAY_CLOUD_INSTANCE_ID", "metadata.name"),
        field_env("RAY_NODE_TYPE_NAME", "metadata.labels['ray.io/group']"),
        {"name": "KUBERAY_GEN_RAY_START_CMD", "value": WORKER_CMD},
        {"name": "RAY_PORT", "value": "6379"},
    ]
    if serve:
        env += [
            {"name": "RAY_timeout_ms_task_wait_for_death_info", "value": "0"},
            {"name": "RAY_gcs_server_request_timeout_seconds", "value": "5"},
            {"name": "RAY_SERVE_KV_TIMEOUT_S", "value": "5"},
        ]
    env += [
        {"name": "RAY_ADDRESS", "value": f"{FQDN}:6379"},
        {"name": "RAY_USAGE_STATS_KUBERAY_IN_USE", "value": "1"},
        {"name": "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE", "value": "1"},
    ]
    serve_check = f"wget --tries 1 -T 10 -q -O- http://localhost:{serve_port}/-/healthz | grep success"
    readiness: dict[str, Any] = {
        "exec": {"command": ["bash", "-c", f"{RAYLET} && {serve_check}" if readiness_serve else RAYLET]},
        "initialDelaySeconds": 10,
        "timeoutSeconds": 2,
        "periodSeconds": 5,
        "successThreshold": 1,
        "failureThreshold": 1 if readiness_serve else 10,
    }
    labels = {
        "ray.io/is-ray-node": "yes",
        "ray.io/cluster": "rc",
        "ray.io/node-type": "worker",
        "ray.io/group": "small",
        "ray.io/identifier": "rc-worker",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    if serve:
        labels["ray.io/serve"] = "true"
    ports: list[dict[str, Any]] = []
    if serve_port != 8000:
        ports.append({"name": "serve", "containerPort": serve_port})
    ports.append({"name": "metrics", "containerPort": 8080})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": "rc-small-worker-",
            "namespace": "ns",
            "labels": labels,
            "ownerReferences": [OWNER],
        },
        "spec": {
            "containers": [
                {
                    "name": "ray-worker",
                    "image": "rayproject/ray:2.52.0",
                    "resources": {"limits": {"cpu": "1500m", "memory": "1Gi", "nvidia.com/gpu": "1"}},
                    "ports": ports,
                    "volumeMounts": [{"name": "shared-mem", "mountPath": "/dev/shm"}],
                    "command": ["/bin/bash", "-c", "--"],
                    "args": [f"ulimit -n ${{RAY_START_ULIMIT_OPEN_FILES:-65536}}; {WORKER_CMD}"],
                    "env": env,
                    "livenessProbe": {
                        "exec": {"command": ["bash", "-c", RAYLET]},
                        "initialDelaySeconds": 30,
                        "timeoutSeconds": 2,
                        "periodSeconds": 5,
                        "successThreshold": 1,
                        "failureThreshold": 120,
                    },
                    "readinessProbe": readiness,
                }
            ],
            "initContainers": [
                {
                    "name": "wait-gcs-ready",
                    "image": "rayproject/ray:2.52.0",
                    "command": ["/bin/bash", "-c", "--"],
                    "args": ["<script>"],
                    "resources": {
                        "limits": {"cpu": "200m", "memory": "256Mi"},
                        "requests": {"cpu": "200m", "memory": "256Mi"},
                    },
                    "env": [
                        *ray_env_from_template,
                        {"name": "FQ_RAY_IP", "value": FQDN},
                        {"name": "RAY_IP", "value": "rc-head-svc"},
                    ],
                }
            ],
            "volumes": [{"name": "shared-mem", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}],
        },
    }


def _strip_script(pod: dict[str, Any]) -> dict[str, Any]:
    pod = copy.deepcopy(pod)
    for init in pod["spec"].get("initContainers", []):
        script = init["args"][0]
        assert f"ray health-check --address {FQDN}:6379" in script
        init["args"] = ["<script>"]
    return pod


def test_plain_head_pod_matches_kuberay() -> None:
    assert build_head_pod(cluster(), OPTS) == expected_head()


def test_plain_worker_pod_matches_kuberay() -> None:
    c = cluster()
    assert _strip_script(build_worker_pod(c, c["spec"]["workerGroupSpecs"][0], OPTS)) == expected_worker()


def test_rayservice_head_pod_has_no_serve_check_and_serve_label_false() -> None:
    assert build_head_pod(rayservice_cluster(), OPTS) == expected_head(crd="RayService", serve=True)


def test_rayservice_worker_readiness_checks_serve_with_failure_threshold_1() -> None:
    c = rayservice_cluster()
    pod = _strip_script(build_worker_pod(c, c["spec"]["workerGroupSpecs"][0], OPTS))
    assert pod == expected_worker(serve=True)


def test_rayservice_worker_custom_serve_port_from_its_own_container_port() -> None:
    c = rayservice_cluster()
    c["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "serve", "containerPort": 9000}
    ]
    pod = _strip_script(build_worker_pod(c, c["spec"]["workerGroupSpecs"][0], OPTS))
    assert pod == expected_worker(serve=True, serve_port=9000)


@pytest.mark.parametrize("location", ["HeadOnly", "Disabled"])
def test_headonly_proxy_location_leaves_serve_check_out(location: str) -> None:
    c = rayservice_cluster(**{"ray.io/serve-proxy-location": location})
    pod = _strip_script(build_worker_pod(c, c["spec"]["workerGroupSpecs"][0], OPTS))
    assert pod == expected_worker(serve=True, readiness_serve=False)


def test_everynode_proxy_location_keeps_serve_check() -> None:
    c = rayservice_cluster(**{"ray.io/serve-proxy-location": "EveryNode"})
    pod = _strip_script(build_worker_pod(c, c["spec"]["workerGroupSpecs"][0], OPTS))
    assert pod == expected_worker(serve=True)


def test_custom_probe_ports_come_from_ray_start_params() -> None:
    c = cluster()
    c["spec"]["headGroupSpec"]["rayStartParams"] = {
        "dashboard-agent-listen-port": "8365",
        "dashboard-port": "8266",
    }
    c["spec"]["workerGroupSpecs"][0]["rayStartParams"] = {"dashboard-agent-listen-port": "9000"}
    head = build_head_pod(c, OPTS)["spec"]["containers"][0]
    worker = build_worker_pod(c, c["spec"]["workerGroupSpecs"][0], OPTS)["spec"]["containers"][0]
    expected_head_cmd = (
        "wget --tries 1 -T 2 -q -O- http://localhost:8365/api/local_raylet_healthz | grep success && "
        "wget --tries 1 -T 10 -q -O- http://localhost:8266/api/gcs_healthz | grep success"
    )
    assert head["livenessProbe"]["exec"]["command"] == ["bash", "-c", expected_head_cmd]
    assert head["readinessProbe"]["exec"]["command"] == ["bash", "-c", expected_head_cmd]
    worker_cmd = "wget --tries 1 -T 2 -q -O- http://localhost:9000/api/local_raylet_healthz | grep success"
    assert worker["livenessProbe"]["exec"]["command"] == ["bash", "-c", worker_cmd]


def test_invalid_probe_port_falls_back_to_default() -> None:
    c = cluster()
    c["spec"]["workerGroupSpecs"][0]["rayStartParams"] = {"dashboard-agent-listen-port": "not-a-port"}
    worker = build_worker_pod(c, c["spec"]["workerGroupSpecs"][0], OPTS)["spec"]["containers"][0]
    assert worker["livenessProbe"]["exec"]["command"] == ["bash", "-c", RAYLET]


def test_user_probes_are_kept_byte_for_byte_and_get_no_serve_check() -> None:
    c = rayservice_cluster()
    user_liveness = {"httpGet": {"path": "/custom", "port": 1234}, "periodSeconds": 7}
    user_readiness = {"tcpSocket": {"port": 4321}}
    container = c["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
    container["livenessProbe"] = copy.deepcopy(user_liveness)
    container["readinessProbe"] = copy.deepcopy(user_readiness)
    worker = build_worker_pod(c, c["spec"]["workerGroupSpecs"][0], OPTS)["spec"]["containers"][0]
    assert worker["livenessProbe"] == user_liveness
    assert worker["readinessProbe"] == user_readiness


def test_only_the_nil_probe_is_injected() -> None:
    c = cluster()
    container = c["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    container["readinessProbe"] = {"exec": {"command": ["true"]}}
    head = build_head_pod(c, OPTS)["spec"]["containers"][0]
    assert head["readinessProbe"] == {"exec": {"command": ["true"]}}
    assert head["livenessProbe"]["failureThreshold"] == 120


def test_probe_injection_disabled() -> None:
    c = rayservice_cluster()
    opts = RayClusterOptions(enable_probes_injection=False)
    head = build_head_pod(c, opts)["spec"]["containers"][0]
    worker = build_worker_pod(c, c["spec"]["workerGroupSpecs"][0], opts)["spec"]["containers"][0]
    for container in (head, worker):
        assert "livenessProbe" not in container
        assert "readinessProbe" not in container


def test_ray_2_53_uses_http_get_except_serve_worker_readiness() -> None:
    c = rayservice_cluster()
    c["spec"]["rayVersion"] = "2.53.0"
    head = build_head_pod(c, OPTS)["spec"]["containers"][0]
    worker = build_worker_pod(c, c["spec"]["workerGroupSpecs"][0], OPTS)["spec"]["containers"][0]
    http = {"path": "/api/healthz", "port": 52365}
    assert head["livenessProbe"]["httpGet"] == http and "exec" not in head["livenessProbe"]
    assert head["readinessProbe"]["httpGet"] == http
    assert worker["livenessProbe"]["httpGet"] == http
    assert "httpGet" not in worker["readinessProbe"]
    assert worker["readinessProbe"]["exec"]["command"][2].endswith(
        "http://localhost:8000/-/healthz | grep success"
    )


def test_rayservice_head_with_custom_serve_port_never_gets_a_serve_check() -> None:
    c = rayservice_cluster()
    c["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "serve", "containerPort": 9000}
    ]
    expected = expected_head(crd="RayService", serve=True)
    expected["spec"]["containers"][0]["ports"] = [
        {"name": "serve", "containerPort": 9000},
        {"name": "metrics", "containerPort": 8080},
    ]
    expected["metadata"]["annotations"]["ray.io/upgrade-strategy-recreate-hash"] = recreate_hash(c["spec"])
    assert build_head_pod(c, OPTS) == expected


@pytest.mark.parametrize(
    "index",
    [
        {},
        {"replica_index": 3},
        {"replica_name": "small-abcde", "replica_index": 2, "host_index": 1},
    ],
)
def test_worker_pods_body_is_the_built_worker_pod(index: dict[str, Any]) -> None:
    rc = cluster()
    group = rc["spec"]["workerGroupSpecs"][0]
    # --config default labels and annotations, one of them the index label the Pod's own value beats
    defaults = PodDefaults(
        labels=(("team", "ml"), ("ray.io/worker-group-replica-index", "99")), annotations=(("a", "b"),)
    )
    opts = RayClusterOptions(pod_defaults=defaults)
    assert WorkerPods(rc, group, opts).body(**index) == build_worker_pod(rc, group, opts, **index)


def test_worker_pods_bodies_do_not_share_what_a_scheduler_stamps() -> None:
    rc = cluster()
    workers = WorkerPods(rc, rc["spec"]["workerGroupSpecs"][0], OPTS)
    first = workers.body(replica_index=0)
    first["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = "rc"
    first["metadata"].setdefault("annotations", {})["a"] = "b"
    first["spec"]["schedulerName"] = "volcano"
    second = workers.body(replica_index=1)
    assert second == build_worker_pod(rc, rc["spec"]["workerGroupSpecs"][0], OPTS, replica_index=1)
