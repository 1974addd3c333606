"""Where to reach the API server and how to authenticate, loaded with kubernetes_asyncio's loaders.

kubernetes_asyncio already understands every kubeconfig shape (embedded or file certificates,
tokens, token files, exec plugins, OIDC, GCP, basic auth) and the in-cluster service account, so
we let it fill a ``Configuration`` and then lift out exactly what our own aiohttp transport needs:
the host, an ``ssl.SSLContext``, and an ``Authorization`` header value. Credentials that expire
(exec plugins with an ``expirationTimestamp``, the in-cluster projected token, a kubeconfig
``tokenFile``) become a ``token_source`` the client asks before every request; the source caches,
so asking is cheap.

Lookup order follows controller-runtime's ``config.GetConfig``: an explicit path, ``$KUBECONFIG``
(a ``:``-separated list, merged), the in-cluster service account, then ``~/.kube/config``.
"""

from __future__ import annotations

import os
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from kuberay_py.client import k8s_loaders

k8s_loaders.install()  # before the loaders: they need Configuration, not ~860 generated modules

from kubernetes_asyncio.client.configuration import Configuration  # noqa: E402
from kubernetes_asyncio.config import incluster_config, kube_config  # noqa: E402
from kubernetes_asyncio.config.config_exception import ConfigException  # noqa: E402

from kuberay_py.clock import Clock, RealClock  # noqa: E402
from kuberay_py.log import get_logger  # noqa: E402

__all__ = ["ClientConfig", "ConfigError", "load_config", "load_config_retrying"]

log = get_logger("kuberay_py.client.config")

TokenSource = Callable[[], Awaitable[str | None]]

TOKEN_FILE_REREAD_SECONDS = 60.0  # client-go's cachingTokenSource period for token files


class ConfigError(Exception):
    """The client configuration could not be loaded; the message names the source and the problem."""


@dataclass(frozen=True)
class ClientConfig:
    """Everything :class:`~kuberay_py.client.Client` needs to talk to one API server.

    ``token`` is a complete ``Authorization`` header value (``"Bearer …"`` or ``"Basic …"``);
    ``token_source``, when set, is awaited before each request and wins over ``token``.
    ``ssl_context=None`` on an https host means default verification against the system CAs.
    """

    host: str
    ssl_context: ssl.SSLContext | None = None
    token: str | None = None
    token_source: TokenSource | None = field(default=None, compare=False)
    tls_server_name: str | None = None
    proxy: str | None = None
    qps: float = 100.0
    burst: int = 200
    timeout: float = 30.0
    # A watch with no bytes for this long (beyond its own timeoutSeconds) is treated as dead.
    watch_idle_timeout: float = 630.0
    # How many times a 429 (or a 5xx carrying Retry-After) is retried after waiting Retry-After.
    max_retries: int = 10
    user_agent: str = "kuberay-py"

    def __post_init__(self) -> None:
        if not self.host.startswith(("http://", "https://")):
            raise ConfigError(f"API server host must start with http:// or https:// (got {self.host!r})")
        if self.timeout <= 0:
            raise ConfigError(f"timeout must be positive (got {self.timeout})")


def _ssl_context(cfg: Any) -> ssl.SSLContext | None:
    """Mirror kubernetes_asyncio's RESTClientObject so both transports trust the same things."""
    if not str(cfg.host).startswith("https://"):
        return None
    try:
        ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
        if cfg.cert_file:
            ctx.load_cert_chain(cfg.cert_file, keyfile=cfg.key_file)
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(
            f"cannot load TLS material (ca={cfg.ssl_ca_cert}, cert={cfg.cert_file}): {e}"
        ) from e
    if not cfg.verify_ssl:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


class _CachedFileToken:
    """Re-reads a token file at most once a minute (rotated projected service-account tokens)."""

    def __init__(self, path: str, initial: str | None) -> None:
        self._path = path
        self._token = initial
        self._read_at = time.monotonic()

    async def __call__(self) -> str | None:
        if time.monotonic() - self._read_at >= TOKEN_FILE_REREAD_SECONDS:
            self._read_at = time.monotonic()
            content = _read_token_file(self._path)
            if content:
                self._token = f"Bearer {content}"
        return self._token


