"""Stands in for kube-apiserver in tests of real mode: parses envtest's flags, checks the files
they name exist, serves HTTPS with the given serving certificate and requires a client
certificate signed by --client-ca-file (as kube-apiserver's x509 authenticator does)."""

import argparse
import http.server
import json
import os
import ssl
import urllib.request

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
):
    p.add_argument(f"--{flag}", required=True)
args = p.parse_args()
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


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        cert = self.connection.getpeercert()  # type: ignore[attr-defined]
        subject = dict(x[0] for x in cert["subject"]) if cert else {}
        if self.path.startswith("/readyz"):
            body = b"ok"
        else:
            body = json.dumps(
                {
                    "kind": "Status",
                    "user": subject.get("commonName"),
                    "group": subject.get("organizationName"),
                }
            ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a: object) -> None:
        pass


ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(args.tls_cert_file, args.tls_private_key_file)
ctx.load_verify_locations(args.client_ca_file)
ctx.verify_mode = ssl.CERT_REQUIRED
server = http.server.HTTPServer((args.bind_address, int(args.secure_port)), Handler)
server.socket = ctx.wrap_socket(server.socket, server_side=True)
server.serve_forever()
