"""API resources as hashable values, so the client, caches and controllers can key on them.

The URL layout is fixed by the API conventions (``/api/v1`` for the core group,
``/apis/<group>/<version>`` otherwise), so no discovery round trip is needed for the kinds an
operator knows at build time; a custom resource is one more :class:`Resource` literal.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CLUSTERROLEBINDINGS",
    "CLUSTERROLES",
    "CONFIGMAPS",
    "CORE_EVENTS",
    "CRDS",
    "ENDPOINTS",
    "ENDPOINTSLICES",
    "EVENTS",
    "GATEWAYCLASSES",
    "GATEWAYS",
    "HTTPROUTES",
    "INGRESSES",
    "JOBS",
    "LEASES",
    "NAMESPACES",
    "NETWORKPOLICIES",
    "NODES",
    "PERSISTENTVOLUMECLAIMS",
    "PODS",
    "ROLEBINDINGS",
    "ROLES",
    "SECRETS",
    "SERVICEACCOUNTS",
    "SERVICES",
    "Resource",
]


@dataclass(frozen=True)
class Resource:
    """One API resource (group, version, kind and its plural URL segment)."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        """``v1`` for the core group, ``<group>/<version>`` otherwise (an object's ``apiVersion``)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The URL path; ``namespace=None`` on a namespaced resource addresses all namespaces."""
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if namespace and self.namespaced:
            prefix = f"{prefix}/namespaces/{namespace}"
        parts = [prefix, self.plural]
        if name is not None:
            if not name:
                raise ValueError(f"empty name for {self.kind}")
            parts.append(name)
            if subresource:
                parts.append(subresource)
        elif subresource:
            raise ValueError(f"subresource {subresource!r} of {self.kind} needs a name")
        return "/".join(parts)

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


PODS = Resource("", "v1", "Pod", "pods")
SERVICES = Resource("", "v1", "Service", "services")
ENDPOINTS = Resource("", "v1", "Endpoints", "endpoints")
CONFIGMAPS = Resource("", "v1", "ConfigMap", "configmaps")
SECRETS = Resource("", "v1", "Secret", "secrets")
PERSISTENTVOLUMECLAIMS = Resource("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims")
SERVICEACCOUNTS = Resource("", "v1", "ServiceAccount", "serviceaccounts")
NAMESPACES = Resource("", "v1", "Namespace", "namespaces", namespaced=False)
NODES = Resource("", "v1", "Node", "nodes", namespaced=False)
CORE_EVENTS = Resource("", "v1", "Event", "events")
EVENTS = Resource("events.k8s.io", "v1", "Event", "events")
LEASES = Resource("coordination.k8s.io", "v1", "Lease", "leases")
ENDPOINTSLICES = Resource("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices")
ROLES = Resource("rbac.authorization.k8s.io", "v1", "Role", "roles")
ROLEBINDINGS = Resource("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings")
CLUSTERROLES = Resource("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", namespaced=False)
CLUSTERROLEBINDINGS = Resource(
    "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", namespaced=False
)
INGRESSES = Resource("networking.k8s.io", "v1", "Ingress", "ingresses")
NETWORKPOLICIES = Resource("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies")
JOBS = Resource("batch", "v1", "Job", "jobs")
CRDS = Resource("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False)
# Gateway API v1 (standard channel); served only where its CRDs are installed.
GATEWAYCLASSES = Resource("gateway.networking.k8s.io", "v1", "GatewayClass", "gatewayclasses", False)
GATEWAYS = Resource("gateway.networking.k8s.io", "v1", "Gateway", "gateways")
HTTPROUTES = Resource("gateway.networking.k8s.io", "v1", "HTTPRoute", "httproutes")
