"""What a KubeRay command line asks for that has no effect here: one start-up line each, no exit."""

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


def test_every_gate_and_scheduler_is_honoured_and_each_idle_flag_is_one_line() -> None:
    events = _events(
        [
            "--feature-gates=RayClusterMTLS=true,SidecarSubmitterRestart=true,RayMultiHostIndexing=false",
            "--batch-scheduler=volcano",
            "--use-kubernetes-proxy",
            "--forced-cluster-upgrade",
            "--zap-encoder=console",
        ]
    )
    # The gates, the scheduler and the proxy all take effect: only the two idle flags are said.
    assert list(events) == [
        "operator.feature_gates",
        "operator.deprecated_flag",
        "operator.flag_without_effect",
    ]
    gates = events["operator.feature_gates"][0]["feature_gates"]
    assert isinstance(gates, dict)
    assert gates["RayClusterMTLS"] and gates["SidecarSubmitterRestart"] and not gates["RayMultiHostIndexing"]
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
