"""Stands in for etcd in tests of real mode: checks envtest's flags, answers /health.

``FAKE_ETCD_PIDFILE``, when set, gets this process's pid (tests check it is gone after its owner
died). SIGTERM is ignored, as a busy etcd may: stopping must not depend on it.
"""

import argparse
import http.server
import os
import signal
import sys
from urllib.parse import urlparse

p = argparse.ArgumentParser()
p.add_argument("--data-dir", required=True)
p.add_argument("--listen-client-urls", required=True)
p.add_argument("--advertise-client-urls", required=True)
p.add_argument("--listen-peer-urls", required=True)
p.add_argument("--unsafe-no-fsync")
p.add_argument("--help-probe", action="store_true")
args = p.parse_args()
assert args.listen_peer_urls == "http://localhost:0", args.listen_peer_urls
os.makedirs(args.data_dir, exist_ok=True)
if os.environ.get("FAKE_ETCD_PIDFILE"):
    with open(os.environ["FAKE_ETCD_PIDFILE"], "w") as f:
        f.write(str(os.getpid()))
if os.environ.get("FAKE_ETCD_IGNORE_SIGTERM"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
url = urlparse(args.listen_client_urls)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b'{"health":"true"}' if self.path == "/health" else b"{}"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a: object) -> None:
        pass


http.server.HTTPServer((url.hostname or "127.0.0.1", url.port or 0), Handler).serve_forever()
sys.exit(0)
