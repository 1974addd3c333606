"""The built-in API server's validating admission: which webhooks a request goes to, what they are
sent, and how their answers (or their silence) become the client's result -- kube-apiserver's
rules and wording. A recording webhook stands in for a real one."""

from __future__ import annotations

import base64
import shutil
import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web

from kuberay_py.client import Client, NotFound
from kuberay_py.client import resources as r
from kuberay_py.envtest import Environment
from kuberay_py.envtest.apiserver.registry import ResourceType
from kuberay_py.envtest.apiserver.webhookrules import AdmissionAttributes, hook_matches, rule_matches
from kuberay_py.envtest.controlplane import free_port
from kuberay_py.envtest.webhookcerts import WebhookCA
from kuberay_py.envtest.webhooks import VALIDATING_WEBHOOK_CONFIGURATIONS
from tests.api_objects import dry_run_error, make_pod, refused
from tests.polling import eventually

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl not installed")

CM = ResourceType("", "v1", "ConfigMap", "configmaps")
NODES = ResourceType("", "v1", "Node", "nodes", namespaced=False)
NAMESPACES = ResourceType("", "v1", "Namespace", "namespaces", namespaced=False)


def _attrs(rt: ResourceType = CM, op: str = "CREATE", sub: str = "", obj: Any = None, old: Any = None) -> Any:
    return AdmissionAttributes(rt, op, "default" if rt.namespaced else "", "x", sub, obj, old, False)


@pytest.mark.parametrize(
    ("resources", "sub", "matches"),
    [
        (["configmaps"], "", True),
        (["configmaps"], "status", False),
        (["*"], "", True),
        (["*"], "status", False),
        (["*/*"], "status", True),
        (["configmaps/status"], "status", True),
        (["configmaps/*"], "status", True),
        (["configmaps/*"], "", False),
        (["*/status"], "status", True),
        (["*/status"], "scale", False),
        (["secrets"], "", False),
    ],
)
def test_rule_resources(resources: list[str], sub: str, matches: bool) -> None:
    rule = {
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "operations": ["*"],
        "resources": resources,
        "scope": "*",
    }
    assert rule_matches(rule, _attrs(sub=sub)) is matches


def test_rule_operation_group_version_and_scope() -> None:
    rule = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["*"]}
    assert rule_matches(rule, _attrs())
    assert not rule_matches(rule, _attrs(op="UPDATE"))
    assert not rule_matches({**rule, "apiGroups": ["apps"]}, _attrs())
    assert not rule_matches({**rule, "apiVersions": ["v2"]}, _attrs())
    assert not rule_matches({**rule, "scope": "Cluster"}, _attrs())
    assert rule_matches({**rule, "scope": "Cluster"}, _attrs(NODES))
    assert not rule_matches({**rule, "scope": "Namespaced"}, _attrs(NODES))


