"""ray.io/v1 RayCluster: spec and status, field for field with KubeRay's CRD.

Every field is optional in Python (``None`` = "not written"), even where the CRD marks it
required or gives it a default: the API server enforces those, and the operator must also be
able to load an object that did not come through an API server (a file, a test) and report what
is wrong with it instead of crashing. ``controllers.api.defaults`` fills the CRD defaults in.

Kubernetes types embedded in the spec (the Pod template, the head Service, env vars...) stay
plain dicts annotated with ``K8s("V1...")``: the builders edit them as manifests, and every
field the user wrote, known to us or not, survives a round trip.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from controllers.api.base import ApiModel, ApiObject, DateTime, Int32, Int64, K8s, Quantity, Schema, StringMap

__all__ = [
    "GROUP",
    "KIND",
    "VERSION",
    "AuthOptions",
    "AutoscalerOptions",
    "CollectorOptions",
    "Condition",
    "GcsFaultToleranceOptions",
    "GcsStorage",
    "HeadGroupSpec",
    "HeadInfo",
    "HistoryServerOptions",
    "IngressOptions",
    "NetworkPolicyEgressRule",
    "NetworkPolicyIngressRule",
    "NetworkPolicyRules",
    "NetworkPolicySpec",
    "RayCluster",
    "RayClusterSpec",
    "RayClusterStatus",
    "RayClusterUpgradeStrategy",
    "RedisCredential",
    "ScaleStrategy",
    "TLSOptions",
    "WorkerGroupNetworkPolicy",
    "WorkerGroupSpec",
    "load_raycluster",
]

GROUP = "ray.io"
VERSION = "v1"
KIND = "RayCluster"

PodTemplateSpec = Annotated[dict[str, Any], K8s("V1PodTemplateSpec")]
ServiceManifest = Annotated[dict[str, Any], K8s("V1Service")]
EnvVar = Annotated[dict[str, Any], K8s("V1EnvVar")]
EnvFromSource = Annotated[dict[str, Any], K8s("V1EnvFromSource")]
ResourceRequirements = Annotated[dict[str, Any], K8s("V1ResourceRequirements")]
SecurityContext = Annotated[dict[str, Any], K8s("V1SecurityContext")]
VolumeMount = Annotated[dict[str, Any], K8s("V1VolumeMount")]
EnvVarSource = Annotated[dict[str, Any], K8s("V1EnvVarSource")]
IngressTLS = Annotated[dict[str, Any], K8s("V1IngressTLS")]
NetworkPolicyPeer = Annotated[dict[str, Any], K8s("V1NetworkPolicyPeer")]
NetworkPolicyPort = Annotated[dict[str, Any], K8s("V1NetworkPolicyPort")]

ATOMIC_LIST = Schema({"x-kubernetes-list-type": "atomic"})

MANAGED_BY_RULES = Schema(
    {
        "x-kubernetes-validations": [
            {"message": "the managedBy field is immutable", "rule": "self == oldSelf"},
            {
                "message": "the managedBy field value must be either 'ray.io/kuberay-operator' or "
                "'kueue.x-k8s.io/multikueue'",
                "rule": "self in ['ray.io/kuberay-operator', 'kueue.x-k8s.io/multikueue']",
            },
        ]
    }
)
BACKEND_IMMUTABLE = Schema(
    {
        "x-kubernetes-validations": [
            {"message": "gcsFaultToleranceOptions.backend is immutable", "rule": "self == oldSelf"}
        ]
    }
)
DEFAULT_DENY_ALL = Schema({"default": "DenyAll"})
CONDITION_REASON = Schema(
    {"maxLength": 1024, "minLength": 1, "pattern": r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"}
)


# ---------------------------------------------------------------------------------------------- spec


class ScaleStrategy(ApiModel):
    workers_to_delete: list[str] | None = Field(
        default=None, description="Pods the autoscaler asks to delete; the operator deletes them by name."
    )


class IngressOptions(ApiModel):
    host: str | None = None
    path: str | None = None
    path_type: Literal["Exact", "Prefix", "ImplementationSpecific"] | None = None
    tls: list[IngressTLS] | None = None


class HeadGroupSpec(ApiModel):
    """The head group. Only ``template`` is required."""

    crd_required: ClassVar[tuple[str, ...]] = ("template",)

    head_service: ServiceManifest | None = Field(
        default=None, description="A template for the head Service; the selector and ports are forced."
    )
    ingress_options: IngressOptions | None = Field(
        default=None, description="Host, path and TLS of the head Ingress (with enableIngress)."
    )
    labels: StringMap | None = Field(default=None, description="Ray node labels, folded into rayStartParams.")
    ray_start_params: StringMap | None = Field(default=None, description="Flags for `ray start`.")
    resources: StringMap | None = Field(
        default=None, description="Ray resources, folded into rayStartParams."
    )
    service_type: str | None = Field(default=None, description="The head Service type (default ClusterIP).")
    enable_ingress: bool | None = Field(
        default=None, description="Create an Ingress to the head's dashboard port."
    )
    template: PodTemplateSpec | None = Field(default=None, description="The head Pod template.")


class WorkerGroupSpec(ApiModel):
    """One worker group. ``replicas`` is clamped to [minReplicas, maxReplicas]."""

    crd_required: ClassVar[tuple[str, ...]] = ("groupName", "maxReplicas", "minReplicas", "template")

    suspend: bool | None = Field(default=None, description="Delete this group's Pods while true.")
    group_name: str | None = Field(default=None, description="Unique within the cluster.")
    replicas: Annotated[int, Schema({"format": "int32", "default": 0})] | None = Field(
        default=None, description="Desired number of replicas (multi-host: groups of numOfHosts Pods)."
    )
    min_replicas: Annotated[int, Schema({"format": "int32", "default": 0})] | None = Field(
        default=None, description="Lower bound for replicas; required unless autoscaling is on."
    )
    max_replicas: Annotated[int, Schema({"format": "int32", "default": 2147483647})] | None = Field(
        default=None, description="Upper bound for replicas; required unless autoscaling is on."
    )
    idle_timeout_seconds: Int32 | None = Field(
        default=None, description="Autoscaler v2: seconds before an idle worker of this group is removed."
    )
    labels: StringMap | None = Field(
        default=None, description="Ray node labels for this group, folded into rayStartParams."
    )
    ray_start_params: StringMap | None = Field(
        default=None, description="Flags for `ray start` on this group's Pods."
    )
    resources: StringMap | None = Field(
        default=None, description="Ray resources for this group, folded into rayStartParams."
    )
    template: PodTemplateSpec | None = Field(default=None, description="The worker Pod template.")
    scale_strategy: ScaleStrategy | None = Field(
        default=None, description="Which Pods to remove when scaling down."
    )
    num_of_hosts: Annotated[int, Schema({"format": "int32", "default": 1})] | None = Field(
        default=None, description="Pods per replica (multi-host, e.g. TPU slices)."
    )
    priority: Annotated[int, Schema({"format": "int32", "default": 0})] | None = Field(
        default=None, description="Scheduling priority of the group for the autoscaler."
    )


class RedisCredential(ApiModel):
    value_from: EnvVarSource | None = None
    value: str | None = None


class GcsStorage(ApiModel):
    access_modes: list[str] | None = None
    claim_name: str | None = None
    deletion_policy: Literal["DeleteWithCluster", "Retain"] | None = None
    size: Quantity | None = None
    storage_class_name: str | None = None
    sub_path: str | None = None


class GcsFaultToleranceOptions(ApiModel):
    """GCS fault tolerance. Mutually exclusive with the legacy ``ray.io/ft-enabled`` annotation."""

    backend: Annotated[Literal["redis", "rocksdb"], BACKEND_IMMUTABLE] | None = Field(
        default=None, description="Where the GCS keeps its state: redis (default) or rocksdb. Immutable."
    )
    redis_username: RedisCredential | None = Field(
        default=None, description="The Redis username, as a value or a Secret reference."
    )
    redis_password: RedisCredential | None = Field(
        default=None, description="The Redis password, as a value or a Secret reference."
    )
    storage: GcsStorage | None = None
    external_storage_namespace: str | None = Field(
        default=None, description="Key prefix in Redis; defaults to the RayCluster UID."
    )
    redis_address: str | None = Field(default=None, description="host:port of the Redis that backs the GCS.")


class AutoscalerOptions(ApiModel):
    resources: ResourceRequirements | None = None
    image: str | None = Field(
        default=None, description="Autoscaler image; defaults to the Ray container's image."
    )
    image_pull_policy: str | None = None
    security_context: SecurityContext | None = None
    idle_timeout_seconds: Int32 | None = Field(
        default=None, description="Seconds before an idle worker is removed."
    )
    upscaling_mode: Literal["Default", "Aggressive", "Conservative"] | None = Field(
        default=None, description="How fast the autoscaler adds workers."
    )
    version: Literal["v1", "v2"] | None = Field(default=None, description="Autoscaler v1 or v2.")
    env: list[EnvVar] | None = None
    env_from: list[EnvFromSource] | None = None
    volume_mounts: list[VolumeMount] | None = None
    command: list[str] | None = None
    args: list[str] | None = None


class RayClusterUpgradeStrategy(ApiModel):
    type: Literal["Recreate", "None"] | None = Field(
        default=None,
        description="Recreate: delete all Pods when the Pod spec changes. None (default): keep them.",
    )


class AuthOptions(ApiModel):
    mode: Literal["disabled", "token"] | None = Field(
        default=None, description="token: require a bearer token for the Ray dashboard and GCS (Ray >= 2.52)."
    )
    secret_name: str | None = None
    enable_k8s_token_auth: bool | None = None


class TLSOptions(ApiModel):
    enabled: bool | None = None


class CollectorOptions(ApiModel):
    image: str | None = None
    image_pull_policy: str | None = None
    resources: ResourceRequirements | None = None
    env: list[EnvVar] | None = None


class HistoryServerOptions(ApiModel):
    collector_options: CollectorOptions | None = None


class NetworkPolicyIngressRule(ApiModel):
    from_: Annotated[list[NetworkPolicyPeer], ATOMIC_LIST] | None = Field(default=None, alias="from")
    ports: Annotated[list[NetworkPolicyPort], ATOMIC_LIST] | None = None


class NetworkPolicyEgressRule(ApiModel):
    to: Annotated[list[NetworkPolicyPeer], ATOMIC_LIST] | None = None
    ports: Annotated[list[NetworkPolicyPort], ATOMIC_LIST] | None = None


class NetworkPolicyRules(ApiModel):
    ingress_rules: list[NetworkPolicyIngressRule] | None = None
    egress_rules: list[NetworkPolicyEgressRule] | None = None


class WorkerGroupNetworkPolicy(NetworkPolicyRules):
    crd_required: ClassVar[tuple[str, ...]] = ("groupName",)

    group_name: str | None = None


class NetworkPolicySpec(ApiModel):
    mode: Annotated[Literal["DenyAll", "DenyAllIngress", "DenyAllEgress"], DEFAULT_DENY_ALL] | None = None
    head: NetworkPolicyRules | None = None
    worker: NetworkPolicyRules | None = None
    worker_groups: (
        Annotated[
            list[WorkerGroupNetworkPolicy],
            Schema({"x-kubernetes-list-map-keys": ["groupName"], "x-kubernetes-list-type": "map"}),
        ]
        | None
    ) = None


class RayClusterSpec(ApiModel):
    """The desired state of a Ray cluster. Only ``headGroupSpec`` is required."""

    crd_required: ClassVar[tuple[str, ...]] = ("headGroupSpec",)

    upgrade_strategy: RayClusterUpgradeStrategy | None = Field(
        default=None, description="What happens to running Pods when the spec changes."
    )
    auth_options: AuthOptions | None = Field(default=None, description="Ray token authentication.")
    suspend: bool | None = Field(default=None, description="Delete all Pods while true.")
    managed_by: Annotated[str, MANAGED_BY_RULES] | None = Field(
        default=None, description="The controller that reconciles this cluster; immutable."
    )
    autoscaler_options: AutoscalerOptions | None = Field(
        default=None, description="The autoscaler sidecar (with enableInTreeAutoscaling)."
    )
    head_service_annotations: StringMap | None = Field(
        default=None, description="Annotations added to the head Service."
    )
    enable_in_tree_autoscaling: bool | None = Field(
        default=None, description="Run the Ray autoscaler as a sidecar of the head Pod."
    )
    gcs_fault_tolerance_options: GcsFaultToleranceOptions | None = Field(
        default=None, description="Keep GCS state outside the head Pod so the cluster survives its loss."
    )
    head_group_spec: HeadGroupSpec | None = Field(default=None, description="The head Pod.")
    ray_version: str | None = Field(
        default=None, description="The Ray version of the images (informational; gates some features)."
    )
    worker_group_specs: list[WorkerGroupSpec] | None = Field(default=None, description="The worker groups.")
    tls_options: TLSOptions | None = None
    network_policy: NetworkPolicySpec | None = None
    history_server_options: HistoryServerOptions | None = None


# -------------------------------------------------------------------------------------------- status


class Condition(ApiModel):
    """metav1.Condition, with the same schema rules the API server applies."""

    crd_required: ClassVar[tuple[str, ...]] = ("lastTransitionTime", "message", "reason", "status", "type")

    type: (
        Annotated[
            str,
            Schema(
                {
                    "maxLength": 316,
                    "pattern": r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
                }
            ),
        ]
        | None
    ) = None
    status: Literal["True", "False", "Unknown"] | None = None
    observed_generation: Annotated[int, Schema({"format": "int64", "minimum": 0})] | None = None
    last_transition_time: DateTime | None = None
    reason: Annotated[str, CONDITION_REASON] | None = None
    message: Annotated[str, Schema({"maxLength": 32768})] | None = None


ConditionList = Annotated[
    list[Condition], Schema({"x-kubernetes-list-map-keys": ["type"], "x-kubernetes-list-type": "map"})
]


class HeadInfo(ApiModel):
    pod_ip: str | None = None
    service_ip: str | None = None
    pod_name: str | None = None
    service_name: str | None = None


class RayClusterStatus(ApiModel):
    """The observed state. ``state`` is ``ready`` or ``suspended`` (``failed`` is deprecated)."""

    state: str | None = Field(
        default=None, description="ready once all Pods first ran and were ready; suspended while suspended."
    )
    desired_cpu: Quantity | None = Field(default=None, description="Total CPU requested by the desired Pods.")
    desired_memory: Quantity | None = Field(
        default=None, description="Total memory requested by the desired Pods."
    )
    desired_gpu: Quantity | None = Field(
        default=None, description="Total GPUs requested by the desired Pods."
    )
    desired_tpu: Quantity | None = Field(
        default=None, description="Total TPUs requested by the desired Pods."
    )
    last_update_time: Annotated[str, Schema({"format": "date-time", "nullable": True})] | None = None
    state_transition_times: dict[str, DateTime] | None = None
    endpoints: StringMap | None = Field(default=None, description="Head Service port name to port.")
    head: HeadInfo | None = Field(default=None, description="Addresses of the head Pod and Service.")
    reason: str | None = None
    conditions: ConditionList | None = None
    ready_worker_replicas: Int32 | None = Field(default=None, description="Running and ready worker Pods.")
    available_worker_replicas: Int32 | None = Field(default=None, description="Running worker Pods.")
    desired_worker_replicas: Int32 | None = Field(
        default=None, description="Worker Pods wanted (replicas x numOfHosts, suspended groups excluded)."
    )
    min_worker_replicas: Int32 | None = None
    max_worker_replicas: Int32 | None = None
    observed_generation: Int64 | None = Field(
        default=None, description="The metadata.generation this status was computed from."
    )


# ------------------------------------------------------------------------------------------- objects


class RayCluster(ApiObject):
    """A whole RayCluster object. ``metadata`` stays a plain dict (the API server owns it)."""

    spec: RayClusterSpec | None = None
    status: RayClusterStatus | None = None


def load_raycluster(obj: dict[str, Any]) -> RayCluster:
    """Load a RayCluster manifest. Raises ``pydantic.ValidationError`` naming the bad field."""
    return RayCluster.model_validate(obj)
