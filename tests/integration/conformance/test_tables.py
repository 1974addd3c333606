"""Server-side Table output, which ``kubectl get`` prints."""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio import client as k

from .conftest import WIDGET
from .helpers import configmap

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


async def _get(api: k.ApiClient, path: str) -> dict[str, Any]:
    resp = await api.call_api(
        path, "GET", header_params={"Accept": TABLE}, auth_settings=["BearerToken"], _preload_content=False
    )
    try:
        body: dict[str, Any] = await resp.json()
    finally:
        resp.release()
    return body


async def test_configmap_table(core: k.CoreV1Api, api: k.ApiClient, namespace: str) -> None:
    await core.create_namespaced_config_map(namespace, configmap("t1", {"a": "1", "b": "2"}))
    table = await _get(api, f"/api/v1/namespaces/{namespace}/configmaps")
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert len(table["rows"]) == 1
    row = table["rows"][0]
    assert row["cells"][:2] == ["t1", 2]
    assert row["object"]["kind"] == "PartialObjectMetadata"
    assert row["object"]["metadata"]["name"] == "t1"
    single = await _get(api, f"/api/v1/namespaces/{namespace}/configmaps/t1")
    assert [r["cells"][0] for r in single["rows"]] == ["t1"]


async def test_custom_resource_table_without_printer_columns(
    custom: k.CustomObjectsApi, api: k.ApiClient, namespace: str, widget_crd: str
) -> None:
    g, v, p = WIDGET
    await custom.create_namespaced_custom_object(
        g,
        v,
        namespace,
        p,
        {"apiVersion": f"{g}/{v}", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}},
    )
    table = await _get(api, f"/apis/{g}/{v}/namespaces/{namespace}/{p}")
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Age"]
    assert table["rows"][0]["cells"][0] == "w"
