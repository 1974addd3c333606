"""Validating admission webhooks: kube-apiserver's call to every matching webhook.

After a write has passed the object's own validation and before it is stored, each matching
webhook of each ValidatingWebhookConfiguration gets an ``admission.k8s.io/v1`` AdmissionReview
(concurrently, as kube-apiserver sends them). The handler first runs the write as a dry run to
get the object as it would be stored -- defaulted, validated, named -- sends that, and only on
approval performs the write. Outcomes, worded as kube-apiserver words them:

* denied: the webhook's status with its code (at least 400) and the message
  ``admission webhook "<name>" denied the request: <message>``;
* not reachable, timed out (``timeoutSeconds``, default 10), an untrusted certificate
  (``caBundle``), or an answer that is not an AdmissionReview for this request: with
  ``failurePolicy: Fail`` a 500 ``Internal error occurred: failed calling webhook "<name>":
  ...``; with ``Ignore`` the request goes on.

Warnings in a webhook's answer reach the client as ``Warning: 299 - "<text>"`` headers, as
kube-apiserver sends them (:data:`admission_warnings` collects them for the request).

``clientConfig.url`` is called as given; ``clientConfig.service`` through the Service's ready
endpoints, with the certificate checked for ``<service>.<namespace>.svc``.
"""

from __future__ import annotations

import asyncio
import base64
import contextvars
import ssl
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import aiohttp
import orjson
import structlog

from .authn import UserInfo
from .core import ApiCore, Obj
from .errors import StatusError
from .meta import new_uid
from .services_proxy import ServiceProxy
from .webhookconfig import WEBHOOK_CONFIG_KEY
from .webhookrules import AdmissionAttributes, hook_matches, rules_match

__all__ = [
    "AdmissionAttributes",
    "ValidatingAdmission",
    "admission_warnings",
    "admitted_delete",
    "admitted_write",
    "warning_header",
]

log = structlog.get_logger("kuberay_py.envtest.apiserver.admission")

# The webhooks' warnings for the request being served (the HTTP layer sets a list per request).
admission_warnings: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "envtest_admission_warnings", default=None
)


