"""AdmissionReview (``admission.k8s.io/v1``) in and out, and the responses a handler gives.

The constructors mirror controller-runtime's ``admission`` package, because kube-apiserver shows
their status to the user: :func:`denied` is ``403 Forbidden`` with the handler's message,
:func:`errored` carries the code and error text, and :func:`from_status` passes a full
``metav1.Status`` (a ``422 Invalid`` with causes, say) through unchanged. A request that cannot be
read is answered like controller-runtime answers it: HTTP 200 with an AdmissionReview whose
response is *errored* with code 400 (or 413 over the size cap), since that is what kube-apiserver
reads and turns into the message the client sees.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

__all__ = [
    "ADMISSION_V1",
    "MAX_REQUEST_BYTES",
    "AdmissionRequest",
    "AdmissionResponse",
    "Handler",
    "allowed",
    "decode_review",
    "denied",
    "encode_review",
    "errored",
    "from_status",
]

ADMISSION_V1 = "admission.k8s.io/v1"
# v1beta1 has the same fields; a review comes back in the version it was asked in.
ADMISSION_VERSIONS = (ADMISSION_V1, "admission.k8s.io/v1beta1")
# controller-runtime's cap on a request body: kube-apiserver's own 3 MiB object limit, plus room
# for the old object on an update and the review around them.
MAX_REQUEST_BYTES = 7 * 1024 * 1024


@dataclass(frozen=True)
class AdmissionRequest:
    """The ``request`` of an AdmissionReview; :attr:`raw` keeps every field for handlers."""

    raw: dict[str, Any]
    api_version: str = ADMISSION_V1  # the review's, for the answer

    @property
    def uid(self) -> str:
        return str(self.raw.get("uid", ""))

    @property
    def operation(self) -> str:
        return str(self.raw.get("operation", ""))

    @property
    def name(self) -> str:
        return str(self.raw.get("name", ""))

    @property
    def namespace(self) -> str:
        return str(self.raw.get("namespace", ""))

    @property
    def kind(self) -> dict[str, str]:
        kind = self.raw.get("kind")
        return kind if isinstance(kind, dict) else {}

    @property
    def object(self) -> dict[str, Any] | None:
        obj = self.raw.get("object")
        return obj if isinstance(obj, dict) else None

    @property
    def old_object(self) -> dict[str, Any] | None:
        obj = self.raw.get("oldObject")
        return obj if isinstance(obj, dict) else None

    @property
    def dry_run(self) -> bool:
        return bool(self.raw.get("dryRun"))


@dataclass
class AdmissionResponse:
    """The ``response`` of an AdmissionReview (``uid`` is filled in from the request)."""

    allowed: bool
    result: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    uid: str = ""

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"uid": self.uid, "allowed": self.allowed}
        if self.result is not None:
            out["status"] = self.result
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out


Handler = Callable[[AdmissionRequest], Awaitable[AdmissionResponse]]


def allowed() -> AdmissionResponse:
    """Let the request through (a ``200`` result), as controller-runtime's ``Allowed("")``."""
    return AdmissionResponse(True, {"metadata": {}, "code": 200})


def denied(message: str) -> AdmissionResponse:
    """Refuse the request: ``403 Forbidden`` with ``message`` (controller-runtime's ``Denied``)."""
    return AdmissionResponse(False, {"metadata": {}, "code": 403, "reason": "Forbidden", "message": message})


def errored(code: int, message: str) -> AdmissionResponse:
    """Refuse the request because handling it failed (controller-runtime's ``Errored``)."""
    return AdmissionResponse(False, {"metadata": {}, "code": code, "message": message})


def from_status(status: dict[str, Any]) -> AdmissionResponse:
    """A refusal carrying a complete ``metav1.Status`` (an ``Invalid`` error's causes included)."""
    return AdmissionResponse(False, dict(status))


class ReviewError(Exception):
    """The body is not an AdmissionReview this server can answer; ``code`` is what to report."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def decode_review(body: bytes, content_type: str) -> AdmissionRequest:
    """The request inside an AdmissionReview body, or :class:`ReviewError` saying what is wrong."""
    if not body:
        raise ReviewError(400, "request body is empty")
    if len(body) > MAX_REQUEST_BYTES:
        raise ReviewError(413, f"request entity is too large; limit is {MAX_REQUEST_BYTES} bytes")
    if content_type != "application/json":
        raise ReviewError(400, f"contentType={content_type}, expected application/json")
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as err:
        raise ReviewError(400, f"couldn't decode the AdmissionReview: {err}") from None
    if not isinstance(doc, dict):
        raise ReviewError(400, "couldn't decode the AdmissionReview: not a JSON object")
    kind, api_version = doc.get("kind"), doc.get("apiVersion")
    if kind != "AdmissionReview" or api_version not in ADMISSION_VERSIONS:
        raise ReviewError(
            400,
            f"expected {ADMISSION_V1}, Kind=AdmissionReview, got apiVersion={api_version!r} kind={kind!r}",
        )
    request = doc.get("request")
    if not isinstance(request, dict):
        raise ReviewError(400, "the AdmissionReview has no request")
    return AdmissionRequest(request, str(api_version))


def encode_review(response: AdmissionResponse, api_version: str = ADMISSION_V1) -> bytes:
    return orjson.dumps({"kind": "AdmissionReview", "apiVersion": api_version, "response": response.body()})
