"""EndpointSlice address validation, as kube-apiserver's ``ValidateEndpointIP`` does it.

A slice naming a loopback, unspecified or link-local address (or one of another family than its
``addressType``) is refused with 422: the service proxy would send traffic to the node itself.
This is why the simulator gives Pods addresses from a pod network and not from 127.0.0.0/8.
"""

from __future__ import annotations

from typing import Any

import pytest

from kuberay_py.client import Client, Invalid
from kuberay_py.client import resources as r
from kuberay_py.envtest import Environment


def endpoint_slice(name: str, address: str, address_type: str = "IPv4") -> dict[str, Any]:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": name, "labels": {"kubernetes.io/service-name": "svc"}},
        "addressType": address_type,
        "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    }


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("127.114.0.1", "may not be in the loopback range (127.0.0.0/8, ::1/128)"),
        ("0.0.0.0", "may not be unspecified (0.0.0.0)"),
        ("169.254.169.254", "may not be in the link-local range (169.254.0.0/16, fe80::/10)"),
    ],
)
async def test_special_addresses_are_rejected(
    envtest: Environment, k8s: Client, namespace: str, address: str, message: str
) -> None:
    if envtest.server is not None and envtest.server.accept_loopback_endpoint_addresses:
        pytest.skip("this session's built-in server was told to accept loopback (no pod network here)")
    with pytest.raises(Invalid) as caught:
        await k8s.create(r.ENDPOINTSLICES, endpoint_slice("bad", address), namespace)
    assert caught.value.status == 422
    assert f'endpoints[0].addresses[0]: Invalid value: "{address}": {message}' in caught.value.message
    causes = caught.value.causes
    assert {"reason": "FieldValueInvalid", "field": "endpoints[0].addresses[0]"} in [
        {"reason": c.get("reason"), "field": c.get("field")} for c in causes
    ], causes


async def test_loopback_rejected_on_update_too(k8s: Client, namespace: str) -> None:
    created = await k8s.create(r.ENDPOINTSLICES, endpoint_slice("upd", "10.244.7.9"), namespace)
    created["endpoints"][0]["addresses"] = ["127.0.0.1"]
    with pytest.raises(Invalid, match="loopback range"):
        await k8s.update(r.ENDPOINTSLICES, created)


async def test_address_must_match_the_address_type(k8s: Client, namespace: str) -> None:
    # The family check names the addresses list, not the address (kube-apiserver v1.36).
    with pytest.raises(Invalid) as caught:
        await k8s.create(r.ENDPOINTSLICES, endpoint_slice("v6", "10.244.0.5", "IPv6"), namespace)
    assert caught.value.message.startswith('EndpointSlice.discovery.k8s.io "v6" is invalid: ')
    assert caught.value.message.endswith(
        'endpoints[0].addresses: Invalid value: "10.244.0.5": must be an IPv6 address'
    )
    assert caught.value.causes == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "10.244.0.5": must be an IPv6 address',
            "field": "endpoints[0].addresses",
        }
    ]
    ok = await k8s.create(r.ENDPOINTSLICES, endpoint_slice("v4", "10.244.0.5"), namespace)
    assert ok["endpoints"][0]["addresses"] == ["10.244.0.5"]
