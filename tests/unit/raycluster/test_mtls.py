"""``tlsOptions``: what the Pods get, the PKI objects, and validation.

Derived from KubeRay v1.7.0's source (``common/pod.go`` ``configureTLS``/``SetContainerTLSConfig``,
``raycluster_mtls_controller.go``, ``utils/validation.go`` ``validateTLSOptions``), marked as
derived: there is no golden run with cert-manager installed.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from controllers.api.gates import ClusterGates
from controllers.api.validation import validate_raycluster
from controllers.raycluster.mtls_pki import build_pki
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.pod import build_head_pod, build_worker_pod

ON = dataclasses.replace(RayClusterOptions(), gates=ClusterGates(mtls=True))
TLS_ENV = ["RAY_USE_TLS", "RAY_TLS_SERVER_CERT", "RAY_TLS_SERVER_KEY", "RAY_TLS_CA_CERT"]
MOUNT = {"name": "ray-tls", "mountPath": "/etc/ray/tls", "readOnly": True}


def cluster(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "c", "namespace": "ns", "uid": "0123456789abcdef"},
        "spec": {
            "tlsOptions": {"enabled": True},
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {
                    "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}
                },
            },
            "workerGroupSpecs": [
                {
                    "groupName": "g",
                    "minReplicas": 0,
                    "maxReplicas": 1,
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [{"name": "w", "image": "rayproject/ray:2.52.0"}]}},
                }
            ],
            **spec,
        },
    }


def _tls_env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env") or [] if e["name"] in TLS_ENV}


def test_worker_pod_mounts_its_secret_and_every_ray_container_uses_tls() -> None:
    c = cluster()
    pod = build_worker_pod(c, c["spec"]["workerGroupSpecs"][0], ON)
    spec = pod["spec"]
    assert {"name": "ray-tls", "secret": {"secretName": "ray-worker-secret-c"}} in spec["volumes"]
    ray = spec["containers"][0]
    assert _tls_env(ray) == {
        "RAY_USE_TLS": "1",
        "RAY_TLS_SERVER_CERT": "/etc/ray/tls/tls.crt",
        "RAY_TLS_SERVER_KEY": "/etc/ray/tls/tls.key",
        "RAY_TLS_CA_CERT": "/etc/ray/tls/ca.crt",
    }
    assert MOUNT in ray["volumeMounts"]
    first, wait_gcs = spec["initContainers"]
    assert first["name"] == "wait-for-tls-ip-san" and first["image"] == "rayproject/ray:2.52.0"
    assert first["command"] == ["sh", "-c"] and "IP Address:${POD_IP}" in first["args"][0]
    assert first["volumeMounts"] == [MOUNT]
    assert wait_gcs["name"] == "wait-gcs-ready" and set(_tls_env(wait_gcs)) == set(TLS_ENV)


def test_head_and_autoscaler_use_tls_and_the_users_env_comes_after() -> None:
    c = cluster(enableInTreeAutoscaling=True, autoscalerOptions={"env": [{"name": "X", "value": "1"}]})
    pod = build_head_pod(c, ON)
    assert {"name": "ray-tls", "secret": {"secretName": "ray-head-secret-c"}} in pod["spec"]["volumes"]
    autoscaler = pod["spec"]["containers"][1]
    names = [e["name"] for e in autoscaler["env"]]
    assert names[-5:] == [*TLS_ENV, "X"]
    assert MOUNT in autoscaler["volumeMounts"]
    assert [i["name"] for i in pod["spec"]["initContainers"]] == ["wait-for-tls-ip-san"]


def test_gate_off_or_disabled_adds_nothing() -> None:
    for c, opts in ((cluster(), RayClusterOptions()), (cluster(tlsOptions={"enabled": False}), ON)):
        pod = build_head_pod(c, opts)
        assert not _tls_env(pod["spec"]["containers"][0])
        assert "initContainers" not in pod["spec"]


def test_pki_objects() -> None:
    head_ip, worker_ips = ["10.0.0.2"], ["10.0.0.9", "10.0.0.3", "10.0.0.3", ""]
    issuer, ca, ca_issuer, head, worker = build_pki(cluster(), head_ip, worker_ips, "cluster.local")
    assert (issuer["kind"], issuer["metadata"]["name"], issuer["spec"]) == (
        "Issuer",
        "ray-selfsigned-issuer-c",
        {"selfSigned": {}},
    )
    assert issuer["metadata"]["labels"] == {
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
        "app.kubernetes.io/component": "selfsigned-issuer",
        "ray.io/cluster": "c",
    }
    assert ca["spec"] == {
        "secretName": "c-ca-secret-01234567",
        "isCA": True,
        "commonName": "ray-ca-c",
        "privateKey": {"algorithm": "RSA", "size": 4096},
        "duration": "87600h0m0s",
        "renewBefore": "720h0m0s",
        "usages": ["cert sign", "crl sign"],
        "issuerRef": {"name": "ray-selfsigned-issuer-c", "kind": "Issuer", "group": "cert-manager.io"},
    }
    assert ca_issuer["spec"] == {"ca": {"secretName": "c-ca-secret-01234567"}}
    assert head["spec"]["dnsNames"] == ["c-head-svc.ns.svc.cluster.local", "localhost"]
    assert head["spec"]["ipAddresses"] == ["10.0.0.2", "127.0.0.1"]
    assert worker["spec"]["dnsNames"] == ["localhost"]
    assert worker["spec"]["ipAddresses"] == ["10.0.0.3", "10.0.0.9", "127.0.0.1"]
    assert worker["spec"]["secretName"] == "ray-worker-secret-c"
    assert worker["spec"]["usages"] == ["digital signature", "key encipherment", "server auth", "client auth"]
    assert (head["spec"]["duration"], head["spec"]["renewBefore"]) == ("2160h0m0s", "360h0m0s")
    for obj in (issuer, ca, ca_issuer, head, worker):
        assert obj["metadata"]["ownerReferences"][0]["controller"] is True


def _messages(c: dict[str, Any], gates: ClusterGates = ClusterGates(mtls=True)) -> list[str]:
    return [e.message for e in validate_raycluster(c, gates=gates)]


def test_gate_off_is_an_invalid_spec() -> None:
    assert _messages(cluster(), ClusterGates()) == [
        "spec.tlsOptions requires the RayClusterMTLS feature gate to be enabled"
    ]
    assert _messages(cluster()) == []


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda c: c["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0].update(
                env=[{"name": "RAY_USE_TLS", "value": "0"}]
            ),
            "cannot set RAY_USE_TLS environment variable in head Pod when tlsOptions is set "
            "- the operator manages TLS configuration automatically",
        ),
        (
            lambda c: c["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0].update(
                volumeMounts=[{"name": "certs", "mountPath": "/etc/ray/tls"}]
            ),
            'cannot use volume mount at path "/etc/ray/tls" in worker group "g" when tlsOptions is set '
            "- the operator manages TLS configuration automatically",
        ),
        (
            lambda c: c["spec"].update(
                autoscalerOptions={"env": [{"name": "RAY_TLS_CA_CERT", "value": "x"}]}
            ),
            "cannot set RAY_TLS_CA_CERT environment variable in autoscalerOptions.env "
            "when tlsOptions is set - the operator manages TLS configuration for the autoscaler "
            "automatically",
        ),
        (
            lambda c: c["spec"].update(
                autoscalerOptions={"volumeMounts": [{"name": "ray-tls", "mountPath": "/x"}]}
            ),
            'cannot use volume mount named "ray-tls" in autoscalerOptions.volumeMounts '
            "when tlsOptions is set - the operator manages TLS configuration automatically",
        ),
    ],
)
def test_settings_the_operator_manages_are_rejected(edit: Any, message: str) -> None:
    c = cluster()
    edit(c)
    assert _messages(c) == [message]


def test_disabled_tls_checks_nothing_else() -> None:
    c = cluster(tlsOptions={"enabled": False})
    c["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "RAY_USE_TLS", "value": "1"}
    ]
    assert _messages(c) == []
