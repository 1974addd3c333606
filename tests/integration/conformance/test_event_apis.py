"""core/v1 and events.k8s.io/v1 Events are one resource seen through two APIs, as in kube-apiserver.

An operator that records through events.k8s.io/v1 must show up where ``kubectl describe`` looks
(core/v1 Events, field-selected by ``involvedObject``), and the reverse must hold too.
"""

from __future__ import annotations

from typing import Any

import pytest

from kuberay_py.client import Client, Invalid, NotFound
from kuberay_py.client import resources as r

NOW = "2026-01-01T00:00:00.000000Z"


def events_v1(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name},
        "eventTime": NOW,
        "series": {"count": 3, "lastObservedTime": NOW},
        "reportingController": "ray.io/kuberay-operator",
        "reportingInstance": "kuberay-operator-0",
        "action": "Create",
        "reason": "CreatedHeadPod",
        "type": "Normal",
        "note": "Created head Pod rc-head",
        "regarding": {"kind": "RayCluster", "namespace": namespace, "name": "rc", "uid": "u-1"},
    }


async def test_an_events_v1_event_is_listed_by_core_v1_with_fields_mapped(
    k8s: Client, namespace: str
) -> None:
    await k8s.create(r.EVENTS, events_v1("from-new-api", namespace), namespace)
    listed = await k8s.request(
        "GET",
        f"/api/v1/namespaces/{namespace}/events",
        query={"fieldSelector": "involvedObject.name=rc,involvedObject.kind=RayCluster"},
    )
    assert (listed["apiVersion"], listed["kind"]) == ("v1", "EventList")
    (ev,) = [e for e in listed["items"] if e["metadata"]["name"] == "from-new-api"]
    assert "apiVersion" not in ev and "kind" not in ev, "items of a built-in list are untyped"
    assert ev["involvedObject"] == {"kind": "RayCluster", "namespace": namespace, "name": "rc", "uid": "u-1"}
    assert ev["message"] == "Created head Pod rc-head"
    assert ev["reason"] == "CreatedHeadPod" and ev["type"] == "Normal" and ev["action"] == "Create"
    assert ev["reportingComponent"] == "ray.io/kuberay-operator"
    assert ev["reportingInstance"] == "kuberay-operator-0"
    assert ev["series"]["count"] == 3
    assert ev["eventTime"].startswith("2026-01-01T00:00:00")
    assert "note" not in ev and "regarding" not in ev and "reportingController" not in ev


async def test_a_core_v1_event_reads_through_events_v1(k8s: Client, namespace: str) -> None:
    await k8s.create(
        r.CORE_EVENTS,
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "from-old-api"},
            "involvedObject": {"kind": "Pod", "namespace": namespace, "name": "p"},
            "reason": "Started",
            "message": "Started container",
            "type": "Normal",
            "source": {"component": "kubelet", "host": "node-1"},
            "firstTimestamp": "2026-01-01T00:00:00Z",
            "lastTimestamp": "2026-01-01T00:00:05Z",
            "count": 2,
        },
        namespace,
    )
    ev = await k8s.get(r.EVENTS, "from-old-api", namespace)
    assert ev["apiVersion"] == "events.k8s.io/v1"
    assert ev["regarding"] == {"kind": "Pod", "namespace": namespace, "name": "p"}
    assert ev["note"] == "Started container" and ev["reason"] == "Started"
    assert ev["deprecatedSource"] == {"component": "kubelet", "host": "node-1"}
    assert ev["deprecatedCount"] == 2
    assert ev["deprecatedFirstTimestamp"] == "2026-01-01T00:00:00Z"
    selected = await k8s.list(r.EVENTS, namespace, field_selector="regarding.name=p")
    assert [e["metadata"]["name"] for e in selected["items"]] == ["from-old-api"]


async def test_writes_through_one_api_are_seen_through_the_other(k8s: Client, namespace: str) -> None:
    await k8s.create(r.EVENTS, events_v1("shared", namespace), namespace)
    # events.k8s.io/v1 (ValidateEventUpdate): the series may move on, the note may not ...
    later = "2026-01-01T00:05:00.000000Z"
    await k8s.patch(r.EVENTS, "shared", {"series": {"count": 4, "lastObservedTime": later}}, namespace)
    core = await k8s.get(r.CORE_EVENTS, "shared", namespace)
    assert core["series"]["count"] == 4
    with pytest.raises(Invalid) as caught:
        await k8s.patch(r.EVENTS, "shared", {"note": "patched through events.k8s.io"}, namespace)
    assert caught.value.causes == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "patched through events.k8s.io": field is immutable',
            "field": "message",  # the internal field's path, not "note"
        }
    ]
    # ... while core/v1 keeps the legacy rules: its message may change, and shows as the note.
    await k8s.patch(r.CORE_EVENTS, "shared", {"message": "patched through core/v1"}, namespace)
    new = await k8s.get(r.EVENTS, "shared", namespace)
    assert new["note"] == "patched through core/v1"
    core = await k8s.get(r.CORE_EVENTS, "shared", namespace)
    assert new["metadata"]["resourceVersion"] == core["metadata"]["resourceVersion"]
    await k8s.delete(r.CORE_EVENTS, "shared", namespace)
    try:
        await k8s.get(r.EVENTS, "shared", namespace)
    except NotFound:
        return
    raise AssertionError("deleted through core/v1 but still readable through events.k8s.io/v1")


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"regarding": {"kind": "RayCluster", "namespace": "elsewhere", "name": "rc"}}, "involvedObject"),
        ({"reason": "Renamed"}, "reason"),
        ({"type": "Warning"}, "type"),
        ({"action": "Delete"}, "action"),
        ({"reportingInstance": "kuberay-operator-1"}, "reportingInstance"),
    ],
)
async def test_an_events_v1_update_may_not_change_what_the_event_says(
    k8s: Client, namespace: str, patch: dict[str, Any], field: str
) -> None:
    await k8s.create(r.EVENTS, events_v1("fixed", namespace), namespace)
    with pytest.raises(Invalid) as caught:
        await k8s.patch(r.EVENTS, "fixed", patch, namespace)
    assert {c["field"] for c in caught.value.causes} == {field}
    assert all(c["message"].endswith(": field is immutable") for c in caught.value.causes)
    assert (await k8s.get(r.EVENTS, "fixed", namespace))["reason"] == "CreatedHeadPod", "nothing was written"
