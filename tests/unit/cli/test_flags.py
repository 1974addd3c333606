import pytest

from controllers.cli.flags import operator_flags, parse_args
from controllers.cli.main import main


def test_run_is_the_default_subcommand_with_kuberays_defaults() -> None:
    flags = operator_flags(parse_args([]))
    assert flags.metrics_addr == ":8080"
    assert flags.health_probe_bind_address == ":8082"
    assert flags.enable_leader_election is True
    assert flags.reconcile_concurrency == 1
    assert (flags.qps, flags.burst) == (100.0, 200)
    assert flags.head_proxy_health_concurrency == 16


def test_go_style_boolean_and_list_flags() -> None:
    flags = operator_flags(
        parse_args(["--enable-leader-election=false", "--watch-namespace", "a, b,,c", "--qps", "50"])
    )
    assert flags.enable_leader_election is False
    assert flags.watch_namespace == ["a", "b", "c"]
    assert flags.qps == 50.0


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--reconcile-concurrency", "x"],
        ["run", "--enable-leader-election=maybe"],
        ["run", "--enable-leader-election=yes"],  # Go's ParseBool has no "yes"
        ["run", "--enable-leader-election", "false"],  # Go: "false" ends the flags; KubeRay drops the rest
        ["--feature-gates=RayCronJob=true,NoSuchGate=true"],
        ["--feature-gates=RayCronJob"],
        ["--feature-gates=RayCronJob=maybe"],
        ["--log-stdout-encoder=xml"],
        ["--log-file-encoder", "JSON"],  # KubeRay's newLogEncoder is case-sensitive
        ["--zap-log-level=warn"],  # controller-runtime: debug, info, error or N > 0
        ["--zap-log-level=0"],
        ["--zap-stacktrace-level=debug"],
        ["--zap-time-encoding=nano"],  # the code accepts "nanos" (its help text says "nano")
        ["--zap-encoder=text"],
        ["--qps"],
        ["--burst=-1"],
        ["--batch-scheduler=slurm"],
        ["--batch-scheduler=volcano", "--enable-batch-scheduler"],
        ["--feature-gates=KubernetesWAS=true", "--batch-scheduler=yunikorn"],
        ["---qps=1"],
        ["-=1"],
        ["run", "--metrics-addr", "localhost"],
        ["run", "--no-such-flag"],
        ["run", "--log-format", "xml"],
        ["demo", "--timeout", "-1"],
    ],
)
def test_bad_flag_is_one_line_and_exit_code_2(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import controllers.cli.run

    async def started(*_: object) -> int:
        raise AssertionError(f"the operator started with {argv}")

    monkeypatch.setattr(controllers.cli.run, "run_operator", started)
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code  # type: ignore[assignment]
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("kuberay-operator: error: ")


def test_go_flag_spellings_and_last_value_wins() -> None:
    for argv in (
        ["-qps", "50"],
        ["--qps", "50"],
        ["-qps=50"],
        ["--qps=50"],
        ["--qps=1", "--qps", "50"],
        ["run", "--qps=50"],
    ):
        assert operator_flags(parse_args(argv)).qps == 50.0, argv
    assert operator_flags(parse_args(["-enable-metrics"])).enable_metrics is True
    assert operator_flags(parse_args(["--enable-metrics=false"])).enable_metrics is False
    assert operator_flags(parse_args(["--enable-leader-election=F"])).enable_leader_election is False
    assert operator_flags(
        parse_args(["--enable-leader-election=0", "-enable-leader-election"])
    ).enable_leader_election
    # A non-bool flag takes the next argument even when it starts with "-", as Go's does.
    assert operator_flags(parse_args(["--leader-election-namespace", "-x"])).leader_election_namespace == "-x"
    # "--" ends the flags; nothing after it is read.
    assert operator_flags(parse_args(["--qps=7", "--"])).qps == 7.0
    # Go's ParseInt with base 0: hex and a leading-0 octal.
    assert operator_flags(parse_args(["--burst=0x10"])).burst == 16
    assert operator_flags(parse_args(["--burst=010"])).burst == 8


def test_kuberays_defaults_and_values_client_go_and_controller_runtime_map() -> None:
    flags = operator_flags(parse_args([]))
    assert flags.enable_metrics is False  # KubeRay's --enable-metrics defaults to false
    assert (flags.log_format, flags.log_file_encoder, flags.log_file_path) == ("json", "json", "")
    assert flags.feature_gates == {
        "RayClusterStatusConditions": True,
        "RayJobDeletionPolicy": True,
        "RayMultiHostIndexing": True,
        "RayServiceIncrementalUpgrade": True,
        "RayCronJob": False,
        "SidecarSubmitterRestart": False,
        "RayClusterNetworkPolicy": False,
        "GCSFaultToleranceEmbeddedStorage": False,
        "RayClusterMTLS": False,
        "RayClusterHistoryServer": False,
        "KubernetesWAS": False,
    }
    # client-go: a zero QPS/burst is its default 5/10; controller-runtime: concurrency <= 0 is 1.
    zeros = operator_flags(parse_args(["--qps=0", "--burst=0", "--reconcile-concurrency=-3"]))
    assert (zeros.qps, zeros.burst, zeros.reconcile_concurrency) == (5.0, 10, 1)
    # The feature-gates flag is a string in Go: the last occurrence is the whole setting.
    gates = operator_flags(
        parse_args(["--feature-gates=RayCronJob=true", "--feature-gates=RayMultiHostIndexing=false"])
    )
    assert gates.feature_gates["RayCronJob"] is False
    assert gates.feature_gates["RayMultiHostIndexing"] is False
    assert operator_flags(parse_args(["--feature-gates= RayCronJob = TRUE ,"])).feature_gates["RayCronJob"]


def test_zap_flags_map_onto_the_structlog_level() -> None:
    assert operator_flags(parse_args(["--zap-log-level=debug"])).log_level == "debug"
    assert operator_flags(parse_args(["--zap-log-level=3"])).log_level == "debug"
    assert operator_flags(parse_args(["--zap-log-level=ERROR"])).log_level == "error"
    devel = operator_flags(parse_args(["--zap-devel"]))
    assert (devel.log_level, devel.log_stacktrace_level) == ("debug", "warning")
    assert operator_flags(parse_args(["--zap-devel", "--zap-log-level=info"])).log_level == "info"
    assert operator_flags(parse_args(["--zap-stacktrace-level=panic"])).log_stacktrace_level == "critical"
    assert operator_flags(parse_args(["--log-level=warning", "--zap-log-level=error"])).log_level == "error"
    assert operator_flags(parse_args(["--zap-log-level=error", "--log-level=warning"])).log_level == "warning"
    ignored = operator_flags(parse_args(["--zap-encoder=console", "--zap-time-encoding=epoch"]))
    assert ignored.ignored_zap_flags == ["zap-encoder", "zap-time-encoding"]
    assert ignored.log_format == "json"  # as in KubeRay: --log-stdout-encoder decides


def test_help_exits_0_with_the_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(["--enable-metrics", "-h"])
    assert exc.value.code == 0
    usage = capsys.readouterr().err
    for name in ("-log-file-path value", "-enable-metrics\n", "-zap-devel\n", "-feature-gates value"):
        assert name in usage


def test_resync_period_defaults_to_kuberays_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    from controllers.cli.operator import build_manager
    from kuberay_py.client import ClientConfig

    config = ClientConfig(host="http://127.0.0.1:9")
    monkeypatch.setenv("RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV", "42")
    flags = operator_flags(
        parse_args(["--enable-leader-election=false", "--metrics-addr=0", "--health-probe-bind-address=0"])
    )
    assert flags.raycluster_resync_period is None
    manager = build_manager(config, flags)
    reconciler = manager.controllers["raycluster-controller"].reconciler
    assert reconciler.deps.options.resync_period == 42.0
    flags = operator_flags(
        parse_args(
            [
                "--enable-leader-election=false",
                "--raycluster-resync-period",
                "7",
                "--metrics-addr=0",
                "--health-probe-bind-address=0",
            ]
        )
    )
    manager = build_manager(config, flags)
    assert manager.controllers["raycluster-controller"].reconciler.deps.options.resync_period == 7.0


def test_the_readme_documents_every_run_and_demo_flag() -> None:
    import argparse
    from pathlib import Path

    from controllers.cli.flags import build_parser, build_run_flagset

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    for name in build_run_flagset({}).flags:
        assert f"`--{name}" in readme, f"README lacks run --{name}"
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for action in sub.choices["demo"]._actions:
        options = [o for o in action.option_strings if o not in ("-h", "--help")]
        if options:
            assert any(f"`{o}" in readme for o in options), f"README lacks demo {options}"


@pytest.mark.parametrize(
    ("argv", "on"), [([], False), (["--feature-gates", "RayClusterNetworkPolicy=true"], True)]
)
def test_the_network_policy_gate_starts_its_controller(argv: list[str], on: bool) -> None:
    """Off by default as in KubeRay v1.7.0; on, the NetworkPolicy controller is registered."""
    from controllers.cli.operator import build_manager
    from kuberay_py.client import ClientConfig

    flags = operator_flags(parse_args(argv))
    manager = build_manager(ClientConfig(host="http://127.0.0.1:1"), flags, leader_election=False)
    assert ("networkpolicy" in manager.controllers) is on


@pytest.mark.parametrize(
    ("argv", "conditions", "indexing"),
    [
        ([], True, True),
        (["--feature-gates=RayClusterStatusConditions=false"], False, True),
        (["--feature-gates=RayMultiHostIndexing=false"], True, False),
    ],
)
def test_the_beta_raycluster_gates_reach_the_controllers(
    argv: list[str], conditions: bool, indexing: bool
) -> None:
    """On by default as in KubeRay v1.7.0; switched off, the RayCluster reconciler and the
    RayService/RayJob controllers (which read RayCluster conditions) all see it off."""
    from controllers.cli.operator import build_manager
    from kuberay_py.client import ClientConfig

    flags = operator_flags(parse_args(argv))
    manager = build_manager(ClientConfig(host="http://127.0.0.1:1"), flags, leader_election=False)
    gates = manager.controllers["raycluster-controller"].reconciler.deps.options.gates
    assert (gates.status_conditions, gates.multi_host_indexing) == (conditions, indexing)
    for name in ("rayservice", "rayjob-controller"):
        others = manager.controllers[name].reconciler.deps.options.cluster_gates
        assert (others.status_conditions, others.multi_host_indexing) == (conditions, indexing)
