"""ray start rendering, labels, autoscaler, GCS FT, Services, Ingress and the Redis cleanup Job."""

from __future__ import annotations

from typing import Any

from controllers.common.quantity import Format, format_quantity, parse_quantity
from controllers.raycluster.command import container_command, generate_ray_start_command, render_flags
from controllers.raycluster.ingress import build_ingress
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.pod import build_head_pod, build_worker_pod
from controllers.raycluster.redis_cleanup import build_redis_cleanup_job
from controllers.raycluster.services import (
    build_head_service,
    build_headless_worker_service,
    build_serve_service,
)
from controllers.spechash import recreate_hash
from tests.unit.raycluster.test_pod_builder import cluster

OPTS = RayClusterOptions()


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def test_flags_sorted_true_bare_false_dropped_except_special() -> None:
    flags = render_flags(
        {"num-cpus": "2", "block": "true", "disable-usage-stats": "false", "log-color": "false", "z": "TRUE"}
    )
    assert flags == " --block  --log-color=false  --num-cpus=2  --z "


def test_resource_inference_respects_explicit_params_and_rounds_cpu_up() -> None:
    resources = {"limits": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "2"}}
    assert generate_ray_start_command("worker", {}, resources) == (
        "ray start  --memory=1073741824  --num-cpus=1  --num-gpus=2 "
    )
    assert "--num-cpus=0" in generate_ray_start_command("head", {"num-cpus": "0"}, resources)
    # CPU falls back to the request; memory only comes from the limit.
    assert generate_ray_start_command("worker", {}, {"requests": {"cpu": "3", "memory": "1Gi"}}) == (
        "ray start  --num-cpus=3 "
    )


def test_tpu_becomes_custom_resource() -> None:
    cmd = generate_ray_start_command("worker", {}, {"limits": {"google.com/tpu": "4"}})
    assert cmd == "ray start  --resources='{\"TPU\":4}' "


def test_user_command_runs_before_ray_start() -> None:
    cmd, args = container_command(
        {"command": ["echo", "hi"]}, "ray start --head ", overwrite=False, login_shell=False
    )
    assert cmd == ["/bin/bash", "-c", "--"]
    assert args == [" echo  hi  && ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; ray start --head "]


