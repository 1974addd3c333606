"""The RayJob submitter Pod's script, run against a fake head's dashboard over real HTTP.

KubeRay's submitter container runs one bash line (docs/reference/rayjob.md §4.1): wait for
``/api/gcs_healthz``, ``ray job status`` (skip the submit if the id is known), ``ray job submit
--no-wait ... -- <entrypoint>``, then ``ray job logs --follow``. This module reads that line (or a
user's own command using ``$RAY_DASHBOARD_ADDRESS`` / ``$RAY_JOB_SUBMISSION_ID``) and does the same
through the dashboard's REST API and its ``/logs/tail`` WebSocket, with the exit codes the Ray CLI
gives: 0 after following the logs to the end (even when the job FAILED: KubeRay reads the outcome
from the Ray job status, not the Pod), 1 when a command fails (bash ``-e``). Without ``--no-wait``
(SidecarMode before ``SidecarSubmitterRestart``) ``ray job submit`` follows the logs itself and
exits 1 if the job FAILED (a STOPPED job exits 0, as Ray 2.60's CLI does).

KubeRay's light-weight submitter (the ``quay.io/kuberay/submitter`` image's ``/submitter``
binary, a user's ``submitterPodTemplate`` command) is understood too: its flags
(``--runtime-env-json``, ``--metadata-json``, ``--entrypoint-resources``,
``--entrypoint-num-cpus/gpus``) and positional entrypoint build the ``POST /api/jobs/`` body, the
address and id come from ``$RAY_DASHBOARD_ADDRESS`` / ``$RAY_JOB_SUBMISSION_ID``; it does not wait
for GCS health, takes an already-used id as "submitted before" and tails the logs to the end
(exit 0), and any other error exits 1, as that binary does.

Service DNS names are not resolvable on a simulated host, so the caller passes ``resolve``: a
dashboard host name → the head Pod address serving it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson

from kuberay_py.clock import Clock
from kuberay_py.log import get_logger

__all__ = [
    "SIDECAR",
    "SubmitterScript",
    "is_submitter_pod",
    "parse_submitter",
    "run_submitter",
    "sidecar_submitter",
]

log = get_logger("controllers.raysim.submitter")

_OPERATORS = {"&&", ";", "||", "|", ">", ">>", "&"}
_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")
HEALTH_RETRY_SECONDS = 2.0
HTTP_TIMEOUT = aiohttp.ClientTimeout(total=10)


@dataclass
class SubmitterScript:
    address: str
    submission_id: str
    guard: bool = False  # `ray job status ... || submit`: never submit twice
    submit: bool = False
    no_wait: bool = False
    follow: bool = False
    body: dict[str, Any] = field(default_factory=dict)
    # The light-weight submitter: no GCS health wait, an already-used id is not an error.
    wait_healthy: bool = True
    duplicate_ok: bool = False


SIDECAR = "ray-job-submitter"


def _container_line(pod: dict[str, Any], name: str | None = None) -> tuple[str, dict[str, str], bool]:
    """(the container's command line, its literal env, whether RAY_AUTH_TOKEN is set): the one
    named ``name``, else the first."""
    containers = (pod.get("spec") or {}).get("containers") or []
    if name is not None:
        containers = [c for c in containers if c.get("name") == name]
    if not containers:
        return "", {}, False
    c = containers[0]
    words = [str(w) for w in (c.get("command") or []) + (c.get("args") or [])]
    env: dict[str, str] = {}
    token = False
    for item in c.get("env") or []:
        if item.get("name") == "RAY_AUTH_TOKEN":
            token = True
        if "value" in item:
            env[str(item.get("name"))] = str(item.get("value") or "")
    return " ".join(words), env, token


def is_submitter_pod(pod: dict[str, Any]) -> bool:
    line, _, _ = _container_line(pod)
    return "ray job submit" in line or "ray job logs" in line or _light_weight_words(pod) is not None


LIGHT_WEIGHT_BINARY = "submitter"
_LIGHT_WEIGHT_FLAGS = {
    "--runtime-env-json",
    "--metadata-json",
    "--entrypoint-resources",
    "--entrypoint-num-cpus",
    "--entrypoint-num-gpus",
}


def _light_weight_words(pod: dict[str, Any], name: str | None = None) -> list[str] | None:
    """The arguments of a container running the light-weight ``/submitter`` binary, else None."""
    containers = (pod.get("spec") or {}).get("containers") or []
    if name is not None:
        containers = [c for c in containers if c.get("name") == name]
    if not containers:
        return None
    command = [str(w) for w in containers[0].get("command") or []]
    if not command or command[0].rsplit("/", 1)[-1] != LIGHT_WEIGHT_BINARY:
        return None
    return command[1:] + [str(w) for w in containers[0].get("args") or []]


def _parse_light_weight(words: list[str], env: dict[str, str]) -> SubmitterScript:
    """pflag's reading of the binary's command line: ``--flag value`` / ``--flag=value``, the
    positional words (all of them after ``--``) joined with spaces as the entrypoint."""
    flags: dict[str, str] = {}
    positional: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            positional += words[i + 1 :]
            break
        name, eq, value = word.partition("=")
        if name in _LIGHT_WEIGHT_FLAGS:
            if not eq and i + 1 < len(words):
                value = words[i + 1]
                i += 1
            flags[name] = value
        else:
            positional.append(word)
        i += 1
    sid = env.get("RAY_JOB_SUBMISSION_ID", "")
    return SubmitterScript(
        env.get("RAY_DASHBOARD_ADDRESS", ""),
        sid,
        submit=True,
        no_wait=True,
        follow=True,
        body=_submit_body(flags, " ".join(positional), sid),
        wait_healthy=False,
        duplicate_ok=True,
    )


def _expand(word: str, env: dict[str, str]) -> str:
    return _VAR.sub(lambda m: env.get(m.group(1), ""), word)


def _join(words: list[str]) -> str:
    return " ".join(
        w if w in _OPERATORS or not re.search(r"[\s'\"$`\\()<>|&;*?]", w) else shlex.quote(w) for w in words
    )


def sidecar_submitter(pod: dict[str, Any]) -> bool:
    """A SidecarMode head: the ``ray-job-submitter`` container runs next to Ray."""
    line, _, _ = _container_line(pod, SIDECAR)
    return "ray job submit" in line


def parse_submitter(pod: dict[str, Any], container: str | None = None) -> SubmitterScript | None:
    """The submitter's plan from its Pod, or None if the Pod runs no ``ray job`` commands."""
    line, env, _ = _container_line(pod, container)
    light = _light_weight_words(pod, container)
    if light is not None:
        return _parse_light_weight(light, env)
    if "ray job" not in line:
        return None
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|>")
    lexer.whitespace_split = True
    try:
        tokens = [_expand(t, env) for t in lexer]
    except ValueError:
        return None
    script = SubmitterScript(env.get("RAY_DASHBOARD_ADDRESS", ""), env.get("RAY_JOB_SUBMISSION_ID", ""))
    i = 0
    while i < len(tokens):
        if tokens[i] == "ray" and i + 2 <= len(tokens) - 1 and tokens[i + 1] == "job":
            verb = tokens[i + 2]
            j = i + 3
            flags: dict[str, str] = {}
            positional: list[str] = []
            entry: list[str] = []
            while j < len(tokens) and tokens[j] not in (";", "&&", "||", ">", ">>", "|"):
                tok = tokens[j]
                if tok == "--" and verb == "submit":
                    j += 1
                    while j < len(tokens) and not (
                        tokens[j] == ";" and (j + 1 >= len(tokens) or tokens[j + 1] in ("fi", "ray"))
                    ):
                        entry.append(tokens[j])
                        j += 1
                    break
                if tok.startswith("--"):
                    if tok in ("--no-wait", "--follow"):
                        flags[tok] = ""
                    elif j + 1 < len(tokens):
                        flags[tok] = tokens[j + 1]
                        j += 1
                else:
                    positional.append(tok)
                j += 1
            if "--address" in flags:
                script.address = flags["--address"]
            if verb == "status":
                script.guard = True
                if positional:
                    script.submission_id = positional[0]
            elif verb == "submit":
                script.submit = True
                script.no_wait = "--no-wait" in flags
                script.submission_id = flags.get("--submission-id", script.submission_id)
                script.body = _submit_body(flags, _join(entry), script.submission_id)
            elif verb == "logs":
                script.follow = "--follow" in flags
                if positional:
                    script.submission_id = positional[0]
            i = j
        i += 1
    return script


def _submit_body(flags: dict[str, str], entrypoint: str, submission_id: str) -> dict[str, Any]:
    body: dict[str, Any] = {"entrypoint": entrypoint}
    if submission_id:
        body["submission_id"] = submission_id
    for flag, key in (("--runtime-env-json", "runtime_env"), ("--metadata-json", "metadata")):
        if flag in flags:
            body[key] = orjson.loads(flags[flag])
    if "--entrypoint-resources" in flags:
        body["entrypoint_resources"] = orjson.loads(flags["--entrypoint-resources"])
    for flag, key in (
        ("--entrypoint-num-cpus", "entrypoint_num_cpus"),
        ("--entrypoint-num-gpus", "entrypoint_num_gpus"),
    ):
        if flag in flags:
            body[key] = float(flags[flag])
    return body


async def run_submitter(
    pod: dict[str, Any],
    *,
    clock: Clock,
    resolve: Callable[[str], Awaitable[str | None]],
    auth_token: str | None,
    output: list[str],
    container: str | None = None,
) -> int:
    """Run the submitter's commands; returns the container's exit code. ``output`` gets its stdout."""
    script = parse_submitter(pod, container)
    if script is None or not script.address:
        output.append("raysim: no dashboard address for the submitter")
        return 1
    base = script.address if "://" in script.address else f"http://{script.address}"
    host_port = base.split("://", 1)[1].split("/", 1)[0]
    host, _, port = host_port.partition(":")
    ip = await resolve(host)
    if ip is None:
        output.append(f"raysim: cannot resolve {host}")
        return 1
    base = f"http://{ip}:{port or '8265'}"
    _, _, has_token = _container_line(pod, container)
    headers = {"x-ray-authorization": f"Bearer {auth_token}"} if (has_token and auth_token) else {}
    # No session-wide total timeout: the log tail lives as long as the job; each request has its own.
    session_timeout = aiohttp.ClientTimeout(total=None, sock_connect=HTTP_TIMEOUT.total)
    async with aiohttp.ClientSession(headers=headers, timeout=session_timeout, trust_env=False) as session:
        while script.wait_healthy and not await _healthy(session, base):
            output.append(f"Waiting for Ray Dashboard GCS to become healthy at {base} ...")
            await clock.sleep(HEALTH_RETRY_SECONDS)
        sid = script.submission_id
        try:
            known = script.guard and await _job_exists(session, base, sid)
            if script.submit and not known:
                async with session.post(
                    f"{base}/api/jobs/", data=orjson.dumps(script.body), timeout=HTTP_TIMEOUT
                ) as resp:
                    text = await resp.text()
                    duplicate = script.duplicate_ok and "Please use a different submission_id" in text
                    if resp.status != 200 and not duplicate:
                        output.append(text)
                        return 1
                output.append(
                    f"Job '{sid}' has already been submitted, tailing logs."
                    if resp.status != 200
                    else f"Job '{sid}' submitted successfully"
                )
                if not script.no_wait:
                    if not await _follow(session, base, sid, output):
                        return 1
                    return 1 if await _status(session, base, sid) == "FAILED" else 0
            if script.follow and not await _follow(session, base, sid, output):
                return 1
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            output.append(f"raysim: {type(exc).__name__}: {exc}")
            return 1
    return 0


async def _healthy(session: aiohttp.ClientSession, base: str) -> bool:
    try:
        async with session.get(f"{base}/api/gcs_healthz", timeout=HTTP_TIMEOUT) as resp:
            return resp.status == 200 and b"success" in await resp.read()
    except (aiohttp.ClientError, OSError, TimeoutError):
        return False


async def _job_exists(session: aiohttp.ClientSession, base: str, sid: str) -> bool:
    async with session.get(f"{base}/api/jobs/{sid}", timeout=HTTP_TIMEOUT) as resp:
        await resp.read()
        return resp.status == 200


async def _status(session: aiohttp.ClientSession, base: str, sid: str) -> str:
    async with session.get(f"{base}/api/jobs/{sid}", timeout=HTTP_TIMEOUT) as resp:
        doc = orjson.loads(await resp.read()) if resp.status == 200 else {}
        return str(doc.get("status", ""))


async def _follow(session: aiohttp.ClientSession, base: str, sid: str, output: list[str]) -> bool:
    """Tail the job's logs to the end; False when the stream did not close normally (the Ray CLI
    then exits 1, the transient failure SidecarSubmitterRestart exists for)."""
    async with session.ws_connect(
        f"{base}/api/jobs/{sid}/logs/tail", timeout=aiohttp.ClientWSTimeout()
    ) as ws:
        async for msg in ws:
            if msg.type == aiohttp.WSMsgType.TEXT:
                output.extend(str(msg.data).splitlines())
            elif msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                break
        if ws.close_code not in (None, 1000):
            output.append(f"raysim: log stream closed with code {ws.close_code}")
            return False
        return True
