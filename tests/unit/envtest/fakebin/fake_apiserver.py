"""Stands in for kube-apiserver in tests of real mode: parses envtest's flags, checks the files
they name exist, serves HTTPS with the given serving certificate and authenticates as
kube-apiserver does: a client certificate, if given, must be signed by --client-ca-file (x509
authenticator); without one, a bearer token minted by the TokenRequest subresource
(``POST /api/v1/namespaces/NS/serviceaccounts/NAME/token``) names the ServiceAccount; a request
with neither gets 401.

It also serves CustomResourceDefinitions the way a starting kube-apiserver does: the first
create answers ``503`` with a text body, and a new group/version answers the first discovery
GETs with the plain-text ``404 page not found`` before it is served. ``FAKE_APISERVER_PIDFILE``,
when set, gets this process's pid (tests check it is gone after its owner died). Each request is
audited as ``--audit-log-mode=blocking`` does: a JSON ``ResponseComplete`` event appended to
``--audit-log-path`` before the response goes out.
"""

import argparse
import datetime
import http.server
import json
import os
import ssl
import urllib.request
import uuid
from typing import Any

p = argparse.ArgumentParser()
for flag in (
    "advertise-address",
    "bind-address",
    "secure-port",
    "etcd-servers",
    "cert-dir",
    "tls-cert-file",
    "tls-private-key-file",
    "service-cluster-ip-range",
    "allow-privileged",
    "disable-admission-plugins",
    "authorization-mode",
    "client-ca-file",
    "service-account-issuer",
    "service-account-key-file",
    "service-account-signing-key-file",
    "audit-policy-file",
    "audit-log-path",
    "audit-log-format",
    "audit-log-mode",
    "audit-log-maxsize",
    "audit-log-maxbackup",
    "audit-log-maxage",
):
    p.add_argument(f"--{flag}", required=True)
args = p.parse_args()
assert os.path.exists(args.audit_policy_file), args.audit_policy_file
assert args.audit_log_format == "json" and args.audit_log_mode == "blocking"
open(args.audit_log_path, "a").close()  # kube-apiserver creates the log file at start
for path in (
    args.tls_cert_file,
    args.tls_private_key_file,
    args.client_ca_file,
    args.service_account_key_file,
    args.service_account_signing_key_file,
):
    assert os.path.exists(path), path
assert args.authorization_mode == "RBAC" and args.disable_admission_plugins == "ServiceAccount"
with urllib.request.urlopen(args.etcd_servers + "/health", timeout=5) as r:  # etcd must be up first
    assert json.load(r)["health"] == "true"


if os.environ.get("FAKE_APISERVER_PIDFILE"):
    with open(os.environ["FAKE_APISERVER_PIDFILE"], "w") as f:
        f.write(str(os.getpid()))

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
TOKEN_PREFIX = "fake-sa-token."
UNSERVED_DISCOVERY_GETS = 3
crds: dict[str, dict[str, Any]] = {}
discovery_gets: dict[str, int] = {}
posts = 0


_VERBS = {"GET": "get", "POST": "create"}


class Handler(http.server.BaseHTTPRequestHandler):
    def audit(self, status: int) -> None:
        cert = self.connection.getpeercert()  # type: ignore[attr-defined]
        user = dict(x[0] for x in cert["subject"]).get("commonName") if cert else "system:anonymous"
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        event = {
            "kind": "Event",
            "apiVersion": "audit.k8s.io/v1",
            "level": "Metadata",
            "auditID": str(uuid.uuid4()),
            "stage": "ResponseComplete",
            "requestURI": self.path,
            "verb": _VERBS.get(self.command, self.command.lower()),
            "user": {"username": user},
            "responseStatus": {"metadata": {}, "code": status},
            "requestReceivedTimestamp": now,
            "stageTimestamp": now,
        }
        with open(args.audit_log_path, "a") as f:
            f.write(json.dumps(event) + "\n")

    def reply(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.audit(status)
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        global posts
        doc = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        parts = self.path.split("?")[0].strip("/").split("/")
        if (
            len(parts) == 7
            and parts[:3] == ["api", "v1", "namespaces"]
            and parts[4:5] + parts[6:]
            == [
                "serviceaccounts",
                "token",
            ]
        ):
            doc["status"] = {
                "token": f"{TOKEN_PREFIX}{parts[3]}.{parts[5]}",
                "expirationTimestamp": "2099-01-01T00:00:00Z",
            }
            return self.reply(201, json.dumps(doc).encode())
        if self.path != CRDS:
            return self.reply(404, b"404 page not found", "text/plain; charset=utf-8")
        posts += 1
        if posts == 1:
            return self.reply(503, b"service unavailable\n", "text/plain; charset=utf-8")
        doc["metadata"]["resourceVersion"] = "1"
        doc["status"] = {"conditions": [{"type": "Established", "status": "True"}]}
        crds[doc["metadata"]["name"]] = doc
        self.reply(201, json.dumps(doc).encode())

    def discovery(self, group_version: str) -> None:
        resources = [
            {"name": c["spec"]["names"]["plural"], "kind": c["spec"]["names"]["kind"]}
            for c in crds.values()
            if any(f"{c['spec']['group']}/{v['name']}" == group_version for v in c["spec"]["versions"])
        ]
        discovery_gets[group_version] = discovery_gets.get(group_version, 0) + 1
        if not resources or discovery_gets[group_version] <= UNSERVED_DISCOVERY_GETS:
            return self.reply(404, b"404 page not found\n", "text/plain; charset=utf-8")
        body = {"kind": "APIResourceList", "groupVersion": group_version, "resources": resources}
        self.reply(200, json.dumps(body).encode())

    def do_GET(self) -> None:
        cert = self.connection.getpeercert()  # type: ignore[attr-defined]
        subject = dict(x[0] for x in cert["subject"]) if cert else {}
        parts = self.path.split("?")[0].strip("/").split("/")
        if self.path.startswith("/readyz"):
            return self.reply(200, b"ok", "text/plain")
        if self.path.startswith(CRDS + "/"):
            crd = crds.get(parts[-1])
            if crd is None:
                return self.reply(404, json.dumps({"kind": "Status", "code": 404}).encode())
            return self.reply(200, json.dumps(crd).encode())
        if parts[0] == "apis" and len(parts) == 3 and parts[1] != "apiextensions.k8s.io":
            return self.discovery(f"{parts[1]}/{parts[2]}")
        body = {"kind": "Status", "user": subject.get("commonName"), "group": subject.get("organizationName")}
        token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        if not cert and token.startswith(TOKEN_PREFIX):
            namespace, name = token[len(TOKEN_PREFIX) :].split(".", 1)
            body = {
                "kind": "Status",
                "user": f"system:serviceaccount:{namespace}:{name}",
                "group": "system:serviceaccounts",
            }
        elif not cert:
            return self.reply(
                401, json.dumps({"kind": "Status", "code": 401, "reason": "Unauthorized"}).encode()
            )
        self.reply(200, json.dumps(body).encode())

    def log_message(self, *a: object) -> None:
        pass


ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(args.tls_cert_file, args.tls_private_key_file)
ctx.load_verify_locations(args.client_ca_file)
ctx.verify_mode = ssl.CERT_OPTIONAL  # kube-apiserver: VerifyClientCertIfGiven
server = http.server.HTTPServer((args.bind_address, int(args.secure_port)), Handler)
server.socket = ctx.wrap_socket(server.socket, server_side=True)
server.serve_forever()
