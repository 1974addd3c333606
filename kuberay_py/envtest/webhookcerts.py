"""A throw-away CA and serving certificates for admission webhooks under test.

kube-apiserver only calls a webhook over TLS it can verify, so the environment makes a CA, signs
a serving pair for the local host with it and hands the CA to the webhook configurations as their
``caBundle``. :meth:`WebhookCA.issue` can be called again to rotate the pair in place (what
cert-manager does in a cluster). The ``openssl`` command does the work, as for the control plane's
own certificates; EC keys keep it fast.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .certs import EC_KEY, self_signed_ca, serving_san, sign

__all__ = ["WebhookCA"]


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
        self_signed_ca(self.ca_key, self.ca_cert, name, EC_KEY)
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
            ext = Path(work) / "serving.ext"
            ext.write_text(f"subjectAltName={serving_san(self.host)}\nextendedKeyUsage=serverAuth\n")
            subject = f"/CN=envtest-webhook-{self.issued}"
            crt, key = sign((self.ca_cert, self.ca_key), work, "tls", subject, ext, EC_KEY)
            os.replace(key, target / key_name)
            os.replace(crt, target / cert_name)