def _read_token_file(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip() or None
    except OSError as e:
        log.warning("token_file_unreadable", path=path, error=str(e))
        return None


def _exec_token_source(loader: Any, cfg: Any) -> TokenSource:
    """Re-runs the exec plugin once its credential expires (the loader itself checks the expiry)."""

    async def source() -> str | None:
        try:
            await loader.load_from_exec_plugin()
        except Exception as e:  # the plugin is user code; keep the last token and say why
            log.warning("exec_credential_refresh_failed", error=str(e))
        token = getattr(loader, "token", None)
        if token:
            cfg.api_key["BearerToken"] = token
        return token if isinstance(token, str) else None

    return source


def _hook_token_source(cfg: Any) -> TokenSource:
    """The in-cluster loader refreshes through ``refresh_api_key_hook``; ask the Configuration."""

    async def source() -> str | None:
        value = await cfg.get_api_key_with_prefix("BearerToken")
        return value if isinstance(value, str) else None

    return source


def _to_client_config(cfg: Any, token_source: TokenSource | None, **tuning: Any) -> ClientConfig:
    token = cfg.api_key.get("BearerToken")
    return ClientConfig(
        host=str(cfg.host).rstrip("/"),
        ssl_context=_ssl_context(cfg),
        token=token if isinstance(token, str) and token else None,
        token_source=token_source,
        tls_server_name=cfg.tls_server_name or None,
        proxy=cfg.proxy or None,
        **tuning,
    )


async def _from_kubeconfig(path: str, context: str | None, **tuning: Any) -> ClientConfig:
    cfg = Configuration()
    try:
        loader = await kube_config.load_kube_config(
            config_file=path, context=context, client_configuration=cfg, persist_config=False
        )
    except ConfigException as e:
        raise ConfigError(f"invalid kubeconfig {path}: {e}") from e
    except OSError as e:
        raise ConfigError(f"cannot read kubeconfig {path}: {e}") from e
    except Exception as e:
        # YAML syntax errors, and the loader's asserts/indexing on a wrong shape, land here.
        detail = str(e) or "a required entry is missing or empty (current-context, contexts, clusters, users)"
        raise ConfigError(f"invalid kubeconfig {path}: {type(e).__name__}: {detail}") from e
    if not cfg.host or cfg.host == "http://localhost":
        raise ConfigError(f"invalid kubeconfig {path}: the current cluster has no 'server'")
    token_source: TokenSource | None = None
    user = getattr(loader, "_user", None)
    if user is not None and "exec" in user and hasattr(loader, "exec_plugin_expiry"):
        token_source = _exec_token_source(loader, cfg)
    elif user is not None and "tokenFile" in user and "token" not in user:
        token_file = _resolve_relative(str(user["tokenFile"]), path)
        token_source = _CachedFileToken(token_file, cfg.api_key.get("BearerToken"))
    return _to_client_config(cfg, token_source, **tuning)


def _resolve_relative(file: str, kubeconfig_paths: str) -> str:
    """kubeconfig-relative paths resolve against the (first) kubeconfig file's directory."""
    if os.path.isabs(file):
        return file
    first = kubeconfig_paths.split(os.pathsep)[0]
    return os.path.join(os.path.dirname(os.path.abspath(first)), file)


def _from_incluster(**tuning: Any) -> ClientConfig:
    cfg = Configuration()
    try:
        incluster_config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    except (ConfigException, OSError) as e:
        raise ConfigError(f"invalid in-cluster configuration: {e}") from e
    return _to_client_config(cfg, _hook_token_source(cfg), **tuning)


async def load_config(
    kubeconfig: str | None = None,
    context: str | None = None,
    *,
    qps: float = 100.0,
    burst: int = 200,
    timeout: float = 30.0,
) -> ClientConfig:
    """Load a :class:`ClientConfig`; raises :class:`ConfigError` with the source and the reason."""
    tuning: dict[str, Any] = {"qps": qps, "burst": burst, "timeout": timeout}
    source = _pick_source(kubeconfig, context)
    if source is None:
        return _from_incluster(**tuning)
    return await _from_kubeconfig(source, context, **tuning)


def _pick_source(kubeconfig: str | None, context: str | None) -> str | None:
    """The kubeconfig path(s) to load, or ``None`` for in-cluster (controller-runtime's order)."""
    if kubeconfig:
        path = os.path.expanduser(kubeconfig)
        if not os.path.exists(path):
            raise ConfigError(f"kubeconfig {kubeconfig} does not exist")
        return path
    env = os.environ.get("KUBECONFIG", "")
    if env:
        paths = [os.path.expanduser(p) for p in env.split(os.pathsep) if p]
        if not any(os.path.exists(p) for p in paths):
            raise ConfigError(f"none of the files in $KUBECONFIG exist: {env}")
        return os.pathsep.join(paths)
    if os.environ.get(incluster_config.SERVICE_HOST_ENV_NAME) and context is None:
        return None
    home = os.path.expanduser("~/.kube/config")
    if os.path.exists(home):
        return home
    raise ConfigError(
        "no configuration found: pass --kubeconfig, set $KUBECONFIG, run in a Pod, or create ~/.kube/config"
    )


async def load_config_retrying(
    kubeconfig: str | None = None,
    context: str | None = None,
    *,
    clock: Clock | None = None,
    initial_delay: float = 0.8,
    max_delay: float = 30.0,
    **tuning: Any,
) -> ClientConfig:
    """:func:`load_config` until it succeeds, logging each failure and backing off (0.8 s → 30 s).

    For operators whose kubeconfig is mounted or rotated by something else: a broken file at
    start-up is reported clearly and picked up once fixed, instead of crash-looping the Pod.
    """
    clock = clock or RealClock()
    delay = initial_delay
    while True:
        try:
            return await load_config(kubeconfig, context, **tuning)
        except ConfigError as e:
            log.error("client_config_invalid", error=str(e), retry_in_s=round(delay, 3))
        await clock.sleep(delay)
        delay = min(max_delay, delay * 2)
