"""``ENABLE_WEBHOOKS`` as KubeRay reads it, and what the operator wires when it is on."""

from __future__ import annotations

import pytest

from controllers.cli.flags import OperatorFlags
from controllers.cli.operator import build_manager, webhooks_enabled
from kuberay_py.client import ClientConfig


@pytest.mark.parametrize(("value", "enabled"), [("true", True), ("True", False), ("1", False), ("", False)])
def test_only_the_exact_string_true_enables_them(
    monkeypatch: pytest.MonkeyPatch, value: str, enabled: bool
) -> None:
    monkeypatch.setenv("ENABLE_WEBHOOKS", value)
    assert webhooks_enabled(OperatorFlags()) is enabled


def test_unset_is_off_and_the_flag_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENABLE_WEBHOOKS", raising=False)
    assert webhooks_enabled(OperatorFlags()) is False
    assert webhooks_enabled(OperatorFlags(enable_webhooks=True)) is True


@pytest.mark.parametrize("enabled", [True, False])
def test_the_manager_gets_the_webhook_readiness_check_only_when_on(enabled: bool) -> None:
    flags = OperatorFlags(metrics_addr="0", health_probe_bind_address="0", enable_webhooks=enabled)
    manager = build_manager(ClientConfig(host="http://127.0.0.1:1"), flags, leader_election=False)
    assert ("webhook" in manager.readyz.names()) is enabled
