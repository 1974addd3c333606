"""The everyday loop: ``demo --no-operator`` keeps a cluster up; ``run --kubeconfig`` operators come and go.

Also the shutdown contract a Deployment relies on: on SIGTERM ``/readyz`` turns unready first,
in-flight work drains, the Lease is released, and the process exits 0 within the graceful timeout.
"""

from __future__ import annotations

import signal
from pathlib import Path

from tests.integration.cli.procs import (
    LOOPBACK,
    START_TIMEOUT,
    Proc,
    http_status,
    kube_get,
    kube_get_or_none,
    kube_patch,
)
from tests.polling import poll

GRACEFUL = 10.0


def _lease_holder(kubeconfig: Path, lease_path: str) -> str:
    """The Lease's holder, or "" while the operator has not created it yet."""
    lease = kube_get_or_none(kubeconfig, lease_path) or {}
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


def _operator(kubeconfig: Path, *extra: str) -> tuple[Proc, str]:
    op = Proc(
        "run",
        "--kubeconfig",
        str(kubeconfig),
        *LOOPBACK,
        "--graceful-shutdown-timeout",
        str(GRACEFUL),
        *extra,
    )
    health = op.json_log("serving", server="health", timeout=START_TIMEOUT)["url"]
    poll(lambda: http_status(f"{health}/readyz") == 200, timeout=START_TIMEOUT, what="/readyz 200")
    return op, health


def test_separate_operator_readies_samples_then_drains_on_sigterm(cluster: tuple[Proc, Path]) -> None:
    demo, kubeconfig = cluster
    op, health = _operator(kubeconfig, "--enable-leader-election=false")
    try:
        # The demo keeps printing progress without an operator; the separate one makes it ready.
        demo.wait_for(lambda line: line == "all objects are ready", timeout=240)
        rc = kube_get(kubeconfig, "/apis/ray.io/v1/namespaces/default/rayclusters/raycluster-kuberay")
        assert rc["status"]["state"] == "ready"
        svc = kube_get(kubeconfig, "/apis/ray.io/v1/namespaces/default/rayservices/rayservice-sample")
        ready = {c["type"]: c["status"] for c in svc["status"]["conditions"]}
        assert ready["Ready"] == "True"

        op.signal(signal.SIGTERM)
        assert op.wait(GRACEFUL + 20) == 0, str(op)
    finally:
        op.kill()
    op.json_log("manager stopped", timeout=5)
    assert http_status(f"{health}/readyz") is None  # the probe server closed last, and is gone


def test_sigterm_turns_readyz_unready_first_and_releases_the_lease(cluster: tuple[Proc, Path]) -> None:
    demo, kubeconfig = cluster
    op, health = _operator(
        kubeconfig, "--enable-leader-election=true", "--leader-election-namespace", "default"
    )
    try:
        lease_path = "/apis/coordination.k8s.io/v1/namespaces/default/leases/ray-operator-leader"
        poll(
            lambda: bool(_lease_holder(kubeconfig, lease_path)),
            timeout=60,
            what="the operator to hold the lease",
        )
        # Freeze the API server: the drain's final step (releasing the Lease) now waits on it, so
        # the process provably stays up after SIGTERM and /readyz can be observed from outside.
        demo.signal(signal.SIGSTOP)
        try:
            op.signal(signal.SIGTERM)
            poll(lambda: http_status(f"{health}/readyz") == 500, timeout=30, what="/readyz 500")
            assert http_status(f"{health}/readyz/shutdown") == 500  # unready because it is stopping
            assert http_status(f"{health}/healthz") == 200  # alive, just not ready
            assert op.popen.poll() is None
        finally:
            demo.signal(signal.SIGCONT)
        assert op.wait(GRACEFUL + 30) == 0, str(op)
    finally:
        op.kill()
    lease = kube_get(kubeconfig, lease_path)
    assert not lease["spec"].get("holderIdentity"), lease  # released, so a successor need not wait


def test_a_killed_operator_is_replaced_and_the_new_one_catches_up(cluster: tuple[Proc, Path]) -> None:
    demo, kubeconfig = cluster
    path = "/apis/ray.io/v1/namespaces/default/rayclusters/raycluster-kuberay"
    first, _ = _operator(kubeconfig, "--enable-leader-election=false")
    try:
        demo.wait_for(
            lambda line: line.startswith("  raycluster/raycluster-kuberay: state=ready"), timeout=240
        )
        first.popen.kill()  # SIGKILL: no drain, no goodbye
        first.wait(30)
    finally:
        first.kill()
    # The cluster keeps running without an operator; a change made now waits for the next one.
    kube_patch(
        kubeconfig,
        path,
        [
            {"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 2},
        ],
    )
    second, _ = _operator(kubeconfig, "--enable-leader-election=false")
    try:
        demo.wait_for(
            lambda line: line.startswith("  raycluster/raycluster-kuberay: state=ready workers=2/2"),
            timeout=240,
        )
        status = kube_get(kubeconfig, path)["status"]
        assert (status["desiredWorkerReplicas"], status["readyWorkerReplicas"]) == (2, 2)
        second.signal(signal.SIGTERM)
        assert second.wait(GRACEFUL + 20) == 0, str(second)
    finally:
        second.kill()
