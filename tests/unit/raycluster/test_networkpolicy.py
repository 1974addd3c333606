"""The NetworkPolicy builders for every ``networkPolicy`` mode and override.

Derived from KubeRay v1.7.0's source (``controllers/ray/networkpolicy_controller.go`` and its
unit test): the expected objects below are written from what that code builds, not from a
golden run. The DenyAll sample itself is reproduced field by field by the golden test.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controllers.api.gates import ClusterGates
from controllers.api.validation import validate_raycluster
from controllers.raycluster.networkpolicy import (
    build_head_policy,
    build_policies,
    build_worker_policy,
    normalised_spec,
    same_policy,
)

DNS = {
    "to": [
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
        }
    ],
    "ports": [{"port": 53, "protocol": "UDP"}],
}
HTTPS = {"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"port": 443}]}
PROMETHEUS = {"from": [{"namespaceSelector": {"matchLabels": {"team": "obs"}}}], "ports": [{"port": 8080}]}
SAME = {"podSelector": {"matchLabels": {"ray.io/cluster": "c"}}}


def cluster(policy: dict[str, Any] | None, *, groups: tuple[str, ...] = ("small", "big")) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "headGroupSpec": {
            "rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}},
        },
        "workerGroupSpecs": [
            {
                "groupName": g,
                "minReplicas": 0,
                "maxReplicas": 1,
                "rayStartParams": {},
                "template": {"spec": {"containers": [{"name": "w", "image": "rayproject/ray:2.52.0"}]}},
            }
            for g in groups
        ],
    }
    if policy is not None:
        spec["networkPolicy"] = policy
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "c", "namespace": "ns", "uid": "u-1", "generation": 1},
        "spec": spec,
    }


def test_deny_all_head_restricts_both_directions_and_appends_the_users_rules() -> None:
    policy = build_head_policy(
        cluster({"mode": "DenyAll", "head": {"ingressRules": [PROMETHEUS], "egressRules": [DNS]}})
    )
    assert policy["metadata"] == {
        "name": "c-head",
        "namespace": "ns",
        "labels": {
            "ray.io/cluster": "c",
            "ray.io/group": "headgroup",
            "app.kubernetes.io/name": "kuberay",
            "app.kubernetes.io/created-by": "kuberay-operator",
        },
        "ownerReferences": [
            {
                "apiVersion": "ray.io/v1",
                "kind": "RayCluster",
                "name": "c",
                "uid": "u-1",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    assert policy["spec"] == {
        "podSelector": {"matchLabels": {"ray.io/cluster": "c", "ray.io/node-type": "head"}},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": [SAME]}, PROMETHEUS],
        "egress": [{"to": [SAME]}, DNS],
    }


def test_mode_defaults_to_deny_all() -> None:
    assert build_head_policy(cluster({}))["spec"]["policyTypes"] == ["Ingress", "Egress"]


def test_deny_all_ingress_leaves_egress_out() -> None:
    c = cluster({"mode": "DenyAllIngress"})
    for policy in build_policies(c):
        assert policy["spec"]["policyTypes"] == ["Ingress"]
        assert "egress" not in policy["spec"]
        assert policy["spec"]["ingress"] == [{"from": [SAME]}]


def test_deny_all_egress_leaves_ingress_out() -> None:
    c = cluster({"mode": "DenyAllEgress", "worker": {"egressRules": [HTTPS]}})
    head, *workers = build_policies(c)
    assert head["spec"] == {
        "podSelector": {"matchLabels": {"ray.io/cluster": "c", "ray.io/node-type": "head"}},
        "policyTypes": ["Egress"],
        "egress": [{"to": [SAME]}],
    }
    for worker in workers:
        assert worker["spec"]["policyTypes"] == ["Egress"]
        assert worker["spec"]["egress"] == [{"to": [SAME]}, HTTPS]


def test_one_policy_per_worker_group_selecting_only_that_group() -> None:
    names = [p["metadata"]["name"] for p in build_policies(cluster({}))]
    assert names == ["c-head", "c-workers-small", "c-workers-big"]
    worker = build_worker_policy(cluster({}), "big")
    assert worker["spec"]["podSelector"] == {
        "matchLabels": {"ray.io/cluster": "c", "ray.io/node-type": "worker", "ray.io/group": "big"}
    }
    assert worker["metadata"]["labels"]["ray.io/group"] == "big"


def test_a_group_entry_replaces_the_worker_rules_for_that_group_only() -> None:
    c = cluster(
        {
            "worker": {"egressRules": [DNS]},
            "workerGroups": [{"groupName": "big", "egressRules": [HTTPS]}],
        }
    )
    assert build_worker_policy(c, "big")["spec"]["egress"] == [{"to": [SAME]}, HTTPS]
    assert build_worker_policy(c, "small")["spec"]["egress"] == [{"to": [SAME]}, DNS]


def test_head_and_worker_rules_do_not_leak_into_each_other() -> None:
    c = cluster({"head": {"ingressRules": [PROMETHEUS]}, "worker": {"egressRules": [HTTPS]}})
    assert build_head_policy(c)["spec"]["egress"] == [{"to": [SAME]}]
    assert build_worker_policy(c, "small")["spec"]["ingress"] == [{"from": [SAME]}]


def _job_owned(mode: str, dashboard_port: str | None = None) -> dict[str, Any]:
    c = cluster({})
    c["metadata"]["labels"] = {"ray.io/job-submission-mode": mode}
    c["metadata"]["ownerReferences"] = [
        {"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "job", "uid": "j", "controller": True}
    ]
    if dashboard_port is not None:
        c["spec"]["headGroupSpec"]["rayStartParams"]["dashboard-port"] = dashboard_port
    return c


@pytest.mark.parametrize(("port", "expected"), [(None, 8265), ("9265", 9265), ("not-a-port", 8265)])
def test_k8s_job_mode_submitter_may_reach_the_dashboard(port: str | None, expected: int) -> None:
    ingress = build_head_policy(_job_owned("K8sJobMode", port))["spec"]["ingress"]
    assert ingress == [
        {"from": [SAME]},
        {
            "from": [
                {
                    "podSelector": {
                        "matchLabels": {
                            "ray.io/originated-from-cr-name": "job",
                            "ray.io/originated-from-crd": "RayJob",
                        }
                    }
                }
            ],
            "ports": [{"protocol": "TCP", "port": expected}],
        },
    ]


def test_other_submission_modes_get_no_submitter_rule() -> None:
    assert build_head_policy(_job_owned("SidecarMode"))["spec"]["ingress"] == [{"from": [SAME]}]


def test_a_missing_protocol_is_tcp_so_a_stored_policy_compares_equal() -> None:
    desired = build_head_policy(cluster({"head": {"ingressRules": [PROMETHEUS]}}))
    stored = copy.deepcopy(desired)
    stored["spec"] = normalised_spec(stored["spec"])
    assert stored["spec"]["ingress"][1]["ports"] == [{"port": 8080, "protocol": "TCP"}]
    assert desired["spec"]["ingress"][1]["ports"] == [{"port": 8080}]  # the input is not changed
    assert same_policy(stored, desired)
    stored["metadata"]["labels"]["ray.io/group"] = "other"
    assert not same_policy(stored, desired)


# -- validation (KubeRay's utils/validation.go validateNetworkPolicy) ------------------------------

ON = ClusterGates(network_policy=True)


def _messages(c: dict[str, Any], gates: ClusterGates = ON) -> list[str]:
    return [e.message for e in validate_raycluster(c, gates=gates)]


def test_gate_off_is_an_invalid_spec() -> None:
    assert _messages(cluster({"mode": "DenyAll"}), ClusterGates()) == [
        "spec.networkPolicy requires the RayClusterNetworkPolicy feature gate to be enabled"
    ]
    assert _messages(cluster({"mode": "DenyAll"})) == []


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        (
            {"mode": "DenyAllEgress", "head": {"ingressRules": [PROMETHEUS]}},
            'networkPolicy.head.ingressRules cannot be set when mode is "DenyAllEgress" '
            "(ingress is not restricted)",
        ),
        (
            {"mode": "DenyAllIngress", "worker": {"egressRules": [DNS]}},
            'networkPolicy.worker.egressRules cannot be set when mode is "DenyAllIngress" '
            "(egress is not restricted)",
        ),
        (
            {"mode": "DenyAllIngress", "workerGroups": [{"groupName": "big", "egressRules": [DNS]}]},
            'networkPolicy.workerGroups["big"].egressRules cannot be set when mode is "DenyAllIngress" '
            "(egress is not restricted)",
        ),
        (
            {"workerGroups": [{"groupName": "nope"}]},
            'networkPolicy.workerGroups["nope"] does not match any group name in workerGroupSpecs',
        ),
    ],
)
def test_inconsistent_policy_is_rejected(policy: dict[str, Any], message: str) -> None:
    assert _messages(cluster(policy)) == [message]


def test_group_names_must_be_dns_labels_when_a_policy_is_set() -> None:
    c = cluster({}, groups=("Big",))
    [message] = _messages(c)
    assert message.startswith(
        'worker group name "Big" must be a valid DNS1123 label when networkPolicy is enabled'
    )
    c["spec"].pop("networkPolicy")
    assert _messages(c) == []


def test_a_rayservice_cluster_config_follows_the_same_gate() -> None:
    from controllers.api.validation import validate_rayservice

    service = {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "s", "namespace": "ns"},
        "spec": {"rayClusterConfig": cluster({"mode": "DenyAll"})["spec"]},
    }
    assert [e.message for e in validate_rayservice(service)] == [
        "spec.networkPolicy requires the RayClusterNetworkPolicy feature gate to be enabled"
    ]
    assert validate_rayservice(service, gates=ON) == []


def test_a_rayjob_cluster_spec_follows_the_same_gate() -> None:
    from controllers.api.job_validation import validate_rayjob

    job = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {"entrypoint": "python x.py", "rayClusterSpec": cluster({"mode": "DenyAll"})["spec"]},
    }
    [error] = validate_rayjob(job)
    assert error.message.endswith(
        "spec.networkPolicy requires the RayClusterNetworkPolicy feature gate to be enabled"
    )
    assert validate_rayjob(job, gates=ON) == []
