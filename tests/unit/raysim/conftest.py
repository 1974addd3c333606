"""An HTTP client for the raysim unit tests (nodes are built by ``fake_nodes``)."""

from collections.abc import AsyncIterator

import aiohttp
import pytest


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    """force_close: every request opens a new connection, as the operator's probes do."""
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as s:
        yield s