def test_user_ray_start_or_overwrite_annotation_keeps_command() -> None:
    assert container_command({"args": ["ray start --head"]}, "x", overwrite=False, login_shell=False) is None
    c = cluster(annotations={"ray.io/overwrite-container-cmd": "true"})
    c["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["command"] = ["my-entry"]
    head = build_head_pod(c, OPTS)
    container = head["spec"]["containers"][0]
    assert container["command"] == ["my-entry"] and "args" not in container
    assert head["metadata"]["annotations"]["ray.io/overwrite-container-cmd"] == "true"
    assert env_of(container)["KUBERAY_GEN_RAY_START_CMD"].startswith("ray start --head ")


def test_login_shell_option() -> None:
    head = build_head_pod(cluster(), RayClusterOptions(enable_login_shell=True))
    assert head["spec"]["containers"][0]["command"] == ["/bin/bash", "-lc", "--"]


def test_template_labels_merge_but_selector_labels_are_protected() -> None:
    c = cluster()
    c["spec"]["headGroupSpec"]["template"]["metadata"] = {
        "labels": {
            "ray.io/cluster": "evil",
            "ray.io/node-type": "worker",
            "ray.io/group": "x",
            "app.kubernetes.io/name": "myapp",
            "team": "a",
        }
    }
    labels = build_head_pod(c, OPTS)["metadata"]["labels"]
    assert labels["ray.io/cluster"] == "rc"
    assert labels["ray.io/node-type"] == "head"
    assert labels["ray.io/group"] == "headgroup"
    assert labels["app.kubernetes.io/name"] == "myapp"  # KubeRay keeps this override
    assert labels["team"] == "a"


def test_template_name_and_namespace_are_replaced() -> None:
    c = cluster()
    group = c["spec"]["workerGroupSpecs"][0]
    group["template"]["metadata"] = {"name": "fixed", "namespace": "other"}
    pod = build_worker_pod(c, group, OPTS)
    assert pod["metadata"]["namespace"] == "ns"
    assert "name" not in pod["metadata"]
    assert pod["metadata"]["generateName"] == "rc-small-worker-"


def test_long_names_truncate_generate_name_prefix_to_50() -> None:
    c = cluster()
    c["metadata"]["name"] = "a" * 53
    assert build_head_pod(c, OPTS)["metadata"]["generateName"] == "a" * 50 + "-head-"


def test_autoscaler_sidecar_service_account_and_logs_volume() -> None:
    c = cluster()
    c["spec"]["enableInTreeAutoscaling"] = True
    c["spec"]["autoscalerOptions"] = {
        "resources": {"limits": {"cpu": "1"}},
        "env": [{"name": "X", "value": "1"}],
    }
    head = build_head_pod(c, OPTS)
    ray, autoscaler = head["spec"]["containers"]
    assert head["spec"]["serviceAccountName"] == "rc"
    assert autoscaler["name"] == "autoscaler"
    assert autoscaler["image"] == "rayproject/ray:2.52.0"
    assert autoscaler["resources"] == {"limits": {"cpu": "1"}}
    assert autoscaler["args"] == [
        "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME)"
        " --cluster-namespace $(RAY_CLUSTER_NAMESPACE)"
    ]
    assert env_of(autoscaler)["X"] == "1"
    assert {"name": "ray-logs", "mountPath": "/tmp/ray"} in ray["volumeMounts"]
    assert {"name": "ray-logs", "mountPath": "/tmp/ray"} in autoscaler["volumeMounts"]
    assert "--no-monitor" in env_of(ray)["KUBERAY_GEN_RAY_START_CMD"]
    assert "RAY_enable_autoscaler_v2" not in env_of(ray)  # KubeRay sets it for v2 only


def test_autoscaler_v2_sets_restart_policy_never() -> None:
    c = cluster()
    c["spec"]["enableInTreeAutoscaling"] = True
    c["spec"]["autoscalerOptions"] = {"version": "v2"}
    head = build_head_pod(c, OPTS)
    worker = build_worker_pod(c, c["spec"]["workerGroupSpecs"][0], OPTS)
    assert head["spec"]["restartPolicy"] == "Never" and worker["spec"]["restartPolicy"] == "Never"
    assert env_of(head["spec"]["containers"][0])["RAY_enable_autoscaler_v2"] == "true"


def test_gcs_ft_options_env_and_annotations() -> None:
    c = cluster()
    c["spec"]["gcsFaultToleranceOptions"] = {
        "redisAddress": "redis:6379",
        "redisPassword": {"valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
        "externalStorageNamespace": "my-ns",
    }
    head = build_head_pod(c, OPTS)
    worker = build_worker_pod(c, c["spec"]["workerGroupSpecs"][0], OPTS)
    assert head["metadata"]["annotations"] == {
        "ray.io/ft-enabled": "true",
        "ray.io/external-storage-namespace": "my-ns",
        "ray.io/kuberay-version": "v1.7.0",
        "ray.io/upgrade-strategy-recreate-hash": recreate_hash(c["spec"]),
    }
    env = env_of(head["spec"]["containers"][0])
    assert env["RAY_REDIS_ADDRESS"] == "redis:6379"
    assert env["RAY_external_storage_namespace"] == "my-ns"
    assert env["REDIS_PASSWORD"] == {"secretKeyRef": {"name": "s", "key": "k"}}
    assert "--redis-password=$REDIS_PASSWORD" in env["KUBERAY_GEN_RAY_START_CMD"]
    assert env_of(worker["spec"]["containers"][0])["RAY_gcs_rpc_server_reconnect_timeout_s"] == "600"


def test_legacy_ft_annotation_defaults_storage_namespace_to_uid() -> None:
    head = build_head_pod(cluster(annotations={"ray.io/ft-enabled": "true"}), OPTS)
    assert head["metadata"]["annotations"]["ray.io/external-storage-namespace"] == "uid-1"


def test_legacy_ft_annotation_copies_a_literal_redis_password_into_the_env() -> None:
    """KubeRay's configureRedisFT without gcsFaultToleranceOptions: REDIS_PASSWORD after
    RAY_external_storage_namespace, unless the container has one (``$REDIS_PASSWORD`` then)."""
    c = cluster(annotations={"ray.io/ft-enabled": "true"})
    ray = c["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    ray["env"] = [{"name": "RAY_REDIS_ADDRESS", "value": "redis:6379"}]
    c["spec"]["headGroupSpec"]["rayStartParams"]["redis-password"] = "5241590000000000"
    env = build_head_pod(c, OPTS)["spec"]["containers"][0]["env"]
    assert env[:4] == [
        {"name": "RAY_REDIS_ADDRESS", "value": "redis:6379"},
        {"name": "RAY_external_storage_namespace", "value": "uid-1"},
        {"name": "REDIS_PASSWORD", "value": "5241590000000000"},
        {
            "name": "RAY_CLUSTER_NAME",
            "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['ray.io/cluster']"}},
        },
    ]
    ray["env"].append({"name": "REDIS_PASSWORD", "value": "from-user"})
    c["spec"]["headGroupSpec"]["rayStartParams"]["redis-password"] = "$REDIS_PASSWORD"
    env = build_head_pod(c, OPTS)["spec"]["containers"][0]["env"]
    assert [e for e in env if e["name"] == "REDIS_PASSWORD"] == [
        {"name": "REDIS_PASSWORD", "value": "from-user"}
    ]
    # no redis-password, no REDIS_PASSWORD (KubeRay e2e GCS_FT_without_redis_password)
    del c["spec"]["headGroupSpec"]["rayStartParams"]["redis-password"]
    ray["env"].pop()
    assert "REDIS_PASSWORD" not in env_of(build_head_pod(c, OPTS)["spec"]["containers"][0])


def test_head_service_defaults_headless_sorted_ports() -> None:
    svc = build_head_service(cluster())
    assert svc["metadata"]["name"] == "rc-head-svc"
    assert svc["spec"] == {
        "selector": {
            "ray.io/cluster": "rc",
            "ray.io/node-type": "head",
            "ray.io/identifier": "rc-head",
            "app.kubernetes.io/name": "kuberay",
            "app.kubernetes.io/created-by": "kuberay-operator",
        },
        "ports": [
            {"name": "client", "port": 10001, "appProtocol": "tcp"},
            {"name": "dashboard", "port": 8265, "appProtocol": "tcp"},
            {"name": "gcs-server", "port": 6379, "appProtocol": "tcp"},
            {"name": "metrics", "port": 8080, "appProtocol": "tcp"},
            {"name": "serve", "port": 8000, "appProtocol": "tcp"},
        ],
        "type": "ClusterIP",
        "clusterIP": "None",
        "publishNotReadyAddresses": True,
    }
    assert build_head_service(cluster(), cluster_ip_service=True)["spec"].get("clusterIP") is None


def test_head_service_from_declared_ports_and_template() -> None:
    c = cluster()
    c["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "gcs", "containerPort": 6379},
        {"containerPort": 7777},
    ]
    c["spec"]["headGroupSpec"]["serviceType"] = "NodePort"
    c["spec"]["headGroupSpec"]["headService"] = {"metadata": {"name": "custom", "labels": {"a": "b"}}}
    svc = build_head_service(c)
    assert svc["metadata"]["name"] == "custom"
    assert svc["metadata"]["labels"]["a"] == "b"
    assert [p["name"] for p in svc["spec"]["ports"]] == ["7777-port", "gcs", "metrics"]
    assert svc["spec"]["type"] == "NodePort" and "clusterIP" not in svc["spec"]


def test_serve_and_headless_services() -> None:
    c = cluster(annotations={"ray.io/enable-serve-service": "true"})
    svc = build_serve_service(c)
    assert svc is not None
    assert svc["metadata"]["name"] == "rc-serve-svc"
    assert svc["spec"]["selector"] == {"ray.io/cluster": "rc"}
    assert svc["spec"]["ports"] == [{"name": "serve", "port": 8000, "appProtocol": "tcp"}]
    headless = build_headless_worker_service(c)
    assert headless["metadata"]["name"] == "rc-headless"
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["selector"] == {"ray.io/cluster": "rc", "ray.io/node-type": "worker"}
    assert headless["metadata"]["labels"] == {"ray.io/headless-worker-svc": "rc"}  # as KubeRay


def test_ingress() -> None:
    c = cluster(annotations={"kubernetes.io/ingress.class": "nginx", "x": "y"})
    ing = build_ingress(c)
    assert ing["metadata"]["name"] == "rc-head-ingress"
    assert ing["metadata"]["annotations"] == {"x": "y"}
    assert ing["spec"]["ingressClassName"] == "nginx"
    path = ing["spec"]["rules"][0]["http"]["paths"][0]
    assert path == {
        "path": "/",
        "pathType": "Prefix",
        "backend": {"service": {"name": "rc-head-svc", "port": {"number": 8265}}},
    }


def test_redis_cleanup_job() -> None:
    c = cluster(annotations={"ray.io/ft-enabled": "true"})
    c["spec"]["enableInTreeAutoscaling"] = True
    job = build_redis_cleanup_job(c, OPTS)
    assert job["metadata"]["name"] == "rc-redis-cleanup"
    assert job["spec"]["backoffLimit"] == 0 and job["spec"]["activeDeadlineSeconds"] == 300
    tpl = job["spec"]["template"]
    assert tpl["metadata"]["labels"]["ray.io/node-type"] == "redis-cleanup"
    assert tpl["spec"]["restartPolicy"] == "Never"
    (ray,) = tpl["spec"]["containers"]
    assert "livenessProbe" not in ray and "readinessProbe" not in ray
    assert "cleanup_redis_storage" in ray["args"][0]
    env = env_of(ray)
    assert env["RAY_redis_db_connect_retries"] == "120"
    assert env["RAY_redis_db_connect_wait_milliseconds"] == "500"


def test_redis_cleanup_job_metadata_is_the_head_pods_as_in_kuberay() -> None:
    """KubeRay: Job labels/annotations = the head Pod's; template metadata = the head Pod's whole
    ObjectMeta; only the wait-for-tls-ip-san init container dropped; the retry env appended."""
    c = cluster(annotations={"ray.io/ft-enabled": "true"})
    head_tpl = c["spec"]["headGroupSpec"]["template"]["spec"]
    head_tpl["initContainers"] = [
        {"name": "fetch-secrets", "image": "busybox"},
        {"name": "wait-for-tls-ip-san", "image": "busybox"},  # as the mTLS head gets it
    ]
    head_tpl["containers"][0]["env"] = [{"name": "RAY_redis_db_connect_retries", "value": "5"}]
    head = build_head_pod(c, OPTS)
    job = build_redis_cleanup_job(c, OPTS)
    cleanup_labels = {**head["metadata"]["labels"], "ray.io/node-type": "redis-cleanup"}
    assert job["metadata"]["labels"] == cleanup_labels
    assert job["metadata"]["annotations"] == head["metadata"]["annotations"]
    assert job["spec"]["template"]["metadata"] == {**head["metadata"], "labels": cleanup_labels}
    assert list(job["spec"]) == ["backoffLimit", "template", "activeDeadlineSeconds"]
    pod_spec = job["spec"]["template"]["spec"]
    assert pod_spec["initContainers"] == head["spec"]["initContainers"][:1]
    assert [c["name"] for c in pod_spec["initContainers"]] == ["fetch-secrets"]
    env = [e for e in pod_spec["containers"][0]["env"] if e["name"].startswith("RAY_redis_db")]
    assert env == [
        {"name": "RAY_redis_db_connect_retries", "value": "5"},
        {"name": "RAY_redis_db_connect_retries", "value": "120"},
        {"name": "RAY_redis_db_connect_wait_milliseconds", "value": "500"},
    ]


# KubeRay v1.7.0 buildRedisCleanupJob's args, byte for byte: users copy it to clean up by hand.
_KUBERAY_CLEANUP_ARGS = (
    'echo "To get more information about manually deleting the storage namespace in Redis and removing '
    "the RayCluster's finalizer, please check "
    'https://docs.ray.io/en/master/cluster/kubernetes/user-guides/kuberay-gcs-ft.html for more details." && '
    'python -c "from ray._private.gcs_utils import cleanup_redis_storage; from urllib.parse import urlparse; '
    "import os; import sys; redis_address = os.getenv('RAY_REDIS_ADDRESS', '').split(',')[0]; "
    "redis_address = redis_address if '://' in redis_address else 'redis://' + redis_address; "
    "parsed = urlparse(redis_address); sys.exit(1) if not cleanup_redis_storage(host=parsed.hostname, "
    "port=parsed.port, {username}password=os.getenv('REDIS_PASSWORD', parsed.password or ''), "
    "use_ssl=parsed.scheme=='rediss', storage_namespace=os.getenv('RAY_external_storage_namespace')) "
    'else None"'
)


def test_redis_cleanup_command_is_kuberays() -> None:
    c = cluster()
    c["spec"]["gcsFaultToleranceOptions"] = {"redisAddress": "redis:6379"}
    (ray,) = build_redis_cleanup_job(c, OPTS)["spec"]["template"]["spec"]["containers"]
    assert ray["command"] == ["/bin/bash", "-lc", "--"]
    assert ray["args"] == [_KUBERAY_CLEANUP_ARGS.format(username="")]
    # username= only when the head has REDIS_USERNAME
    c["spec"]["gcsFaultToleranceOptions"]["redisUsername"] = {"value": "default"}
    (ray,) = build_redis_cleanup_job(c, OPTS)["spec"]["template"]["spec"]["containers"]
    username = "username=os.getenv('REDIS_USERNAME', parsed.username), "
    assert ray["args"] == [_KUBERAY_CLEANUP_ARGS.format(username=username)]


def test_redis_cleanup_job_name_is_trimmed_as_kuberays_trim_job_name() -> None:
    """TrimJobName = CheckLabel: the last 63 characters, a leading punctuation mark made "r"."""
    c = cluster()
    c["metadata"]["name"] = "raycluster-with-a-very-long-name-exceeding-k8s-limit"  # e2e Long_RayCluster_Name
    assert build_redis_cleanup_job(c, OPTS)["metadata"]["name"] == (
        "cluster-with-a-very-long-name-exceeding-k8s-limit-redis-cleanup"
    )
    c["metadata"]["name"] = "a1" + "y" * 48  # the cut leaves "1yyy...": a digit is kept
    assert build_redis_cleanup_job(c, OPTS)["metadata"]["name"] == "1" + "y" * 48 + "-redis-cleanup"
    c["metadata"]["name"] = "a-" + "y" * 48  # the cut leaves "-yyy...": "r" replaces "-"
    assert build_redis_cleanup_job(c, OPTS)["metadata"]["name"] == "r" + "y" * 48 + "-redis-cleanup"


def test_quantities_round_trip_canonically() -> None:
    assert format_quantity(parse_quantity("500m") + parse_quantity("1")) == "1500m"
    assert format_quantity(parse_quantity("1Gi") * 5, Format.BINARY_SI) == "5Gi"
    assert format_quantity(parse_quantity("2") * 3) == "6"
    assert format_quantity(parse_quantity("1.5G")) == "1500M"
    assert format_quantity(parse_quantity(0)) == "0"
