"""An in-memory lease with resourceVersion semantics, for leader-election unit tests."""

from __future__ import annotations

import anyio

from kuberay_py.manager.leaderelection import LeaderElectionRecord, LockNotFound


class ConflictError(Exception):
    pass


class LeaseStore:
    """One Lease object: a record plus a version that every write bumps."""

    def __init__(self) -> None:
        self.record: LeaderElectionRecord | None = None
        self.version = 0
        self.fail: Exception | None = None  # raised by every call while set
        self.hang = False  # calls block forever while set
        self.writes: list[tuple[str, LeaderElectionRecord]] = []

    async def _check(self) -> None:
        await anyio.lowlevel.checkpoint()
        if self.hang:
            await anyio.sleep_forever()
        if self.fail is not None:
            raise self.fail

    def bump_externally(self) -> None:
        """Another writer (e.g. a label edit) changes the version without touching the record."""
        self.version += 1


class FakeLock:
    def __init__(self, store: LeaseStore, identity: str) -> None:
        self.store = store
        self._identity = identity
        self._version: int | None = None

    @property
    def identity(self) -> str:
        return self._identity

    def describe(self) -> str:
        return "test/lease"

    async def get(self) -> LeaderElectionRecord:
        await self.store._check()
        if self.store.record is None:
            raise LockNotFound()
        self._version = self.store.version
        return self.store.record

    async def create(self, record: LeaderElectionRecord) -> None:
        await self.store._check()
        if self.store.record is not None:
            raise ConflictError("already exists")
        self.store.record = record
        self.store.version += 1
        self._version = self.store.version
        self.store.writes.append((self._identity, record))

    async def update(self, record: LeaderElectionRecord) -> None:
        await self.store._check()
        if self._version is None:
            raise RuntimeError("lease not initialized, call get or create first")
        if self._version != self.store.version:
            raise ConflictError("the object has been modified")
        self.store.record = record
        self.store.version += 1
        self._version = self.store.version
        self.store.writes.append((self._identity, record))
