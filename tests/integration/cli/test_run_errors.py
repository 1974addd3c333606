"""``kuberay-operator run`` before it can work: clear one-line errors, clean stops, no tracebacks."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.integration.cli.procs import LOOPBACK, Proc, run_to_exit


def test_sigterm_while_waiting_for_a_kubeconfig_exits_0(tmp_path: Path) -> None:
    missing = tmp_path / "not-yet-mounted"
    op = Proc("run", "--kubeconfig", str(missing), *LOOPBACK)
    try:
        logged = op.json_log("client_config_invalid", timeout=60)
        assert str(missing) in logged["error"]
        op.signal(signal.SIGTERM)
        assert op.wait(30) == 0, str(op)
    finally:
        op.kill()
    op.json_log("operator.stopped_before_start", timeout=5, signal="SIGTERM")
    assert not [line for line in op.stderr if "Traceback" in line], str(op)


def test_leader_election_out_of_cluster_needs_a_namespace(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "current-context: x\n"
    )
    assert "POD_NAMESPACE" not in os.environ
    code, op = run_to_exit("run", "--kubeconfig", str(kubeconfig), *LOOPBACK, timeout=60)
    assert code == 2, str(op)
    assert op.stderr[-1].startswith("kuberay-operator: error: unable to find leader election namespace"), str(
        op
    )
    assert not [line for line in op.stderr if "Traceback" in line]


def test_bad_flag_value_from_the_console_script_is_one_line_and_exit_2() -> None:
    code, op = run_to_exit("run", "--qps", "fast", timeout=30)
    assert code == 2
    # Go's flag package's wording, as KubeRay's /manager prints it.
    assert op.stderr == ['kuberay-operator: error: invalid value "fast" for flag -qps: parse error']
