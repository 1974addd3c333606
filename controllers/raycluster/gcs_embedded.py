"""GCS fault tolerance on the embedded RocksDB backend (gate GCSFaultToleranceEmbeddedStorage).

``gcsFaultToleranceOptions.backend: rocksdb`` keeps the GCS state on a volume of the head Pod
instead of in an external Redis, as KubeRay v1.7.0 does it:

* the head's Ray container gets ``RAY_gcs_storage=rocksdb`` and ``RAY_gcs_storage_path=/data/gcs``
  (unless set; validation forbids setting them) and the ``gcs-storage`` volume mounted there
  (with ``storage.subPath``), backed by a PersistentVolumeClaim;
* the claim is the user's (``storage.claimName``: never created, deleted or adopted, only
  looked for, with a Warning while it is missing) or the operator's ``<cluster>-gcs-pvc``
  (``storage.size`` default 1Gi, ``accessModes`` default ReadWriteOnce, ``storageClassName``),
  created once, owned by the RayCluster unless ``deletionPolicy: Retain`` keeps it after the
  cluster; changing the policy moves the owner reference, and a changed size, class or access
  mode is reported (the claim cannot change in place) rather than applied;
* no Redis: no external-storage-namespace annotation or env, no cleanup finalizer or Job.

The claim is checked once per RayCluster generation (and after a restart), not on every
reconcile, so a converged cluster costs no request; KubeRay reads it from its cache each time.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from controllers import constants as C
from controllers.common import cluster as common
from controllers.common.events import create_once
from controllers.common.objects import new_child
from controllers.common.quantity import QuantityError, format_quantity, parse_with_format
from kuberay_py.client import NotFound
from kuberay_py.client.resources import PERSISTENTVOLUMECLAIMS

if TYPE_CHECKING:
    from controllers.raycluster.context import ClusterContext

__all__ = [
    "build_gcs_storage_pvc",
    "configure_head",
    "gcs_storage_pvc_name",
    "is_embedded",
    "reconcile_gcs_storage",
]


def is_embedded(cluster: dict[str, Any]) -> bool:
    options = common.spec_of(cluster).get("gcsFaultToleranceOptions")
    return options is not None and options.get("backend") == C.GCS_STORAGE_ROCKSDB


def _storage(cluster: dict[str, Any]) -> dict[str, Any]:
    storage: dict[str, Any] = (common.spec_of(cluster).get("gcsFaultToleranceOptions") or {}).get(
        "storage"
    ) or {}
    return storage


def gcs_storage_pvc_name(cluster: dict[str, Any]) -> str:
    """The user's ``storage.claimName``, else ``<cluster>-gcs-pvc``."""
    return str(_storage(cluster).get("claimName") or cluster["metadata"]["name"] + C.GCS_STORAGE_PVC_SUFFIX)


def configure_head(pod_spec: dict[str, Any], container: dict[str, Any], cluster: dict[str, Any]) -> None:
    """The env, mount and volume of the store on the head Pod (mutates both)."""
    env = container.setdefault("env", [])
    names = {e.get("name") for e in env}
    for name, value in (
        (C.RAY_GCS_STORAGE, C.GCS_STORAGE_ROCKSDB),
        (C.RAY_GCS_STORAGE_PATH, C.GCS_STORAGE_MOUNT_PATH),
    ):
        if name not in names:
            env.append({"name": name, "value": value})
    mount: dict[str, Any] = {"name": C.GCS_STORAGE_VOLUME_NAME, "mountPath": C.GCS_STORAGE_MOUNT_PATH}
    if _storage(cluster).get("subPath"):
        mount["subPath"] = _storage(cluster)["subPath"]
    container.setdefault("volumeMounts", []).append(mount)
    pod_spec.setdefault("volumes", []).append(
        {
            "name": C.GCS_STORAGE_VOLUME_NAME,
            "persistentVolumeClaim": {"claimName": gcs_storage_pvc_name(cluster)},
        }
    )


def _retain(cluster: dict[str, Any]) -> bool:
    return _storage(cluster).get("deletionPolicy") == "Retain"


def build_gcs_storage_pvc(cluster: dict[str, Any]) -> dict[str, Any]:
    """The operator-managed claim, controlled by the cluster unless its policy is Retain."""
    storage = _storage(cluster)
    spec: dict[str, Any] = {
        "accessModes": list(storage.get("accessModes") or ["ReadWriteOnce"]),
        "resources": {"requests": {"storage": str(storage.get("size") or C.GCS_STORAGE_DEFAULT_SIZE)}},
    }
    if storage.get("storageClassName") is not None:
        spec["storageClassName"] = storage["storageClassName"]
    labels = {C.RAY_CLUSTER_LABEL_KEY: cluster["metadata"]["name"]}
    return new_child(
        PERSISTENTVOLUMECLAIMS,
        gcs_storage_pvc_name(cluster),
        cluster,
        labels=labels,
        owned=not _retain(cluster),
        spec=spec,
    )


