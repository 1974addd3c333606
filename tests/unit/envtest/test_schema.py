from __future__ import annotations

from typing import Any

from kuberay_py.envtest.apiserver.schema import Schema

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "groups": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {
                            "name": {"type": "string"},
                            "replicas": {"type": "integer", "default": 0, "format": "int32"},
                        },
                    },
                },
                "opt": {"type": "string", "nullable": True},
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "x-kubernetes-preserve-unknown-fields": True,
                },
                "ratio": {"type": "number", "exclusiveMinimum": True, "minimum": 0},
                "items": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
            },
        }
    },
}


def admit(obj: dict[str, Any]) -> list[dict[str, str]]:
    return Schema(SCHEMA).admit(obj, None)


def test_defaults_inside_list_items_and_pruning() -> None:
    obj: dict[str, Any] = {
        "apiVersion": "x/v1",
        "kind": "K",
        "metadata": {"name": "n", "anything": 1},
        "spec": {"groups": [{"name": "a", "extra": True}], "junk": 1},
    }
    assert admit(obj) == []
    assert obj["spec"] == {"groups": [{"name": "a", "replicas": 0}]}
    assert obj["metadata"] == {"name": "n", "anything": 1}, "metadata is not pruned by the schema"


def test_nullable_and_null_dropping() -> None:
    obj: dict[str, Any] = {"spec": {"opt": None, "groups": None}}
    assert admit(obj) == []
    assert obj["spec"] == {"opt": None}


def test_embedded_resource_keeps_unknown_fields() -> None:
    obj: dict[str, Any] = {"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "spec": {"x": 1}}}}
    assert admit(obj) == []
    assert obj["spec"]["template"]["spec"] == {"x": 1}


def test_messages_follow_kube_wording() -> None:
    causes = admit({"spec": {"groups": [{"replicas": 1.5}], "ratio": 0, "items": ["a", "b", "c"]}})
    messages = {c["field"]: c["message"] for c in causes}
    assert messages["spec.groups[0].name"] == "Required value"
    assert messages["spec.groups[0].replicas"] == (
        'Invalid value: "number": spec.groups[0].replicas in body must be of type integer: "number"'
    )
    assert messages["spec.ratio"] == "Invalid value: 0: spec.ratio in body should be greater than 0"
    assert messages["spec.items"] == "Too many: 3: must have at most 2 items"


def test_list_type_uniqueness() -> None:
    schema = Schema(
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "tags": {
                            "type": "array",
                            "x-kubernetes-list-type": "set",
                            "items": {"type": "string"},
                        },
                        "ports": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["port", "protocol"],
                            "items": {
                                "type": "object",
                                "properties": {
                                    "port": {"type": "integer"},
                                    "protocol": {"type": "string", "default": "TCP"},
                                },
                            },
                        },
                    },
                }
            },
        }
    )
    causes = schema.admit(
        {
            "spec": {
                "tags": ["a", "b", "a"],
                "ports": [{"port": 80}, {"port": 80, "protocol": "UDP"}, {"port": 80, "protocol": "TCP"}],
            }
        },
        None,
    )
    assert {(c["field"], c["reason"]) for c in causes} == {
        ("spec.tags[2]", "FieldValueDuplicate"),
        ("spec.ports[2]", "FieldValueDuplicate"),
    }
