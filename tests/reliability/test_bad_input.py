"""Bad input keeps serving: an invalid update to a Ready RayService is reported, and changes nothing.

Whatever is wrong with the new spec, the cluster that serves today keeps serving: same cluster,
same ready endpoints, HTTP 200 through them, no new cluster, nothing deleted. The user gets one
Warning event and a condition saying why; fixing the spec brings everything back to Ready.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from controllers.constants import RAYCLUSTERS, RAYSERVICES
from kuberay_py.client import Invalid

from .conftest import InProcessOperator, Rig, Traffic, condition, eventually, rayservice, serve_config

SERVE_SVC = "rs-serve-svc"


def _unparseable_serve_config(spec: dict[str, Any]) -> None:
    spec["serveConfigV2"] = "applications: [unclosed"


def _unknown_upgrade_strategy(spec: dict[str, Any]) -> None:
    spec["upgradeStrategy"] = {"type": "Bogus"}


def _serve_config_ray_rejects(spec: dict[str, Any]) -> None:
    broken = serve_config(3)
    del broken["applications"][0]["import_path"]  # Ray's schema: 400 "Field required"
    spec["serveConfigV2"] = yaml.safe_dump(broken)


# how to break the spec -> the Warning's reason, the condition (type, status, reason), a word of its message
CASES: dict[str, tuple[Callable[[dict[str, Any]], None], str, str, str, str, str]] = {
    "unparseable-serveConfigV2": (
        _unparseable_serve_config, "InvalidRayServiceSpec", "Ready", "False", "ValidationFailed",
        "serveConfigV2",
    ),
    "unknown-upgradeStrategy": (
        _unknown_upgrade_strategy, "InvalidRayServiceSpec", "Ready", "False", "ValidationFailed", "Bogus",
    ),
    "serveConfigV2-rejected-by-ray": (
        _serve_config_ray_rejects, "FailedToUpdateServeApplications", "ServeConfigValid", "False",
        "ServeConfigRejected", "import_path",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
async def test_invalid_update_is_reported_and_the_cluster_keeps_serving(rig: Rig, case: str) -> None:
    breaks, reason, cond_type, cond_status, cond_reason, word = CASES[case]
    ns = rig.namespace
    async with InProcessOperator(rig):
        await rig.client.create(RAYSERVICES, rayservice(), ns)
        good = await rig.wait_ready("rs", endpoints=4)
        cluster = good["status"]["activeServiceStatus"]["rayClusterName"]
        serving = await rig.wait_ready_pods(SERVE_SVC, 4)
        await rig.env.request_log.clear()

        async with Traffic(rig, SERVE_SVC, max_seconds=40, max_requests=4000) as traffic:
            await rig.edit_rayservice("rs", lambda o: breaks(o["spec"]))

            async def reported() -> dict[str, Any] | None:
                cur = await rig.rs()
                cond = condition(cur, cond_type)
                seen = (cur.get("status") or {}).get("observedGeneration") == cur["metadata"]["generation"]
                ok = cond.get("status") == cond_status and cond.get("reason") == cond_reason
                return cur if ok and (seen or cond_reason != "ValidationFailed") else None

            cur = await eventually(reported, f"{cond_type}={cond_status}/{cond_reason}")

            async def warned() -> list[dict[str, Any]]:  # Events are written after the status
                return [e for e in await rig.events("rs") if e["reason"] == reason]

            warnings = await eventually(warned, f"the {reason} Warning event")
            await traffic.flows(100, "traffic after the bad update")
            assert await rig.ready_pods(SERVE_SVC) == serving

            # fixing the spec restores Ready on the same cluster
            await rig.edit_rayservice("rs", lambda o: o.update(spec=copy.deepcopy(good["spec"])))
            healed = await rig.wait_ready("rs", endpoints=4)

    assert word in condition(cur, cond_type)["message"]
    assert len(warnings) == 1 and warnings[0]["type"] == "Warning", warnings
    assert word in warnings[0]["note"]
    report = traffic.report
    report.assert_all_served(100)
    assert report.min_endpoints == 4  # not one endpoint lost at any point
    assert cur["status"]["activeServiceStatus"]["rayClusterName"] == cluster
    assert healed["status"]["activeServiceStatus"]["rayClusterName"] == cluster
    assert [rc["metadata"]["name"] for rc in (await rig.client.list(RAYCLUSTERS, ns))["items"]] == [cluster]
    deletes = [r for r in await rig.env.request_log.records() if r.verb in ("delete", "deletecollection")]
    assert deletes == []


async def test_update_rejected_by_the_crd_schema_changes_nothing(rig: Rig) -> None:
    async with InProcessOperator(rig):
        await rig.client.create(RAYSERVICES, rayservice(), rig.namespace)
        good = await rig.wait_ready("rs", endpoints=4)
        with pytest.raises(Invalid) as err:
            await rig.edit_rayservice("rs", lambda o: o["spec"].update(rayClusterDeletionDelaySeconds=-1))
        assert any(c["field"] == "spec.rayClusterDeletionDelaySeconds" for c in err.value.causes)
        after = await rig.rs()
        assert after["metadata"]["generation"] == good["metadata"]["generation"]
        assert "rayClusterDeletionDelaySeconds" not in after["spec"]
        async with Traffic(rig, SERVE_SVC, max_requests=20, max_seconds=10) as traffic:
            await eventually(lambda: traffic.sent_at_least(20), "20 requests")
    assert traffic.report.failures == [] and traffic.report.ok == 20
