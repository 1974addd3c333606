"""Declaring what a controller reconciles and what wakes it up (controller-runtime's ``pkg/builder``).

Example (what KubeRay's RayCluster controller declares)::

    primary = or_(GenerationChanged(), LabelsChanged(), AnnotationsChanged())
    controller = (
        Builder("raycluster", cache)
        .for_(RAYCLUSTERS, predicates=[primary])
        .owns(PODS)
        .owns(SERVICES)
        .with_options(max_concurrent_reconciles=4)
        .complete(RayClusterReconciler(...))
    )
    await controller.run()

The manager creates builders with ``Builder(name, cache, clock=..., rate_limiter_factory=...,
on_complete=...)``: the factory makes each controller's own retry limiter from the manager's
options (``with_options(rate_limiter=...)`` still wins), and ``on_complete`` receives the finished
:class:`Controller` so the manager can run it. A builder
works without a manager too (tests give it a cache and a name).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kuberay_py.client.resources import Resource
from kuberay_py.clock import Clock
from kuberay_py.controller.controller import DEFAULT_CACHE_SYNC_TIMEOUT, Controller
from kuberay_py.controller.handlers import CacheLike, MapFn, request_for_object, requests_for_owner
from kuberay_py.controller.predicates import Predicate
from kuberay_py.controller.reconcile import Reconciler
from kuberay_py.workqueue import RateLimiter

__all__ = ["Builder"]


def _check_predicates(predicates: Sequence[Predicate], where: str) -> tuple[Predicate, ...]:
    if isinstance(predicates, Predicate):
        raise TypeError(f"{where}: predicates must be a list of Predicate, not a single Predicate")
    out = tuple(predicates)
    for p in out:
        if not isinstance(p, Predicate):
            raise TypeError(f"{where}: {p!r} is not a Predicate")
    return out


class Builder:
    """Collects sources and options; :meth:`complete` declares them on a new controller.

    The informers are requested from the cache at :meth:`complete` (so the manager's cache starts
    them with everything else); the handlers are attached when the controller runs.
    """

    def __init__(
        self,
        name: str,
        cache: CacheLike,
        *,
        clock: Clock | None = None,
        rate_limiter_factory: Callable[[], RateLimiter] | None = None,
        on_complete: Callable[[Controller], None] | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"controller name must be a non-empty string, got {name!r}")
        self.name = name
        self._cache = cache
        self._clock = clock
        self._on_complete = on_complete
        self._for: tuple[Resource, tuple[Predicate, ...]] | None = None
        self._owns: list[tuple[Resource, tuple[Predicate, ...], bool]] = []
        self._watches: list[tuple[Resource, MapFn, tuple[Predicate, ...]]] = []
        self._max_concurrent_reconciles = 1
        self._rate_limiter: RateLimiter | None = None
        self._rate_limiter_factory = rate_limiter_factory
        self._cache_sync_timeout = DEFAULT_CACHE_SYNC_TIMEOUT
        self._completed = False

    def for_(self, res: Resource, predicates: Sequence[Predicate] = ()) -> Builder:
        """The primary kind: its own events enqueue its own key."""
        if self._for is not None:
            raise ValueError(f"controller {self.name!r}: for_() was already called with {self._for[0].kind}")
        self._for = (res, _check_predicates(predicates, f"for_({res.kind})"))
        return self

    def owns(
        self, res: Resource, predicates: Sequence[Predicate] = (), *, only_controller: bool = True
    ) -> Builder:
        """A kind this controller creates: its events enqueue the controlling owner of the for_() kind."""
        self._owns.append((res, _check_predicates(predicates, f"owns({res.kind})"), only_controller))
        return self

    def watches(self, res: Resource, map_fn: MapFn, predicates: Sequence[Predicate] = ()) -> Builder:
        """Any other kind: ``map_fn(obj)`` says which requests its events enqueue."""
        if not callable(map_fn):
            raise TypeError(f"watches({res.kind}): map_fn must be callable, got {map_fn!r}")
        self._watches.append((res, map_fn, _check_predicates(predicates, f"watches({res.kind})")))
        return self

    def with_options(
        self,
        *,
        max_concurrent_reconciles: int = 1,
        rate_limiter: RateLimiter | None = None,
        cache_sync_timeout: float = DEFAULT_CACHE_SYNC_TIMEOUT,
    ) -> Builder:
        self._max_concurrent_reconciles = max_concurrent_reconciles
        self._rate_limiter = rate_limiter
        self._cache_sync_timeout = cache_sync_timeout
        return self

    def complete(self, reconciler: Reconciler) -> Controller:
        if self._completed:
            raise RuntimeError(f"controller {self.name!r}: complete() was already called")
        if self._for is None and self._owns:
            raise ValueError(f"controller {self.name!r}: owns() needs for_() to know the owner's kind")
        if self._for is None and not self._watches:
            raise ValueError(f"controller {self.name!r}: nothing to watch; call for_() or watches()")
        controller = Controller(
            self.name,
            reconciler,
            max_concurrent_reconciles=self._max_concurrent_reconciles,
            rate_limiter=self._rate_limiter
            or (self._rate_limiter_factory() if self._rate_limiter_factory is not None else None),
            cache_sync_timeout=self._cache_sync_timeout,
            clock=self._clock,
        )
        cache = self._cache
        if self._for is not None:
            primary, preds = self._for
            controller.watch(
                cache.informer_for(primary),
                request_for_object,
                preds,
                source=f"for {primary.kind}",
                map_old_on_update=False,
            )
            for res, preds, only_controller in self._owns:
                owner_of = requests_for_owner(primary, only_controller=only_controller)
                controller.watch(cache.informer_for(res), owner_of, preds, source=f"owns {res.kind}")
        for res, map_fn, preds in self._watches:
            controller.watch(cache.informer_for(res), map_fn, preds, source=f"watches {res.kind}")
        self._completed = True
        if self._on_complete is not None:
            self._on_complete(controller)
        return controller
