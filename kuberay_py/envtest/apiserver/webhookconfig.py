"""ValidatingWebhookConfiguration: the stored kind, its defaults and its validation.

A test installs the same manifests a cluster gets, so what kube-apiserver defaults
(``failurePolicy: Fail``, ``timeoutSeconds: 10``, empty selectors, rule ``scope: "*"``) comes back
defaulted, and what it refuses (no ``sideEffects``, an ``http://`` URL, both ``url`` and
``service``) is refused here with its wording.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from .core import ApiCore, Obj
from .errors import Cause
from .kinds import NoHooks
from .registry import ResourceType
from .validation import field_cause, invalid, name_problems, not_supported, required

__all__ = ["VALIDATING_WEBHOOK_CONFIGURATIONS", "WEBHOOK_CONFIG_KEY", "ValidatingWebhookConfigurationHooks"]

GROUP = "admissionregistration.k8s.io"
VALIDATING_WEBHOOK_CONFIGURATIONS = ResourceType(
    GROUP, "v1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", namespaced=False
)
WEBHOOK_CONFIG_KEY = VALIDATING_WEBHOOK_CONFIGURATIONS.key

_FAILURE_POLICIES = ("Fail", "Ignore")
_MATCH_POLICIES = ("Equivalent", "Exact")
_SIDE_EFFECTS = ("None", "NoneOnDryRun")
_OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
_SCOPES = ("*", "Cluster", "Namespaced")
_REVIEW_VERSIONS = ("v1", "v1beta1")


def _default(hook: dict[str, Any]) -> None:
    hook.setdefault("failurePolicy", "Fail")
    hook.setdefault("matchPolicy", "Equivalent")
    hook.setdefault("namespaceSelector", {})
    hook.setdefault("objectSelector", {})
    hook.setdefault("timeoutSeconds", 10)
    for rule in hook.get("rules") or []:
        if isinstance(rule, dict):
            rule.setdefault("scope", "*")
    service = (hook.get("clientConfig") or {}).get("service")
    if isinstance(service, dict):
        service.setdefault("port", 443)


_URL_FORM = "; desired format: https://host[/path]"


def _url_problems(path: str, url: str) -> list[Cause]:
    """kube's ValidateWebhookURL (https forced): each problem names the offending part."""
    parts = urlsplit(url)
    causes = []
    if parts.scheme != "https":
        causes.append(invalid(path, parts.scheme, "'https' is the only allowed URL scheme" + _URL_FORM))
    if not parts.netloc:
        causes.append(invalid(path, "", "host must be provided" + _URL_FORM))
    if parts.username is not None:
        user = parts.username + (":xxxxx" if parts.password is not None else "")
        causes.append(invalid(path, user, "user information is not permitted in the URL"))
    if parts.fragment:
        causes.append(invalid(path, parts.fragment, "fragments are not permitted in the URL"))
    if parts.query:
        causes.append(invalid(path, parts.query, "query parameters are not permitted in the URL"))
    return causes


def _client_config_problems(path: str, config: Any) -> list[Cause]:
    config = config if isinstance(config, dict) else {}
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        return [required(path, "exactly one of url or service is required")]
    if url is not None:
        return _url_problems(f"{path}.url", str(url))
    causes = []
    for key in ("name", "namespace"):
        if not service.get(key):
            causes.append(required(f"{path}.service.{key}", f"service {key} is required"))
    return causes


def _hook_problems(path: str, hook: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    name = str(hook.get("name") or "")
    if not name:
        causes.append(required(f"{path}.name"))
    elif problems := name_problems(name, "subdomain"):
        # kube's IsFullyQualifiedName: a DNS-1123 subdomain first, then three segments.
        causes.append(invalid(f"{path}.name", name, ",".join(problems)))
    elif len(name.split(".")) < 3:
        causes.append(
            invalid(f"{path}.name", name, "should be a domain with at least three segments separated by dots")
        )
    versions = hook.get("admissionReviewVersions") or []
    if not versions:
        causes.append(required(f"{path}.admissionReviewVersions", "must specify one of v1, v1beta1"))
    elif not any(v in _REVIEW_VERSIONS for v in versions):
        causes.append(
            invalid(f"{path}.admissionReviewVersions", versions, "must include at least one of v1, v1beta1")
        )
    side_effects = hook.get("sideEffects")
    if side_effects is None:
        causes.append(required(f"{path}.sideEffects", "must specify one of None, NoneOnDryRun"))
    elif side_effects not in _SIDE_EFFECTS:
        causes.append(not_supported(f"{path}.sideEffects", side_effects, _SIDE_EFFECTS))
    if hook.get("failurePolicy") not in _FAILURE_POLICIES:
        causes.append(not_supported(f"{path}.failurePolicy", hook.get("failurePolicy"), _FAILURE_POLICIES))
    if hook.get("matchPolicy") not in _MATCH_POLICIES:
        causes.append(not_supported(f"{path}.matchPolicy", hook.get("matchPolicy"), _MATCH_POLICIES))
    timeout = hook.get("timeoutSeconds")
    if not isinstance(timeout, int) or not 1 <= timeout <= 30:
        causes.append(
            invalid(f"{path}.timeoutSeconds", timeout, "the timeout value must be between 1 and 30 seconds")
        )
    for j, rule in enumerate(hook.get("rules") or []):
        rule_path = f"{path}.rules[{j}]"
        for k, op in enumerate(rule.get("operations") or []):
            if op not in _OPERATIONS:
                causes.append(not_supported(f"{rule_path}.operations[{k}]", op, _OPERATIONS))
        if not rule.get("operations"):
            causes.append(required(f"{rule_path}.operations"))
        for key in ("apiGroups", "apiVersions", "resources"):
            if not rule.get(key):
                causes.append(required(f"{rule_path}.{key}"))
        if rule.get("scope") not in _SCOPES:
            causes.append(not_supported(f"{rule_path}.scope", rule.get("scope"), _SCOPES))
    return causes + _client_config_problems(f"{path}.clientConfig", hook.get("clientConfig"))


def _problems(obj: Obj) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, hook in enumerate(obj.get("webhooks") or []):
        if not isinstance(hook, dict):
            causes.append(invalid(f"webhooks[{i}]", hook, "must be an object"))
            continue
        _default(hook)
        name = str(hook.get("name") or "")
        if name and name in seen:
            causes.append(
                field_cause("FieldValueDuplicate", f"webhooks[{i}].name", f'Duplicate value: "{name}"')
            )
        seen.add(name)
        causes += _hook_problems(f"webhooks[{i}]", hook)
    return causes


class ValidatingWebhookConfigurationHooks(NoHooks):
    def prepare_create(self, core: ApiCore, rt: ResourceType, obj: Obj) -> list[Cause]:
        return _problems(obj)

    def prepare_update(
        self, core: ApiCore, rt: ResourceType, old: Obj, new: Obj, subresource: str | None
    ) -> list[Cause]:
        return _problems(new)
