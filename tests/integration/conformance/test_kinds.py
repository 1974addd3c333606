"""Every kind the issue lists can be created, read, listed, updated and deleted."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from kuberay_py.client import ApiError, Client, Invalid, Resource
from kuberay_py.client import resources as r

from .helpers import job, pod


def bodies(ns: str) -> list[tuple[Resource, dict[str, Any]]]:
    rbac = "rbac.authorization.k8s.io"
    rules = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]
    subjects = [{"kind": "ServiceAccount", "name": "default", "namespace": ns}]
    return [
        (r.PODS, pod("k-pod")),
        (
            r.SERVICES,
            {"metadata": {"name": "k-svc"}, "spec": {"ports": [{"port": 80}], "selector": {"a": "b"}}},
        ),
        (r.ENDPOINTS, {"metadata": {"name": "k-ep"}, "subsets": []}),
        (r.CONFIGMAPS, {"metadata": {"name": "k-cm"}, "data": {"a": "b"}}),
        (r.SECRETS, {"metadata": {"name": "k-secret"}, "type": "Opaque", "data": {"a": "Yg=="}}),
        (r.SERVICEACCOUNTS, {"metadata": {"name": "k-sa"}}),
        (
            r.CORE_EVENTS,
            {
                "metadata": {"name": "k-ev"},
                "involvedObject": {"kind": "Pod", "name": "x", "namespace": ns},
                "reason": "Test",
                "message": "m",
                "type": "Normal",
                "source": {"component": "conformance"},
            },
        ),
        (
            r.EVENTS,
            {
                "metadata": {"name": "k-ev2"},
                "eventTime": "2026-01-01T00:00:00.000000Z",
                "reportingController": "kuberay.io/conformance",
                "reportingInstance": "i",
                "action": "Test",
                "reason": "Test",
                "type": "Normal",
                "regarding": {"kind": "Pod", "name": "x", "namespace": ns},
                "note": "n",
            },
        ),
        (
            r.LEASES,
            {"metadata": {"name": "k-lease"}, "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}},
        ),
        (
            r.ENDPOINTSLICES,
            {"metadata": {"name": "k-slice"}, "addressType": "IPv4", "endpoints": [], "ports": []},
        ),
        (r.ROLES, {"metadata": {"name": "k-role"}, "rules": rules}),
        (
            r.ROLEBINDINGS,
            {
                "metadata": {"name": "k-rb"},
                "subjects": subjects,
                "roleRef": {"apiGroup": rbac, "kind": "Role", "name": "k-role"},
            },
        ),
        (r.CLUSTERROLES, {"metadata": {"name": f"k-cr-{ns}"}, "rules": rules}),
        (
            r.CLUSTERROLEBINDINGS,
            {
                "metadata": {"name": f"k-crb-{ns}"},
                "subjects": subjects,
                "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": f"k-cr-{ns}"},
            },
        ),
        (
            r.INGRESSES,
            {
                "metadata": {"name": "k-ing"},
                "spec": {"defaultBackend": {"service": {"name": "k-svc", "port": {"number": 80}}}},
            },
        ),
        (r.JOBS, job("k-job")),
    ]


async def test_every_listed_kind_round_trips(k8s: Client, namespace: str) -> None:
    for res, body in bodies(namespace):
        body = {"apiVersion": res.api_version, "kind": res.kind, **body}
        ns = namespace if res.namespaced else None
        name = body["metadata"]["name"]
        created = await k8s.create(res, body, ns)
        assert created["kind"] == res.kind and created["apiVersion"] == res.api_version, res
        got = await k8s.get(res, name, ns)
        assert got["metadata"]["uid"] == created["metadata"]["uid"], res
        listed = await k8s.list(res, ns, field_selector=f"metadata.name={name}")
        assert listed["kind"] == f"{res.kind}List", res
        assert [i["metadata"]["name"] for i in listed["items"]] == [name], res
        before = dict(got["metadata"].get("labels") or {})  # Jobs get controller-uid/job-name labels
        patched = await k8s.patch(res, name, {"metadata": {"labels": {"touched": "yes"}}}, ns)
        assert patched["metadata"]["labels"] == {**before, "touched": "yes"}, res
        # batch/v1 Jobs orphan by default, which needs a garbage collector to finish
        await k8s.delete(res, name, ns, grace_period_seconds=0, propagation_policy="Background")
        with pytest.raises(ApiError) as e:
            await k8s.get(res, name, ns)
        assert e.value.status == 404, res


async def test_a_job_gets_a_generated_selector_and_labels(k8s: Client, namespace: str) -> None:
    """The Job strategy: a selector on the Job's UID, labels on its template and on the Job."""
    created = await k8s.create(r.JOBS, job("labelled"), namespace)
    uid = created["metadata"]["uid"]
    expected = {
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": "labelled",
        "controller-uid": uid,
        "job-name": "labelled",
    }
    assert created["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert created["spec"]["template"]["metadata"]["labels"] == expected
    got = await k8s.get(r.JOBS, "labelled", namespace)
    assert got["metadata"]["labels"] == expected
    assert (got["spec"]["completions"], got["spec"]["parallelism"], got["spec"]["backoffLimit"]) == (1, 1, 6)
    await k8s.delete(r.JOBS, "labelled", namespace, propagation_policy="Background")


async def test_a_complete_job_status_needs_what_the_job_controller_writes(
    k8s: Client, namespace: str
) -> None:
    """Since Kubernetes 1.33 a Complete Job needs startTime, completionTime and SuccessCriteriaMet:
    a test (or a fake Job controller) writing only ``Complete=True`` is refused."""
    created = await k8s.create(r.JOBS, job("finisher"), namespace)
    bare = {**created, "status": {"conditions": [{"type": "Complete", "status": "True"}]}}
    with pytest.raises(Invalid) as caught:
        await k8s.update_status(r.JOBS, bare)
    fields = {c["field"] for c in caught.value.causes}
    assert fields == {"status.completionTime", "status.startTime", "status.conditions"}, caught.value.causes
    now = created["metadata"]["creationTimestamp"]
    done = {"status": "True", "lastTransitionTime": now, "reason": "CompletionsReached"}
    full = {
        **created,
        "status": {
            "startTime": now,
            "completionTime": now,
            "succeeded": 1,
            "conditions": [{"type": "SuccessCriteriaMet", **done}, {"type": "Complete", **done}],
        },
    }
    stored = await k8s.update_status(r.JOBS, full)
    assert [c["type"] for c in stored["status"]["conditions"]] == ["SuccessCriteriaMet", "Complete"]
    await k8s.delete(r.JOBS, "finisher", namespace, propagation_policy="Background")


async def test_jobs_orphan_dependents_by_default(k8s: Client, namespace: str) -> None:
    await k8s.create(r.JOBS, job("orphaner"), namespace)
    await k8s.delete(r.JOBS, "orphaner", namespace)
    held = await k8s.get(r.JOBS, "orphaner", namespace)
    assert "orphan" in held["metadata"]["finalizers"] and held["metadata"]["deletionTimestamp"]
    await k8s.patch(r.JOBS, "orphaner", {"metadata": {"finalizers": None}}, namespace)


async def test_pod_status_subresource(k8s: Client, namespace: str) -> None:
    created = await k8s.create(r.PODS, pod("st"), namespace)
    body = {**created, "status": {"phase": "Running", "podIP": "10.1.2.3"}}
    body["spec"] = {**created["spec"], "activeDeadlineSeconds": 5}
    out = await k8s.update_status(r.PODS, body)
    assert out["status"]["phase"] == "Running" and out["status"]["podIP"] == "10.1.2.3"
    assert "activeDeadlineSeconds" not in out["spec"], "spec changes through /status are ignored"
    running = await k8s.list(r.PODS, namespace, field_selector="status.phase=Running")
    assert [p["metadata"]["name"] for p in running["items"]] == ["st"]
    out["status"] = {"phase": "Failed"}
    again = await k8s.update(r.PODS, out)
    assert again["status"]["phase"] == "Running", "status changes through the main resource are ignored"


async def test_headless_service_without_ports(k8s: Client, namespace: str) -> None:
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "headless"},
        "spec": {"clusterIP": "None", "selector": {"a": "b"}},
    }
    created = await k8s.create(r.SERVICES, svc, namespace)
    assert created["spec"]["clusterIP"] == "None"
    with pytest.raises(ApiError) as e:
        await k8s.create(
            r.SERVICES, {**svc, "metadata": {"name": "noports"}, "spec": {"selector": {"a": "b"}}}, namespace
        )
    assert e.value.status == 422 and "spec.ports: Required value" in e.value.message


