"""Object metadata validation with apimachinery's error wording.

Controllers generate names from user input (``<cluster>-head-svc``); a name that a real server
rejects must be rejected here too, or a bug only shows up in production.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from .errors import Cause, field_cause

__all__ = [
    "field_cause",
    "forbidden",
    "invalid",
    "not_supported",
    "required",
    "too_long",
    "validate_metadata",
    "validate_name",
]

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


def _quote(value: Any) -> str:
    return orjson.dumps(value).decode() if isinstance(value, str) else str(value)


def invalid(path: str, value: Any, detail: str) -> Cause:
    return field_cause("FieldValueInvalid", path, f"Invalid value: {_quote(value)}: {detail}")


def not_supported(path: str, value: Any, supported: tuple[str, ...]) -> Cause:
    values = ", ".join(f'"{v}"' for v in supported)
    return field_cause(
        "FieldValueNotSupported", path, f'Unsupported value: "{value}": supported values: {values}'
    )


def required(path: str, detail: str = "") -> Cause:
    return field_cause("FieldValueRequired", path, "Required value" + (f": {detail}" if detail else ""))


def forbidden(path: str, detail: str) -> Cause:
    return field_cause("FieldValueForbidden", path, f"Forbidden: {detail}")


def too_long(path: str, limit: int) -> Cause:
    return field_cause("FieldValueTooLong", path, f"Too long: may not be more than {limit} bytes")


def name_problems(name: str, rule: str, *, prefix: bool = False) -> list[str]:
    """The messages apimachinery's ``NameIsDNS*`` functions return (empty when valid)."""
    if prefix:
        # generateName prefixes are checked with a trailing "-" trimmed, as ValidateObjectMeta does.
        name = name[:-1] if name.endswith("-") else name
        name = name + "a" if not name else name
    if rule == "path":
        if name in (".", ".."):
            return [f"may not be '{name}'"]
        bad = [c for c in ("/", "%") if c in name]
        return [f"may not contain '{c}'" for c in bad]
    if rule == "label":
        out = []
        if len(name) > 63:
            out.append("must be no more than 63 characters")
        if not _DNS1123_LABEL.match(name):
            # apimachinery's content.IsDNS1123Label: a valid subdomain can only be wrong by its dots.
            out.append("must not contain dots" if _DNS1123_SUBDOMAIN.match(name) else _LABEL_MSG)
        return out
    if rule == "dns1035":
        out = []
        if len(name) > 63:
            out.append("must be no more than 63 characters")
        if not _DNS1035_LABEL.match(name):
            out.append(_DNS1035_MSG)
        return out
    out = []
    if len(name) > 253:
        out.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN.match(name):
        out.append(_SUBDOMAIN_MSG)
    return out


def validate_name(name: str, rule: str) -> list[Cause]:
    return [invalid("metadata.name", name, msg) for msg in name_problems(name, rule)]


def _validate_labels(labels: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if not isinstance(labels, dict):
        return causes
    for k, v in labels.items():
        causes.extend(_validate_qualified_key(k, f"{path}"))
        if not isinstance(v, str) or len(v) > 63 or not _LABEL_VALUE.match(v):
            causes.append(
                invalid(
                    f"{path}",
                    v,
                    "a valid label must be an empty string or consist of "
                    "alphanumeric characters, '-', '_' or '.', and must start and end with an "
                    "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex "
                    "used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                )
            )
    return causes


def _validate_qualified_key(key: str, path: str) -> list[Cause]:
    name = key
    if "/" in key:
        pfx, name = key.split("/", 1)
        if not pfx or len(pfx) > 253 or not _DNS1123_SUBDOMAIN.match(pfx):
            return [invalid(path, key, "prefix part " + _SUBDOMAIN_MSG)]
    if not name or len(name) > 63 or not _QUALIFIED_NAME.match(name):
        return [
            invalid(
                path,
                key,
                "name part must consist of alphanumeric characters, '-', '_' or '.', and "
                "must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
                "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            )
        ]
    return []


def validate_metadata(meta: dict[str, Any], rule: str, *, creating: bool) -> list[Cause]:
    causes: list[Cause] = []
    name = meta.get("name")
    if creating and not name and not meta.get("generateName"):
        causes.append(required("metadata.name", "name or generateName is required"))
    elif name:
        causes.extend(validate_name(name, rule))
    gen = meta.get("generateName")
    if creating and gen and not name:
        for msg in name_problems(gen, rule, prefix=True):
            causes.append(invalid("metadata.generateName", gen, msg))
    causes.extend(_validate_labels(meta.get("labels"), "metadata.labels"))
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        for k in annotations:
            causes.extend(_validate_qualified_key(k, "metadata.annotations"))
        if len(orjson.dumps(annotations)) > 256 * 1024:
            causes.append(too_long("metadata.annotations", 256 * 1024))
    return causes
