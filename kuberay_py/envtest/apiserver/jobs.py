"""batch/v1 Job defaulting as kube-apiserver does it (``SetDefaults_Job``, the Job strategy).

A Job without ``manualSelector`` gets a generated selector on its UID, and its Pod template (and,
when it has none, the Job itself) the ``batch.kubernetes.io/controller-uid`` and
``batch.kubernetes.io/job-name`` labels plus their legacy unprefixed twins. Code that reads a
Job back (a RayJob submitter's, a test's) sees these on a real server, so it sees them here.

Status writes are checked as kube-apiserver v1.33+ checks them (``ValidateJobStatusUpdate`` with
the JobManagedBy options): a finished Job needs ``startTime``, a Complete one ``completionTime``
and the ``SuccessCriteriaMet`` condition, and a terminal condition cannot be taken back. A test
that fakes the Job controller with a bare ``Complete`` condition is refused here as there.
"""

from __future__ import annotations

from typing import Any

from .core import ApiCore, Obj
from .errors import Cause, field_cause
from .kinds import NoHooks, default_pod_spec
from .meta import go_time_string, parse_time
from .registry import ResourceType
from .validation import invalid, required

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


def _true(status: dict[str, Any], type_: str) -> bool:
    return any(
        c.get("type") == type_ and c.get("status") == "True"
        for c in status.get("conditions") or []
        if isinstance(c, dict)
    )


def _conditions_problem(detail: str) -> Cause:
    # field.Invalid with OmitValueType: the message carries no value.
    return field_cause("FieldValueInvalid", "status.conditions", f"Invalid value: {detail}")


def _time_problem(completion: Any, detail: str) -> Cause:
    # A metav1.Time is a fmt.Stringer: printed unquoted, as Go's time.Time.String().
    return field_cause(
        "FieldValueInvalid", "status.completionTime", f"Invalid value: {go_time_string(completion)}: {detail}"
    )


def status_problems(old: dict[str, Any], new: dict[str, Any]) -> list[Cause]:
    """The Job status transition rules; each applies only when the fields it reads changed."""
    causes: list[Cause] = []
    complete, was_complete = _true(new, "Complete"), _true(old, "Complete")
    finished = complete or _true(new, "Failed")
    was_finished = was_complete or _true(old, "Failed")
    start, completion = new.get("startTime"), new.get("completionTime")
    start_changed = old.get("startTime") != start
    completion_changed = old.get("completionTime") != completion
    if (complete != was_complete or completion_changed) and completion and not complete:
        causes.append(
            _time_problem(completion, "cannot set completionTime when there is no Complete=True condition")
        )
    if (complete != was_complete or completion_changed) and complete and not completion:
        causes.append(required("status.completionTime", "completionTime is required for Complete jobs"))
    started_at, completed_at = parse_time(start), parse_time(completion)
    if (start_changed or completion_changed) and started_at and completed_at and completed_at < started_at:
        causes.append(_time_problem(completion, "completionTime cannot be set before startTime"))
    if complete and not _true(new, "SuccessCriteriaMet"):
        causes.append(
            _conditions_problem(
                "cannot set Complete=True condition without the SuccessCriteriaMet=true condition"
            )
        )
    if (finished != was_finished or start_changed) and finished and not start:
        causes.append(required("status.startTime", "startTime is required for finished job"))
    for type_ in ("Failed", "Complete", "FailureTarget"):
        if _true(old, type_) and not _true(new, type_):
            causes.append(_conditions_problem(f"cannot disable the terminal {type_}=True condition"))
    return causes


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
            return status_problems(old.get("status") or {}, new.get("status") or {})
        spec = new.get("spec")
        if isinstance(spec, dict):
            _default_spec(spec)
            if (old.get("spec") or {}).get("selector") != spec.get("selector"):
                return [invalid("spec.selector", spec.get("selector"), "field is immutable")]
        return []
