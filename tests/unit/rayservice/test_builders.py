import pytest

from controllers import constants as c
from controllers.common.names import RAND_ALPHABET, generate_name
from controllers.rayservice.cluster import build_ray_cluster, with_go_struct_values
from controllers.rayservice.hashing import spec_hash
from controllers.rayservice.services import (
    ServeServiceError,
    build_rayservice_head_service,
    build_rayservice_serve_service,
)


def test_cluster_name_is_service_plus_five_random_chars() -> None:
    names = {generate_name("svc") for _ in range(50)}
    assert len(names) > 40
    for name in names:
        prefix, suffix = name.rsplit("-", 1)
        assert prefix == "svc" and len(suffix) == 5 and set(suffix) <= set(RAND_ALPHABET)


def test_child_cluster_carries_hash_labels_and_owner(sample_service) -> None:
    sample_service["metadata"]["labels"] = {"team": "a"}
    sample_service["metadata"]["annotations"] = {"note": "x"}
    cluster = build_ray_cluster(sample_service, "rayservice-sample-abcde")
    meta = cluster["metadata"]
    assert meta["name"] == "rayservice-sample-abcde" and meta["namespace"] == "ns"
    assert meta["labels"] == {
        "team": "a",
        "ray.io/originated-from-cr-name": "rayservice-sample",
        "ray.io/originated-from-crd": "RayService",
    }
    assert meta["annotations"]["note"] == "x"
    assert meta["annotations"][c.HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE_KEY] == spec_hash(
        sample_service["spec"]["rayClusterConfig"]
    )
    assert meta["annotations"][c.NUM_WORKER_GROUPS_KEY] == "1"
    assert meta["annotations"][c.KUBERAY_VERSION_KEY] == c.KUBERAY_VERSION
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayService",
            "name": "rayservice-sample",
            "uid": "svc-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    # The empty structs KubeRay's Go client writes are added; nothing else changes.
    assert cluster["spec"] == with_go_struct_values(sample_service["spec"]["rayClusterConfig"])
    assert cluster["spec"]["headGroupSpec"]["template"]["metadata"] == {}
    assert cluster["spec"]["workerGroupSpecs"][0]["scaleStrategy"] == {}
    assert cluster["spec"] is not sample_service["spec"]["rayClusterConfig"]


def test_proxy_location_is_copied_for_the_pod_builder(sample_service) -> None:
    sample_service["spec"]["serveConfigV2"] = "proxy_location: HeadOnly\napplications: []\n"
    cluster = build_ray_cluster(sample_service, "x-abcde")
    assert cluster["metadata"]["annotations"][c.SERVE_PROXY_LOCATION_ANNOTATION_KEY] == "HeadOnly"


def test_default_serve_service(sample_service) -> None:
    cluster = build_ray_cluster(sample_service, "rayservice-sample-abcde")
    svc = build_rayservice_serve_service(sample_service, cluster)
    assert svc["metadata"]["name"] == "rayservice-sample-serve-svc"
    assert svc["spec"]["selector"] == {"ray.io/cluster": "rayservice-sample-abcde", "ray.io/serve": "true"}
    assert svc["spec"]["ports"] == [{"name": "serve", "port": 8000}]
    assert svc["metadata"]["labels"]["ray.io/serve"] == "rayservice-sample-serve"
    assert svc["metadata"]["ownerReferences"][0]["kind"] == "RayService"


def test_different_port_sample_exposes_9000(samples) -> None:
    svc_obj = samples("ray-service.different-port.yaml")
    cluster = build_ray_cluster(svc_obj, "rayservice-sample-abcde")
    svc = build_rayservice_serve_service(svc_obj, cluster)
    assert svc["spec"]["ports"] == [{"name": "serve", "port": 9000}]


def test_serve_dash_ports_are_included(sample_service) -> None:
    head = sample_service["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["ports"] = [
        {"name": "serve", "containerPort": 8000},
        {"name": "serve-grpc", "containerPort": 9000},
        {"name": "dashboard", "containerPort": 8265},
    ]
    svc = build_rayservice_serve_service(sample_service, build_ray_cluster(sample_service, "x-abcde"))
    assert svc["spec"]["ports"] == [{"name": "serve", "port": 8000}, {"name": "serve-grpc", "port": 9000}]


def test_custom_serve_service_sample(samples) -> None:
    svc_obj = samples("ray-service.custom-serve-service.yaml")
    svc = build_rayservice_serve_service(svc_obj, build_ray_cluster(svc_obj, "rayservice-sample-abcde"))
    assert svc["metadata"]["name"] == "custom-ray-serve-service-name"
    assert svc["metadata"]["namespace"] == "ns"
    assert svc["metadata"]["labels"]["custom-label"] == "custom-ray-serve-service-label"
    assert svc["metadata"]["labels"]["ray.io/originated-from-crd"] == "RayService"
    assert svc["metadata"]["annotations"] == {"custom-annotation": "custom-ray-serve-service-annotation"}
    assert svc["spec"]["type"] == "LoadBalancer"
    assert svc["spec"]["selector"] == {"ray.io/cluster": "rayservice-sample-abcde", "ray.io/serve": "true"}
    # no `serve` port on the head and none named `serve` in the template: the default serve port
    assert svc["spec"]["ports"] == [{"name": "serve", "port": 8000}]


def test_custom_serve_service_keeps_a_user_serve_port(samples) -> None:
    svc_obj = samples("ray-service.custom-serve-service.yaml")
    svc_obj["spec"]["serveService"]["spec"]["ports"] = [{"name": "serve", "port": 8000, "targetPort": 8000}]
    svc = build_rayservice_serve_service(svc_obj, build_ray_cluster(svc_obj, "x-abcde"))
    assert svc["spec"]["ports"] == [{"name": "serve", "port": 8000}]


def test_no_serve_port_is_a_clear_error(sample_service) -> None:
    head = sample_service["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["ports"] = [{"name": "dashboard", "containerPort": 8265}]
    with pytest.raises(ServeServiceError, match="port named 'serve'"):
        build_rayservice_serve_service(sample_service, build_ray_cluster(sample_service, "x-abcde"))


def test_head_service_points_at_the_cluster_head(sample_service) -> None:
    cluster = build_ray_cluster(sample_service, "rayservice-sample-abcde")
    cluster["metadata"]["uid"] = "cluster-uid"
    svc = build_rayservice_head_service(sample_service, cluster)
    assert svc["metadata"]["name"] == "rayservice-sample-head-svc"
    assert svc["spec"]["selector"] == {
        "ray.io/cluster": "rayservice-sample-abcde",
        "ray.io/node-type": "head",
        "ray.io/identifier": "rayservice-sample-abcde-head",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    assert svc["metadata"]["labels"]["ray.io/identifier"] == "rayservice-sample-head"
    assert svc["metadata"]["ownerReferences"][0]["name"] == "rayservice-sample"
    assert any(p["name"] == "dashboard" for p in svc["spec"]["ports"])
