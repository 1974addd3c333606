"""kube-apiserver's audit log: every real control plane writes one.

With a ``Metadata`` policy kube-apiserver writes a JSON line per request stage with the verb, the
object reference, the response code and the user: the count of requests the built-in server keeps
itself. :func:`audit_args` is part of every real control plane's default flags, so control-plane
reuse keys do not change. In the default ``blocking`` mode kube-apiserver writes an event inside
the request's handler chain, before the response is finished.

kube-apiserver's own loopback client (user ``system:apiserver``: leases, the ``kubernetes``
Service's endpoints, APIService availability) is not audited: the built-in server makes no such
requests.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["AUDIT_POLICY", "audit_args"]

AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  users: ["system:apiserver"]
- level: Metadata
"""

def audit_args(audit_dir: str) -> list[str]:
    """kube-apiserver flags that audit every request at ``Metadata`` level to ``audit.log`` in
    ``audit_dir`` (the policy file is written there). Rotation at 100 MB keeps one old file; the
    reader follows a rotation."""
    d = Path(audit_dir)
    d.mkdir(parents=True, exist_ok=True)
    policy = d / "policy.yaml"
    policy.write_text(AUDIT_POLICY)
    return [
        f"--audit-policy-file={policy}",
        f"--audit-log-path={d / 'audit.log'}",
        "--audit-log-format=json",
        "--audit-log-mode=blocking",
        "--audit-log-maxsize=100",
        "--audit-log-maxbackup=1",
        "--audit-log-maxage=1",
    ]