async def test_secret_string_data_is_folded_into_data(k8s: Client, namespace: str) -> None:
    created = await k8s.create(
        r.SECRETS,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "sd"},
            "stringData": {"password": "hunter2"},
        },
        namespace,
    )
    assert "stringData" not in created
    assert base64.b64decode(created["data"]["password"]) == b"hunter2"
    assert created["type"] == "Opaque"


async def test_events_k8s_io_validation(k8s: Client, namespace: str) -> None:
    good = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "ok"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "kuberay.io/conformance",
        "reportingInstance": "i-1",
        "action": "Reconcile",
        "reason": "Created",
        "type": "Normal",
        "regarding": {"kind": "Pod", "name": "x", "namespace": namespace},
        "note": "fine",
    }
    await k8s.create(r.EVENTS, good, namespace)
    bad = {**good, "metadata": {"name": "bad"}, "type": "Bogus", "deprecatedSource": {"component": "x"}}
    del bad["reportingInstance"]
    with pytest.raises(ApiError) as e:
        await k8s.create(r.EVENTS, bad, namespace)
    assert e.value.status == 422
    fields = {c["field"] for c in (e.value.body or {})["details"]["causes"]}
    assert {"reportingInstance", "type", "source"} <= fields


async def test_core_event_namespace_must_match_involved_object(k8s: Client, namespace: str) -> None:
    ev = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "mismatch"},
        "involvedObject": {"kind": "Pod", "name": "x", "namespace": "elsewhere"},
        "reason": "R",
        "message": "m",
    }
    with pytest.raises(ApiError) as e:
        await k8s.create(r.CORE_EVENTS, ev, namespace)
    assert e.value.status == 422 and "involvedObject.namespace" in e.value.message