def test_selectors() -> None:
    rule = {"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"]}
    hook = {"rules": [rule], "namespaceSelector": {"matchLabels": {"team": "ray"}}, "objectSelector": {}}
    labelled = {"metadata": {"labels": {"team": "ray"}}}
    assert hook_matches(hook, _attrs(), labelled)
    assert not hook_matches(hook, _attrs(), {"metadata": {}})
    assert hook_matches(hook, _attrs(NODES), None)  # cluster-scoped: the namespace selector does not apply
    assert hook_matches(hook, _attrs(NAMESPACES, obj=labelled), None)  # a Namespace: its own labels
    by_object = {
        "rules": [rule],
        "objectSelector": {"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]},
    }
    assert hook_matches(by_object, _attrs(obj={"metadata": {}}), None)
    skipped = {"metadata": {"labels": {"skip": "1"}}}
    assert not hook_matches(by_object, _attrs(op="UPDATE", obj=skipped, old=skipped), None)
    assert hook_matches(by_object, _attrs(op="UPDATE", obj=skipped, old={"metadata": {}}), None)  # old or new
    configs = ResourceType(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        namespaced=False,
    )
    assert not hook_matches({"rules": [rule]}, _attrs(configs), None)  # never the webhooks' own kinds


@dataclass
class Recorder:
    url: str
    ca: WebhookCA
    port: int
    reviews: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    answer: Callable[[dict[str, Any]], Any] = lambda req: {"uid": req["uid"], "allowed": True}


@asynccontextmanager
async def recording_webhook(work: Path, host: str = "127.0.0.1") -> AsyncIterator[Recorder]:
    """A webhook at ``https://127.0.0.1:<port>/check`` with a certificate for ``host``."""
    ca = WebhookCA(work / "ca", host)
    ca.issue(work / "certs")
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(str(work / "certs" / "tls.crt"), str(work / "certs" / "tls.key"))
    port = free_port()
    recorder = Recorder(f"https://127.0.0.1:{port}/check", ca, port)

    async def handle(request: web.Request) -> web.Response:
        review = await request.json()
        recorder.reviews.append(review)
        recorder.paths.append(request.path)
        answer = recorder.answer(review["request"])
        if isinstance(answer, web.Response):
            return answer
        return web.json_response(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": answer}
        )

    app = web.Application()
    app.router.add_post("/check", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port, ssl_context=ctx).start()
    try:
        yield recorder
    finally:
        await runner.cleanup()


@pytest_asyncio.fixture
async def webhook(tmp_path: Path) -> AsyncIterator[Recorder]:
    async with recording_webhook(tmp_path) as recorder:
        yield recorder


def _config(recorder: Recorder, **hook: Any) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "test-hooks"},
        "webhooks": [
            {
                "name": "check.example.com",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "clientConfig": {
                    "url": recorder.url,
                    "caBundle": base64.b64encode(recorder.ca.ca_data).decode(),
                },
                "rules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["*"],
                        "resources": ["configmaps"],
                    }
                ],
                **hook,
            }
        ],
    }


async def _in_effect(client: Client, webhook: Recorder) -> None:
    """Until the API server calls ``webhook``: kube-apiserver loads configurations through an
    informer, so a write right after creating one may still pass unreviewed. Probes are dry runs,
    and their reviews are cleared."""

    async def called() -> bool:
        await dry_run_error(client, r.CONFIGMAPS, {"metadata": {"generateName": "probe-"}}, "default")
        return bool(webhook.reviews)

    await eventually(called, "the webhook configuration in effect", tolerate=())
    webhook.reviews.clear()
    webhook.paths.clear()


async def test_configuration_defaults_and_validation(webhook: Recorder) -> None:
    async with Environment() as env, env.new_client() as client:
        stored = await client.create(VALIDATING_WEBHOOK_CONFIGURATIONS, _config(webhook))
        [hook] = stored["webhooks"]
        assert (hook["failurePolicy"], hook["matchPolicy"], hook["timeoutSeconds"]) == (
            "Fail",
            "Equivalent",
            10,
        )
        assert hook["namespaceSelector"] == {} and hook["objectSelector"] == {}
        assert hook["rules"][0]["scope"] == "*"
        bad = _config(webhook, timeoutSeconds=31, clientConfig={"url": "http://127.0.0.1/x"})
        bad["metadata"]["name"] = "bad"
        del bad["webhooks"][0]["sideEffects"]
        err = await refused(client.create(VALIDATING_WEBHOOK_CONFIGURATIONS, bad))
        assert err.status == 422
        assert {c["field"]: c["message"] for c in (err.body or {})["details"]["causes"]} == {
            "webhooks[0].sideEffects": "Required value: must specify one of None, NoneOnDryRun",
            "webhooks[0].timeoutSeconds": (
                "Invalid value: 31: the timeout value must be between 1 and 30 seconds"
            ),
            "webhooks[0].clientConfig.url": (
                "Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: "
                "https://host[/path]"
            ),
        }
        # kube's IsFullyQualifiedName: a DNS-1123 subdomain first, then at least three segments.
        for name, message in (
            ("Check.example.com", 'Invalid value: "Check.example.com": a lowercase RFC 1123 subdomain'),
            (
                "check.example",
                'Invalid value: "check.example": should be a domain with at least three segments',
            ),
        ):
            misnamed = _config(webhook, name=name)
            misnamed["metadata"]["name"] = "misnamed"
            err = await refused(client.create(VALIDATING_WEBHOOK_CONFIGURATIONS, misnamed))
            causes = {c["field"]: c["message"] for c in (err.body or {})["details"]["causes"]}
            assert err.status == 422 and causes["webhooks[0].name"].startswith(message), causes


