"""The list-then-watch loop that keeps an informer's store equal to the API server's state.

This is client-go's ``Reflector`` on asyncio. The rules that make it lose nothing:

1. **List, then watch from the list's resourceVersion.** The list is a consistent snapshot
   (paginated, 500 per page, without ``resourceVersion=0`` so it is never older than what we
   already saw); the watch then streams every change after that snapshot.
2. **Track the last resourceVersion seen** (from every event and from ``BOOKMARK`` events, which
   we request with ``allowWatchBookmarks``). When a watch ends, normally after its random
   ``timeoutSeconds`` in [300, 600) or because the connection was cut or yielded garbage, the next
   watch resumes from that version, so the server replays whatever happened in between.
3. **410 Gone means the history we would resume from is compacted.** Only a relist can recover:
   the new list is *diffed* against the store and the difference delivered as add, update and
   delete events, so a handler sees every object that was created, changed or removed while we
   were blind, and deletions carry the last state we knew.
4. **Every failure backs off** (0.8 s doubling to 30 s, with jitter; reset by a healthy watch),
   including a watch that the server closes at once without events, so a broken server (403 from
   RBAC, a proxy returning HTML, a refused connection) produces one clear log line per attempt and
   never a busy loop. A 429 waits at least its ``Retry-After``.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from typing import Any, Protocol

from kuberay_py.cache.backoff import Backoff
from kuberay_py.cache.transform import Transform, strip_managed_fields
from kuberay_py.client import ApiError, Client, Forbidden, Gone, Resource, TooManyRequests
from kuberay_py.clock import Clock, RealClock
from kuberay_py.log import get_logger

__all__ = ["LIST_PAGE_SIZE", "Reflector", "ReflectorSink"]

log = get_logger("kuberay_py.cache.reflector")

LIST_PAGE_SIZE = 500
MIN_WATCH_TIMEOUT = 300  # client-go's defaultMinWatchTimeout: each watch lasts 5-10 min
VERY_SHORT_WATCH_SECONDS = 1.0


class ReflectorSink(Protocol):
    """Where a reflector delivers what it learns (the informer: store + handlers)."""

    def replace(self, items: list[dict[str, Any]], namespace: str | None, is_initial: bool) -> None: ...

    def upsert(self, obj: dict[str, Any]) -> None: ...

    def delete(self, obj: dict[str, Any]) -> None: ...


class Reflector:
    """List and watch one resource in one namespace (or all), feeding a :class:`ReflectorSink`."""

    def __init__(
        self,
        client: Client,
        res: Resource,
        sink: ReflectorSink,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        page_size: int = LIST_PAGE_SIZE,
        on_synced: Callable[[], None] | None = None,
        transform: Transform = strip_managed_fields,
    ) -> None:
        self.client = client
        self.res = res
        self.sink = sink
        self.namespace = namespace if res.namespaced else None
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.page_size = page_size
        self._clock = clock or RealClock()
        self._rng = rng or random.Random()
        self.backoff = Backoff(clock=self._clock, rng=self._rng)
        self._on_synced = on_synced
        # Applied to every listed and watched object (DELETED included) before the sink sees it.
        self._transform = transform
        self.last_resource_version: str | None = None
        self.synced = False
        self.lists = 0  # how many (re)lists completed, for tests and debugging
        self.watches = 0  # how many watches were opened
        self._watch_healthy = False  # did the last watch deliver events or last a while?
        self._log = log.bind(resource=str(res), namespace=self.namespace or "*", selector=label_selector)

    async def run(self) -> None:
        """List and watch until cancelled. Never raises for API or transport failures."""
        need_list = True
        gone_streak = 0
        while True:
            if need_list:
                if not await self._attempt(self._list, "list"):
                    continue
                need_list = False
            try:
                healthy = await self._watch()
            except Gone as e:
                self._log.info(
                    "watch_expired_relisting", error=e.message, resource_version=self.last_resource_version
                )
                need_list = True
                if self._watch_healthy:
                    gone_streak = 0  # the watch was healthy until the server compacted past it
                # A relist is the cure for 410, so the first one goes at once; only a 410 that
                # comes back before any healthy watch (a server compacting faster than we
                # list) is backed off.
                if gone_streak:
                    await self._sleep_after("watch", e)
                gone_streak += 1
                continue
            except ApiError as e:
                await self._sleep_after("watch", e)
                continue
            if healthy:
                gone_streak = 0
            else:
                await self._sleep_after("watch", None)

    async def _attempt(self, step: Callable[[], Awaitable[None]], what: str) -> bool:
        try:
            await step()
        except ApiError as e:
            await self._sleep_after(what, e)
            return False
        return True

    async def _sleep_after(self, what: str, error: ApiError | None) -> None:
        """Log the failure with the delay chosen, then sleep it; ``error=None`` is a very short watch."""
        delay = self.backoff.next_delay()
        if isinstance(error, TooManyRequests) and error.retry_after:
            delay = max(delay, error.retry_after)
        if error is None:
            self._log.warning(
                "watch_closed_immediately",
                hint="the server ended the watch at once without events",
                resource_version=self.last_resource_version,
                retry_in_s=round(delay, 3),
                attempt=self.backoff.failures,
            )
        else:
            # RBAC and auth problems need a human; everything else is usually transient.
            needs_human = isinstance(error, Forbidden) or error.status == 401
            (self._log.error if needs_human else self._log.warning)(
                f"{what}_failed",
                error=str(error),
                reason=error.reason,
                code=error.status,
                retry_in_s=round(delay, 3),
                attempt=self.backoff.failures,
            )
        await self._clock.sleep(delay)

    async def _list(self) -> None:
        result = await self.client.list_all(
            self.res,
            self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            limit=self.page_size,
            transform=self._transform,  # slimmed page by page, as they arrive
        )
        items = result["items"]
        rv = (result.get("metadata") or {}).get("resourceVersion")
        is_initial = not self.synced
        self.sink.replace(items, self.namespace, is_initial)
        self.last_resource_version = str(rv) if rv else None
        self.lists += 1
        if is_initial:
            self.synced = True
            self._log.debug("initial_list_synced", objects=len(items), resource_version=rv)
            if self._on_synced is not None:
                self._on_synced()
        else:
            self._log.info("relisted", objects=len(items), resource_version=rv)

    async def _watch(self) -> bool:
        """One watch; returns whether it was healthy (delivered events or lasted a while)."""
        timeout = int(MIN_WATCH_TIMEOUT * (1.0 + self._rng.random()))
        started = self._clock.now()
        events = 0
        self._watch_healthy = False
        self.watches += 1
        stream = self.client.watch(
            self.res,
            self.namespace,
            resource_version=self.last_resource_version,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            timeout_seconds=timeout,
            allow_bookmarks=True,
        )
        try:
            async with aclosing(stream) as watch:
                async for event in watch:
                    events += 1
                    self._handle(event)
        finally:
            self._watch_healthy = events > 0 or self._clock.now() - started >= VERY_SHORT_WATCH_SECONDS
            if self._watch_healthy:
                # The stream worked for a while, so whatever ended it starts a fresh back-off.
                self.backoff.reset()
        return self._watch_healthy

    def _handle(self, event: dict[str, Any]) -> None:
        etype = event["type"]
        obj = event["object"]
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if etype == "BOOKMARK":
            if rv:
                self.last_resource_version = str(rv)
            return
        obj = self._transform(obj)
        if etype == "DELETED":
            self.sink.delete(obj)
        else:  # ADDED or MODIFIED; the sink decides add vs update from its store
            self.sink.upsert(obj)
        if rv:
            self.last_resource_version = str(rv)