def warning_header(text: str) -> str:
    """``299 - "text"`` with ``"`` and ``\\`` escaped (apimachinery's NewWarningHeader)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'299 - "{escaped}"'


_OPTIONS_KIND = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


class CallFailed(Exception):
    """The webhook could not be asked, or did not answer properly (kube's ErrCallingWebhook)."""


class ValidatingAdmission:
    def __init__(self, core: ApiCore, services: ServiceProxy) -> None:
        self.core = core
        self.services = services
        self._session: aiohttp.ClientSession | None = None
        self._contexts: dict[str, ssl.SSLContext] = {}

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()

    # -- matching ---------------------------------------------------------------------------------

    def _configurations(self) -> list[Obj]:
        bucket = self.core.storage.buckets.get(WEBHOOK_CONFIG_KEY)
        if bucket is None:
            return []
        return [bucket.objects[key] for key in bucket.sorted_keys()]

    def hooks_for(self, attrs: AdmissionAttributes) -> list[Obj]:
        configs = self._configurations()
        if not configs:
            return []
        namespace_obj = (
            self.core.storage.get(("", "namespaces"), "", attrs.namespace) if attrs.namespace else None
        )
        return [
            hook
            for config in configs
            for hook in config.get("webhooks") or []
            if hook_matches(hook, attrs, namespace_obj)
        ]

    def may_apply(self, attrs: AdmissionAttributes) -> bool:
        """Whether some webhook could match, before the object is known (saves the dry run)."""
        hooks = (hook for config in self._configurations() for hook in config.get("webhooks") or [])
        return any(rules_match(hook, attrs) for hook in hooks)

    # -- calling ----------------------------------------------------------------------------------

    async def validate(self, attrs: AdmissionAttributes, user: UserInfo) -> None:
        """Ask every matching webhook; raises the :class:`StatusError` the client should get."""
        hooks = self.hooks_for(attrs)
        if not hooks:
            return
        results = await asyncio.gather(*(self._admit(hook, attrs, user) for hook in hooks))
        for err in results:
            if err is not None:
                raise err

    async def _admit(self, hook: Obj, attrs: AdmissionAttributes, user: UserInfo) -> StatusError | None:
        name = str(hook.get("name", ""))
        uid = new_uid()
        try:
            response = await self._call(hook, self._review(uid, attrs, user))
            result = _verified(response, uid)
        except CallFailed as err:
            message = f'failed calling webhook "{name}": {err}'
            if hook.get("failurePolicy", "Fail") == "Ignore":
                log.warning("failed calling webhook, failing open", webhook=name, error=str(err))
                return None
            log.warning("failed calling webhook, failing closed", webhook=name, error=str(err))
            return StatusError.internal(message)
        sink = admission_warnings.get()
        if sink is not None:
            sink.extend(w for w in result.get("warnings") or [] if isinstance(w, str) and w not in sink)
        if result.get("allowed") is True:
            return None
        return _denial(name, result.get("status"))

    def _review(self, uid: str, attrs: AdmissionAttributes, user: UserInfo) -> Obj:
        rt = attrs.rt
        kind = {"group": rt.group, "version": rt.version, "kind": rt.kind}
        resource = {"group": rt.group, "version": rt.version, "resource": rt.plural}
        request: Obj = {
            "uid": uid,
            "kind": kind,
            "resource": resource,
            "requestKind": kind,
            "requestResource": resource,
            "name": attrs.name,
            "operation": attrs.operation,
            "userInfo": {"username": user.name, "uid": user.uid, "groups": list(user.groups)},
            "object": self.core.present(rt, attrs.obj) if attrs.obj is not None else None,
            "oldObject": self.core.present(rt, attrs.old) if attrs.old is not None else None,
            "dryRun": attrs.dry_run,
            "options": {"kind": _OPTIONS_KIND[attrs.operation], "apiVersion": "meta.k8s.io/v1"},
        }
        if attrs.subresource:
            request["subResource"] = request["requestSubResource"] = attrs.subresource
        if attrs.namespace:
            request["namespace"] = attrs.namespace
        return {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": request}

    def _ssl(self, ca_bundle: str) -> ssl.SSLContext:
        ctx = self._contexts.get(ca_bundle)
        if ctx is None:
            if ca_bundle:
                try:
                    pem = base64.b64decode(ca_bundle).decode()
                    ctx = ssl.create_default_context(cadata=pem)
                except (ValueError, ssl.SSLError) as err:
                    raise CallFailed(
                        f"could not get REST client: unable to load root certificates: {err}"
                    ) from None
            else:
                ctx = ssl.create_default_context()
            self._contexts[ca_bundle] = ctx
        return ctx

    def _target(self, config: Obj) -> tuple[str, str | None]:
        """The URL to post to and the name the certificate must carry (None: the URL's host)."""
        if config.get("url"):
            return str(config["url"]), None
        service = config.get("service") or {}
        namespace, name = str(service.get("namespace", "")), str(service.get("name", ""))
        try:
            target = self.services.resolve(namespace, f"https:{name}:{service.get('port', 443)}")
        except StatusError as err:
            raise CallFailed(
                f'failed to call webhook: service "{name}" in "{namespace}": {err.message}'
            ) from None
        path = str(service.get("path") or "")
        return f"https://{target.host}:{target.port}{path}", f"{name}.{namespace}.svc"

    async def _call(self, hook: Obj, review: Obj) -> Any:
        config = hook.get("clientConfig") or {}
        timeout = int(hook.get("timeoutSeconds") or 10)
        ctx = self._ssl(str(config.get("caBundle") or ""))
        base, server_name = self._target(config)
        url = f"{base}?timeout={timeout}s"
        if self._session is None or self._session.closed:
            # A connection per call: a webhook server restarted on the same port (tests do that) must
            # not meet a stale pooled connection, and every call sees the current certificate.
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True))
        failure = f'failed to call webhook: Post "{url}"'
        try:
            async with self._session.post(
                url,
                data=orjson.dumps(review),
                headers={"Content-Type": "application/json", "Accept": "application/json"},
                ssl=ctx,
                server_hostname=server_name,
                timeout=aiohttp.ClientTimeout(total=timeout),
            ) as resp:
                body = await resp.read()
                status = resp.status
        except TimeoutError:
            raise CallFailed(f"{failure}: context deadline exceeded") from None
        except aiohttp.ClientConnectorCertificateError as err:
            raise CallFailed(
                f"{failure}: tls: failed to verify certificate: {_x509(err.certificate_error)}"
            ) from None
        except aiohttp.ClientConnectorError as err:
            raise CallFailed(f"{failure}: dial tcp {err.host}:{err.port}: {_dial(err)}") from None
        except aiohttp.ClientError as err:
            raise CallFailed(f"{failure}: {err}") from None
        if not 200 <= status < 300:
            text = body.decode(errors="replace").strip()
            if not text:
                raise CallFailed(
                    f"failed to call webhook: the server responded with the status code {status} "
                    "but did not return more information"
                )
            raise CallFailed(
                f'failed to call webhook: an error on the server ("{text[:256]}") has prevented '
                "the request from succeeding"
            )
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError as err:
            raise CallFailed(f"failed to call webhook: {err}") from None