async def test_reviews_carry_the_stored_object_and_the_request(webhook: Recorder) -> None:
    async with Environment() as env, env.new_client() as client:
        await client.create(VALIDATING_WEBHOOK_CONFIGURATIONS, _config(webhook))
        await _in_effect(client, webhook)
        created = await client.create(
            r.CONFIGMAPS, {"metadata": {"generateName": "cm-"}, "data": {"a": "1"}}, "default"
        )
        [review] = webhook.reviews
        request = review["request"]
        assert review["apiVersion"] == "admission.k8s.io/v1" and review["kind"] == "AdmissionReview"
        assert request["operation"] == "CREATE" and request["namespace"] == "default"
        assert request["name"] == created["metadata"]["name"]  # the generated name is the one stored
        assert request["object"]["metadata"]["name"] == created["metadata"]["name"]
        assert request["oldObject"] is None and request["dryRun"] is False
        assert request["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
        assert request["options"] == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
        assert request["userInfo"]["username"]
        created["data"]["a"] = "2"
        await client.update(r.CONFIGMAPS, created)
        update = webhook.reviews[-1]["request"]
        assert update["operation"] == "UPDATE"
        assert (update["oldObject"]["data"], update["object"]["data"]) == ({"a": "1"}, {"a": "2"})
        await client.delete(r.CONFIGMAPS, created["metadata"]["name"], "default")
        delete = webhook.reviews[-1]["request"]
        assert delete["operation"] == "DELETE" and delete["object"] is None
        assert delete["oldObject"]["data"] == {"a": "2"}


async def test_denials_and_bad_answers(webhook: Recorder) -> None:
    async with Environment() as env, env.new_client() as client:
        await client.create(VALIDATING_WEBHOOK_CONFIGURATIONS, _config(webhook))
        await _in_effect(client, webhook)
        body = {"metadata": {"name": "denied"}}

        webhook.answer = lambda req: {"uid": req["uid"], "allowed": False, "status": {"code": 200}}
        err = await refused(client.create(r.CONFIGMAPS, body, "default"))
        assert err.status == 400  # a rejection never comes back below 400
        assert err.message == 'admission webhook "check.example.com" denied the request without explanation'

        webhook.answer = lambda req: {
            "uid": req["uid"],
            "allowed": False,
            "status": {"code": 409, "reason": "Conflict", "message": "taken"},
        }
        err = await refused(client.create(r.CONFIGMAPS, body, "default"))
        assert (err.status, err.reason) == (409, "Conflict")
        assert err.message == 'admission webhook "check.example.com" denied the request: taken'

        webhook.answer = lambda req: {"uid": "someone-else", "allowed": True}
        err = await refused(client.create(r.CONFIGMAPS, body, "default"))
        assert err.status == 500
        assert err.message.startswith(
            'Internal error occurred: failed calling webhook "check.example.com": received invalid webhook '
            'response: expected response.uid="'
        )

        webhook.answer = lambda req: web.Response(status=503)
        err = await refused(client.create(r.CONFIGMAPS, body, "default"))
        assert err.message == (
            'Internal error occurred: failed calling webhook "check.example.com": failed to call webhook: '
            "the server responded with the status code 503 but did not return more information"
        )
        with pytest.raises(NotFound):
            await client.get(r.CONFIGMAPS, "denied", "default")


async def test_delete_collection_sends_each_item_to_the_webhook(webhook: Recorder) -> None:
    """kube-apiserver deletes a collection item by item, each a DELETE through admission."""
    async with Environment() as env, env.new_client() as client:
        await client.create(VALIDATING_WEBHOOK_CONFIGURATIONS, _config(webhook))
        await _in_effect(client, webhook)
        for name in ("dc-a", "dc-b"):
            await client.create(
                r.CONFIGMAPS, {"metadata": {"name": name, "labels": {"set": "dc"}}}, "default"
            )
        webhook.reviews.clear()
        webhook.answer = lambda req: {
            "uid": req["uid"],
            "allowed": req["name"] != "dc-b",
            "status": {"code": 403, "message": "keep b"},
        }
        err = await refused(client.delete_collection(r.CONFIGMAPS, "default", label_selector="set=dc"))
        assert err.message == 'admission webhook "check.example.com" denied the request: keep b'
        deletes = [rv["request"] for rv in webhook.reviews if rv["request"]["operation"] == "DELETE"]
        assert "dc-b" in [d["name"] for d in deletes]
        assert all(d["oldObject"]["metadata"]["labels"] == {"set": "dc"} for d in deletes)
        assert await client.get(r.CONFIGMAPS, "dc-b", "default")

        webhook.answer = lambda req: {"uid": req["uid"], "allowed": True}
        await client.delete_collection(r.CONFIGMAPS, "default", label_selector="set=dc")
        assert (await client.list(r.CONFIGMAPS, "default", label_selector="set=dc"))["items"] == []


@pytest.mark.builtin_only(
    reason="a webhook Service on loopback Endpoints (the built-in knob); kube-apiserver dials the ClusterIP"
)
async def test_service_reference_is_called_through_its_endpoints(tmp_path: Path) -> None:
    async with recording_webhook(tmp_path, "hooks.default.svc") as recorder:
        recorder.answer = lambda req: {
            "uid": req["uid"],
            "allowed": False,
            "status": {"message": "via service"},
        }
        port = recorder.port
        async with (
            Environment(server_options={"accept_loopback_endpoint_addresses": True}) as env,
            env.new_client() as client,
        ):
            await client.create(
                r.SERVICES,
                {
                    "metadata": {"name": "hooks"},
                    "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port}]},
                },
                "default",
            )
            # The built-in server resolves a webhook's Service as it resolves services/proxy:
            # through its Endpoints, to an address its Pod still has (kube-apiserver dials the
            # ClusterIP, which nothing routes here).
            await make_pod(client, "default", "127.0.0.1", name="hooks-0")
            target = {"kind": "Pod", "namespace": "default", "name": "hooks-0"}
            await client.create(
                r.ENDPOINTS,
                {
                    "metadata": {"name": "hooks"},
                    "subsets": [
                        {
                            "addresses": [{"ip": "127.0.0.1", "targetRef": target}],
                            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
                        }
                    ],
                },
                "default",
            )
            config = _config(recorder)
            config["webhooks"][0]["clientConfig"] = {
                "service": {"name": "hooks", "namespace": "default", "path": "/check"},
                "caBundle": base64.b64encode(recorder.ca.ca_data).decode(),
            }
            await client.create(VALIDATING_WEBHOOK_CONFIGURATIONS, config)
            err = await refused(client.create(r.CONFIGMAPS, {"metadata": {"name": "x"}}, "default"))
            assert err.message == 'admission webhook "check.example.com" denied the request: via service'
            assert recorder.paths == ["/check"]


async def test_dry_run_reaches_the_webhook_flagged_and_stores_nothing(webhook: Recorder) -> None:
    async with Environment() as env, env.new_client() as client:
        await client.create(VALIDATING_WEBHOOK_CONFIGURATIONS, _config(webhook))
        await _in_effect(client, webhook)
        await client.create(r.CONFIGMAPS, {"metadata": {"name": "dry"}}, "default", dry_run=True)
        assert webhook.reviews[-1]["request"]["dryRun"] is True
        with pytest.raises(NotFound):
            await client.get(r.CONFIGMAPS, "dry", "default")


async def _raw_create(env: Environment, path: str, body: dict[str, Any]) -> tuple[int, list[str]]:
    """POST with the environment's credentials; the status and the Warning headers."""
    cfg = await env.kube_configuration()
    ctx = None
    if cfg.host.startswith("https"):
        ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
        if cfg.cert_file:
            ctx.load_cert_chain(cfg.cert_file, cfg.key_file)
    headers = {"Content-Type": "application/json"}
    if cfg.api_key.get("authorization"):
        headers["Authorization"] = cfg.api_key["authorization"]
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{cfg.host}{path}", json=body, headers=headers, ssl=ctx if ctx else False) as resp,
    ):
        return resp.status, resp.headers.getall("Warning", [])


async def test_webhook_warnings_reach_the_client_as_warning_headers(webhook: Recorder) -> None:
    webhook.answer = lambda req: {"uid": req["uid"], "allowed": True, "warnings": ['mind the "gap"', "twice"]}
    async with Environment() as env, env.new_client() as client:
        await client.create(VALIDATING_WEBHOOK_CONFIGURATIONS, _config(webhook))
        await _in_effect(client, webhook)
        status, warnings = await _raw_create(
            env, "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "warned"}}
        )
        assert status == 201
        assert warnings == ['299 - "mind the \\"gap\\""', '299 - "twice"']
