"""The serving certificate, reloaded when its files change (controller-runtime's certwatcher).

cert-manager renews the certificate in the Secret and the kubelet swaps the mounted files in
place; the server must present the new pair without a restart, or every API request that passes
through the webhook fails once the old certificate expires. The files are read again every
``interval`` seconds and, when their bytes differ, loaded into the same ``SSLContext``, so every
handshake after that presents the new certificate. Each load makes a fresh ``SSLContext`` that
the listening context hands every new connection to (its SNI callback runs for every handshake,
with or without a server name), so an RSA pair replaced by an ECDSA one is not served alongside.
A pair that does not load (a half-written
update: the certificate renewed, the key not yet) keeps the old one and is tried again at the
next poll.
"""

from __future__ import annotations

import hashlib
import ssl
from pathlib import Path

from kuberay_py.clock import Clock, RealClock
from kuberay_py.log import get_logger

__all__ = ["CertWatcher"]

log = get_logger(__name__)


class CertWatcher:
    def __init__(
        self,
        cert_file: str | Path,
        key_file: str | Path,
        *,
        interval: float = 10.0,
        clock: Clock | None = None,
    ) -> None:
        self.cert_file = Path(cert_file)
        self.key_file = Path(key_file)
        self.interval = interval
        self.clock: Clock = clock or RealClock()
        self.context = self._new_context()  # what the server listens with
        self.context.sni_callback = self._select
        self._current = self.context
        self._digest = ""
        self.reloads = 0

    @staticmethod
    def _new_context() -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        return ctx

    def _select(self, conn: ssl.SSLObject, _server_name: str | None, _ctx: ssl.SSLContext) -> None:
        if self._current is not self.context:
            conn.context = self._current

    def _loaded(self) -> ssl.SSLContext:
        ctx = self._new_context()
        ctx.load_cert_chain(str(self.cert_file), str(self.key_file))
        return ctx

    def _current_digest(self) -> str:
        h = hashlib.sha256()
        h.update(self.cert_file.read_bytes())
        h.update(b"\0")
        h.update(self.key_file.read_bytes())
        return h.hexdigest()

    def load(self) -> None:
        """Load the pair now; raises if it cannot be read (the server must not start without one)."""
        digest = self._current_digest()
        self.context.load_cert_chain(str(self.cert_file), str(self.key_file))
        self._current = self.context
        self._digest = digest
        log.info("loaded serving certificate", cert=str(self.cert_file), key=str(self.key_file))

    def reload_if_changed(self) -> bool:
        """Load the files again if their contents changed; True when a new pair is now served."""
        try:
            digest = self._current_digest()
            if digest == self._digest:
                return False
            self._current = self._loaded()
        except (OSError, ssl.SSLError) as err:
            log.error(
                "serving certificate not reloaded, keeping the previous one",
                cert=str(self.cert_file),
                error=str(err),
            )
            return False
        self._digest = digest
        self.reloads += 1
        log.info("reloaded serving certificate", cert=str(self.cert_file), reloads=self.reloads)
        return True

    async def watch(self) -> None:
        """Poll until cancelled."""
        while True:
            await self.clock.sleep(self.interval)
            self.reload_if_changed()
