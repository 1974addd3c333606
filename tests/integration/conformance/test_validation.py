"""Name validation (DNS-1123 / DNS-1035) and bad-input handling with kube-apiserver's codes."""

from __future__ import annotations

import pytest

from kuberay_py.client import ApiError, Client
from kuberay_py.client import resources as r

from .helpers import configmap


@pytest.mark.parametrize(
    ("kind", "name", "ok"),
    [
        ("configmaps", "a.b-c", True),
        ("configmaps", "Bad_Name", False),
        ("configmaps", "x" * 254, False),
        ("services", "1svc", True),  # Service names are RFC 1123 labels in kube-apiserver 1.36
        ("services", "Svc", False),
        ("services", "svc.dotted", False),
        ("services", "svc-1", True),
        ("configmaps", "1cm", True),
    ],
)
async def test_names(k8s: Client, namespace: str, kind: str, name: str, ok: bool) -> None:
    res = {"configmaps": r.CONFIGMAPS, "services": r.SERVICES}[kind]
    body = (
        configmap(name)
        if kind == "configmaps"
        else {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name},
            "spec": {"ports": [{"port": 80}]},
        }
    )
    if ok:
        created = await k8s.create(res, body, namespace)
        assert created["metadata"]["name"] == name
        return
    with pytest.raises(ApiError) as e:
        await k8s.create(res, body, namespace)
    assert e.value.status == 422 and e.value.reason == "Invalid"
    causes = e.value.body["details"]["causes"] if e.value.body else []
    assert causes and causes[0]["field"] == "metadata.name" and causes[0]["reason"] == "FieldValueInvalid"
    kind_name = "ConfigMap" if kind == "configmaps" else "Service"
    assert e.value.message.startswith(
        f'{kind_name} "{name}" is invalid: metadata.name: Invalid value: "{name}"'
    )


async def test_namespace_names_are_dns_labels(k8s: Client) -> None:
    for bad in ("a.b", "A_b"):
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": bad}}
        with pytest.raises(ApiError) as e:
            await k8s.create(r.NAMESPACES, body)
        assert (e.value.status, e.value.reason) == (422, "Invalid")
        assert f'metadata.name: Invalid value: "{bad}": ' in e.value.message
    # A subdomain that is not a label is wrong only by its dots; apimachinery says so
    # (older wording: the generic "RFC 1123 label" regex message).
    with pytest.raises(ApiError) as e:
        await k8s.create(r.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a.b"}})
    assert "must not contain dots" in e.value.message or "RFC 1123 label" in e.value.message


async def test_missing_name_is_required(k8s: Client, namespace: str) -> None:
    with pytest.raises(ApiError) as e:
        await k8s.create(r.CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}, namespace)
    assert e.value.status == 422
    assert "metadata.name: Required value: name or generateName is required" in e.value.message


async def _still_serving(k8s: Client, namespace: str) -> None:
    assert (await k8s.get(r.NAMESPACES, namespace))["metadata"]["name"] == namespace


async def _refused(k8s: Client, method: str, path: str, body: bytes, content_type: str) -> tuple[int, str]:
    """The status code and reason of a raw request the API server must refuse."""
    with pytest.raises(ApiError) as e:
        await k8s.request(method, path, body=body, content_type=content_type)
    return e.value.status, e.value.reason


async def test_malformed_json_is_bad_request(k8s: Client, namespace: str) -> None:
    configmaps = f"/api/v1/namespaces/{namespace}/configmaps"
    refused = await _refused(k8s, "POST", configmaps, b'{"metadata": ', "application/json")
    assert refused == (400, "BadRequest")
    await _still_serving(k8s, namespace)


async def test_wrong_content_type_is_unsupported_media_type(k8s: Client, namespace: str) -> None:
    configmaps = f"/api/v1/namespaces/{namespace}/configmaps"
    form = "application/x-www-form-urlencoded"
    assert await _refused(k8s, "POST", configmaps, b"name=x", form) == (415, "UnsupportedMediaType")
    patch = await _refused(k8s, "PATCH", f"{configmaps}/x", b"{}", "application/json")
    assert patch == (415, "UnsupportedMediaType")
    await _still_serving(k8s, namespace)


async def test_huge_body_is_request_entity_too_large(k8s: Client, namespace: str) -> None:
    big = configmap("big", {"blob": "x" * (10 * 1024 * 1024)})
    with pytest.raises(ApiError) as e:
        await k8s.create(r.CONFIGMAPS, big, namespace)
    assert (e.value.status, e.value.reason) == (413, "RequestEntityTooLarge")
    await _still_serving(k8s, namespace)


