"""Pure builders for what a RayJob creates: its RayCluster, submitter Job, head Service, names.

Spec in, manifest out, byte for byte KubeRay v1.7's (docs/reference/rayjob.md §2, §4.1): the same names,
labels, owner references, the submitter container and its one-line bash script (flag order, Go
``%f`` numbers, JSON quoted as Go's ``strconv.Quote`` would), so a KubeRay user sees the objects
they know, and an operator swap in either direction finds what it expects.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import orjson
import yaml

from controllers import constants as C
from controllers.common.cluster import head_service_name
from controllers.common.objects import controller_ref, new_child
from controllers.common.owned_cluster import owned_cluster
from kuberay_py.client.resources import SERVICES
from kuberay_py.objects import Obj

__all__ = [
    "DISABLE_HEAD_RESTART_ANNOTATION",
    "RAYJOB_FINALIZER",
    "SUBMISSION_MODE_LABEL",
    "SUBMITTER_CONTAINER",
    "cluster_manifest",
    "dashboard_port",
    "dashboard_url",
    "head_image",
    "job_head_service",
    "job_head_service_name",
    "submission_body",
    "submitter_job",
    "submitter_words",
]

RAYJOB_FINALIZER = "ray.io/rayjob-finalizer"
SUBMISSION_MODE_LABEL = "ray.io/job-submission-mode"
DISABLE_HEAD_RESTART_ANNOTATION = "ray.io/disable-provisioned-head-restart"
SUBMITTER_CONTAINER = "ray-job-submitter"
_YAML: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
DEFAULT_SUBMITTER_RESOURCES = C.DEFAULT_SUBMITTER_RESOURCES


def _spec(job: Obj) -> dict[str, Any]:
    return job.get("spec") or {}


def _mode(job: Obj) -> str:
    return str(_spec(job).get("submissionMode") or "K8sJobMode")


def origin_labels(job: Obj) -> dict[str, str]:
    return {
        C.RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY: job["metadata"]["name"],
        C.RAY_ORIGINATED_FROM_CRD_LABEL_KEY: C.CRD_RAYJOB,
    }


def head_image(cluster_spec: dict[str, Any]) -> str:
    containers = (((cluster_spec.get("headGroupSpec") or {}).get("template") or {}).get("spec") or {}).get(
        "containers"
    ) or [{}]
    return str(containers[0].get("image") or "")


def dashboard_port(cluster_spec: dict[str, Any]) -> int:
    containers = (((cluster_spec.get("headGroupSpec") or {}).get("template") or {}).get("spec") or {}).get(
        "containers"
    ) or [{}]
    for port in containers[0].get("ports") or []:
        if port.get("name") == C.DASHBOARD_PORT_NAME and port.get("containerPort"):
            return int(port["containerPort"])
    return C.DEFAULT_DASHBOARD_PORT


def dashboard_url(cluster: Obj, domain: str) -> str:
    """``<head svc>.<ns>.svc.<domain>:<port>``, no scheme (KubeRay's ``FetchHeadServiceURL``)."""
    ns = cluster["metadata"]["namespace"]
    port = dashboard_port(cluster.get("spec") or {})
    return f"{head_service_name(cluster)}.{ns}.svc.{domain}:{port}"


def cluster_manifest(job: Obj, name: str, job_id: str = "", *, sidecar_restart: bool = False) -> Obj:
    """The RayCluster for this attempt: a copy of ``rayClusterSpec`` (SidecarMode adds the
    submitter container to the head and forces ``restartPolicy: Never``).

    ``sidecar_restart`` (the SidecarSubmitterRestart gate): the submitter container alone restarts
    on a non-zero exit (``restartPolicy: OnFailure``, Kubernetes 1.35's per-container rule), so its
    script is K8sJobMode's re-entrant one: ``ray job status`` guard, ``--no-wait``, then
    ``ray job logs --follow``; a restart after a dropped log stream re-attaches, never resubmits.
    """
    meta = job["metadata"]
    labels = dict(meta.get("labels") or {}) | origin_labels(job) | {SUBMISSION_MODE_LABEL: _mode(job)}
    annotations = dict(meta.get("annotations") or {})
    spec = copy.deepcopy(_spec(job).get("rayClusterSpec") or {})
    if _mode(job) == "SidecarMode":
        annotations[DISABLE_HEAD_RESTART_ANNOTATION] = "true"
        pod_spec = spec.setdefault("headGroupSpec", {}).setdefault("template", {}).setdefault("spec", {})
        pod_spec["restartPolicy"] = "Never"
        port = dashboard_port(spec)
        container = _submitter_container(
            job, spec, f"127.0.0.1:{port}", job_id, sidecar_port=port, reentrant=sidecar_restart
        )
        # The sidecar talks to a token-auth dashboard too (KubeRay sets the same two env vars).
        container["env"] += _auth_env({"metadata": {"name": name}, "spec": spec})
        if sidecar_restart:
            container["restartPolicy"] = "OnFailure"
        pod_spec.setdefault("containers", []).append(container)
    return owned_cluster(job, C.CRD_RAYJOB, name, labels=labels, annotations=annotations, spec=spec)


def _go_quote(text: str) -> str:
    """Go ``strconv.Quote`` for the JSON strings KubeRay puts in the script (printable text)."""
    return json.dumps(text, ensure_ascii=False)


def _compact_json(value: Any) -> str:
    """Go's ``json.Marshal``: compact, map keys sorted."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def submitter_words(
    job: Obj, address: str, job_id: str, *, sidecar_port: int | None = None, reentrant: bool = False
) -> list[str]:
    """The words of KubeRay's submitter script (docs/reference/rayjob.md §4.1), joined with spaces
    by the caller.

    K8sJobMode's (and ``reentrant`` SidecarMode's) script may run again, so it checks ``ray job
    status`` first and follows the logs after a ``--no-wait`` submit; plain SidecarMode submits and
    waits in one ``ray job submit``.
    """
    spec = _spec(job)
    http = address if address.startswith("http") else f"http://{address}"
    health_base = f"http://localhost:{sidecar_port}" if sidecar_port is not None else http
    health = (
        "import urllib.request; r=urllib.request.urlopen('"
        f"{health_base}/{C.RAY_DASHBOARD_GCS_HEALTH_PATH}', timeout=10); "
        "exit(0 if b'success' in r.read() else 1)"
    )
    words = [
        "until",
        "python",
        "-c",
        f'"{health}"',
        ">/dev/null",
        "2>&1",
        ";",
        "do",
        "echo",
        f'"Waiting for Ray Dashboard GCS to become healthy at {health_base} ..."',
        ";",
        "sleep",
        "2",
        ";",
        "done",
        ";",
    ]
    follow = sidecar_port is None or reentrant
    if follow:
        words += [
            "if",
            "!",
            "ray",
            "job",
            "status",
            "--address",
            http,
            job_id,
            ">/dev/null",
            "2>&1",
            ";",
            "then",
        ]
    words += ["ray", "job", "submit", "--address", http]
    if follow:
        words.append("--no-wait")
    runtime_env = spec.get("runtimeEnvYAML")
    if runtime_env:
        words += ["--runtime-env-json", _go_quote(_compact_json(yaml.load(runtime_env, Loader=_YAML)))]
    if spec.get("metadata"):
        words += ["--metadata-json", _go_quote(_compact_json(spec["metadata"]))]
    if job_id:
        words += ["--submission-id", job_id]
    for key, flag in (
        ("entrypointNumCpus", "--entrypoint-num-cpus"),
        ("entrypointNumGpus", "--entrypoint-num-gpus"),
    ):
        if float(spec.get(key) or 0) > 0:
            words += [flag, f"{float(spec[key]):f}"]
    if spec.get("entrypointResources"):
        words += ["--entrypoint-resources", _go_quote(str(spec["entrypointResources"]))]
    words += ["--", str(spec.get("entrypoint") or "").strip(), ";"]
    if follow:
        words += ["fi", ";", "ray", "job", "logs", "--address", http, "--follow", job_id]
    return words


def _submitter_container(
    job: Obj,
    cluster_spec: dict[str, Any],
    address: str,
    job_id: str,
    *,
    sidecar_port: int | None = None,
    reentrant: bool = False,
) -> dict[str, Any]:
    words = submitter_words(job, address, job_id, sidecar_port=sidecar_port, reentrant=reentrant)
    return {
        "name": SUBMITTER_CONTAINER,
        "image": head_image(cluster_spec),
        "command": ["/bin/bash", "-ce", "--"],
        "args": [" ".join(words)],
        "resources": copy.deepcopy(DEFAULT_SUBMITTER_RESOURCES),
        "env": [
            {"name": "PYTHONUNBUFFERED", "value": "1"},
            {"name": "RAY_DASHBOARD_ADDRESS", "value": address if sidecar_port is None else ""},
            {"name": "RAY_JOB_SUBMISSION_ID", "value": job_id},
        ],
    }


def _auth_env(cluster: Obj) -> list[dict[str, Any]]:
    auth = (cluster.get("spec") or {}).get("authOptions") or {}
    if auth.get("mode") != "token":
        return []
    secret = auth.get("secretName") or cluster["metadata"]["name"]
    return [
        {"name": "RAY_AUTH_MODE", "value": "token"},
        {"name": "RAY_AUTH_TOKEN", "valueFrom": {"secretKeyRef": {"name": secret, "key": "auth_token"}}},
    ]


def submitter_job(job: Obj, cluster: Obj, address: str, job_id: str) -> Obj:
    """The K8sJobMode submitter batch/v1 Job ``<rayjob>`` (docs/reference/rayjob.md §4.1)."""
    spec = _spec(job)
    meta = job["metadata"]
    labels = origin_labels(job) | {C.KUBERNETES_CREATED_BY_LABEL_KEY: C.COMPONENT_NAME}
    user_template = spec.get("submitterPodTemplate")
    cluster_spec = cluster.get("spec") or {}
    if user_template:
        template = copy.deepcopy(user_template)
    else:
        template = {
            "spec": {
                "restartPolicy": "Never",
                "containers": [_submitter_container(job, cluster_spec, address, job_id)],
            }
        }
    tmeta = template.setdefault("metadata", {})
    tmeta["labels"] = dict(tmeta.get("labels") or {}) | labels
    containers = template.setdefault("spec", {}).setdefault("containers", [{}])
    first = containers[0]
    if user_template:
        if not first.get("command"):
            first["command"] = ["/bin/bash", "-ce", "--"]
            first["args"] = [" ".join(submitter_words(job, address, job_id))]
        env = first.setdefault("env", [])
        env += [
            {"name": "PYTHONUNBUFFERED", "value": "1"},
            {"name": "RAY_DASHBOARD_ADDRESS", "value": address},
            {"name": "RAY_JOB_SUBMISSION_ID", "value": job_id},
        ]
    names = {e.get("name") for e in first.get("env") or []}
    first.setdefault("env", []).extend(e for e in _auth_env(cluster) if e["name"] not in names)
    backoff = (spec.get("submitterConfig") or {}).get("backoffLimit")
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "labels": labels,
            "ownerReferences": [controller_ref(job, C.CRD_RAYJOB)],
        },
        "spec": {"backoffLimit": 2 if backoff is None else int(backoff), "template": template},
    }


def submitter_pod_spec(job: Obj) -> dict[str, Any]:
    """The Pod spec of a RayJob's K8sJobMode submitter, built from the RayJob alone (no cluster
    address or job id yet): what a gang scheduler reserves for the submitter. The operator's
    wiring hands this function to the batch schedulers, which do not import the RayJob package.
    """
    cluster = {"spec": _spec(job).get("rayClusterSpec") or {}}
    spec: dict[str, Any] = submitter_job(job, cluster, "", "")["spec"]["template"].get("spec") or {}
    return spec


def job_head_service_name(job: Obj) -> str:
    return f"{job['metadata']['name']}-{C.HEAD_SERVICE_SUFFIX}"


def job_head_service(job: Obj, cluster: Obj, cluster_head_service: Obj) -> Obj:
    """``<rayjob>-head-svc``: the cluster's head Service spec, pointed at the current cluster."""
    cname = cluster["metadata"]["name"]
    src = cluster_head_service.get("spec") or {}
    spec: dict[str, Any] = {
        "ports": copy.deepcopy(src.get("ports") or []),
        "selector": {
            C.RAY_CLUSTER_LABEL_KEY: cname,
            C.RAY_NODE_TYPE_LABEL_KEY: C.NODE_TYPE_HEAD,
            C.RAY_ID_LABEL_KEY: f"{cname}-head",
            C.KUBERNETES_APPLICATION_NAME_LABEL_KEY: C.APPLICATION_NAME,
            C.KUBERNETES_CREATED_BY_LABEL_KEY: C.COMPONENT_NAME,
        },
        "type": src.get("type") or "ClusterIP",
    }
    if src.get("clusterIP") == "None":
        spec["clusterIP"] = "None"
    if src.get("publishNotReadyAddresses") is not None:
        spec["publishNotReadyAddresses"] = src["publishNotReadyAddresses"]
    labels = origin_labels(job) | {
        C.RAY_NODE_TYPE_LABEL_KEY: C.NODE_TYPE_HEAD,
        C.RAY_ID_LABEL_KEY: f"{job['metadata']['name']}-head",
    }
    return new_child(
        SERVICES, job_head_service_name(job), job, labels=labels, owner_kind=C.CRD_RAYJOB, spec=spec
    )


def submission_body(job: Obj, job_id: str) -> dict[str, Any]:
    """HTTPMode's ``POST /api/jobs/`` body (KubeRay's ``ConvertRayJobToReq``)."""
    spec = _spec(job)
    body: dict[str, Any] = {"entrypoint": spec.get("entrypoint") or "", "submission_id": job_id}
    if spec.get("metadata"):
        body["metadata"] = dict(spec["metadata"])
    if spec.get("runtimeEnvYAML"):
        body["runtime_env"] = yaml.load(spec["runtimeEnvYAML"], Loader=_YAML)
    for key, out in (
        ("entrypointNumCpus", "entrypoint_num_cpus"),
        ("entrypointNumGpus", "entrypoint_num_gpus"),
    ):
        if float(spec.get(key) or 0) > 0:
            body[out] = float(spec[key])
    if spec.get("entrypointResources"):
        body["entrypoint_resources"] = orjson.loads(spec["entrypointResources"])
    return body
