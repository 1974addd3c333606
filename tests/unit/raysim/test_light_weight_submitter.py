"""raysim's reading of KubeRay's light-weight submitter (``/submitter`` of quay.io/kuberay/submitter):
the POST /api/jobs/ body it would send, from its pflag command line and the operator's env."""

from __future__ import annotations

from typing import Any

from controllers.raysim.submitter import is_submitter_pod, parse_submitter

ENV = [
    {"name": "PYTHONUNBUFFERED", "value": "1"},
    {"name": "RAY_DASHBOARD_ADDRESS", "value": "rj-head-svc.ns.svc.cluster.local:8265"},
    {"name": "RAY_JOB_SUBMISSION_ID", "value": "rj-abc12"},
]


def pod(command: list[str], args: list[str]) -> dict[str, Any]:
    container = {"name": "c", "image": "quay.io/kuberay/submitter:v1.5.1", "command": command, "args": args}
    return {"spec": {"containers": [container | {"env": ENV}]}}


def test_the_samples_command_line() -> None:
    runtime_env = '{"pip":["requests==2.26.0","pendulum==2.1.2"],"env_vars":{"counter_name":"test_counter"}}'
    p = pod(
        ["/submitter"],
        ["--runtime-env-json", runtime_env, "--", "python", "sample_code.py"],
    )
    assert is_submitter_pod(p)
    script = parse_submitter(p)
    assert script is not None
    assert (script.address, script.submission_id) == ("rj-head-svc.ns.svc.cluster.local:8265", "rj-abc12")
    assert script.submit and script.follow and not script.guard
    assert not script.wait_healthy and script.duplicate_ok
    assert script.body == {
        "entrypoint": "python sample_code.py",
        "submission_id": "rj-abc12",
        "runtime_env": {
            "pip": ["requests==2.26.0", "pendulum==2.1.2"],
            "env_vars": {"counter_name": "test_counter"},
        },
    }


def test_equals_form_numbers_resources_and_interspersed_words() -> None:
    p = pod(
        ["/usr/local/bin/submitter", "--entrypoint-num-cpus=2"],
        ["python", "--entrypoint-resources", '{"R1": 2}', "main.py", '--metadata-json={"a":"b"}'],
    )
    script = parse_submitter(p)
    assert script is not None
    assert script.body == {
        "entrypoint": "python main.py",
        "submission_id": "rj-abc12",
        "entrypoint_num_cpus": 2.0,
        "entrypoint_resources": {"R1": 2},
        "metadata": {"a": "b"},
    }


def test_other_binaries_are_not_the_light_weight_submitter() -> None:
    assert not is_submitter_pod(pod(["/bin/sleep"], ["100"]))
    assert parse_submitter(pod(["/bin/my-submitter-wrapper"], ["--", "echo"])) is None
