"""HTTP/1.1 to the API server on asyncio protocols, parsed by httptools (Node's llhttp).

Why not aiohttp on this path: under KubeRay's ``limits.cpu: 100m`` the operator's wall time *is*
its CPU time, and every API request paid aiohttp's whole client machinery (request and response
objects, multidict headers, the cookie jar, tracing hooks, stream readers, a timeout context per
call): a Pod create cost a third more CPU through it than here, TLS and JSON included
(``bench/http_client.py``; the Pod creates of a scale-up are most of an operator's requests). The
API server needs little of that: keep-alive connections, one request at a time per connection,
``Content-Length`` bodies, ``Content-Length`` or chunked responses, deadlines, and a CONNECT proxy
when the kubeconfig names one. llhttp does all parsing, including chunked framing; this module
owns only the connection pool and the deadlines.

Failures surface as :class:`HTTPTransportError` (an ``OSError``), so the caller treats them as it
treats a refused connection. A request that finds its reused keep-alive connection already closed
by the server (before a byte of the response) is sent once more on a new connection when it is
safe to repeat (no body, or ``PUT``/``DELETE``), as Go's ``http.Transport`` does.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import functools
import ssl
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlencode, urlsplit

import httptools

__all__ = [
    "HTTPTransportError",
    "Origin",
    "Pool",
    "Response",
    "Stream",
    "find_header",
    "header_line",
    "request_target",
]

_REPEATABLE = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
_PATH_SAFE = "/:@!$&'()*+,;=~-._%"  # "%": an escape already in the path stays as it is
_HIGH_WATER = 1 << 21  # buffered watch bytes before the socket stops being read
_LOW_WATER = 1 << 19


@functools.cache
def _system_tls() -> ssl.SSLContext:
    """Verification against the system CAs, loaded once: every client without a CA of its own
    shares it (reading the CA store costs milliseconds of start-up per context)."""
    return ssl.create_default_context()


class HTTPTransportError(OSError):
    """No complete response: refused, reset, closed early, timed out or unparsable."""


@dataclass(frozen=True)
class Origin:
    """Where requests go: scheme, host and port, the path prefix of ``host``, TLS and proxy."""

    scheme: str
    host: str
    port: int
    base_path: str
    ssl_context: ssl.SSLContext | None
    server_hostname: str | None
    proxy: str | None

    @classmethod
    def parse(
        cls,
        url: str,
        *,
        ssl_context: ssl.SSLContext | None = None,
        server_hostname: str | None = None,
        proxy: str | None = None,
    ) -> Origin:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL with a host: {url!r}")
        tls = parts.scheme == "https"
        context = ssl_context if ssl_context is not None or not tls else _system_tls()
        return cls(
            scheme=parts.scheme,
            host=parts.hostname,
            port=parts.port or (443 if tls else 80),
            base_path=parts.path.rstrip("/"),
            ssl_context=context if tls else None,
            server_hostname=(server_hostname or parts.hostname) if tls else None,
            proxy=proxy,
        )

    @property
    def authority(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    raw_headers: list[tuple[bytes, bytes]]
    body: bytes

    def header(self, name: str) -> str | None:
        return find_header(self.raw_headers, name)


def find_header(raw_headers: list[tuple[bytes, bytes]], name: str) -> str | None:
    """The last value of header ``name`` (decoded only when asked: a request reads one or none)."""
    wanted = name.lower().encode("latin-1")
    for key, value in reversed(raw_headers):
        if key.lower() == wanted:
            return value.decode("latin-1")
    return None


def request_target(base_path: str, path: str, query: Sequence[tuple[str, str]] = ()) -> str:
    """The origin-form target: the percent-encoded path and a ``+``-for-space query, as Go's
    ``url.Values.Encode`` writes it (kube-apiserver decodes either form). A query already in
    ``path`` (``…/pods?limit=5``) is kept as written, escapes already in it too, and ``query``
    follows it."""
    path, _, written = path.partition("?")
    target = quote(base_path + path, safe=_PATH_SAFE)
    encoded = urlencode(query) if query else ""
    joined = "&".join(part for part in (written, encoded) if part)
    return f"{target}?{joined}" if joined else target


def header_line(name: str, value: str) -> str:
    """One ``Name: value`` line of a request head; a line break in it would split the head."""
    if "\n" in value or "\r" in value:
        raise ValueError(f"header {name} holds a line break")
    return f"{name}: {value}\r\n"


def encode_head(method: str, target: str, host: str, header_lines: str, body_len: int | None) -> bytes:
    """A request head; ``header_lines`` are :func:`header_line` results, rendered once per client
    where they do not change (every request of an operator sends the same few)."""
    length = f"Content-Length: {body_len}\r\n" if body_len is not None else ""
    return f"{method} {target} HTTP/1.1\r\nHost: {host}\r\n{header_lines}{length}\r\n".encode("latin-1")


class _Connection(asyncio.Protocol):
    """One keep-alive connection; a response is either collected whole or streamed."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.used = False  # has carried a request: a close seen on first write may be a stale reuse
        self._started = False  # a byte of the current response arrived
        self._status = 0
        self._headers: list[tuple[bytes, bytes]] = []
        self._body: list[bytes] = []
        self._keep_alive = False
        self._done = False
        self._waiter: asyncio.Future[None] | None = None
        self._error: BaseException | None = None
        self._timer: asyncio.TimerHandle | None = None
        # streaming
        self._streaming = False
        self._idle: float | None = None  # a stream's idle deadline, checked by one timer
        self._chunks: collections.deque[bytes] = collections.deque()
        self._buffered = 0
        self._paused = False
        self.last_activity = 0.0  # loop.time() of the last bytes (the idle deadline is on the loop's clock)
        self.tunnel: asyncio.StreamWriter | None = None  # the proxy connection under the TLS

    # -- asyncio.Protocol ------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a stream transport (uvloop's too)

    def data_received(self, data: bytes) -> None:
        self._started = True
        if self._streaming:
            self.last_activity = self._loop.time()
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as e:
            self._fail(HTTPTransportError(f"unparsable response from the server: {e}"))
            self.abort()

    def eof_received(self) -> bool | None:
        return None  # close the transport; connection_lost reports it

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self._done:
            reason = f": {exc}" if exc else ""
            self._fail(HTTPTransportError(f"server closed the connection before the response ended{reason}"))

    # -- httptools callbacks -----------------------------------------------------------------------

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        self._status = self._parser.get_status_code()
        self._keep_alive = self._parser.should_keep_alive()
        if self._streaming:
            # The request's deadline covered the response's start; from here the idle deadline
            # rules, one timer for the whole stream that re-arms itself from the last bytes.
            self._cancel_timer()
            if self._idle is not None:
                self._arm_idle(self._idle)
            self._wake()

    def on_body(self, body: bytes) -> None:
        if self._streaming:
            self._chunks.append(body)
            self._buffered += len(body)
            if self._buffered > _HIGH_WATER and not self._paused and self.transport is not None:
                self._paused = True
                self.transport.pause_reading()
            self._wake()
        else:
            self._body.append(body)

    def on_message_complete(self) -> None:
        self._done = True
        self._cancel_timer()
        self._wake()

    # -- use ---------------------------------------------------------------------------------------

    def begin(self, streaming: bool, idle: float | None = None) -> None:
        self.used = True
        self._started = False
        self._status = 0
        self._headers = []
        self._body = []
        self._done = False
        self._error = None
        self._streaming = streaming
        self._idle = idle
        self.last_activity = self._loop.time()

    def send(self, data: bytes, timeout: float) -> asyncio.Future[None]:
        """Write a request; the future ends with the whole response (or, streaming, its head)."""
        assert self.transport is not None
        self._waiter = self._loop.create_future()
        self._timer = self._loop.call_later(timeout, self._expire, timeout)
        self.transport.write(data)
        return self._waiter

    @property
    def started(self) -> bool:
        return self._started

    @property
    def reusable(self) -> bool:
        return self._done and self._keep_alive and not self.closed and self._error is None

    def response(self) -> Response:
        return Response(self._status, self._headers, b"".join(self._body))

    def status_and_headers(self) -> tuple[int, list[tuple[bytes, bytes]]]:
        return self._status, self._headers

    async def next_chunk(self) -> bytes | None:
        """The next body bytes of a streamed response, ``None`` at its end."""
        while not self._chunks:
            if self._error is not None:
                raise self._error
            if self._done:
                return None
            self._waiter = self._loop.create_future()
            await self._waiter
        chunk = self._chunks.popleft()
        self._buffered -= len(chunk)
        if self._paused and self._buffered < _LOW_WATER and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        return chunk

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    # -- internals -----------------------------------------------------------------------------------

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _fail(self, error: BaseException) -> None:
        if self._error is None:
            self._error = error
        self._cancel_timer()
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)

    def _expire(self, seconds: float) -> None:
        self._timer = None
        self._fail(TimeoutError(f"no complete response within {seconds:g} s"))
        self.abort()

    def _arm_idle(self, idle: float) -> None:
        self._timer = self._loop.call_at(self.last_activity + idle, self._check_idle, idle)

    def _check_idle(self, idle: float) -> None:
        self._timer = None
        now = self._loop.time()
        if self._chunks:  # the reader is behind (reading may be paused), not the server
            self._timer = self._loop.call_at(now + idle, self._check_idle, idle)
        elif now - self.last_activity >= idle:
            self._fail(TimeoutError(f"no bytes for {idle:g} s"))
            self.abort()
        else:
            self._arm_idle(idle)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class Stream:
    """A response whose body is read as it arrives (a watch); close it to free the connection."""

    def __init__(self, pool: Pool, conn: _Connection) -> None:
        self._pool = pool
        self._conn = conn
        self.status, self.raw_headers = conn.status_and_headers()

    def header(self, name: str) -> str | None:
        return find_header(self.raw_headers, name)

    async def chunks(self) -> AsyncIterator[bytes]:
        while (chunk := await self._conn.next_chunk()) is not None:
            yield chunk

    async def read(self, limit: int) -> bytes:
        """Up to ``limit`` bytes of the body (an error response's Status)."""
        out = bytearray()
        while len(out) < limit and (chunk := await self._conn.next_chunk()) is not None:
            out += chunk
        return bytes(out[:limit])

    def close(self) -> None:
        self._pool.release(self._conn)


