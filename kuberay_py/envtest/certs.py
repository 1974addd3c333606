"""Throw-away X.509 material made with the ``openssl`` command: a CA and pairs it signs.

The control plane (kube-apiserver's serving and client certificates) and the admission webhooks
under test both need a CA of their own and certificates signed by it; this is the one way the
environment makes them. Certificates live two days: long enough for any test run.
"""

from __future__ import annotations

import ipaddress
import subprocess
from collections.abc import Sequence
from pathlib import Path

__all__ = ["EC_KEY", "RSA_KEY", "openssl", "self_signed_ca", "serving_san", "sign"]

RSA_KEY = ("-newkey", "rsa:2048", "-nodes")
EC_KEY = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")  # fast to make
_DAYS = "2"


def openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def serving_san(host: str) -> str:
    """``subjectAltName`` for a server reached as ``host`` or on the loopback."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return f"DNS:{host},DNS:localhost,IP:127.0.0.1"
    return f"IP:{host},IP:127.0.0.1,DNS:localhost"


def self_signed_ca(key: Path | str, cert: Path | str, common_name: str, key_args: Sequence[str]) -> None:
    openssl(
        "req", "-x509", *key_args, "-keyout", str(key), "-out", str(cert), "-days", _DAYS,
        "-subj", f"/CN={common_name}",
    )  # fmt: skip


def sign(
    ca: tuple[Path | str, Path | str],
    directory: Path | str,
    stem: str,
    subject: str,
    extensions: Path | str,
    key_args: Sequence[str],
) -> tuple[Path, Path]:
    """A new key and a certificate for ``subject`` signed by ``ca`` (its cert and key), as
    ``<stem>.crt``/``<stem>.key`` in ``directory``; ``extensions`` is an openssl extfile."""
    ca_cert, ca_key = ca
    d = Path(directory)
    key, csr, crt = d / f"{stem}.key", d / f"{stem}.csr", d / f"{stem}.crt"
    openssl("req", *key_args, "-keyout", str(key), "-out", str(csr), "-subj", subject)
    openssl(
        "x509", "-req", "-in", str(csr), "-CA", str(ca_cert), "-CAkey", str(ca_key), "-CAcreateserial",
        "-out", str(crt), "-days", _DAYS, "-extfile", str(extensions),
    )  # fmt: skip
    return crt, key
