"""CRD structural schemas: pruning, defaulting and validation of custom resources.

This is what makes a misspelled or mistyped field in a RayCluster fail at ``kubectl apply`` time
rather than deep inside the operator. The order and error wording follow
``apiextensions-apiserver``: unknown fields are pruned (unless
``x-kubernetes-preserve-unknown-fields``), defaults are applied, then the OpenAPI rules are
checked and reported as field errors (``spec.x: Invalid value: "integer": spec.x in body must be
of type string: "integer"``). ``x-kubernetes-list-type: set|map`` uniqueness is checked. CEL rules
(``x-kubernetes-validations``) in the subset :mod:`.cel` understands are evaluated, transition
rules (``oldSelf``) on update only, against the old value at the same path (not inside lists);
other rules are skipped (see docs/envtest.md).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from .cel import ABSENT, Rule, Unsupported, compile_rule
from .errors import Cause, field_cause
from .meta import clone

__all__ = ["Schema"]

_ROOT_KEEP = ("apiVersion", "kind", "metadata")


def _go_value(value: Any) -> str:
    if isinstance(value, str):
        return orjson.dumps(value).decode()
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, float) else str(value)
    return orjson.dumps(value).decode()


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _type_ok(expected: str, value: Any) -> bool:
    actual = _json_type(value)
    if expected == "number":
        return actual in ("integer", "number")
    if expected == "integer" and isinstance(value, float) and value.is_integer():
        return False
    return actual == expected


class Schema:
    """One version's ``openAPIV3Schema``; ``admit`` mutates the object (prune + default)."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self._patterns: dict[str, re.Pattern[str]] = {}
        self._rules: dict[str, Rule | None] = {}

    # -- public -----------------------------------------------------------------------------------

    def admit(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
        """Prune and default ``obj`` in place and return the validation failures (empty if valid)."""
        self.pruned: list[str] = []
        props = self.raw.get("properties") or {}
        if not self.raw.get("x-kubernetes-preserve-unknown-fields"):
            for key in list(obj):
                if key not in props and key not in _ROOT_KEEP:
                    self.pruned.append(key)
                    del obj[key]
        causes: list[Cause] = []
        for key, sub in props.items():
            if key in _ROOT_KEEP:
                continue
            if key not in obj and "default" in sub:
                obj[key] = clone(sub["default"])
            if key in obj:
                obj[key] = self._walk(sub, obj[key], key, causes, _child(old, key))
                if obj[key] is _DROP:
                    del obj[key]
        for req in self.raw.get("required") or []:
            if req not in obj and req not in _ROOT_KEEP:
                causes.append(field_cause("FieldValueRequired", req, "Required value"))
        return causes

    def pruned_fields(self) -> list[str]:
        return list(getattr(self, "pruned", []))

    # -- recursion --------------------------------------------------------------------------------

    def _walk(self, s: dict[str, Any], v: Any, path: str, causes: list[Cause], old: Any = ABSENT) -> Any:
        if v is None:
            if s.get("nullable"):
                return None
            if "default" in s:
                v = clone(s["default"])
            else:
                # kube drops nulls of non-nullable fields during pruning/defaulting
                return _DROP
        if s.get("x-kubernetes-int-or-string"):
            if not (isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool))):
                causes.append(self._type_error(path, v, "integer,string"))
                return v
            self._check_scalar(s, v, path, causes)
            self._check_rules(s, v, old, path, causes)
            return v
        stype = s.get("type")
        if stype and not _type_ok(stype, v):
            causes.append(self._type_error(path, v, stype))
            return v
        if isinstance(v, dict):
            self._walk_object(s, v, path, causes, old)
        elif isinstance(v, list):
            items = s.get("items")
            if isinstance(items, dict):
                for i, item in enumerate(list(v)):
                    out = self._walk(items, item, f"{path}[{i}]", causes)
                    v[i] = None if out is _DROP else out
            self._check_array(s, v, path, causes)
        else:
            self._check_scalar(s, v, path, causes)
        if "enum" in s and v not in s["enum"]:
            supported = ", ".join(_go_value(e) for e in s["enum"])
            causes.append(
                field_cause(
                    "FieldValueNotSupported",
                    path,
                    f"Unsupported value: {_go_value(v)}: supported values: {supported}",
                )
            )
        self._check_rules(s, v, old, path, causes)
        return v

    def _rule(self, text: str) -> Rule | None:
        if text not in self._rules:
            try:
                self._rules[text] = compile_rule(text)
            except Unsupported:
                self._rules[text] = None
        return self._rules[text]

    def _check_rules(self, s: dict[str, Any], v: Any, old: Any, path: str, causes: list[Cause]) -> None:
        """``x-kubernetes-validations``: kube reports a failed rule as ``Invalid value: "<type>"``."""
        for item in s.get("x-kubernetes-validations") or []:
            rule = self._rule(str(item.get("rule") or ""))
            if rule is None or (rule.transition and old is ABSENT):
                continue
            try:
                ok = rule.evaluate(v, old)
            except Unsupported:
                continue
            if not ok:
                message = item.get("message") or f"failed rule: {rule.text}"
                stype = s.get("type") or _json_type(v)
                causes.append(field_cause("FieldValueInvalid", path, f'Invalid value: "{stype}": {message}'))

    def _walk_object(
        self, s: dict[str, Any], v: dict[str, Any], path: str, causes: list[Cause], old: Any = ABSENT
    ) -> None:
        props: dict[str, Any] = s.get("properties") or {}
        addl = s.get("additionalProperties")
        preserve = bool(s.get("x-kubernetes-preserve-unknown-fields"))
        embedded = bool(s.get("x-kubernetes-embedded-resource"))
        for key in list(v):
            if key in props:
                continue
            if embedded and key in _ROOT_KEEP:
                continue
            if isinstance(addl, dict):
                out = self._walk(addl, v[key], f"{path}.{key}", causes, _child(old, key))
                if out is _DROP:
                    del v[key]
                else:
                    v[key] = out
            elif not preserve and addl is not True:
                self.pruned.append(f"{path}.{key}")
                del v[key]
        for key, sub in props.items():
            if key not in v and "default" in sub:
                v[key] = clone(sub["default"])
            if key in v:
                out = self._walk(sub, v[key], f"{path}.{key}", causes, _child(old, key))
                if out is _DROP:
                    del v[key]
                else:
                    v[key] = out
        for req in s.get("required") or []:
            if req not in v:
                causes.append(field_cause("FieldValueRequired", f"{path}.{req}", "Required value"))
        if "maxProperties" in s and len(v) > s["maxProperties"]:
            causes.append(
                field_cause(
                    "FieldValueTooMany",
                    path,
                    f"Too many: {len(v)}: must have at most {s['maxProperties']} items",
                )
            )
        if "minProperties" in s and len(v) < s["minProperties"]:
            causes.append(
                self._invalid(path, v, f"{path} in body should have at least {s['minProperties']} properties")
            )

    def _check_array(self, s: dict[str, Any], v: list[Any], path: str, causes: list[Cause]) -> None:
        if "maxItems" in s and len(v) > s["maxItems"]:
            causes.append(
                field_cause(
                    "FieldValueTooMany", path, f"Too many: {len(v)}: must have at most {s['maxItems']} items"
                )
            )
        if "minItems" in s and len(v) < s["minItems"]:
            causes.append(
                self._invalid(path, len(v), f"{path} in body should have at least {s['minItems']} items")
            )
        list_type = s.get("x-kubernetes-list-type")
        if list_type == "set":
            seen: list[Any] = []
            for i, item in enumerate(v):
                if item in seen:
                    causes.append(
                        field_cause(
                            "FieldValueDuplicate", f"{path}[{i}]", f"Duplicate value: {_go_value(item)}"
                        )
                    )
                else:
                    seen.append(item)
        elif list_type == "map":
            keys = list(s.get("x-kubernetes-list-map-keys") or [])
            seen_keys: set[bytes] = set()
            for i, item in enumerate(v):
                if not isinstance(item, dict):
                    continue
                ident = {k: item.get(k) for k in keys if item.get(k) is not None}
                encoded = orjson.dumps(ident, option=orjson.OPT_SORT_KEYS)
                if encoded in seen_keys:
                    causes.append(
                        field_cause(
                            "FieldValueDuplicate",
                            f"{path}[{i}]",
                            f"Duplicate value: map[string]interface {{}}{encoded.decode()}",
                        )
                    )
                else:
                    seen_keys.add(encoded)

    def _check_scalar(self, s: dict[str, Any], v: Any, path: str, causes: list[Cause]) -> None:
        if isinstance(v, str):
            if "maxLength" in s and len(v) > s["maxLength"]:
                causes.append(
                    field_cause(
                        "FieldValueTooLong", path, f"Too long: may not be more than {s['maxLength']} bytes"
                    )
                )
            if "minLength" in s and len(v) < s["minLength"]:
                causes.append(
                    self._invalid(path, v, f"{path} in body should be at least {s['minLength']} chars long")
                )
            pattern = s.get("pattern")
            if pattern:
                rx = self._patterns.get(pattern)
                if rx is None:
                    rx = self._patterns[pattern] = re.compile(pattern)
                if not rx.search(v):
                    causes.append(self._invalid(path, v, f"{path} in body should match '{pattern}'"))
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            if "minimum" in s:
                m = s["minimum"]
                if s.get("exclusiveMinimum") and v <= m:
                    causes.append(self._invalid(path, v, f"{path} in body should be greater than {m}"))
                elif v < m:
                    causes.append(
                        self._invalid(path, v, f"{path} in body should be greater than or equal to {m}")
                    )
            if "maximum" in s:
                m = s["maximum"]
                if s.get("exclusiveMaximum") and v >= m:
                    causes.append(self._invalid(path, v, f"{path} in body should be less than {m}"))
                elif v > m:
                    causes.append(
                        self._invalid(path, v, f"{path} in body should be less than or equal to {m}")
                    )
            if "multipleOf" in s and s["multipleOf"] and (v / s["multipleOf"]) % 1 != 0:
                causes.append(
                    self._invalid(path, v, f"{path} in body should be a multiple of {s['multipleOf']}")
                )

    @staticmethod
    def _invalid(path: str, v: Any, detail: str) -> Cause:
        return field_cause("FieldValueInvalid", path, f"Invalid value: {_go_value(v)}: {detail}")

    @staticmethod
    def _type_error(path: str, v: Any, expected: str) -> Cause:
        actual = _json_type(v)
        return field_cause(
            "FieldValueTypeInvalid",
            path,
            f'Invalid value: "{actual}": {path} in body must be of type {expected}: "{actual}"',
        )


def _child(old: Any, key: str) -> Any:
    """The old object's value at ``key`` (ABSENT on create or when it was not set)."""
    if isinstance(old, dict) and key in old:
        return old[key]
    return ABSENT


class _Drop:
    """Marker for "remove this key" (a null in a non-nullable field without a default)."""


_DROP: Any = _Drop()
