"""CRD ``x-kubernetes-validations`` in the built-in server: the rule shapes our CRDs carry, judged
as kube-apiserver judges them (transition rules on update only), anything else skipped."""

from __future__ import annotations

from typing import Any

import pytest

from kuberay_py.envtest.apiserver.cel import Unsupported, compile_rule
from kuberay_py.envtest.apiserver.schema import Schema

MANAGED_BY = {
    "type": "string",
    "x-kubernetes-validations": [
        {"message": "the managedBy field is immutable", "rule": "self == oldSelf"},
        {"message": "must be a or b", "rule": "self in ['a', 'b']"},
    ],
}
STRATEGY = {
    "type": "object",
    "properties": {
        "onSuccess": {"type": "object"},
        "onFailure": {"type": "object"},
        "rules": {"type": "array"},
    },
    "x-kubernetes-validations": [
        {"rule": "!((has(self.onSuccess) || has(self.onFailure)) && has(self.rules))"},
    ],
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"spec": {"type": "object", "properties": {"managedBy": MANAGED_BY, "strategy": STRATEGY}}},
}


def admit(spec: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    causes = Schema(SCHEMA).admit({"spec": spec}, None if old is None else {"spec": old})
    return [f"{c['field']}: {c['message']}" for c in causes]


def test_a_value_outside_the_list_is_rejected_with_kubes_wording() -> None:
    assert admit({"managedBy": "a"}) == []
    assert admit({"managedBy": "c"}) == ['spec.managedBy: Invalid value: "string": must be a or b']


def test_immutability_is_checked_on_update_only() -> None:
    assert admit({"managedBy": "b"}) == []  # create: no old value, the transition rule is skipped
    assert admit({"managedBy": "b"}, old={"managedBy": "a"}) == [
        'spec.managedBy: Invalid value: "string": the managedBy field is immutable'
    ]
    assert admit({"managedBy": "a"}, old={"managedBy": "a"}) == []
    assert admit({"managedBy": "a"}, old={}) == []  # newly set: there is no old value to compare


def test_has_and_boolean_operators_without_a_message_report_the_rule() -> None:
    assert admit({"strategy": {"onSuccess": {}}}) == []
    assert admit({"strategy": {"rules": []}}) == []
    assert admit({"strategy": {"onSuccess": {}, "rules": []}}) == [
        'spec.strategy: Invalid value: "object": failed rule: '
        "!((has(self.onSuccess) || has(self.onFailure)) && has(self.rules))"
    ]


@pytest.mark.parametrize("rule", ["self.size() > 0", "self.all(x, x > 0)", "other == 1", "self +"])
def test_cel_beyond_the_subset_is_not_judged(rule: str) -> None:
    with pytest.raises(Unsupported):
        compile_rule(rule)
