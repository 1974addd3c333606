"""``--config``: KubeRay's ``config.ray.io/v1alpha1`` Configuration, its defaults, checks and precedence."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from controllers.cli.configuration import (
    ConfigurationError,
    apply_configuration,
    ignored_flags,
    load_configuration,
    parse_configuration,
)
from controllers.cli.flags import operator_flags, parse_args
from controllers.cli.main import main
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.pod import build_head_pod, build_worker_pod
from tests.unit.raycluster.test_pod_builder import cluster

HEAD = "apiVersion: config.ray.io/v1alpha1\nkind: Configuration\n"

# What KubeRay's chart renders into its ConfigMap with `configuration.enabled=true`, default values
# (templates/configmap.yaml), plus Pod defaults as its values.yaml examples show them.
CHART_CONFIG = HEAD + (
    "enableLeaderElection: true\n"
    "enableMetrics: true\n"
    "reconcileConcurrency: 1\n"
    "qps: 100\n"
    "burst: 200\n"
    'logStdoutEncoder: "json"\n'
    'logFileEncoder: "json"\n'
    "defaultContainerEnvs:\n"
    "- name: RAY_enable_open_telemetry\n"
    '  value: "true"\n'
    "- name: FROM_FIELD\n"
    "  valueFrom:\n"
    "    fieldRef:\n"
    "      fieldPath: metadata.name\n"
    "defaultPodAnnotations:\n"
    '  prometheus.io/scrape: "true"\n'
    "defaultPodLabels:\n"
    "  app.kubernetes.io/managed-by: kuberay\n"
    "  team: ml\n"
    "headSidecarContainers:\n"
    "- name: fluentbit\n"
    "  image: fluent/fluent-bit:1.9\n"
    "  volumeMounts:\n"
    "  - {name: ray-logs, mountPath: /tmp/ray}\n"
    "workerSidecarContainers:\n"
    "- name: worker-agent\n"
    "  image: busybox:1.36\n"
)


def test_an_empty_configuration_has_kuberays_defaults() -> None:
    flags = apply_configuration(operator_flags(parse_args([])), parse_configuration(HEAD))
    assert (flags.metrics_addr, flags.health_probe_bind_address) == (":8080", ":8082")
    assert flags.enable_leader_election is True
    assert (flags.reconcile_concurrency, flags.qps, flags.burst) == (1, 100.0, 200)
    assert flags.watch_namespace == [] and flags.log_file_path == ""
    assert flags.enable_metrics is False and flags.use_kubernetes_proxy is False
    assert flags.delete_rayjob_after_job_finishes is False
    assert not flags.pod_defaults


def test_the_file_replaces_the_flags_it_covers_and_keeps_the_others() -> None:
    argv = [
        "--metrics-addr=:9999",
        "--enable-leader-election=false",
        "--qps=7",
        "--feature-gates=RayCronJob=true",
        "--graceful-shutdown-timeout=12",
        "--config=x",
    ]
    flags = operator_flags(parse_args(argv))
    config = parse_configuration(
        HEAD + "watchNamespace: a, b\nprobeAddr: 127.0.0.1:0\nqps: 0\nburst: 0\nreconcileConcurrency: 4\n"
    )
    applied = apply_configuration(flags, config)
    assert applied.metrics_addr == ":8080"  # the file has none: its default, not the flag
    assert applied.health_probe_bind_address == "127.0.0.1:0"
    assert applied.enable_leader_election is True
    assert applied.watch_namespace == ["a", "b"]
    assert (applied.qps, applied.burst, applied.reconcile_concurrency) == (5.0, 10, 4)  # client-go's 0
    assert applied.feature_gates["RayCronJob"] is True  # gates always come from the command line
    assert applied.graceful_shutdown_timeout == 12.0
    assert ignored_flags(flags) == ["metrics-addr", "enable-leader-election", "qps"]


def test_the_chart_configuration_parses_with_its_pod_defaults() -> None:
    config = parse_configuration(CHART_CONFIG)
    flags = apply_configuration(operator_flags(parse_args([])), config)
    assert flags.enable_metrics is True
    defaults = flags.pod_defaults
    assert defaults.container_envs == (
        {"name": "RAY_enable_open_telemetry", "value": "true"},
        {"name": "FROM_FIELD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    )
    assert dict(defaults.labels) == {"app.kubernetes.io/managed-by": "kuberay", "team": "ml"}
    assert defaults.head_sidecars[0]["volumeMounts"] == [{"name": "ray-logs", "mountPath": "/tmp/ray"}]
    assert config.unknown_fields() == []
    assert parse_configuration(HEAD + "defaultPodLabel: {a: b}\n").unknown_fields() == ["defaultPodLabel"]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("kind: Configuration\n", "apiVersion config.ray.io/v1alpha1"),
        ("apiVersion: config.ray.io/v1alpha1\n", "Object 'Kind' is missing"),
        ("apiVersion: config.ray.io/v1beta1\nkind: Configuration\n", "want apiVersion"),
        ("- a\n", "expected a Configuration object"),
        (HEAD + "qps: [1\n", "not valid YAML"),
        (HEAD + "reconcileConcurrency: '2'\n", "reconcileConcurrency"),
        (HEAD + "enableMetrics: maybe\n", "enableMetrics"),
        (HEAD + "qps: fast\n", "qps"),
        (HEAD + "burst: -1\n", "burst"),
        (HEAD + "defaultPodAnnotations:\n  prometheus.io/scrape: true\n", "defaultPodAnnotations"),
        (HEAD + "defaultContainerEnvs:\n- value: x\n", "defaultContainerEnvs.0.name"),
        (HEAD + "headSidecarContainers:\n- image: busybox\n", "headSidecarContainers.0.name"),
        (HEAD + "metricsAddr: localhost\n", "metricsAddr"),
        (HEAD + "logStdoutEncoder: text\n", "logStdoutEncoder"),
    ],
)
def test_a_malformed_file_is_one_clear_error(text: str, says: str) -> None:
    with pytest.raises(ConfigurationError) as err:
        parse_configuration(text, "/etc/kuberay/config.yaml")
    message = str(err.value)
    assert "\n" not in message and says in message and message.startswith("/etc/kuberay/config.yaml: ")


def test_a_bad_or_missing_file_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import controllers.cli.run

    async def started(*_: object) -> int:
        raise AssertionError("the operator started")

    monkeypatch.setattr(controllers.cli.run, "run_operator", started)
    bad = tmp_path / "config.yaml"
    bad.write_text(HEAD + "reconcileConcurrency: many\n")
    for path in (bad, tmp_path / "missing.yaml"):
        assert main(["--config", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("kuberay-operator: error: invalid config file: ")
        assert str(path) in err
    with pytest.raises(ConfigurationError):
        load_configuration(str(tmp_path))  # a directory


def test_the_files_batch_scheduler_is_checked_as_kuberay_checks_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(HEAD + "batchScheduler: slurm\n")
    assert main(["--config", str(path)]) == 2
    assert "scheduler is not supported, name=slurm" in capsys.readouterr().err


# -- Pod defaults in the RayCluster Pod builder (KubeRay's buildHeadPod/buildWorkerPod precedence)


def _opts() -> RayClusterOptions:
    flags = apply_configuration(operator_flags(parse_args([])), parse_configuration(CHART_CONFIG))
    return RayClusterOptions(pod_defaults=flags.pod_defaults)


def _with_user_template(rc: dict[str, Any]) -> dict[str, Any]:
    rc = copy.deepcopy(rc)
    for group in (rc["spec"]["headGroupSpec"], *rc["spec"]["workerGroupSpecs"]):
        template = group["template"]
        template["metadata"] = {
            "labels": {"team": "search"},
            "annotations": {"prometheus.io/scrape": "false"},
        }
        template["spec"]["containers"][0]["env"] = [{"name": "RAY_enable_open_telemetry", "value": "false"}]
    return rc


def _env(container: dict[str, Any]) -> list[str]:
    return [e["name"] for e in container.get("env") or []]


def test_head_pod_gets_the_defaults_the_template_lacks_and_the_head_sidecar() -> None:
    rc = cluster()
    plain = build_head_pod(rc, RayClusterOptions())
    pod = build_head_pod(rc, _opts())
    assert pod["metadata"]["labels"] == {
        **plain["metadata"]["labels"],
        "app.kubernetes.io/managed-by": "kuberay",
        "team": "ml",
    }
    assert pod["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
    names = [c["name"] for c in pod["spec"]["containers"]]
    assert names == [*(c["name"] for c in plain["spec"]["containers"]), "fluentbit"]
    assert pod["spec"]["containers"][-1] == {
        "name": "fluentbit",
        "image": "fluent/fluent-bit:1.9",
        "volumeMounts": [{"name": "ray-logs", "mountPath": "/tmp/ray"}],
    }
    ray = pod["spec"]["containers"][0]
    # The defaults come before the operator's own variables, which are unchanged.
    assert _env(ray) == ["RAY_enable_open_telemetry", "FROM_FIELD", *_env(plain["spec"]["containers"][0])]
    assert "env" not in pod["spec"]["containers"][-1]  # only the Ray container gets them


def test_the_users_template_wins_over_every_default() -> None:
    pod = build_head_pod(_with_user_template(cluster()), _opts())
    assert pod["metadata"]["labels"]["team"] == "search"
    assert pod["metadata"]["annotations"]["prometheus.io/scrape"] == "false"
    ray_env = pod["spec"]["containers"][0]["env"]
    assert [e for e in ray_env if e["name"] == "RAY_enable_open_telemetry"] == [
        {"name": "RAY_enable_open_telemetry", "value": "false"}
    ]
    assert _env(pod["spec"]["containers"][0]).count("FROM_FIELD") == 1


def test_operator_labels_are_never_overridden_by_a_default() -> None:
    config = parse_configuration(
        HEAD + "defaultPodLabels:\n  ray.io/node-type: evil\n  ray.io/cluster: evil\n"
    )
    opts = RayClusterOptions(
        pod_defaults=apply_configuration(operator_flags(parse_args([])), config).pod_defaults
    )
    rc = cluster()
    head = build_head_pod(rc, opts)
    worker = build_worker_pod(rc, rc["spec"]["workerGroupSpecs"][0], opts, replica_index=0)
    for pod, node_type in ((head, "head"), (worker, "worker")):
        assert pod["metadata"]["labels"]["ray.io/node-type"] == node_type
        assert pod["metadata"]["labels"]["ray.io/cluster"] == "rc"


def test_worker_pod_gets_the_worker_sidecar_and_the_defaults() -> None:
    rc = cluster()
    group = rc["spec"]["workerGroupSpecs"][0]
    plain = build_worker_pod(rc, group, RayClusterOptions(), replica_index=0)
    pod = build_worker_pod(rc, group, _opts(), replica_index=0)
    assert [c["name"] for c in pod["spec"]["containers"]] == [
        *(c["name"] for c in plain["spec"]["containers"]),
        "worker-agent",
    ]
    assert pod["spec"]["initContainers"] == plain["spec"]["initContainers"]
    assert pod["metadata"]["labels"]["team"] == "ml"
    assert pod["metadata"]["annotations"] == {"prometheus.io/scrape": "true"}
    assert _env(pod["spec"]["containers"][0])[:2] == ["RAY_enable_open_telemetry", "FROM_FIELD"]
    assert rc == cluster()  # the builder never mutates the RayCluster
