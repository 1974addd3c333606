"""``kuberay-operator demo`` as a user runs it: a subprocess on a fresh embedded control plane."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path

from tests.integration.cli.procs import LOOPBACK, Proc, kube_get, run_to_exit

# Bounds so a hung process fails the test instead of the whole run; not performance assertions.
READY_TIMEOUT = 240.0


def _last_state(lines: list[str], prefix: str) -> str:
    states = [line.strip() for line in lines if line.strip().startswith(prefix)]
    assert states, f"no progress line for {prefix}"
    return states[-1]


def test_demo_until_ready_exits_0_with_every_sample_ready(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    demo = Proc(
        "demo",
        "--until-ready",
        "--timeout",
        str(READY_TIMEOUT),
        *LOOPBACK,
        "--kubeconfig-out",
        str(kubeconfig),
    )
    try:
        # While it runs, the written kubeconfig reaches the embedded API server (kubectl's view).
        demo.wait_for(lambda line: line.startswith("applied 4 object(s)"), timeout=120)
        listed = kube_get(kubeconfig, "/apis/ray.io/v1/namespaces/default/rayclusters")
        assert [item["metadata"]["name"] for item in listed["items"]] == ["raycluster-kuberay"]
        rc = demo.wait(READY_TIMEOUT + 60)
    finally:
        demo.kill()
    assert rc == 0, str(demo)
    out = demo.stdout
    assert "all objects are ready" in out, str(demo)
    assert re.match(
        r"operator running; metrics: http://127\.0\.0\.1:\d+$",
        next(line for line in out if line.startswith("operator running")),
    ), str(demo)
    assert _last_state(out, "raycluster/raycluster-kuberay:").startswith(
        "raycluster/raycluster-kuberay: state=ready workers=1/1"
    ), str(demo)
    assert _last_state(out, "rayservice/rayservice-sample:").startswith(
        "rayservice/rayservice-sample: ready=True"
    ), str(demo)
    assert _last_state(out, "rayjob/rayjob-sample:").startswith(
        "rayjob/rayjob-sample: deployment=Complete job=SUCCEEDED"
    ), str(demo)
    endpoint = next(line for line in out if line.startswith("serve endpoint"))
    found = re.search(r"rayservice-sample-serve-svc\): http://(\d+\.\d+\.\d+\.\d+):8000/$", endpoint)
    assert found, endpoint
    # A pod network address, as kube-apiserver requires of EndpointSlices (loopback only as the
    # fallback on a host without CAP_NET_ADMIN).
    fallback = any("no pod network" in line for line in demo.stderr)
    assert fallback or not ipaddress.ip_address(found.group(1)).is_loopback, endpoint


def test_empty_file_applies_nothing_and_is_ready_at_once(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    rc, demo = run_to_exit(
        "demo", "-f", str(empty), "--until-ready", "--timeout", "60", *LOOPBACK, timeout=120
    )
    assert rc == 0, str(demo)
    assert "applied 0 object(s)" in demo.stdout
    assert "all objects are ready" in demo.stdout
    assert not [line for line in demo.stdout if line.startswith("  raycluster/")], str(demo)


def test_until_ready_timeout_exits_nonzero_with_the_reason(tmp_path: Path) -> None:
    # A worker group asks for more replicas than its maxReplicas allows: the RayCluster is invalid
    # and can never become ready.
    manifest = tmp_path / "never-ready.yaml"
    manifest.write_text(
        """
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: never-ready
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
          - name: ray-head
            image: rayproject/ray:2.46.0
  workerGroupSpecs:
    - groupName: small
      replicas: 1
      minReplicas: 3
      maxReplicas: 2
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: ray-worker
              image: rayproject/ray:2.46.0
"""
    )
    rc, demo = run_to_exit(
        "demo", "-f", str(manifest), "--until-ready", "--timeout", "8", *LOOPBACK, timeout=120
    )
    assert rc == 1, str(demo)
    reason = [line for line in demo.stderr if line.startswith("kuberay-operator demo: not ready after 8s")]
    assert reason and "raycluster/never-ready: state=" in reason[0], str(demo)
    assert "minReplicas 3 greater than maxReplicas 2" in reason[0], reason[0]


def test_bad_manifest_is_one_clear_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n")
    rc, demo = run_to_exit("demo", "-f", str(bad), "--until-ready", *LOOPBACK, timeout=60)
    assert rc == 1
    assert demo.stderr[-1].startswith(f"kuberay-operator demo: {bad}: unsupported kind Deployment (apps/v1)")


def test_a_busy_port_is_one_clear_error_not_a_traceback() -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        rc, demo = run_to_exit(
            "demo",
            "-f",
            "/dev/null",
            "--metrics-addr",
            "127.0.0.1:0",
            "--health-probe-bind-address",
            f"127.0.0.1:{port}",
            timeout=120,
        )
    assert rc == 1, str(demo)
    assert demo.stderr[-1].startswith(
        f"kuberay-operator demo: [Errno 98] health server cannot listen on 127.0.0.1:{port}"
    )
    assert "--health-probe-bind-address 127.0.0.1:0" in demo.stderr[-1]
    assert not [line for line in demo.stderr if "Traceback" in line], str(demo)
