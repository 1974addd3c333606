"""CustomResourceDefinition bodies for tests that install CRDs of their own (the API server's
CRD lifecycle, served versions, schema updates), so each states only what it is about: group,
names, scope and versions."""

from __future__ import annotations

from typing import Any

__all__ = ["crd_doc"]


def crd_doc(
    group: str,
    plural: str,
    kind: str,
    versions: list[dict[str, Any]],
    *,
    scope: str = "Namespaced",
    singular: str | None = None,
) -> dict[str, Any]:
    """An apiextensions.k8s.io/v1 CRD named ``<plural>.<group>``; ``singular`` also sets the
    list kind (``<kind>List``), as most CRDs spell them out."""
    names: dict[str, str] = {"plural": plural, "kind": kind}
    if singular is not None:
        names.update(singular=singular, listKind=f"{kind}List")
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": scope, "names": names, "versions": versions},
    }
