"""Custom resources: generation, status subresource, unconditional updates, schema validation."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client as k
from kubernetes_asyncio.client.rest import ApiException

from .conftest import WIDGET
from .helpers import assert_status

G, V, P = WIDGET


def widget(obj_name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{G}/{V}",
        "kind": "Widget",
        "metadata": {"name": obj_name},
        "spec": {"size": 1, **spec},
    }


async def _create(custom: k.CustomObjectsApi, ns: str, body: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = await custom.create_namespaced_custom_object(G, V, ns, P, body)
    return out


async def test_generation_tracks_spec_only(
    custom: k.CustomObjectsApi, namespace: str, widget_crd: str
) -> None:
    w = await _create(custom, namespace, widget("gen"))
    assert w["metadata"]["generation"] == 1
    w["metadata"]["labels"] = {"x": "y"}
    w = await custom.replace_namespaced_custom_object(G, V, namespace, P, "gen", w)
    assert w["metadata"]["generation"] == 1
    w["spec"]["size"] = 2
    w = await custom.replace_namespaced_custom_object(G, V, namespace, P, "gen", w)
    assert w["metadata"]["generation"] == 2


async def test_status_subresource_split(custom: k.CustomObjectsApi, namespace: str, widget_crd: str) -> None:
    body = widget("st")
    body["status"] = {"phase": "Ignored"}
    w = await _create(custom, namespace, body)
    assert "status" not in w, "status is dropped on create when it is a subresource"
    w["status"] = {"phase": "Ready"}
    w["spec"]["size"] = 5
    w = await custom.replace_namespaced_custom_object_status(G, V, namespace, P, "st", w)
    assert w["status"] == {"phase": "Ready"}
    assert w["spec"]["size"] == 1, "spec changes through /status are ignored"
    assert w["metadata"]["generation"] == 1, "status writes do not bump generation"
    w["status"] = {"phase": "Overwritten"}
    w["spec"]["size"] = 3
    w = await custom.replace_namespaced_custom_object(G, V, namespace, P, "st", w)
    assert w["status"] == {"phase": "Ready"}, "status changes through the main resource are ignored"
    assert w["spec"]["size"] == 3
    assert w["metadata"]["generation"] == 2


async def test_custom_resource_update_requires_resource_version(
    custom: k.CustomObjectsApi, namespace: str, widget_crd: str
) -> None:
    await _create(custom, namespace, widget("norv"))
    with pytest.raises(ApiException) as e:
        await custom.replace_namespaced_custom_object(G, V, namespace, P, "norv", widget("norv", size=2))
    status = assert_status(e.value, 422, "Invalid")
    assert status["details"]["causes"][0]["field"] == "metadata.resourceVersion"


async def test_defaulting_and_pruning(custom: k.CustomObjectsApi, namespace: str, widget_crd: str) -> None:
    body = widget("dp", unknownField=1, free={"anything": {"goes": True}})
    body["topLevelJunk"] = "x"
    w = await _create(custom, namespace, body)
    assert w["spec"]["color"] == "red"
    assert "unknownField" not in w["spec"]
    assert "topLevelJunk" not in w
    assert w["spec"]["free"] == {"anything": {"goes": True}}


@pytest.mark.parametrize(
    ("spec", "field", "reason", "fragment"),
    [
        ({"size": "big"}, "spec.size", "FieldValueTypeInvalid", "must be of type integer"),
        ({"size": 0}, "spec.size", "FieldValueInvalid", "should be greater than or equal to 1"),
        ({"size": 11}, "spec.size", "FieldValueInvalid", "should be less than or equal to 10"),
        ({"color": "green"}, "spec.color", "FieldValueNotSupported", 'supported values: "red", "blue"'),
        ({"name": "abc1"}, "spec.name", "FieldValueInvalid", "should match '^[a-z]+$'"),
        ({"name": "abcdefghij"}, "spec.name", "FieldValueTooLong", "Too long"),
        ({"port": 1.5}, "spec.port", None, ""),  # kube's wording for int-or-string varies by version
        ({"tags": ["a", 1]}, "spec.tags[1]", "FieldValueTypeInvalid", "must be of type string"),
        ({"labels": {"a": 1}}, "spec.labels.a", "FieldValueTypeInvalid", "must be of type string"),
    ],
)
async def test_schema_violations_are_422_with_field_paths(
    custom: k.CustomObjectsApi,
    namespace: str,
    widget_crd: str,
    spec: dict[str, Any],
    field: str,
    reason: str | None,
    fragment: str,
) -> None:
    with pytest.raises(ApiException) as e:
        await _create(custom, namespace, widget("bad", **spec))
    status = assert_status(e.value, 422, "Invalid")
    causes = status["details"]["causes"]
    assert any(
        c["field"] == field and reason in (None, c["reason"]) and fragment in c["message"] for c in causes
    ), causes
    assert status["message"].startswith('Widget.conformance.kuberay.io "bad" is invalid: ')
    assert field in status["message"]


async def test_required_field(custom: k.CustomObjectsApi, namespace: str, widget_crd: str) -> None:
    body = widget("req")
    del body["spec"]["size"]
    with pytest.raises(ApiException) as e:
        await _create(custom, namespace, body)
    status = assert_status(e.value, 422, "Invalid")
    assert {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.size"} in status[
        "details"
    ]["causes"]


async def test_int_or_string_accepts_both(
    custom: k.CustomObjectsApi, namespace: str, widget_crd: str
) -> None:
    a = await _create(custom, namespace, widget("ios-a", port=8080))
    b = await _create(custom, namespace, widget("ios-b", port="http"))
    assert a["spec"]["port"] == 8080 and b["spec"]["port"] == "http"


async def test_list_kind_and_items(custom: k.CustomObjectsApi, namespace: str, widget_crd: str) -> None:
    await _create(custom, namespace, widget("l1"))
    lst = await custom.list_namespaced_custom_object(G, V, namespace, P)
    assert lst["kind"] == "WidgetList"
    assert lst["apiVersion"] == f"{G}/{V}"
    assert int(lst["metadata"]["resourceVersion"]) > 0
    assert [i["metadata"]["name"] for i in lst["items"]] == ["l1"]
