"""The audit log reader of real mode (``kuberay_py.envtest.audit``) on audit lines written by
hand in kube-apiserver's format: one record per request, ``clear()``, rotation."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from kuberay_py.envtest.apiserver.faults import RequestRecord
from kuberay_py.envtest.audit import MARKER_PARAM, AuditRequestLog, AuditWindow, audit_record

T0 = "2026-12-07T13:31:23.000000Z"


def event(
    verb: str,
    uri: str,
    *,
    stage: str = "ResponseComplete",
    code: int = 200,
    ref: dict[str, str] | None = None,
    audit_id: str = "a",
    at: str = T0,
) -> dict[str, Any]:
    return {
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": "Metadata",
        "auditID": audit_id,
        "stage": stage,
        "requestURI": uri,
        "verb": verb,
        "user": {"username": "envtest-admin", "groups": ["system:masters", "system:authenticated"]},
        "objectRef": ref,
        "responseStatus": {"metadata": {}, "code": code},
        "requestReceivedTimestamp": at,
        "stageTimestamp": at,
    }


def test_an_event_maps_onto_the_built_in_record() -> None:
    ref = {
        "resource": "rayclusters",
        "apiGroup": "ray.io",
        "subresource": "status",
        "namespace": "n",
        "name": "rc",
    }
    assert audit_record(event("update", "/apis/ray.io/v1/namespaces/n/rayclusters/rc/status", ref=ref)) == (
        RequestRecord(
            "PUT",
            "/apis/ray.io/v1/namespaces/n/rayclusters/rc/status",
            "",
            "update",
            "rayclusters.ray.io/status",
            "n",
            200,
            name="rc",
            user="envtest-admin",
        )
    )
    listed = audit_record(event("list", "/api/v1/pods?limit=500", ref={"resource": "pods"}))
    assert (listed.method, listed.path, listed.query, listed.namespace) == (
        "GET",
        "/api/v1/pods",
        "limit=500",
        None,
    )
    gone = audit_record(
        event("deletecollection", "/api/v1/namespaces/n/pods", ref={"resource": "pods"}, code=403)
    )
    assert (gone.method, gone.status) == ("DELETE", 403)
    assert audit_record(event("get", "/apis")).verb == "discovery"


def test_a_long_running_request_is_one_record_from_its_start() -> None:
    window = AuditWindow()
    ref = {"resource": "pods", "namespace": "n"}
    started = event(
        "watch", "/api/v1/namespaces/n/pods?watch=1", stage="ResponseStarted", ref=ref, audit_id="w"
    )
    assert window.feed(started) is not None
    assert window.feed({**started, "stage": "ResponseComplete"}) is None
    proxy = {"resource": "services", "subresource": "proxy", "namespace": "n", "name": "s:80"}
    first = window.feed(
        event(
            "get",
            "/api/v1/namespaces/n/services/s:80/proxy/x",
            stage="ResponseStarted",
            ref=proxy,
            code=503,
            audit_id="p",
        )
    )
    assert first is not None and (first.resource, first.status, first.method) == (
        "services/proxy",
        503,
        "GET",
    )
    assert window.feed(event("get", "/x", ref=proxy, audit_id="p")) is None


def test_a_window_ignores_requests_received_before_it() -> None:
    window = AuditWindow(since="2026-12-07T13:31:23.000010Z")
    assert window.feed(event("get", "/api/v1/namespaces/n/pods/a", ref={"resource": "pods"}, at=T0)) is None
    # a watch of an earlier user that ends now: its ResponseComplete alone is no new request
    assert (
        window.feed(event("watch", "/api/v1/pods?watch=1", ref={"resource": "pods"}, at=T0, audit_id="old"))
        is None
    )
    later = event(
        "get", "/api/v1/namespaces/n/pods/a", ref={"resource": "pods"}, at="2026-12-07T13:31:23.000011Z"
    )
    assert window.feed(later) is not None


class FakeAudit:
    """kube-apiserver's side: appends events, and a marker's event when pinged."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.clock = 0
        self.auditing = True
        self.response_delays: list[float] = []  # per ping: the marker is logged, then the answer waits
        path.write_bytes(b"")

    def now(self) -> str:
        self.clock += 1
        return f"2026-12-07T13:31:23.{self.clock:06d}Z"

    def write(self, ev: dict[str, Any]) -> None:
        with self.path.open("ab") as f:
            f.write(orjson.dumps(ev) + b"\n")

    def request(self, name: str) -> None:
        ref = {"resource": "configmaps", "namespace": "n", "name": name}
        self.write(
            event("get", f"/api/v1/namespaces/n/configmaps/{name}", ref=ref, audit_id=name, at=self.now())
        )

    async def ping(self, marker: str) -> None:
        if not self.auditing:
            return
        self.write(event("get", f"/version?{MARKER_PARAM}={marker}", audit_id=marker, at=self.now()))
        if self.response_delays:
            await asyncio.sleep(self.response_delays.pop(0))


async def test_records_clear_and_rotation(tmp_path: Path) -> None:
    fake = FakeAudit(tmp_path / "audit.log")
    fake.request("from-an-earlier-user")
    log = AuditRequestLog(str(fake.path), fake.ping)
    await log.start()
    try:
        fake.request("a")
        assert [r.name for r in await log.records()] == ["a"]  # markers are not records
        await log.clear()
        fake.request("b")
        os.rename(fake.path, tmp_path / "audit-2026-12-07T13-31-23.000.log")  # lumberjack's rotation
        fake.path.write_bytes(b"")
        fake.request("c")
        assert [r.name for r in await log.records()] == ["b", "c"]
    finally:
        log.close()


async def test_concurrent_reads_each_find_their_marker(tmp_path: Path) -> None:
    fake = FakeAudit(tmp_path / "audit.log")
    log = AuditRequestLog(str(fake.path), fake.ping)
    await log.start()
    try:
        fake.request("a")
        # The first read's marker is logged first but answered last: the second read passes over
        # it on its way to its own, and must leave it for the first.
        fake.response_delays = [0.2, 0.01]
        first, second = await asyncio.gather(log.records(), log.records())
        assert [r.name for r in first] == [r.name for r in second] == ["a"]
    finally:
        log.close()


async def test_a_read_without_its_marker_fails_within_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeAudit(tmp_path / "audit.log")
    log = AuditRequestLog(str(fake.path), fake.ping)
    await log.start()

    monkeypatch.setattr("kuberay_py.envtest.audit.SYNC_TIMEOUT", 0.1)
    fake.auditing = False  # the marker never appears
    with pytest.raises(TimeoutError, match="did not appear"):
        await log.records()
    log.close()
