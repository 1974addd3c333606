"""A Redis stand-in on 127.0.0.1 speaking RESP2, for Ray's own Redis client.

No Redis server is installed here, and the Redis cleanup Job's program is Ray code
(``cleanup_redis_storage`` → ``RedisDelKeyPrefixSync`` in C++): the test runs that real code, so
only the server is a stand-in. It answers the commands Ray 2.60's cleanup sends, as Redis 7 does:
``AUTH`` (``requirepass`` and one ACL user), ``INFO SENTINEL``/``INFO CLUSTER`` (a standalone
server), ``SCAN ... MATCH``, ``DEL``; anything else before ``AUTH`` when a password is set gets
``NOAUTH``, as Redis answers.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field

__all__ = ["RedisStub"]


@dataclass
class RedisStub:
    password: str = ""
    username: str = "default"
    keys: set[str] = field(default_factory=set)
    commands: list[list[str]] = field(default_factory=list)  # every command received, in order
    server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.sockets[0].getsockname()[1])

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        authed = not self.password
        try:
            while (args := await _read_command(reader)) is not None:
                self.commands.append(args)
                reply, authed = self._answer(args, authed)
                writer.write(reply)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    def _answer(self, args: list[str], authed: bool) -> tuple[bytes, bool]:
        cmd = args[0].upper()
        if cmd == "AUTH":
            user, given = (self.username, args[1]) if len(args) == 2 else (args[1], args[2])
            if not self.password:
                return b"-ERR AUTH <password> called without any password configured\r\n", authed
            if user != self.username or given != self.password:
                return b"-WRONGPASS invalid username-password pair or user is disabled.\r\n", False
            return b"+OK\r\n", True
        if not authed:
            return b"-NOAUTH Authentication required.\r\n", False
        if cmd == "INFO":
            section = args[1].lower() if len(args) > 1 else ""
            return _bulk("# Cluster\r\ncluster_enabled:0\r\n" if section == "cluster" else ""), authed
        if cmd == "SCAN":
            pattern = args[args.index("MATCH") + 1] if "MATCH" in args else "*"
            match = _glob(pattern)
            found = sorted(k for k in self.keys if match.fullmatch(k))
            body = b"".join(_bulk(k) for k in found)
            return b"*2\r\n" + _bulk("0") + f"*{len(found)}\r\n".encode() + body, authed
        if cmd in ("DEL", "UNLINK"):
            gone = [k for k in args[1:] if k in self.keys]
            self.keys.difference_update(gone)
            return f":{len(gone)}\r\n".encode(), authed
        return f"-ERR unknown command '{args[0]}'\r\n".encode(), authed


def _glob(pattern: str) -> re.Pattern[str]:
    """Redis's ``stringmatchlen``: ``*``, ``?``, ``[...]`` and ``\\x`` for a literal x (Ray escapes
    every non-alphanumeric character of the storage namespace)."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        elif ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "[" and (end := pattern.find("]", i + 1)) > i:
            body = pattern[i + 1 : end]
            out.append("[^" + body[1:] + "]" if body.startswith("^") else "[" + body + "]")
            i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def _bulk(text: str) -> bytes:
    data = text.encode()
    return b"$%d\r\n%s\r\n" % (len(data), data)


async def _read_command(reader: asyncio.StreamReader) -> list[str] | None:
    line = await reader.readline()
    if not line:
        return None
    if not line.startswith(b"*"):
        return line.decode().split()  # an inline command
    args = []
    for _ in range(int(line[1:])):
        size = int((await reader.readline())[1:])
        args.append((await reader.readexactly(size + 2))[:-2].decode())
    return args
