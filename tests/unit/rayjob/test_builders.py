"""The RayJob builders against KubeRay v1.7's exact shapes (docs/reference/rayjob.md §2, §4.1)."""

from __future__ import annotations

import copy
from typing import Any

from controllers.common.names import generate_name
from controllers.rayjob import builders
from tests.rayjob_harness import rayjob

ADDR = "rj-abcde-head-svc.default.svc.cluster.local:8265"
A = f"http://{ADDR}"


def job(**spec: Any) -> dict[str, Any]:
    doc = rayjob("rj", "python /home/ray/samples/sample_code.py", **spec)
    doc["metadata"].update(namespace="default", uid="u-1", labels={"team": "a"}, annotations={"note": "x"})
    return doc


def cluster(doc: dict[str, Any]) -> dict[str, Any]:
    return builders.cluster_manifest(doc, "rj-abcde", "rj-xyz12")


def test_the_k8s_job_mode_script_is_kuberays_line() -> None:
    doc = job(
        runtimeEnvYAML="pip:\n  - requests==2.26.0\nenv_vars:\n  counter_name: test_counter\n",
        metadata={"owner": "me"},
        entrypointNumCpus=1,
        entrypointResources='{"custom": 1}',
    )
    words = builders.submitter_words(doc, ADDR, "rj-xyz12")
    health = (
        "import urllib.request; r=urllib.request.urlopen('"
        f"{A}/api/gcs_healthz', timeout=10); exit(0 if b'success' in r.read() else 1)"
    )
    expected = (
        f'until python -c "{health}" >/dev/null 2>&1 ; do echo "Waiting for Ray Dashboard GCS to become '
        f'healthy at {A} ..." ; sleep 2 ; done ; '
        f"if ! ray job status --address {A} rj-xyz12 >/dev/null 2>&1 ; "
        f"then ray job submit --address {A} --no-wait "
        '--runtime-env-json "{\\"env_vars\\":{\\"counter_name\\":\\"test_counter\\"},'
        '\\"pip\\":[\\"requests==2.26.0\\"]}" '
        '--metadata-json "{\\"owner\\":\\"me\\"}" --submission-id rj-xyz12 --entrypoint-num-cpus 1.000000 '
        '--entrypoint-resources "{\\"custom\\": 1}" -- python /home/ray/samples/sample_code.py ; '
        f"fi ; ray job logs --address {A} --follow rj-xyz12"
    )
    assert " ".join(words) == expected


def test_submitter_job_labels_defaults_and_env() -> None:
    doc = job(submitterConfig={"backoffLimit": 5})
    sub = builders.submitter_job(doc, cluster(doc), ADDR, "rj-xyz12")
    assert sub["metadata"]["name"] == "rj" and sub["spec"]["backoffLimit"] == 5
    assert sub["metadata"]["labels"] == {
        "ray.io/originated-from-cr-name": "rj",
        "ray.io/originated-from-crd": "RayJob",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    assert "team" not in sub["metadata"]["labels"], "RayJob labels are not copied to the Job"
    (ref,) = sub["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["uid"], ref["controller"], ref["blockOwnerDeletion"]) == (
        "RayJob",
        "u-1",
        True,
        True,
    )
    pod = sub["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    (c,) = pod["containers"]
    assert (c["name"], c["image"]) == ("ray-job-submitter", "rayproject/ray:2.52.0")
    assert c["command"] == ["/bin/bash", "-ce", "--"] and len(c["args"]) == 1
    assert c["resources"] == {
        "limits": {"cpu": "1", "memory": "1Gi"},
        "requests": {"cpu": "500m", "memory": "200Mi"},
    }
    assert {e["name"]: e.get("value") for e in c["env"]} == {
        "PYTHONUNBUFFERED": "1",
        "RAY_DASHBOARD_ADDRESS": ADDR,
        "RAY_JOB_SUBMISSION_ID": "rj-xyz12",
    }
    assert builders.submitter_job(job(), cluster(job()), ADDR, "x")["spec"]["backoffLimit"] == 2


def test_a_user_template_keeps_its_command_and_gets_the_env() -> None:
    template = {
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "mine", "image": "img", "command": ["/submitter"]}],
        }
    }
    doc = job(submitterPodTemplate=copy.deepcopy(template))
    (c,) = builders.submitter_job(doc, cluster(doc), ADDR, "rj-xyz12")["spec"]["template"]["spec"][
        "containers"
    ]
    assert c["command"] == ["/submitter"] and "args" not in c and c["image"] == "img"
    assert [e["name"] for e in c["env"]] == [
        "PYTHONUNBUFFERED",
        "RAY_DASHBOARD_ADDRESS",
        "RAY_JOB_SUBMISSION_ID",
    ]


def test_the_cluster_copies_the_spec_labels_and_annotations() -> None:
    doc = job()
    rc = cluster(doc)
    assert rc["spec"] == doc["spec"]["rayClusterSpec"]
    assert rc["metadata"]["labels"] == {
        "team": "a",
        "ray.io/originated-from-cr-name": "rj",
        "ray.io/originated-from-crd": "RayJob",
        "ray.io/job-submission-mode": "K8sJobMode",
    }
    assert rc["metadata"]["annotations"] == {"note": "x"}
    side = cluster(job(submissionMode="SidecarMode"))
    head = side["spec"]["headGroupSpec"]["template"]["spec"]
    assert head["restartPolicy"] == "Never" and head["containers"][-1]["name"] == "ray-job-submitter"
    args = head["containers"][-1]["args"][0]
    assert "--submission-id rj-xyz12" in args and "--no-wait" not in args and "http://127.0.0.1:8265" in args
    assert side["metadata"]["annotations"]["ray.io/disable-provisioned-head-restart"] == "true"


def test_names_and_urls() -> None:
    name = generate_name("rj")
    assert name.startswith("rj-") and len(name) == 8 and not set(name[3:]) & set("aeiou013")
    rc = cluster(job())
    assert builders.dashboard_url(rc, "cluster.local") == ADDR
    assert builders.submission_body(job(entrypointNumGpus=2, metadata={"k": "v"}), "id") == {
        "entrypoint": "python /home/ray/samples/sample_code.py",
        "submission_id": "id",
        "metadata": {"k": "v"},
        "entrypoint_num_gpus": 2.0,
    }
