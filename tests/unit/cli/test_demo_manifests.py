from pathlib import Path

import pytest

from controllers.cli.demo import DEFAULT_SAMPLES, SAMPLES_DIR, DemoError, load_manifests


def test_the_samples_load() -> None:
    objs = load_manifests([SAMPLES_DIR / s for s in DEFAULT_SAMPLES])
    assert [o["kind"] for o in objs] == ["RayCluster", "RayService", "RayJob", "ConfigMap"]


def test_empty_files_and_documents_apply_nothing(tmp_path: Path) -> None:
    (tmp_path / "empty.yaml").write_text("")
    (tmp_path / "blank-docs.yaml").write_text("---\n---\n# only a comment\n")
    assert load_manifests([tmp_path / "empty.yaml", tmp_path / "blank-docs.yaml"]) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: [", "is not valid YAML"),
        ("- a\n- b\n", "every document needs apiVersion and kind"),
        ("apiVersion: v1\nmetadata: {name: x}\n", "every document needs apiVersion and kind"),
        ("apiVersion: apps/v1\nkind: Deployment\n", "unsupported kind Deployment (apps/v1)"),
    ],
)
def test_bad_input_is_one_clear_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(DemoError) as exc:
        load_manifests([path])
    assert str(exc.value).startswith(str(path))
    assert message in str(exc.value)


def test_a_missing_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(DemoError, match=r"cannot read .*nope\.yaml: No such file or directory"):
        load_manifests([tmp_path / "nope.yaml"])


def test_an_unwritable_kubeconfig_out_fails_before_anything_starts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from controllers.cli.main import main

    assert main(["demo", "-f", "/dev/null", "--kubeconfig-out", "/proc/no-such-dir/kubeconfig"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "kuberay-operator demo: cannot write the kubeconfig to /proc/no-such-dir/kubeconfig: "
    )
    assert err.count("\n") == 1


def test_busy_default_ports_move_to_free_ones_but_explicit_ones_stay() -> None:
    import io
    import socket

    from controllers.cli.demo import _free_default_ports
    from controllers.cli.flags import DEMO_METRICS_ADDR, OperatorFlags

    with socket.socket() as busy:
        try:
            busy.bind(("127.0.0.1", int(DEMO_METRICS_ADDR.rsplit(":", 1)[1])))
            busy.listen()
        except OSError:
            pass  # something else holds it already: the same situation
        out = io.StringIO()
        flags = _free_default_ports(
            OperatorFlags(metrics_addr=DEMO_METRICS_ADDR, health_probe_bind_address="127.0.0.1:5"), out
        )
    assert flags.metrics_addr == "127.0.0.1:0"
    assert flags.health_probe_bind_address == "127.0.0.1:5"
    assert out.getvalue() == f"{DEMO_METRICS_ADDR} is in use; metrics on a free port instead\n"


def test_without_a_checkout_the_demo_says_to_use_f(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import controllers.cli.demo as demo
    from controllers.cli.main import main

    monkeypatch.setattr(demo, "SAMPLES_DIR", tmp_path / "site-packages" / "config" / "samples")
    assert main(["demo"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("kuberay-operator demo: the samples (") and "pass -f FILE" in err
