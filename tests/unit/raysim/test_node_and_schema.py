import pytest

from controllers.raysim.apps import ImportFailure, default_registry
from controllers.raysim.node import node_spec_for_pod
from controllers.raysim.schema import ValidationError, validate_config


def pod(node_type: str, args: str, limits: dict[str, str] | None = None) -> dict:
    return {
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "uid": "u",
            "labels": {"ray.io/node-type": node_type, "ray.io/cluster": "rc"},
        },
        "spec": {
            "containers": [
                {
                    "name": "ray",
                    "command": ["/bin/bash", "-lc", "--"],
                    "args": [args],
                    "resources": {"limits": limits or {}},
                }
            ]
        },
    }


def test_kuberay_head_command_gives_ports_and_cpus() -> None:
    spec = node_spec_for_pod(
        pod(
            "head",
            "ulimit -n 65536; ray start --head  --block  --dashboard-agent-listen-port=52366 "
            " --dashboard-host=0.0.0.0  --dashboard-port=8266  --metrics-export-port=8080 "
            " --num-cpus=0 ",
        )
    )
    assert spec is not None and spec.is_head and spec.num_cpus == 0
    assert (spec.agent_port, spec.dashboard_port, spec.cluster) == (52366, 8266, "rc")


def test_worker_without_num_cpus_uses_the_container_cpu_limit() -> None:
    spec = node_spec_for_pod(pod("worker", "ray start --address=rc-head-svc:6379 --block", {"cpu": "2500m"}))
    assert spec is not None and not spec.is_head and spec.num_cpus == 2
    assert spec.agent_port == 52365 and spec.dashboard_port == 8265


def test_non_ray_pods_are_not_nodes() -> None:
    assert node_spec_for_pod({"metadata": {"labels": {}}, "spec": {"containers": []}}) is None
    assert node_spec_for_pod(pod("worker", "python -m http.server")) is None


@pytest.mark.parametrize(
    ("doc", "text"),
    [
        ({}, "applications\n  Field required"),
        ({"applications": {}}, "Input should be a valid list"),
        ({"applications": [{"name": "a"}]}, "import_path\n  Field required"),
        ({"applications": [{"import_path": "nocolon"}]}, 'Got invalid import path "nocolon"'),
        (
            {"applications": [{"import_path": "m:a", "deployments": [{"name": "d", "num_replicas": -1}]}]},
            "Input should be greater than 0",
        ),
        (
            {
                "applications": [
                    {"name": "a", "import_path": "m:a", "route_prefix": "/1"},
                    {"name": "a", "import_path": "m:b", "route_prefix": "/2"},
                ]
            },
            'Found multiple configs for application "a".',
        ),
        (
            {
                "applications": [
                    {"name": "a", "import_path": "m:a", "route_prefix": "/x"},
                    {"name": "b", "import_path": "m:b", "route_prefix": "/x"},
                ]
            },
            'Found duplicate applications for route prefix "/x".',
        ),
        (
            {"applications": [{"import_path": "m:a", "runtime_env": {"working_dir": "/local/path"}}]},
            "runtime_envs in the Serve config support only remote URIs",
        ),
    ],
)
def test_schema_errors_are_pydantic_text_for_serve_deploy_schema(doc: dict, text: str) -> None:
    with pytest.raises(ValidationError) as err:
        validate_config(doc)
    assert "ServeDeploySchema" in str(err.value) and text in str(err.value)


def test_unknown_fields_and_slashless_prefix_pass_validation() -> None:
    cfg = validate_config({"future_field": 1, "applications": [{"import_path": "m:a", "route_prefix": "x"}]})
    assert cfg.applications[0].route_prefix == "x"


def test_import_resolution_rule() -> None:
    reg = default_registry()
    assert not isinstance(reg.resolve("fruit.deployment_graph"), ImportFailure)
    assert reg.resolve("no_such_module:app") == ImportFailure(
        "ModuleNotFoundError: No module named 'no_such_module'"
    )
    assert reg.resolve("fruit:nope") == ImportFailure(
        "AttributeError: module 'fruit' has no attribute 'nope'"
    )
    assert reg.resolve("fruit.sub.x:app") == ImportFailure("ModuleNotFoundError: No module named 'fruit.sub'")