def _x509(err: Exception) -> str:
    code = getattr(err, "verify_code", None)
    if code in (18, 19, 20, 21):  # self-signed / unknown issuer
        return "x509: certificate signed by unknown authority"
    if code == 62:  # hostname mismatch
        return (
            f"x509: certificate is not valid for the requested host ({getattr(err, 'verify_message', err)})"
        )
    if code == 10:
        return "x509: certificate has expired or is not yet valid"
    return f"x509: {getattr(err, 'verify_message', None) or err}"


def _dial(err: aiohttp.ClientConnectorError) -> str:
    if isinstance(err.os_error, ConnectionRefusedError):
        return "connect: connection refused"
    return f"connect: {(err.os_error.strerror or str(err.os_error)).lower()}"


def _verified(doc: Any, uid: str) -> Obj:
    """kube's VerifyAdmissionResponse for admission.k8s.io/v1."""
    if not isinstance(doc, dict):
        raise CallFailed("received invalid webhook response: not an object")
    kind, version = doc.get("kind"), doc.get("apiVersion")
    if (kind, version) != ("AdmissionReview", "admission.k8s.io/v1"):
        got = f"{version}, Kind={kind}"
        raise CallFailed(
            f"received invalid webhook response: expected webhook response of admission.k8s.io/v1, "
            f"Kind=AdmissionReview, got {got}"
        )
    response = doc.get("response")
    if not isinstance(response, dict):
        raise CallFailed("received invalid webhook response: webhook response was absent")
    if response.get("uid") != uid:
        raise CallFailed(
            f'received invalid webhook response: expected response.uid="{uid}", got "{response.get("uid")}"'
        )
    if response.get("patch"):
        raise CallFailed("received invalid webhook response: validating webhook may not return a patch")
    return response


def _denial(name: str, status: Any) -> StatusError:
    """kube's ToStatusErr: the webhook's status, prefixed with who denied it."""
    result: Obj = status if isinstance(status, dict) else {}
    code = result.get("code")
    code = code if isinstance(code, int) and code >= 400 else 400
    denied_by = f'admission webhook "{name}" denied the request'
    if result.get("message"):
        message = f"{denied_by}: {result['message']}"
    elif result.get("reason"):
        message = f"{denied_by}: {result['reason']}"
    else:
        message = f"{denied_by} without explanation"
    details = result.get("details")
    return StatusError(
        code, str(result.get("reason") or ""), message, details if isinstance(details, dict) else None
    )


async def admitted_write(
    admission: ValidatingAdmission,
    attrs: AdmissionAttributes,
    attempt: Callable[[bool], Obj],
    user: UserInfo,
    *,
    body: Any = None,
) -> Obj:
    """Run a write through validating admission: dry run, ask the webhooks, then write for real.

    ``attempt(dry_run)`` performs the write; ``body`` (creates) gets the dry run's generated name,
    so the object the webhooks approved is the one stored.
    """
    if not admission.may_apply(attrs):
        return attempt(attrs.dry_run)
    old = None
    if attrs.operation != "CREATE":
        old = admission.core.storage.get(attrs.rt.key, attrs.namespace, attrs.name)
    candidate = attempt(True)
    name = str(candidate.get("metadata", {}).get("name") or attrs.name)
    if attrs.operation == "CREATE" and isinstance(body, dict) and isinstance(body.get("metadata"), dict):
        body["metadata"]["name"] = name
    await admission.validate(replace(attrs, name=name, obj=candidate, old=old), user)
    return candidate if attrs.dry_run else attempt(False)


async def admitted_delete(admission: ValidatingAdmission, attrs: AdmissionAttributes, user: UserInfo) -> None:
    """Ask the webhooks about a delete of the object as it is stored now (404s are left to delete)."""
    if not admission.may_apply(attrs):
        return
    old = admission.core.storage.get(attrs.rt.key, attrs.namespace, attrs.name)
    if old is not None:
        await admission.validate(replace(attrs, old=old), user)
