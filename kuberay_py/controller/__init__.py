"""Controllers: sources and predicates feeding a workqueue, workers running a reconciler.

The pieces, one module each: :mod:`~kuberay_py.controller.reconcile` (Request/Result contract),
:mod:`~kuberay_py.controller.predicates`, :mod:`~kuberay_py.controller.handlers` (events → keys),
:mod:`~kuberay_py.controller.controller` (the worker loop and its metrics),
:mod:`~kuberay_py.controller.builder` and :mod:`~kuberay_py.controller.expectations`.
"""

from kuberay_py.controller.builder import Builder
from kuberay_py.controller.controller import DEFAULT_CACHE_SYNC_TIMEOUT, Controller
from kuberay_py.controller.expectations import Expectations
from kuberay_py.controller.handlers import EnqueueHandler, request_for_object, requests_for_owner
from kuberay_py.controller.predicates import (
    AnnotationsChanged,
    GenerationChanged,
    LabelsChanged,
    Predicate,
    PredicateFuncs,
    ResourceVersionChanged,
    and_,
    not_,
    or_,
)
from kuberay_py.controller.reconcile import Reconciler, Request, Result, TerminalError

__all__ = [
    "DEFAULT_CACHE_SYNC_TIMEOUT",
    "AnnotationsChanged",
    "Builder",
    "Controller",
    "EnqueueHandler",
    "Expectations",
    "GenerationChanged",
    "LabelsChanged",
    "Predicate",
    "PredicateFuncs",
    "Reconciler",
    "Request",
    "ResourceVersionChanged",
    "Result",
    "TerminalError",
    "and_",
    "not_",
    "or_",
    "request_for_object",
    "requests_for_owner",
]
