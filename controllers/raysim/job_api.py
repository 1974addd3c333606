"""The head dashboard's job REST API over a :class:`~controllers.raysim.jobs.JobTable`.

Status codes and bodies follow Ray 2.60's ``job_head.py``: a bad or duplicate submission is a 400
with the reason as text, an unknown job a 404 ``Job <id> does not exist``, stop answers
``{"stopped": bool}``, delete ``{"deleted": true}`` (400 for a job still running), logs
``{"logs": "..."}``. Every handler goes through the cluster's ``gate`` first (hung dashboard,
injected 500s, token auth), exactly like the Serve handlers.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

from aiohttp import web

from controllers.raysim.jobs import JobTable

__all__ = ["add_job_routes"]

Gate = Callable[[web.Request], Awaitable[web.Response | None]]


def add_job_routes(app: web.Application, table: JobTable, gate: Gate) -> None:
    def unknown(submission_id: str) -> web.Response:
        return web.Response(status=404, text=f"Job {submission_id} does not exist")

    async def list_jobs(request: web.Request) -> web.Response:
        if (denied := await gate(request)) is not None:
            return denied
        now = table.clock.now()
        return web.json_response([job.to_api(now) for job in table.jobs.values()])

    async def submit(request: web.Request) -> web.Response:
        if (denied := await gate(request)) is not None:
            return denied
        try:
            body = json.loads(await request.read())
        except json.JSONDecodeError as exc:
            return web.Response(status=400, text=f"Malformed request: {exc}")
        if not isinstance(body, dict):
            return web.Response(status=400, text="Malformed request: the body must be a JSON object")
        try:
            job = table.submit(body)
        except ValueError as exc:
            return web.Response(status=400, text=f"Traceback (most recent call last):\nValueError: {exc}")
        return web.json_response({"job_id": job.submission_id, "submission_id": job.submission_id})

    async def get_job(request: web.Request) -> web.Response:
        if (denied := await gate(request)) is not None:
            return denied
        job = table.jobs.get(request.match_info["job_id"])
        if job is None:
            return unknown(request.match_info["job_id"])
        return web.json_response(job.to_api(table.clock.now()))

    async def stop(request: web.Request) -> web.Response:
        if (denied := await gate(request)) is not None:
            return denied
        submission_id = request.match_info["job_id"]
        if submission_id not in table.jobs:
            return unknown(submission_id)
        return web.json_response({"stopped": table.stop(submission_id)})

    async def delete(request: web.Request) -> web.Response:
        if (denied := await gate(request)) is not None:
            return denied
        submission_id = request.match_info["job_id"]
        if submission_id not in table.jobs:
            return unknown(submission_id)
        try:
            table.delete(submission_id)
        except ValueError as exc:
            return web.Response(status=400, text=str(exc))
        return web.json_response({"deleted": True})

    async def logs(request: web.Request) -> web.Response:
        if (denied := await gate(request)) is not None:
            return denied
        job = table.jobs.get(request.match_info["job_id"])
        if job is None:
            return unknown(request.match_info["job_id"])
        return web.json_response({"logs": job.logs(table.clock.now())})

    async def tail(request: web.Request) -> web.StreamResponse:
        """``ray job logs --follow``: a WebSocket that pushes new log text and closes (normally)
        when the job ends, is deleted, or the head restarts — as Ray's ``/logs/tail`` does."""
        if (denied := await gate(request)) is not None:
            return denied
        submission_id = request.match_info["job_id"]
        if submission_id not in table.jobs:
            return unknown(submission_id)
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        if table.log_stream_drops > 0:
            table.log_stream_drops -= 1
            await ws.close(code=1011, message=b"simulated log stream drop")
            return ws
        sent = 0
        while not ws.closed:
            job = table.jobs.get(submission_id)
            if job is None:
                break
            now = table.clock.now()
            text = job.logs(now)
            if len(text) > sent:
                await ws.send_str(text[sent:])
                sent = len(text)
            due = job.next_change(now)
            if due is None:
                break
            changed = asyncio.ensure_future(table.changed.wait())
            timer = asyncio.ensure_future(table.clock.sleep(max(0.0, due - now)))
            try:
                await asyncio.wait({changed, timer}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                changed.cancel()
                timer.cancel()
        await ws.close()
        return ws

    for path in ("/api/jobs/", "/api/jobs"):
        app.router.add_get(path, list_jobs)
        app.router.add_post(path, submit)
    app.router.add_get("/api/jobs/{job_id}", get_job)
    app.router.add_delete("/api/jobs/{job_id}", delete)
    app.router.add_post("/api/jobs/{job_id}/stop", stop)
    app.router.add_get("/api/jobs/{job_id}/logs", logs)
    app.router.add_get("/api/jobs/{job_id}/logs/tail", tail)
