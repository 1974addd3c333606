"""What a KubeRay command line asks for that kuberay-py lacks: one start-up line each, no exit."""

from __future__ import annotations

from controllers.cli.compat import config_error, startup_notes
from controllers.cli.flags import operator_flags, parse_args


def _events(argv: list[str]) -> dict[str, list[dict[str, object]]]:
    found: dict[str, list[dict[str, object]]] = {}
    for level, event, fields in startup_notes(operator_flags(parse_args(argv))):
        found.setdefault(event, []).append({"level": level, **fields})
    return found


def test_defaults_only_log_the_gates() -> None:
    events = _events([])
    assert list(events) == ["operator.feature_gates"]
    assert (
        events["operator.feature_gates"][0]["feature_gates"] == operator_flags(parse_args([])).feature_gates
    )


def test_the_helm_charts_default_args_need_no_warning() -> None:
    helm = (
        "--log-stdout-encoder json --log-file-encoder json --enable-leader-election=true "
        "--enable-metrics=true --reconcile-concurrency=1 --qps=100 --burst=200 "
        "--feature-gates=RayClusterStatusConditions=true,"
        "RayJobDeletionPolicy=true,RayMultiHostIndexing=true,RayServiceIncrementalUpgrade=true,RayCronJob=false,"
        "RayClusterMTLS=false,RayClusterNetworkPolicy=false,RayClusterHistoryServer=false"
    ).split()
    assert list(_events(helm)) == ["operator.feature_gates"]


def test_each_missing_feature_is_one_warning() -> None:
    events = _events(
        [
            "--feature-gates=RayClusterMTLS=true,SidecarSubmitterRestart=true,RayMultiHostIndexing=false",
            "--batch-scheduler=volcano",  # implemented (controllers.batchscheduler): no warning
            "--use-kubernetes-proxy",  # implemented (services/proxy, pods/proxy): no warning
            "--forced-cluster-upgrade",
            "--zap-encoder=console",
        ]
    )
    # RayClusterMTLS, SidecarSubmitterRestart and RayMultiHostIndexing are implemented: no warning.
    assert "operator.feature_not_implemented" not in events
    # The beta gates are honoured both ways (controllers.api.gates): switching one off warns no more.
    assert "operator.feature_gate_ignored" not in events
    assert "operator.batch_scheduler_not_implemented" not in events
    assert "operator.kubernetes_proxy_not_implemented" not in events
    assert events["operator.deprecated_flag"][0]["flag"] == "forced-cluster-upgrade"
    assert events["operator.flag_without_effect"][0]["flag"] == "zap-encoder"


def test_kuberays_batch_scheduler_rules() -> None:
    def error(argv: list[str]) -> str | None:
        return config_error(operator_flags(parse_args(argv)))

    for ok in (
        [],
        ["--batch-scheduler=yunikorn"],
        ["--enable-batch-scheduler"],
        ["--feature-gates=KubernetesWAS=true"],
    ):
        assert error(ok) is None, ok
    assert "not supported, name=slurm" in str(error(["--batch-scheduler=slurm"]))
    assert "both" in str(error(["--enable-batch-scheduler", "--batch-scheduler=volcano"]))
    assert "KubernetesWAS" in str(error(["--feature-gates=KubernetesWAS=true", "--enable-batch-scheduler"]))
