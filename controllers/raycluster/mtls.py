"""mTLS between a cluster's Ray processes (``tlsOptions.enabled``, gate RayClusterMTLS): the Pod side.

As KubeRay v1.7.0 does it, with cert-manager issuing the certificates (the PKI objects are in
:mod:`.mtls_pki`):

* every Pod mounts its node type's certificate Secret (``ray-head-secret-<cluster>`` or
  ``ray-worker-secret-<cluster>``) as the ``ray-tls`` volume;
* the Ray container, the autoscaler and the ``wait-gcs-ready`` init container get
  ``RAY_USE_TLS=1``, ``RAY_TLS_SERVER_CERT``/``_KEY``/``RAY_TLS_CA_CERT`` under ``/etc/ray/tls``
  and that mount read-only (each only where not already there);
* a ``wait-for-tls-ip-san`` init container runs first and waits until cert-manager has put the
  Pod's IP into the certificate, because peers connect by IP and the handshake would fail.

User containers other than these are left alone, and so is the history collector.
"""

from __future__ import annotations

import copy
from typing import Any

from controllers import constants as C
from controllers.common import cluster as common
from controllers.raycluster.options import RayClusterOptions

__all__ = [
    "WAIT_FOR_TLS_IP_SAN",
    "configure_pod",
    "set_container_tls",
    "tls_enabled",
    "tls_secret_name",
]

WAIT_FOR_TLS_IP_SAN = "wait-for-tls-ip-san"
_CERT = f"{C.RAY_TLS_CERT_MOUNT_PATH}/tls.crt"
_SAN_CHECK = (
    'openssl x509 -in "${CERT}" -noout -text 2>/dev/null | grep -qE "IP Address:${POD_IP}([^0-9.]|$)"'
)
_WAIT_SCRIPT = "\n".join(
    (
        f'CERT="{_CERT}"',
        'if [ -z "${POD_IP}" ]; then',
        "  POD_IP=$(hostname -i 2>/dev/null | awk '{print $1}')",
        "fi",
        "if ! command -v openssl >/dev/null 2>&1; then",
        '  echo "openssl not found; cannot verify IP SAN" >&2',
        "  exit 1",
        "fi",
        'echo "Waiting for TLS cert to include IP SAN for ${POD_IP}..."',
        "while true; do",
        f"  if {_SAN_CHECK}; then",
        '    echo "TLS cert now includes IP SAN for ${POD_IP}"',
        "    exit 0",
        "  fi",
        '  echo "IP SAN for ${POD_IP} not yet in cert, retrying in 5s..."',
        "  sleep 5",
        "done",
    )
)


def tls_enabled(cluster: dict[str, Any], opts: RayClusterOptions) -> bool:
    return opts.gates.mtls and bool((common.spec_of(cluster).get("tlsOptions") or {}).get("enabled"))


def tls_secret_name(cluster_name: str, node_type: str) -> str:
    """The Secret cert-manager writes the node type's certificate into."""
    prefix = "ray-head-secret" if node_type == C.NODE_TYPE_HEAD else "ray-worker-secret"
    return f"{prefix}-{cluster_name}"


def set_container_tls(container: dict[str, Any]) -> None:
    """The four TLS env vars and the read-only mount, each unless already there."""
    env = container.setdefault("env", [])
    present = {e.get("name") for e in env}
    for name, value in (
        (C.RAY_USE_TLS, "1"),
        (C.RAY_TLS_SERVER_CERT, _CERT),
        (C.RAY_TLS_SERVER_KEY, f"{C.RAY_TLS_CERT_MOUNT_PATH}/tls.key"),
        (C.RAY_TLS_CA_CERT, f"{C.RAY_TLS_CERT_MOUNT_PATH}/ca.crt"),
    ):
        if name not in present:
            env.append({"name": name, "value": value})
    mounts = container.setdefault("volumeMounts", [])
    if not any(
        m.get("name") == C.RAY_TLS_VOLUME_NAME or m.get("mountPath") == C.RAY_TLS_CERT_MOUNT_PATH
        for m in mounts
    ):
        mounts.append(
            {"name": C.RAY_TLS_VOLUME_NAME, "mountPath": C.RAY_TLS_CERT_MOUNT_PATH, "readOnly": True}
        )


def _wait_for_ip_san(ray: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": WAIT_FOR_TLS_IP_SAN,
        "image": ray.get("image"),
        "command": ["sh", "-c"],
        "args": [_WAIT_SCRIPT],
        "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
        "volumeMounts": [
            {"name": C.RAY_TLS_VOLUME_NAME, "mountPath": C.RAY_TLS_CERT_MOUNT_PATH, "readOnly": True}
        ],
        "resources": {
            "limits": {"cpu": "50m", "memory": "64Mi"},
            "requests": {"cpu": "50m", "memory": "64Mi"},
        },
    }
    if ray.get("imagePullPolicy"):
        container["imagePullPolicy"] = ray["imagePullPolicy"]
    if ray.get("securityContext") is not None:
        container["securityContext"] = copy.deepcopy(ray["securityContext"])
    return container


def configure_pod(pod_spec: dict[str, Any], cluster: dict[str, Any], node_type: str) -> None:
    """The Secret volume, the Ray and wait-gcs-ready containers' TLS, the IP-SAN wait first."""
    volumes = pod_spec.setdefault("volumes", [])
    if not any(v.get("name") == C.RAY_TLS_VOLUME_NAME for v in volumes):
        secret = tls_secret_name(cluster["metadata"]["name"], node_type)
        volumes.append({"name": C.RAY_TLS_VOLUME_NAME, "secret": {"secretName": secret}})
    ray = pod_spec["containers"][C.RAY_CONTAINER_INDEX]
    set_container_tls(ray)
    inits = pod_spec.get("initContainers") or []
    for init in inits:
        if init.get("name") == C.WAIT_GCS_READY_INIT_CONTAINER_NAME:
            set_container_tls(init)
    if not any(init.get("name") == WAIT_FOR_TLS_IP_SAN for init in inits):
        pod_spec["initContainers"] = [_wait_for_ip_san(ray), *inits]
