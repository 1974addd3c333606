"""Go ``encoding/json`` rules the encoder must follow (docs/reference/spec-hash.md §4), one rule per test."""

from __future__ import annotations

import pytest

from controllers.spechash import GoJsonError, default_encoder, go_string

CORE = "k8s.io/api/core/v1."


def enc(value: object, type_name: str) -> str:
    return default_encoder().encode(value, CORE + type_name).decode()


def test_keys_follow_struct_declaration_order_not_input_order() -> None:
    container = {"resources": {}, "image": "i", "name": "n", "command": ["a"]}
    assert enc(container, "Container") == '{"name":"n","image":"i","command":["a"],"resources":{}}'


def test_non_pointer_struct_is_never_omitted_and_nil_without_omitempty_is_null() -> None:
    assert enc({}, "PodTemplateSpec") == '{"metadata":{},"spec":{"containers":null}}'


def test_omitempty_drops_zero_scalars_and_empty_collections_but_keeps_pointers_to_zero() -> None:
    port = {"containerPort": 80, "hostPort": 0, "name": "", "protocol": "TCP"}
    assert enc(port, "ContainerPort") == '{"containerPort":80,"protocol":"TCP"}'
    ctx = {"runAsNonRoot": False, "runAsUser": 0, "capabilities": {"add": []}}
    assert enc(ctx, "SecurityContext") == '{"capabilities":{},"runAsUser":0,"runAsNonRoot":false}'


def test_inline_struct_fields_are_spliced_in_place() -> None:
    probe = {"periodSeconds": 5, "exec": {"command": ["x"]}}
    assert enc(probe, "Probe") == '{"exec":{"command":["x"]},"periodSeconds":5}'
    volume = {"emptyDir": {}, "name": "v"}
    assert enc(volume, "Volume") == '{"name":"v","emptyDir":{}}'


def test_map_keys_are_sorted_bytewise() -> None:
    keys = ["é", "b", "a.b", "a-b", "a", "_", "B", "9", "10"]
    got = enc({"containers": [], "nodeSelector": {k: "v" for k in keys}}, "PodSpec")
    order = '"10":"v","9":"v","B":"v","_":"v","a":"v","a-b":"v","a.b":"v","b":"v","é":"v"'
    assert got == '{"containers":[],"nodeSelector":{' + order + "}}"


@pytest.mark.parametrize(
    ("text", "literal"),
    [
        ('a"b\\c', '"a\\"b\\\\c"'),
        ("\n\r\t\b\f", '"\\n\\r\\t\\b\\f"'),
        ("\x00\x1f", '"\\u0000\\u001f"'),
        ("<a&b>", '"\\u003ca\\u0026b\\u003e"'),
        ("\u2028\u2029", '"\\u2028\\u2029"'),
        ("é/\x7f€", '"é/\x7f€"'),
        ("\ud800", '"\\ufffd"'),
    ],
)
def test_strings_are_escaped_html_safe(text: str, literal: str) -> None:
    assert go_string(text) == literal


def test_int_or_string_keeps_its_kind() -> None:
    assert enc({"port": 8000}, "TCPSocketAction") == '{"port":8000}'
    assert enc({"port": "8000"}, "TCPSocketAction") == '{"port":"8000"}'
    assert enc({}, "TCPSocketAction") == '{"port":0}'


def test_quantities_are_reencoded_including_a_zero_divisor() -> None:
    assert enc({"limits": {"cpu": "1000m", "memory": 1}}, "ResourceRequirements") == (
        '{"limits":{"cpu":"1","memory":"1"}}'
    )
    divisor = enc({"resource": "limits.cpu"}, "ResourceFieldSelector")
    assert divisor == '{"resource":"limits.cpu","divisor":"0"}'
    assert enc({"sizeLimit": "1Gi"}, "EmptyDirVolumeSource") == '{"sizeLimit":"1Gi"}'


def test_times_are_utc_to_the_second_and_a_zero_creation_timestamp_is_omitted() -> None:
    meta = "k8s.io/apimachinery/pkg/apis/meta/v1."
    when = {"lastTransitionTime": "2026-01-02T03:04:05.678+02:00"}
    got = default_encoder().encode(when, meta + "Condition").decode()
    assert (
        got == '{"type":"","status":"","lastTransitionTime":"2026-01-02T01:04:05Z","reason":"","message":""}'
    )
    assert default_encoder().encode({"creationTimestamp": None}, meta + "ObjectMeta") == b"{}"


def test_unknown_keys_are_ignored_like_go_decoding() -> None:
    assert enc({"name": "n", "bogus": 1}, "EnvVar") == '{"name":"n"}'


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ({"name": 5}, "$.name"),
        ({"containers": {}}, "$.containers"),
        ({"containers": [{"name": "c", "resources": {"limits": {"cpu": "lots"}}}]}, "$.containers[0]"),
        ({"containers": [], "hostNetwork": "yes"}, "$.hostNetwork"),
        ({"containers": [], "priority": True}, "$.priority"),
    ],
)
def test_values_go_could_not_decode_are_clear_errors(value: dict, where: str) -> None:
    type_name = "EnvVar" if "name" in value else "PodSpec"
    with pytest.raises(GoJsonError, match=where.replace("$", r"\$").replace("[", r"\[")):
        enc(value, type_name)
