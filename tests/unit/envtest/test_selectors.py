from __future__ import annotations

import pytest

from kuberay_py.envtest.apiserver.errors import StatusError
from kuberay_py.envtest.apiserver.selectors import parse_field_selector, parse_label_selector


def obj(labels: dict[str, str]) -> dict[str, object]:
    return {"metadata": {"labels": labels}}


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("", {}, True),
        ("a=b", {"a": "b"}, True),
        ("a=b", {"a": "c"}, False),
        ("a!=b", {}, True),
        ("a notin (b)", {}, True),
        ("a in (b)", {}, False),
        ("a,!c", {"a": "1"}, True),
        ("a,!c", {"a": "1", "c": "2"}, False),
        (
            "ray.io/node-type=head, ray.io/cluster in (x,y)",
            {"ray.io/node-type": "head", "ray.io/cluster": "y"},
            True,
        ),
        ("a=", {"a": ""}, True),
    ],
)
def test_label_selector_matching(selector: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_label_selector(selector).matches(obj(labels)) is expected


@pytest.mark.parametrize("bad", ["a in b", "a in (b", "=b", "a b", "a in (b,c) d", "-a=b", "a=b c"])
def test_label_selector_errors_are_bad_requests(bad: str) -> None:
    with pytest.raises(StatusError) as e:
        parse_label_selector(bad)
    assert e.value.code == 400 and e.value.reason == "BadRequest"


def test_field_selector_only_allows_known_fields() -> None:
    sel = parse_field_selector("metadata.name=a,status.phase!=Running", ("status.phase",), "", "v1")
    assert sel.matches({"metadata": {"name": "a"}, "status": {"phase": "Pending"}})
    assert not sel.matches({"metadata": {"name": "a"}, "status": {"phase": "Running"}})
    with pytest.raises(StatusError) as e:
        parse_field_selector("spec.foo=a", (), "", "v1")
    assert e.value.message == "field label not supported: spec.foo"
    with pytest.raises(StatusError) as e:
        parse_field_selector("spec.foo=a", (), "Widget", "x/v1")
    assert '"spec.foo" is not a known field selector' in e.value.message