@pytest.mark.parametrize(
    ("mutate", "field", "fragment"),
    [
        (
            lambda s: s["containers"][0]["ports"].append({"containerPort": 70000}),
            "spec.containers[0].ports[1].containerPort",
            "must be between 1 and 65535, inclusive",
        ),
        (
            lambda s: s["containers"][0]["ports"].append(
                {"containerPort": 81, "name": "a-very-long-port-name"}
            ),
            "spec.containers[0].ports[1].name",
            "must be no more than 15 characters",
        ),
        (
            lambda s: s["containers"][0]["ports"].append({"containerPort": 82, "name": "http"}),
            "spec.containers[0].ports[1].name",
            "Duplicate value",
        ),
        (
            lambda s: s["containers"].append({"name": "main", "image": "x"}),
            "spec.containers[1].name",
            "Duplicate value",
        ),
        (
            lambda s: s["containers"][0].__setitem__("volumeMounts", [{"name": "nope", "mountPath": "/x"}]),
            "spec.containers[0].volumeMounts[0].name",
            'Not found: "nope"',
        ),
        (lambda s: s.__setitem__("restartPolicy", "Sometimes"), "spec.restartPolicy", "Unsupported value"),
        (
            lambda s: s["containers"][0].__setitem__("name", "Main_Container"),
            "spec.containers[0].name",
            "RFC 1123 label",
        ),
    ],
)
async def test_pod_spec_validation(
    k8s: Client, namespace: str, mutate: Any, field: str, fragment: str
) -> None:
    body = pod("invalid")
    body["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "name": "http"}]
    mutate(body["spec"])
    with pytest.raises(ApiError) as e:
        await k8s.create(r.PODS, body, namespace)
    assert e.value.status == 422
    causes = (e.value.body or {})["details"]["causes"]
    assert any(c["field"] == field and fragment in c["message"] for c in causes), causes


async def test_service_port_validation(k8s: Client, namespace: str) -> None:
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "dup-ports"},
        "spec": {"ports": [{"name": "a", "port": 80}, {"name": "a", "port": 80}]},
    }
    with pytest.raises(ApiError) as e:
        await k8s.create(r.SERVICES, svc, namespace)
    assert e.value.status == 422
    causes = (e.value.body or {})["details"]["causes"]
    assert {"spec.ports[1].name", "spec.ports[1]"} <= {c["field"] for c in causes}
    assert all(c["reason"] == "FieldValueDuplicate" for c in causes), causes
