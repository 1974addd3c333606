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
        ["run", "--reconcile-concurrency", "0"],
        ["run", "--enable-leader-election=maybe"],
        ["run", "--metrics-addr", "localhost"],
        ["run", "--no-such-flag"],
        ["run", "--log-format", "xml"],
        ["demo", "--timeout", "-1"],
    ],
)
def test_bad_flag_is_one_line_and_exit_code_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("kuberay-operator: error: ")


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
    assert reconciler.options.resync_period == 42.0
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
    assert manager.controllers["raycluster-controller"].reconciler.options.resync_period == 7.0


def test_the_readme_documents_every_run_and_demo_flag() -> None:
    import argparse
    from pathlib import Path

    from controllers.cli.flags import build_parser

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for command in ("run", "demo"):
        for action in sub.choices[command]._actions:
            options = [o for o in action.option_strings if o not in ("-h", "--help")]
            if options:
                assert any(f"`{o}" in readme for o in options), f"README lacks {command} {options}"


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
