"""The non-Pod children of a RayCluster: autoscaler RBAC, Ingress and Services (create-only).

Services are read from the (owned, watched) Service cache. ServiceAccounts, Roles, RoleBindings
and Ingresses are not worth a cluster-wide informer: the first reconcile after start-up GETs
each one once and remembers, per cluster UID, that it exists — so later no-op reconciles send
no request at all. A child deleted behind our back is recreated after an operator restart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from controllers import constants as C
from controllers.raycluster import common
from controllers.raycluster.autoscaler import (
    autoscaler_role,
    autoscaler_role_binding,
    autoscaler_service_account,
    autoscaler_service_account_name,
)
from controllers.raycluster.ingress import build_ingress
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.services import (
    build_head_service,
    build_headless_worker_service,
    build_serve_service,
)
from kuberay_py.client import AlreadyExists, ApiError, Client, NotFound, Resource
from kuberay_py.client.resources import INGRESSES, ROLEBINDINGS, ROLES, SERVICEACCOUNTS, SERVICES

__all__ = ["ChildPhase"]


class Recorder(Protocol):
    def event(self, obj: dict[str, Any], type_: Any, reason: str, message: str) -> None: ...


class ServiceReader(Protocol):
    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any] | None: ...


@dataclass
class ChildPhase:
    client: Client
    cache: ServiceReader
    recorder: Recorder
    options: RayClusterOptions
    _known: set[tuple[str, str, str]] = field(default_factory=set)  # (cluster uid, kind, name)
    # Services we created that the cache has not shown yet, as the API returned them.
    _fresh: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)

    def service(self, cluster: dict[str, Any], name: str) -> dict[str, Any] | None:
        """A Service from the cache, or the one we just created while the watch catches up."""
        cached = self.cache.get(SERVICES, name, cluster["metadata"]["namespace"])
        if cached is not None:
            return cached
        return self._fresh.get((cluster["metadata"]["uid"], "Service", name))

    _uids: dict[str, str] = field(default_factory=dict)  # "ns/name" -> uid, to forget a deleted cluster

    def forget_key(self, key: str) -> None:
        """The RayCluster ``ns/name`` is gone from the cache: drop what we remembered about it."""
        uid = self._uids.pop(key, None)
        if uid is not None:
            self.forget(uid)

    def forget(self, uid: str) -> None:
        self._known = {k for k in self._known if k[0] != uid}
        self._fresh = {k: v for k, v in self._fresh.items() if k[0] != uid}

    async def _ensure(
        self,
        cluster: dict[str, Any],
        res: Resource,
        build: Callable[[], dict[str, Any]],
        name: str,
        created: str,
        failed: str,
    ) -> None:
        uid = cluster["metadata"]["uid"]
        if (uid, res.kind, name) in self._known:
            return
        ns = cluster["metadata"]["namespace"]
        try:
            await self.client.get(res, name, ns)
        except NotFound:
            try:
                await self.client.create(res, build(), ns)
            except AlreadyExists:
                pass
            except ApiError as exc:
                self.recorder.event(
                    cluster, C.WARNING, failed, f"Failed to create {res.kind} {ns}/{name}: {exc}"
                )
                raise
            else:
                self.recorder.event(cluster, C.NORMAL, created, f"Created {res.kind} {ns}/{name}")
        self._known.add((uid, res.kind, name))

    async def reconcile(self, cluster: dict[str, Any]) -> None:
        self._uids[f"{cluster['metadata']['namespace']}/{cluster['metadata']['name']}"] = cluster["metadata"][
            "uid"
        ]
        ns = cluster["metadata"]["namespace"]
        name = cluster["metadata"]["name"]
        if common.is_autoscaling(cluster):
            sa = autoscaler_service_account_name(cluster)
            user_named = bool(
                ((common.spec(cluster).get("headGroupSpec") or {}).get("template") or {})
                .get("spec", {})
                .get("serviceAccountName")
            )
            if user_named and sa != name:
                await self._require_user_service_account(cluster, sa)
            else:
                await self._ensure(
                    cluster,
                    SERVICEACCOUNTS,
                    lambda: autoscaler_service_account(cluster),
                    sa,
                    C.EVENT_CREATED_SERVICE_ACCOUNT,
                    C.EVENT_FAILED_TO_CREATE_SERVICE_ACCOUNT,
                )
            await self._ensure(
                cluster,
                ROLES,
                lambda: autoscaler_role(cluster),
                name,
                C.EVENT_CREATED_ROLE,
                C.EVENT_FAILED_TO_CREATE_ROLE,
            )
            await self._ensure(
                cluster,
                ROLEBINDINGS,
                lambda: autoscaler_role_binding(cluster),
                name,
                C.EVENT_CREATED_ROLE_BINDING,
                C.EVENT_FAILED_TO_CREATE_ROLE_BINDING,
            )
        if (common.spec(cluster).get("headGroupSpec") or {}).get("enableIngress"):
            await self._ingress(cluster)
        await self._service(
            cluster, build_head_service(cluster, cluster_ip_service=self.options.head_cluster_ip_service)
        )
        groups = common.spec(cluster).get("workerGroupSpecs") or []
        if any(common.num_of_hosts(g) > 1 for g in groups):
            await self._service(cluster, build_headless_worker_service(cluster))
        annotations = cluster["metadata"].get("annotations") or {}
        if str(annotations.get(C.ENABLE_SERVE_SERVICE_ANNOTATION_KEY, "")).lower() == "true":
            serve = build_serve_service(cluster)
            if serve is not None:
                await self._service(cluster, serve)
        del ns

    async def _ingress(self, cluster: dict[str, Any]) -> None:
        """Create the Ingress, and bring an owned one back to the spec once per RayCluster generation.

        The drift check runs when the generation changes (or after a restart), not on every
        reconcile, so a converged cluster still costs no request.
        """
        desired = build_ingress(cluster)
        ns, name = cluster["metadata"]["namespace"], desired["metadata"]["name"]
        marker = (cluster["metadata"]["uid"], f"Ingress@{cluster['metadata'].get('generation', 0)}", name)
        if marker in self._known:
            return
        uid = cluster["metadata"]["uid"]
        self._known = {k for k in self._known if not (k[0] == uid and k[1].startswith("Ingress@"))}
        try:
            current = await self.client.get(INGRESSES, name, ns)
        except NotFound:
            try:
                await self.client.create(INGRESSES, desired, ns)
            except AlreadyExists:
                return  # someone raced us; the next generation's check settles it
            except ApiError as exc:
                self.recorder.event(
                    cluster,
                    C.WARNING,
                    C.EVENT_FAILED_TO_CREATE_INGRESS,
                    f"Failed to create Ingress {ns}/{name}: {exc}",
                )
                raise
            self.recorder.event(cluster, C.NORMAL, C.EVENT_CREATED_INGRESS, f"Created Ingress {ns}/{name}")
            self._known.add(marker)
            return
        owners = current["metadata"].get("ownerReferences") or []
        if not any(o.get("uid") == cluster["metadata"]["uid"] for o in owners):
            self.recorder.event(
                cluster,
                C.WARNING,
                C.EVENT_FAILED_TO_UPDATE_INGRESS,
                f"Ingress {ns}/{name} exists and is not owned by this RayCluster; leaving it alone",
            )
            self._known.add(marker)
            return
        annotations = desired["metadata"].get("annotations") or {}
        current_spec = current.get("spec") or {}
        drifted = any(current_spec.get(k) != v for k, v in desired["spec"].items())
        if drifted or (current["metadata"].get("annotations") or {}) != annotations:
            body = dict(current)
            body["spec"] = {**current_spec, **desired["spec"]}
            body["metadata"] = {**current["metadata"], "annotations": annotations}
            try:
                await self.client.update(INGRESSES, body)
            except ApiError as exc:
                self.recorder.event(
                    cluster,
                    C.WARNING,
                    C.EVENT_FAILED_TO_UPDATE_INGRESS,
                    f"Failed to update Ingress {ns}/{name}: {exc}",
                )
                raise
            self.recorder.event(cluster, C.NORMAL, C.EVENT_UPDATED_INGRESS, f"Updated Ingress {ns}/{name}")
        self._known.add(marker)

    async def _require_user_service_account(self, cluster: dict[str, Any], sa: str) -> None:
        uid = cluster["metadata"]["uid"]
        if (uid, SERVICEACCOUNTS.kind, sa) in self._known:
            return
        ns = cluster["metadata"]["namespace"]
        try:
            await self.client.get(SERVICEACCOUNTS, sa, ns)
        except NotFound:
            self.recorder.event(
                cluster,
                C.WARNING,
                C.EVENT_AUTOSCALER_SERVICE_ACCOUNT_NOT_FOUND,
                f"The autoscaler ServiceAccount {ns}/{sa} named in the head Pod template does not exist; "
                "create it, or remove serviceAccountName to let KubeRay create one.",
            )
            raise
        self._known.add((uid, SERVICEACCOUNTS.kind, sa))

    async def _service(self, cluster: dict[str, Any], body: dict[str, Any]) -> None:
        ns = cluster["metadata"]["namespace"]
        name = body["metadata"]["name"]
        marker = (cluster["metadata"]["uid"], "Service", name)
        if self.cache.get(SERVICES, name, ns) is not None:
            self._known.discard(marker)
            self._fresh.pop(marker, None)
            return  # KubeRay never updates an existing Service
        if marker in self._known:
            return  # created by us, not yet in the cache: creating again would only 409
        try:
            created = await self.client.create(SERVICES, body, ns)
        except AlreadyExists:
            return
        except ApiError as exc:
            self.recorder.event(
                cluster,
                C.WARNING,
                C.EVENT_FAILED_TO_CREATE_SERVICE,
                f"Failed to create Service {ns}/{name}: {exc}",
            )
            raise
        self._known.add(marker)
        self._fresh[marker] = created
        self.recorder.event(cluster, C.NORMAL, C.EVENT_CREATED_SERVICE, f"Created Service {ns}/{name}")
