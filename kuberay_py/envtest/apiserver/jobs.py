"""batch/v1 Job defaulting as kube-apiserver does it (``SetDefaults_Job``, the Job strategy).

A Job without ``manualSelector`` gets a generated selector on its UID, and its Pod template (and,
when it has none, the Job itself) the ``batch.kubernetes.io/controller-uid`` and
``batch.kubernetes.io/job-name`` labels plus their legacy unprefixed twins. Code that reads a
Job back (a RayJob submitter's, a test's) sees these on a real server, so it sees them here.
"""

from __future__ import annotations

from .core import ApiCore, Obj
from .errors import Cause
from .kinds import NoHooks, default_pod_spec
from .registry import ResourceType
from .validation import invalid

__all__ = ["JobHooks"]

CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"


def _default_spec(spec: dict[str, object]) -> None:
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    if spec.get("backoffLimitPerIndex") is None:
        spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    if spec.get("podFailurePolicy") is None:
        spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")


class JobHooks(NoHooks):
    def prepare_create(self, core: ApiCore, rt: ResourceType, obj: Obj) -> list[Cause]:
        spec = obj.get("spec")
        if not isinstance(spec, dict) or not isinstance(spec.get("template"), dict):
            return [invalid("spec.template", None, "must be an object")]
        _default_spec(spec)
        template = spec["template"]
        pod_spec = template.get("spec")
        if isinstance(pod_spec, dict):
            default_pod_spec(pod_spec)
        meta = obj["metadata"]
        if not spec.get("manualSelector"):
            uid, name = meta["uid"], meta["name"]
            labels = template.setdefault("metadata", {}).setdefault("labels", {})
            labels.update({CONTROLLER_UID: uid, JOB_NAME: name, "controller-uid": uid, "job-name": name})
            spec["selector"] = {"matchLabels": {CONTROLLER_UID: uid}}
        template_labels = (template.get("metadata") or {}).get("labels")
        if template_labels and not meta.get("labels"):
            meta["labels"] = dict(template_labels)
        return []

    def prepare_update(
        self, core: ApiCore, rt: ResourceType, old: Obj, new: Obj, subresource: str | None
    ) -> list[Cause]:
        if subresource == "status":
            return []
        spec = new.get("spec")
        if isinstance(spec, dict):
            _default_spec(spec)
            if (old.get("spec") or {}).get("selector") != spec.get("selector"):
                return [invalid("spec.selector", spec.get("selector"), "field is immutable")]
        return []
