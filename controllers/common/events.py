"""Events about a write, with one policy for every controller.

Every create, update, patch or delete a controller sends on behalf of a custom resource follows
one rule (KubeRay's, for users who watch ``kubectl describe``): a Warning event naming the object
and the API's answer when it fails, a Normal one when it succeeds.

Which failures get the Warning is decided here, once: an :class:`~kuberay_py.client.ApiError`
(any answer of the API server, and :class:`~kuberay_py.client.TransportError` when none came) is
the cluster talking, so the user is told. The ``expected`` errors of a call (``NotFound`` on a
delete, ``AlreadyExists`` on a create) are the caller's ordinary branches: re-raised without an
event. Anything else is a bug in the operator, not news about the cluster: no event, and it
propagates with its traceback to the controller's error log.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Protocol, TypeVar

from controllers import constants as C
from kuberay_py.client import AlreadyExists, ApiError, NotFound
from kuberay_py.manager.events import EventType
from kuberay_py.objects import Obj

__all__ = ["EventType", "Recorder", "create_once", "delete_once", "write_with_events"]

T = TypeVar("T")


class Recorder(Protocol):
    """What :class:`kuberay_py.manager.EventRecorder` offers (non-blocking; repeats aggregate)."""

    def event(self, obj: Obj, type_: EventType, reason: str, message: str) -> None: ...


async def write_with_events(
    recorder: Recorder,
    about: Obj,
    write: Awaitable[T],
    *,
    failed: tuple[str, str] | None,
    done: tuple[str, str] | None = None,
    expected: tuple[type[ApiError], ...] = (),
) -> T:
    """Await ``write``; a Warning ``failed`` on an API error, a Normal ``done`` on success.

    ``failed`` and ``done`` are ``(reason, message)``; ``{error}`` in the failure message is
    replaced by the API's answer. ``failed=None`` sends no Warning (the caller reports it
    another way); ``done=None`` no Normal event (the caller aggregates them).
    """
    try:
        result = await write
    except expected:
        raise
    except ApiError as exc:
        if failed is not None:
            reason, message = failed
            recorder.event(about, C.WARNING, reason, message.replace("{error}", str(exc)))
        raise
    if done is not None:
        recorder.event(about, C.NORMAL, *done)
    return result


async def create_once(
    recorder: Recorder,
    about: Obj,
    create: Awaitable[T],
    *,
    failed: tuple[str, str],
    done: tuple[str, str] | None,
) -> T | None:
    """A create under a deterministic name, with its events; None if it already exists.

    Children are named before they are created (in the status, or from the tick), so a repeated
    attempt after a lost answer or a restart meets AlreadyExists: that is the child we wanted, not
    an error, and it gets no Warning.
    """
    try:
        return await write_with_events(
            recorder, about, create, failed=failed, done=done, expected=(AlreadyExists,)
        )
    except AlreadyExists:
        return None


async def delete_once(
    recorder: Recorder,
    about: Obj,
    delete: Awaitable[object],
    *,
    failed: tuple[str, str] | None,
    done: tuple[str, str],
) -> bool:
    """A delete with its events; False (and no event) if the object was already gone.

    Deletes follow the cache, which lags: the object may have gone since (a garbage collection,
    another reconcile, the user), and that is the outcome we wanted, not a failure.
    """
    try:
        await write_with_events(recorder, about, delete, failed=failed, done=done, expected=(NotFound,))
    except NotFound:
        return False
    return True
