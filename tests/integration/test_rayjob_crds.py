"""The generated RayJob / RayCronJob CRDs on an API server: all 21 KubeRay samples accepted with
strict field validation and nothing lost; invalid manifests rejected naming the field (by the API
server's schema, or — where the schema says nothing, e.g. CEL on the built-in server — by
``controllers.api.job_validation`` on the stored object)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.api.job_validation import validate_raycronjob, validate_rayjob
from controllers.api.rayjob import load_raycronjob, load_rayjob
from controllers.constants import RAYCRONJOBS, RAYJOBS
from kuberay_py.client import BadRequest, Client, Invalid
from tests.integration.test_crds import missing_from
from tests.manifest_edits import Mutation, set_path

ROOT = Path(__file__).resolve().parents[2]
SAMPLES_DIR = ROOT / "tests" / "fixtures" / "kuberay" / "samples"


def _samples() -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(SAMPLES_DIR.glob("ray-*job*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") in ("RayJob", "RayCronJob"):
                out.append((path.name, doc))
    return out


SAMPLES = _samples()


def test_every_sample_file_is_covered() -> None:
    assert len({name for name, _ in SAMPLES}) == 21


async def _create_strict(client: Client, doc: dict[str, Any], ns: str) -> dict[str, Any]:
    res = RAYJOBS if doc["kind"] == "RayJob" else RAYCRONJOBS
    created: dict[str, Any] = await client.request(
        "POST", res.path(ns), query={"fieldValidation": "Strict"}, body=copy.deepcopy(doc)
    )
    return created


@pytest.mark.parametrize(("name", "doc"), SAMPLES, ids=[n for n, _ in SAMPLES])
async def test_sample_is_accepted_strictly_without_loss(
    client: Client, ns: str, name: str, doc: dict[str, Any]
) -> None:
    created = await _create_strict(client, doc, ns)
    res = RAYJOBS if doc["kind"] == "RayJob" else RAYCRONJOBS
    name = created["metadata"]["name"]  # the kueue sample uses generateName
    stored = await client.get(res, name, ns)
    for obj in (created, stored):
        assert missing_from(doc["spec"], obj["spec"], "spec") == []
    if doc["kind"] == "RayJob":
        assert load_rayjob(stored).to_dict() == stored
        assert validate_rayjob(stored) == []
        assert stored["spec"]["submissionMode"] == doc["spec"].get("submissionMode", "K8sJobMode")
        assert stored["spec"]["backoffLimit"] == doc["spec"].get("backoffLimit", 0)
    else:
        assert load_raycronjob(stored).to_dict() == stored
        assert validate_raycronjob(stored) == []
        assert stored["spec"]["jobTemplate"]["submissionMode"] == "K8sJobMode", (
            "CRD default inside the template"
        )
    await client.delete(res, name, ns)


JOB: dict[str, Any] = next(d for n, d in SAMPLES if n == "ray-job.sample.yaml")
CRON: dict[str, Any] = next(d for n, d in SAMPLES if n == "ray-cronjob.sample.yaml")

INVALID: list[tuple[str, str, Mutation, str]] = [
    ("unknown-field", "RayJob", set_path("spec.entryPoint", "python x.py"), "spec.entryPoint"),
    ("backoff-string", "RayJob", set_path("spec.backoffLimit", "2"), "spec.backoffLimit"),
    (
        "pre-running-zero",
        "RayJob",
        set_path("spec.preRunningDeadlineSeconds", 0),
        "spec.preRunningDeadlineSeconds",
    ),
    (
        "policy-enum",
        "RayJob",
        set_path(
            "spec.deletionStrategy",
            {"deletionRules": [{"policy": "Nuke", "condition": {"jobStatus": "FAILED"}}]},
        ),
        "spec.deletionStrategy.deletionRules[0].policy",
    ),
    (
        "rule-needs-condition",
        "RayJob",
        set_path("spec.deletionStrategy", {"deletionRules": [{"policy": "DeleteSelf"}]}),
        "spec.deletionStrategy.deletionRules[0].condition",
    ),
    (
        "condition-both",
        "RayJob",
        set_path(
            "spec.deletionStrategy",
            {
                "deletionRules": [
                    {
                        "policy": "DeleteSelf",
                        "condition": {"jobStatus": "FAILED", "jobDeploymentStatus": "Failed"},
                    }
                ]
            },
        ),
        "spec.deletionStrategy.deletionRules[0].condition",
    ),
    ("managed-by-other", "RayJob", set_path("spec.managedBy", "someone"), "spec.managedBy"),
    ("name-48", "RayJob", set_path("metadata.name", "j" * 48), "metadata.name"),
    ("mode-unknown", "RayJob", set_path("spec.submissionMode", "BatchMode"), "spec.submissionMode"),
    ("cron-no-schedule", "RayCronJob", set_path("spec.schedule", None), "spec.schedule"),
    ("cron-empty-zone", "RayCronJob", set_path("spec.timeZone", ""), "spec.timeZone"),
    ("cron-bad-schedule", "RayCronJob", set_path("spec.schedule", "every minute"), "spec.schedule"),
]


@pytest.mark.parametrize(("kind", "mutate", "path"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
async def test_invalid_manifest_is_rejected_naming_the_field(
    client: Client, ns: str, kind: str, mutate: Mutation, path: str
) -> None:
    obj = copy.deepcopy(JOB if kind == "RayJob" else CRON)
    mutate(obj)
    if obj["spec"].get("schedule", "") is None:
        del obj["spec"]["schedule"]
    try:
        stored = await _create_strict(client, obj, ns)
    except Invalid as exc:
        fields = [f"{c.get('field', '')}: {c.get('message', '')}" for c in exc.causes]
        assert any(path in f for f in fields) or path in exc.message, (exc.message, fields)
        return
    except BadRequest as exc:  # strict decoding errors are a 400 naming the field
        assert path in str(exc), str(exc)
        return
    validate = validate_rayjob if kind == "RayJob" else validate_raycronjob
    errors = validate(stored)
    assert any(path in e.path for e in errors), [str(e) for e in errors]
    await client.delete(RAYJOBS if kind == "RayJob" else RAYCRONJOBS, stored["metadata"]["name"], ns)