class Pool:
    """Keep-alive connections to one origin, most recently used first; no upper bound (each watch
    holds one, and the caller's token bucket bounds the request rate)."""

    def __init__(self, origin: Origin) -> None:
        self.origin = origin
        self._idle: list[_Connection] = []
        self._all: set[_Connection] = set()
        self._closed = False
        proxy_auth = None
        if origin.proxy:
            parts = urlsplit(origin.proxy)
            if parts.scheme != "http" or not parts.hostname:
                raise ValueError(f"only http:// proxies are supported (got {origin.proxy!r})")
            self._proxy: tuple[str, int] | None = (parts.hostname, parts.port or 80)
            if parts.username is not None:
                creds = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
                proxy_auth = "Basic " + base64.b64encode(creds.encode()).decode()
        else:
            self._proxy = None
        self._proxy_auth = proxy_auth
        # Plain http through a proxy is sent in absolute form to the proxy itself (RFC 9112 3.2.2).
        self._absolute = f"http://{origin.authority}" if self._proxy and origin.scheme == "http" else ""

    async def request(
        self,
        method: str,
        target: str,
        headers: str,
        body: bytes | None,
        timeout: float,
    ) -> Response:
        data = encode_head(
            method, self._absolute + target, self.origin.authority, headers, _length(method, body)
        )
        if body:
            data += body
        repeatable = body is None or method in _REPEATABLE
        conn = await self._exchange(data, timeout, repeatable=repeatable)
        response = conn.response()
        self.release(conn)
        return response

    async def stream(
        self,
        method: str,
        target: str,
        headers: str,
        connect_timeout: float,
        idle_timeout: float,
    ) -> Stream:
        data = encode_head(method, self._absolute + target, self.origin.authority, headers, None)
        conn = await self._exchange(data, connect_timeout, repeatable=True, stream_idle=idle_timeout)
        return Stream(self, conn)

    async def _exchange(
        self, data: bytes, timeout: float, *, repeatable: bool, stream_idle: float | None = None
    ) -> _Connection:
        """Send ``data`` on a pooled connection and wait for the whole response, or only its head
        when ``stream_idle`` is given (the body is then streamed under that idle deadline). Once
        more on a new connection when a reused one turns out to have been closed by the server
        before a byte of the response, if the request is ``repeatable``."""
        for attempt in range(2):
            conn = await self._acquire(timeout)
            reused = conn.used
            conn.begin(streaming=stream_idle is not None, idle=stream_idle)
            try:
                await conn.send(data, timeout)
            except BaseException as e:
                conn.abort()
                self._forget(conn)
                stale = isinstance(e, HTTPTransportError) and reused and not conn.started
                if stale and repeatable and attempt == 0:
                    continue
                raise
            return conn
        raise AssertionError("unreachable")

    @property
    def open_count(self) -> int:
        return len(self._all)

    def release(self, conn: _Connection) -> None:
        if conn.reusable and not self._closed:
            self._idle.append(conn)
            return
        if not conn.closed:
            conn.abort()
        self._forget(conn)

    async def close(self) -> None:
        self._closed = True
        for conn in list(self._all):
            conn.close()
        self._all.clear()
        self._idle.clear()

    # -- connections -------------------------------------------------------------------------------

    def _forget(self, conn: _Connection) -> None:
        self._all.discard(conn)

    async def _acquire(self, timeout: float) -> _Connection:
        if self._closed:
            raise HTTPTransportError("the client is closed")
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed:
                return conn
            self._forget(conn)
        try:
            async with asyncio.timeout(timeout):
                conn = await self._connect()
        except HTTPTransportError:
            raise  # the proxy refused the tunnel: already says so
        except TimeoutError as e:
            raise HTTPTransportError(
                f"connect to {self.origin.authority} timed out after {timeout:g} s"
            ) from e
        except ssl.SSLError as e:
            raise HTTPTransportError(f"TLS with {self.origin.authority} failed: {e}") from e
        except OSError as e:
            raise HTTPTransportError(f"cannot connect to {self.origin.authority}: {e}") from e
        self._all.add(conn)
        return conn

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        origin = self.origin
        if self._proxy is None:
            _, conn = await loop.create_connection(
                lambda: _Connection(loop),
                origin.host,
                origin.port,
                ssl=origin.ssl_context,
                server_hostname=origin.server_hostname,
            )
            return conn
        if origin.ssl_context is None:
            _, conn = await loop.create_connection(lambda: _Connection(loop), *self._proxy)
            return conn
        return await self._tunnel(loop)

    async def _tunnel(self, loop: asyncio.AbstractEventLoop) -> _Connection:
        """HTTP CONNECT through the proxy, then TLS to the API server inside the tunnel."""
        assert self._proxy is not None and self.origin.ssl_context is not None
        reader, writer = await asyncio.open_connection(*self._proxy)
        try:
            head = f"CONNECT {self.origin.authority} HTTP/1.1\r\nHost: {self.origin.authority}\r\n"
            if self._proxy_auth:
                head += f"Proxy-Authorization: {self._proxy_auth}\r\n"
            writer.write((head + "\r\n").encode("latin-1"))
            reply = await reader.readuntil(b"\r\n\r\n")
            status_line = reply.split(b"\r\n", 1)[0].decode("latin-1")
            parts = status_line.split(" ", 2)
            if len(parts) < 2 or parts[1] != "200":
                raise HTTPTransportError(f"proxy {self.origin.proxy} refused CONNECT: {status_line}")
            conn = _Connection(loop)
            transport = await loop.start_tls(
                writer.transport,
                conn,
                self.origin.ssl_context,
                server_hostname=self.origin.server_hostname,
            )
            if transport is None:
                raise HTTPTransportError("TLS through the proxy tunnel did not start")
            conn.connection_made(transport)
            # asyncio closes a stream's transport when its StreamWriter is collected; the TLS
            # transport runs on top of it, so the writer lives as long as the connection.
            conn.tunnel = writer
            return conn
        except BaseException:
            writer.close()
            raise


def _length(method: str, body: bytes | None) -> int | None:
    """``Content-Length`` for a body; ``0`` for a bodiless write, as Go's client sends it."""
    if body is not None:
        return len(body)
    return 0 if method in ("POST", "PUT", "PATCH") else None
