"""The kube-apiserver flags the built-in server takes to serve an off-by-default group."""

from __future__ import annotations

import pytest

from kuberay_py.envtest.apiserver.scheduling import optional_types

RUNTIME = "--runtime-config=scheduling.k8s.io/v1alpha2=true"


def test_the_group_needs_its_runtime_config_and_its_feature_gate() -> None:
    types = optional_types([RUNTIME, "--feature-gates=GenericWorkload=true"])
    assert [(t.api_version, t.kind, t.status_subresource) for t in types] == [
        ("scheduling.k8s.io/v1alpha2", "Workload", False),
        ("scheduling.k8s.io/v1alpha2", "PodGroup", True),
    ]
    assert optional_types([RUNTIME]) == ()  # the gate is off by default
    assert optional_types([RUNTIME.replace("true", "false"), "--feature-gates=GenericWorkload=true"]) == ()
    assert optional_types([]) == ()


def test_flags_it_cannot_honour_are_refused() -> None:
    with pytest.raises(ValueError, match="does not implement the kube-apiserver flag '--v=4'"):
        optional_types(["--v=4"])
    with pytest.raises(ValueError, match="cannot serve --runtime-config 'batch/v2alpha1'"):
        optional_types(["--runtime-config=batch/v2alpha1=true"])
