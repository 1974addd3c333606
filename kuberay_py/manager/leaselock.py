"""The leader-election record stored in a ``coordination.k8s.io/v1`` Lease (client-go's ``LeaseLock``).

Every update is a PUT of the Lease last read, carrying its ``resourceVersion``, so the API server
rejects a write based on a stale read with 409 Conflict: that is what makes two candidates that
both saw an expired lease end with exactly one leader.
"""

from __future__ import annotations

import socket
import uuid
from datetime import UTC, datetime
from typing import Any

from kuberay_py.client import Client, NotFound, resources
from kuberay_py.clock import parse_rfc3339
from kuberay_py.manager.leaderelection import LeaderElectionRecord, LockNotFound

__all__ = ["LeaseLock", "default_identity", "format_micro_time", "parse_micro_time"]


def default_identity() -> str:
    """controller-runtime's identity: ``<hostname>_<uuid>``, unique even for two replicas on one node."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def format_micro_time(value: datetime) -> str:
    """``metav1.MicroTime`` on the wire: RFC 3339 with exactly six fractional digits, in UTC."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


parse_micro_time = parse_rfc3339  # MicroTime parses like Time (fractional seconds allowed)


def record_to_spec(record: LeaderElectionRecord) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "holderIdentity": record.holder_identity,
        "leaseDurationSeconds": record.lease_duration_seconds,
        "leaseTransitions": record.leader_transitions,
    }
    if record.acquire_time is not None:
        spec["acquireTime"] = format_micro_time(record.acquire_time)
    if record.renew_time is not None:
        spec["renewTime"] = format_micro_time(record.renew_time)
    return spec


def spec_to_record(spec: dict[str, Any]) -> LeaderElectionRecord:
    duration = spec.get("leaseDurationSeconds")
    transitions = spec.get("leaseTransitions")
    return LeaderElectionRecord(
        holder_identity=str(spec.get("holderIdentity") or ""),
        lease_duration_seconds=duration if isinstance(duration, int) else 0,
        acquire_time=parse_micro_time(spec.get("acquireTime")),
        renew_time=parse_micro_time(spec.get("renewTime")),
        leader_transitions=transitions if isinstance(transitions, int) else 0,
    )


class LeaseLock:
    """A :class:`~kuberay_py.manager.leaderelection.ResourceLock` on one Lease object."""

    def __init__(self, client: Client, namespace: str, name: str, identity: str | None = None) -> None:
        if not namespace or not name:
            raise ValueError("a leader-election Lease needs a namespace and a name")
        self.client = client
        self.namespace = namespace
        self.name = name
        self._identity = identity or default_identity()
        self._lease: dict[str, Any] | None = None

    @property
    def identity(self) -> str:
        return self._identity

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    async def get(self) -> LeaderElectionRecord:
        try:
            lease = await self.client.get(resources.LEASES, self.name, self.namespace)
        except NotFound as err:
            raise LockNotFound(self.describe()) from err
        self._lease = lease
        return spec_to_record(lease.get("spec") or {})

    async def create(self, record: LeaderElectionRecord) -> None:
        body = {
            "apiVersion": resources.LEASES.api_version,
            "kind": resources.LEASES.kind,
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record_to_spec(record),
        }
        self._lease = await self.client.create(resources.LEASES, body, self.namespace)

    async def update(self, record: LeaderElectionRecord) -> None:
        if self._lease is None:
            raise RuntimeError("lease not initialized, call get or create first")
        body = {**self._lease, "spec": record_to_spec(record)}  # metadata keeps the resourceVersion
        self._lease = await self.client.update(resources.LEASES, body)