def _canonical(quantity: Any) -> str:
    try:
        value, fmt = parse_with_format(quantity)
    except QuantityError:
        return str(quantity)
    return format_quantity(value, fmt)


def _drift(desired: dict[str, Any], existing: dict[str, Any]) -> str:
    """What of size, class and access modes differs (``""``: nothing); KubeRay's wording."""
    want, got = desired["spec"], existing.get("spec") or {}
    diffs = []
    want_size = want["resources"]["requests"]["storage"]
    got_size = ((got.get("resources") or {}).get("requests") or {}).get("storage", "0")
    try:
        size_differs = parse_with_format(want_size)[0] != parse_with_format(got_size)[0]
    except QuantityError:
        size_differs = str(want_size) != str(got_size)
    if size_differs:
        diffs.append(f"requested size {_canonical(want_size)} != current {_canonical(got_size)}")
    # An unset class means "the default", which the API server resolves into the live claim.
    if "storageClassName" in want and want["storageClassName"] != got.get("storageClassName"):
        current = got.get("storageClassName") or "<default>"
        diffs.append(f"storageClassName {want['storageClassName']} != current {current}")
    got_modes = list(got.get("accessModes") or [])
    if sorted(want["accessModes"]) != sorted(got_modes):
        diffs.append(f"accessModes [{' '.join(want['accessModes'])}] != current [{' '.join(got_modes)}]")
    return "; ".join(diffs)


async def reconcile_gcs_storage(ctx: ClusterContext) -> None:
    """Make sure the store's claim exists (operator-managed) or say that it does not (user's)."""
    cluster = ctx.cluster
    if not common.gcs_ft_enabled(cluster) or not is_embedded(cluster):
        return
    ns, name = ctx.ref.namespace, gcs_storage_pvc_name(cluster)
    marker, known = ctx.memo.generation_marker("PersistentVolumeClaim", cluster, name), ctx.memo.known
    if marker is None:
        return
    if _storage(cluster).get("claimName"):
        try:
            await ctx.deps.client.get(PERSISTENTVOLUMECLAIMS, name, ns)
        except NotFound:
            ctx.deps.recorder.event(
                cluster,
                C.WARNING,
                C.EVENT_FAILED_TO_CREATE_PVC,
                f'GcsFaultToleranceOptions.Storage.ClaimName "{name}" not found in namespace {ns}; '
                "the head Pod will not start until it exists",
            )
            return
        known.add(marker)
        return
    desired = build_gcs_storage_pvc(cluster)
    try:
        existing = await ctx.deps.client.get(PERSISTENTVOLUMECLAIMS, name, ns)
    except NotFound:
        created = await create_once(
            ctx.deps.recorder,
            cluster,
            ctx.deps.client.create(PERSISTENTVOLUMECLAIMS, desired, ns),
            failed=(C.EVENT_FAILED_TO_CREATE_PVC, f"Failed to create GCS storage PVC {ns}/{name}, {{error}}"),
            done=(C.EVENT_CREATED_PVC, f"Created GCS storage PVC {ns}/{name}"),
        )
        if created is not None:
            known.add(marker)
            return
        existing = await ctx.deps.client.get(PERSISTENTVOLUMECLAIMS, name, ns)
    else:
        drift = _drift(desired, existing)
        if drift:
            ctx.deps.recorder.event(
                cluster,
                C.WARNING,
                C.EVENT_FAILED_TO_CREATE_PVC,
                f"GCS storage PVC {ns}/{name} already exists and cannot be reconfigured in place ({drift}); "
                "delete the PVC to recreate it with the new settings",
            )
    await _align_owner(ctx, existing)
    known.add(marker)


async def _align_owner(ctx: ClusterContext, pvc: dict[str, Any]) -> None:
    """The cluster controls the claim exactly when it is not retained."""
    cluster = ctx.cluster
    uid = cluster["metadata"]["uid"]
    refs = pvc["metadata"].get("ownerReferences") or []
    controlled = any(r.get("controller") and r.get("uid") == uid for r in refs)
    retain = _retain(cluster)
    if retain == controlled:
        body = copy.deepcopy(pvc)
        if retain:
            body["metadata"]["ownerReferences"] = [r for r in refs if r.get("uid") != uid]
        elif any(r.get("controller") for r in refs):
            return  # another controller owns it; SetControllerReference would refuse too
        else:
            body["metadata"]["ownerReferences"] = [*refs, common.controller_ref(cluster)]
        await ctx.deps.client.update(PERSISTENTVOLUMECLAIMS, body)
