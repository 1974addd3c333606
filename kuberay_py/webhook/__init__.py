"""Admission webhooks: an HTTPS server for AdmissionReviews and the handlers it serves.

The layout follows controller-runtime's ``pkg/webhook``: :mod:`.admission` (reviews and
responses), :mod:`.validator` (a handler from create/update/delete checks), :mod:`.fielderrors`
(the ``Invalid`` status a validator answers with), :mod:`.server` (TLS, metrics, readiness) and
:mod:`.certwatcher` (reloading the serving pair).
"""

from .admission import (
    AdmissionRequest,
    AdmissionResponse,
    Handler,
    allowed,
    denied,
    errored,
    from_status,
)
from .certwatcher import CertWatcher
from .fielderrors import InvalidField, StatusError, invalid
from .server import DEFAULT_CERT_DIR, DEFAULT_PORT, WebhookServer, WebhookServerOptions
from .validator import Validator, validating_handler

__all__ = [
    "DEFAULT_CERT_DIR",
    "DEFAULT_PORT",
    "AdmissionRequest",
    "AdmissionResponse",
    "CertWatcher",
    "Handler",
    "InvalidField",
    "StatusError",
    "Validator",
    "WebhookServer",
    "WebhookServerOptions",
    "allowed",
    "denied",
    "errored",
    "from_status",
    "invalid",
    "validating_handler",
]