async def test_unknown_resource_is_not_found(k8s: Client, namespace: str) -> None:
    with pytest.raises(ApiError) as e:
        await k8s.request("GET", f"/api/v1/namespaces/{namespace}/doesnotexist")
    assert (e.value.status, e.value.reason) == (404, "NotFound")
    with pytest.raises(ApiError) as e:
        await k8s.request("GET", "/apis/nothing.example.com/v1/things")
    assert e.value.status == 404
    await _still_serving(k8s, namespace)


async def test_patch_that_does_not_apply(k8s: Client, namespace: str) -> None:
    await k8s.create(r.CONFIGMAPS, configmap("np", {"a": "1"}), namespace)
    # kube-apiserver applies JSON patch with evanphx/json-patch v4: an operation on an absent key or
    # path fails as 422 Invalid (patch.go: NewGenericServerResponse(422, ...))
    for ops in (
        [{"op": "remove", "path": "/data/zzz"}],
        [{"op": "replace", "path": "/nothere/zzz", "value": "1"}],
    ):
        with pytest.raises(ApiError) as e:
            await k8s.patch(r.CONFIGMAPS, "np", ops, namespace, patch_type="json")
        assert (e.value.status, e.value.reason) == (422, "Invalid"), ops
    path = f"/api/v1/namespaces/{namespace}/configmaps/np"
    refused = await _refused(k8s, "PATCH", path, b"{not json", "application/merge-patch+json")
    assert refused == (400, "BadRequest")
    assert (await k8s.get(r.CONFIGMAPS, "np", namespace))["data"] == {"a": "1"}
    # ...but v4's `replace` of an absent key in an existing object adds it (evanphx/json-patch#204)
    out = await k8s.patch(
        r.CONFIGMAPS,
        "np",
        [{"op": "replace", "path": "/data/zzz", "value": "1"}],
        namespace,
        patch_type="json",
    )
    assert out["data"] == {"a": "1", "zzz": "1"}


async def test_dry_run_does_not_persist(k8s: Client, namespace: str) -> None:
    out = await k8s.create(r.CONFIGMAPS, configmap("dry"), namespace, dry_run=True)
    assert out["metadata"]["name"] == "dry"
    with pytest.raises(ApiError) as e:
        await k8s.get(r.CONFIGMAPS, "dry", namespace)
    assert e.value.status == 404
    await k8s.create(r.CONFIGMAPS, configmap("dry2", {"a": "1"}), namespace)
    await k8s.patch(r.CONFIGMAPS, "dry2", {"data": {"a": "2"}}, namespace, dry_run=True)
    await k8s.delete(r.CONFIGMAPS, "dry2", namespace, dry_run=True)
    assert (await k8s.get(r.CONFIGMAPS, "dry2", namespace))["data"] == {"a": "1"}


@pytest.mark.parametrize(
    ("method", "suffix", "body", "ctype", "code"),
    [
        ("PUT", "/bi", b"[1, 2]", "application/json", 400),
        ("PUT", "/bi", b"{", "application/json", 400),
        ("POST", "", b'"just a string"', "application/json", 400),
        ("PATCH", "/bi", b'{"op": "add"}', "application/json-patch+json", 400),
        ("PATCH", "/bi", b'[{"op": "bogus", "path": "/x"}]', "application/json-patch+json", 422),
        ("DELETE", "/bi", b"{not json", "application/json", 400),
        ("GET", "?limit=abc", None, None, 400),
        ("GET", "?labelSelector=a%20in%20b", None, None, 400),
        ("GET", "?dryRun=Sometimes", None, None, 422),
        ("POST", "/bi", b"{}", "application/json", 405),
    ],
)
async def test_bad_requests_get_kube_status_codes(
    k8s: Client, namespace: str, method: str, suffix: str, body: bytes | None, ctype: str | None, code: int
) -> None:
    await k8s.create(r.CONFIGMAPS, configmap("bi"), namespace)
    path = f"/api/v1/namespaces/{namespace}/configmaps{suffix}"
    if method == "GET" and "dryRun" in suffix:
        method, path, body, ctype = "POST", path, b'{"metadata": {"name": "dr"}}', "application/json"
    with pytest.raises(ApiError) as e:
        await k8s.request(method, path, body=body, content_type=ctype)
    assert e.value.status == code, (e.value.status, e.value.message)
    assert (await k8s.get(r.CONFIGMAPS, "bi", namespace))["metadata"]["name"] == "bi"
