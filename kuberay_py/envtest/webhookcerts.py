"""A throw-away CA and serving certificates for admission webhooks under test.

kube-apiserver only calls a webhook over TLS it can verify, so the environment makes a CA, signs
a serving pair for the local host with it and hands the CA to the webhook configurations as their
``caBundle``. :meth:`WebhookCA.issue` can be called again to rotate the pair in place (what
cert-manager does in a cluster). The ``openssl`` command does the work, as for the control plane's
own certificates; EC keys keep it fast.
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
import tempfile
from pathlib import Path

__all__ = ["WebhookCA"]

_EC = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def _san(host: str) -> str:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return f"DNS:{host},DNS:localhost,IP:127.0.0.1"
    return f"IP:{host},IP:127.0.0.1,DNS:localhost"


class WebhookCA:
    """A CA (common name ``name``) in ``directory`` that signs serving pairs for ``host``."""

    def __init__(
        self, directory: str | Path, host: str = "127.0.0.1", *, name: str = "envtest-webhook-ca"
    ) -> None:
        self.directory = Path(directory)
        self.host = host
        self.directory.mkdir(parents=True, exist_ok=True)
        self.ca_key = self.directory / "ca.key"
        self.ca_cert = self.directory / "ca.crt"
        _openssl(
            "req",
            "-x509",
            *_EC,
            "-keyout",
            str(self.ca_key),
            "-out",
            str(self.ca_cert),
            "-days",
            "2",
            "-subj",
            f"/CN={name}",
        )
        self.issued = 0

    @property
    def ca_data(self) -> bytes:
        """The CA certificate, PEM (what goes, base64-encoded, into ``caBundle``)."""
        return self.ca_cert.read_bytes()

    def issue(self, cert_dir: str | Path, cert_name: str = "tls.crt", key_name: str = "tls.key") -> None:
        """Sign a new serving pair and put it in ``cert_dir``, each file replaced in one rename."""
        target = Path(cert_dir)
        target.mkdir(parents=True, exist_ok=True)
        self.issued += 1
        with tempfile.TemporaryDirectory(dir=self.directory) as work:
            w = Path(work)
            ext = w / "serving.ext"
            ext.write_text(f"subjectAltName={_san(self.host)}\nextendedKeyUsage=serverAuth\n")
            key, csr, crt = w / "tls.key", w / "tls.csr", w / "tls.crt"
            _openssl(
                "req",
                *_EC,
                "-keyout",
                str(key),
                "-out",
                str(csr),
                "-subj",
                f"/CN=envtest-webhook-{self.issued}",
            )
            _openssl(
                "x509",
                "-req",
                "-in",
                str(csr),
                "-CA",
                str(self.ca_cert),
                "-CAkey",
                str(self.ca_key),
                "-CAcreateserial",
                "-out",
                str(crt),
                "-days",
                "2",
                "-extfile",
                str(ext),
            )
            os.replace(key, target / key_name)
            os.replace(crt, target / cert_name)
