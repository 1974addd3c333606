"""rest_client_* metrics count real requests with client-go's labels."""

from __future__ import annotations

import socket

import pytest

from kuberay_py.client import Client, ClientConfig, NotFound, TransportError, resources
from kuberay_py.metrics import registry

from .conftest import Stub, status


def sample(name: str, **labels: str) -> float:
    value = registry.get_sample_value(name, labels)
    return value or 0.0


async def test_requests_total_and_duration_by_code_method_host(stub: Stub, client: Client) -> None:
    host = client.host_label
    assert host.startswith("127.0.0.1:")
    ok_before = sample("rest_client_requests_total", code="200", method="GET", host=host)
    nf_before = sample("rest_client_requests_total", code="404", method="GET", host=host)
    post_before = sample("rest_client_requests_total", code="201", method="POST", host=host)
    dur_before = sample("rest_client_request_duration_seconds_count", verb="GET", host=host)

    stub.reply(200, {"kind": "Pod", "metadata": {"name": "a"}})
    stub.reply(404, status(404, "NotFound"))
    stub.reply(201, {"kind": "Pod", "metadata": {"name": "b"}})
    await client.get(resources.PODS, "a", "ns")
    with pytest.raises(NotFound):
        await client.get(resources.PODS, "gone", "ns")
    await client.create(resources.PODS, {"metadata": {"name": "b", "namespace": "ns"}})

    assert sample("rest_client_requests_total", code="200", method="GET", host=host) == ok_before + 1
    assert sample("rest_client_requests_total", code="404", method="GET", host=host) == nf_before + 1
    assert sample("rest_client_requests_total", code="201", method="POST", host=host) == post_before + 1
    assert sample("rest_client_request_duration_seconds_count", verb="GET", host=host) == dur_before + 2
    assert sample("rest_client_request_duration_seconds_sum", verb="GET", host=host) > 0


async def test_transport_failures_count_as_error_code() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    host = f"127.0.0.1:{port}"
    async with Client(ClientConfig(host=f"http://{host}")) as c:
        with pytest.raises(TransportError):
            await c.get(resources.PODS, "a", "ns")
    assert sample("rest_client_requests_total", code="<error>", method="GET", host=host) == 1


async def test_metric_names_are_exposed() -> None:
    from kuberay_py.metrics import exposition

    text = exposition().decode()
    assert "# TYPE rest_client_requests_total counter" in text
    assert "# TYPE rest_client_request_duration_seconds histogram" in text
    assert "rest_client_requests_created" not in text
