"""The head Route's name and labels (derived from v1.7.0 source: common/openshift.go,
utils.CheckRouteName / CheckLabel)."""

from __future__ import annotations

from controllers.raycluster.route import build_route, route_name


def _cluster(name: str, ns: str = "default") -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": ns, "uid": "u"}, "spec": {"headGroupSpec": {}}}


def test_route_name_leaves_room_for_the_namespace_in_the_host() -> None:
    assert route_name(_cluster("rc")) == "rc-head-route"
    long = "a" * 50
    name = route_name(_cluster(long, "team-ns"))
    assert len(name) == 51 - len("team-ns")
    assert name == (long + "-head-route")[:44]


def test_route_defaults_to_the_dashboard_port_and_no_annotations() -> None:
    route = build_route(_cluster("rc"))
    assert route["spec"]["port"] == {"targetPort": 8265}
    assert "annotations" not in route["metadata"]
    assert route["metadata"]["labels"]["ray.io/identifier"] == "rc-head"
