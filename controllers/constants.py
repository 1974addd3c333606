"""KubeRay's wire-level strings: label and annotation keys, env var names, ports, reasons.

Users' tooling (dashboards, ``kubectl -l`` selectors, alerting on event reasons, scripts reading
``KUBERAY_GEN_RAY_START_CMD``) depends on these exact strings, so they are copied verbatim from
KubeRay (``ray-operator/controllers/ray/utils/constant.go`` and ``apis/ray/v1/*_types.go``) and kept
in one module that both controllers import. Nothing here may change without a compatibility note
in ``docs/differences.md``.
"""

from __future__ import annotations

from typing import Final

from kuberay_py.client.resources import Resource

# --------------------------------------------------------------------------------------------
# API resources
# --------------------------------------------------------------------------------------------
RAYCLUSTERS: Final = Resource("ray.io", "v1", "RayCluster", "rayclusters")
RAYSERVICES: Final = Resource("ray.io", "v1", "RayService", "rayservices")
RAYJOBS: Final = Resource("ray.io", "v1", "RayJob", "rayjobs")
RAYCRONJOBS: Final = Resource("ray.io", "v1", "RayCronJob", "raycronjobs")

# The Pod informer caches only Ray Pods (KubeRay #4761): memory scales with Ray Pods, not the cluster.
POD_CACHE_SELECTOR: Final = "ray.io/node-type in (head,worker,redis-cleanup)"
# The Job informer caches only Jobs this operator created (the Redis cleanup Jobs).
JOB_CACHE_SELECTOR: Final = "app.kubernetes.io/created-by=kuberay-operator"

# --------------------------------------------------------------------------------------------
# Labels
# --------------------------------------------------------------------------------------------
RAY_CLUSTER_LABEL_KEY: Final = "ray.io/cluster"
RAY_NODE_TYPE_LABEL_KEY: Final = "ray.io/node-type"
RAY_NODE_GROUP_LABEL_KEY: Final = "ray.io/group"
RAY_NODE_LABEL_KEY: Final = "ray.io/is-ray-node"
RAY_ID_LABEL_KEY: Final = "ray.io/identifier"
RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY: Final = "ray.io/serve"
RAY_CLUSTER_HEADLESS_SERVICE_LABEL_KEY: Final = "ray.io/headless-worker-svc"
RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY: Final = "ray.io/originated-from-cr-name"
RAY_ORIGINATED_FROM_CRD_LABEL_KEY: Final = "ray.io/originated-from-crd"
RAY_SERVICE_LABEL_KEY: Final = "ray.io/service"
KUBERNETES_APPLICATION_NAME_LABEL_KEY: Final = "app.kubernetes.io/name"
KUBERNETES_CREATED_BY_LABEL_KEY: Final = "app.kubernetes.io/created-by"
# Multi-host indexing (gate RayMultiHostIndexing, on by default in KubeRay).
RAY_WORKER_REPLICA_NAME_LABEL_KEY: Final = "ray.io/worker-group-replica-name"
RAY_WORKER_REPLICA_INDEX_LABEL_KEY: Final = "ray.io/worker-group-replica-index"
RAY_HOST_INDEX_LABEL_KEY: Final = "ray.io/replica-host-index"
# What the RayCronJob controller stamps on each RayJob it creates.
RAY_CRONJOB_NAME_LABEL_KEY: Final = "ray.io/cronjob-name"
RAY_CRONJOB_TIMESTAMP_ANNOTATION_KEY: Final = "ray.io/cronjob-scheduled-timestamp"
# spec.managedBy of an object this operator manages (unset means the same); another value hands
# the object to that controller (KubeRay's KubeRayController).
MANAGED_BY_KUBERAY: Final = "ray.io/kuberay-operator"

RAY_NODE_LABEL_VALUE: Final = "yes"
APPLICATION_NAME: Final = "kuberay"  # value of app.kubernetes.io/name
COMPONENT_NAME: Final = "kuberay-operator"  # value of app.kubernetes.io/created-by
RAY_NODE_HEAD_GROUP_LABEL_VALUE: Final = "headgroup"
NODE_TYPE_HEAD: Final = "head"
NODE_TYPE_WORKER: Final = "worker"
NODE_TYPE_REDIS_CLEANUP: Final = "redis-cleanup"
# Values of ray.io/originated-from-crd.
CRD_RAYCLUSTER: Final = "RayCluster"
CRD_RAYSERVICE: Final = "RayService"
CRD_RAYJOB: Final = "RayJob"
CRD_RAYCRONJOB: Final = "RayCronJob"  # the kind only (a RayCronJob's RayJobs say RayJob's origin)
SERVE_LABEL_TRUE: Final = "true"
SERVE_LABEL_FALSE: Final = "false"

# Labels an operator sets on a Pod that a template may never override (KubeRay's labelPod).
PROTECTED_POD_LABEL_KEYS: Final = (RAY_NODE_TYPE_LABEL_KEY, RAY_NODE_GROUP_LABEL_KEY, RAY_CLUSTER_LABEL_KEY)

# --------------------------------------------------------------------------------------------
# Annotations
# --------------------------------------------------------------------------------------------
RAY_FT_ENABLED_ANNOTATION_KEY: Final = "ray.io/ft-enabled"
RAY_EXTERNAL_STORAGE_NS_ANNOTATION_KEY: Final = "ray.io/external-storage-namespace"
RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION_KEY: Final = "ray.io/overwrite-container-cmd"
ENABLE_SERVE_SERVICE_ANNOTATION_KEY: Final = "ray.io/enable-serve-service"
GCS_FT_DELETION_TIMEOUT_ANNOTATION_KEY: Final = "ray.io/gcs-ft-deletion-timeout"
HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE_KEY: Final = "ray.io/hash-without-replicas-and-workers-to-delete"
NUM_WORKER_GROUPS_KEY: Final = "ray.io/num-worker-groups"
KUBERAY_VERSION_KEY: Final = "ray.io/kuberay-version"
UPGRADE_STRATEGY_RECREATE_HASH_KEY: Final = "ray.io/upgrade-strategy-recreate-hash"
UPGRADE_STRATEGY_RECREATE: Final = "Recreate"  # RayCluster spec.upgradeStrategy.type
DISABLE_PROVISIONED_HEAD_RESTART_KEY: Final = "ray.io/disable-provisioned-head-restart"
RAYSERVICE_INITIALIZING_TIMEOUT_ANNOTATION_KEY: Final = "ray.io/initializing-timeout"
INGRESS_CLASS_ANNOTATION_KEY: Final = "kubernetes.io/ingress.class"
# kuberay-py only: the RayService controller copies serveConfigV2's `proxy_location` here so the
# RayCluster builder leaves the serve check out of worker readiness when workers run no proxy
# (KubeRay #4994). Values are Ray's ProxyLocation names.
SERVE_PROXY_LOCATION_ANNOTATION_KEY: Final = "ray.io/serve-proxy-location"
PROXY_LOCATIONS_WITHOUT_WORKER_PROXY: Final = ("HeadOnly", "Disabled", "NoServer")

KUBERAY_VERSION: Final = "v1.7.0"  # stamped into ray.io/kuberay-version and usage-stats tags
KUBERAY_CRD_VERSION: Final = "v1"

# --------------------------------------------------------------------------------------------
# Finalizers
# --------------------------------------------------------------------------------------------
GCS_FT_REDIS_CLEANUP_FINALIZER: Final = "ray.io/gcs-ft-redis-cleanup-finalizer"
RAYSERVICE_FINALIZER: Final = "ray.io/rayservice-finalizer"

# --------------------------------------------------------------------------------------------
# Container env vars set by the operator
# --------------------------------------------------------------------------------------------
RAY_CLUSTER_NAME: Final = "RAY_CLUSTER_NAME"
RAY_CLUSTER_NAMESPACE: Final = "RAY_CLUSTER_NAMESPACE"
RAY_IP: Final = "RAY_IP"
FQ_RAY_IP: Final = "FQ_RAY_IP"
RAY_PORT: Final = "RAY_PORT"
RAY_ADDRESS: Final = "RAY_ADDRESS"
RAY_REDIS_ADDRESS: Final = "RAY_REDIS_ADDRESS"
REDIS_PASSWORD: Final = "REDIS_PASSWORD"
REDIS_USERNAME: Final = "REDIS_USERNAME"
# core/v1 NamespaceTerminatingCause: a create refused because its namespace is being deleted.
NAMESPACE_TERMINATING_CAUSE: Final = "NamespaceTerminating"
RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE: Final = "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE"
RAY_EXTERNAL_STORAGE_NS: Final = "RAY_external_storage_namespace"
RAY_GCS_RPC_SERVER_RECONNECT_TIMEOUT_S: Final = "RAY_gcs_rpc_server_reconnect_timeout_s"
RAY_TIMEOUT_MS_TASK_WAIT_FOR_DEATH_INFO: Final = "RAY_timeout_ms_task_wait_for_death_info"
RAY_GCS_SERVER_REQUEST_TIMEOUT_SECONDS: Final = "RAY_gcs_server_request_timeout_seconds"
RAY_SERVE_KV_TIMEOUT_S: Final = "RAY_SERVE_KV_TIMEOUT_S"
RAY_USAGE_STATS_KUBERAY_IN_USE: Final = "RAY_USAGE_STATS_KUBERAY_IN_USE"
RAY_USAGE_STATS_EXTRA_TAGS: Final = "RAY_USAGE_STATS_EXTRA_TAGS"
KUBERAY_GEN_RAY_START_CMD: Final = "KUBERAY_GEN_RAY_START_CMD"
RAY_CLOUD_INSTANCE_ID: Final = "RAY_CLOUD_INSTANCE_ID"
RAY_NODE_TYPE_NAME: Final = "RAY_NODE_TYPE_NAME"
RAY_HEAD_POD_NAME: Final = "RAY_HEAD_POD_NAME"
KUBERAY_CRD_VER: Final = "KUBERAY_CRD_VER"
KUBERAY_GEN_AUTOSCALER_START_CMD: Final = "KUBERAY_GEN_AUTOSCALER_START_CMD"
RAY_ENABLE_AUTOSCALER_V2: Final = "RAY_enable_autoscaler_v2"
RAY_REDIS_DB_CONNECT_RETRIES: Final = "RAY_redis_db_connect_retries"
RAY_REDIS_DB_CONNECT_WAIT_MILLISECONDS: Final = "RAY_redis_db_connect_wait_milliseconds"
RAY_START_ULIMIT_OPEN_FILES: Final = "RAY_START_ULIMIT_OPEN_FILES"

DEFAULT_WORKER_RAY_GCS_RECONNECT_TIMEOUT_S: Final = "600"

# --------------------------------------------------------------------------------------------
# Operator env vars (feature flags read from the operator's own environment)
# --------------------------------------------------------------------------------------------
ENABLE_PROBES_INJECTION: Final = "ENABLE_PROBES_INJECTION"
ENABLE_INIT_CONTAINER_INJECTION: Final = "ENABLE_INIT_CONTAINER_INJECTION"
ENABLE_ZERO_DOWNTIME: Final = "ENABLE_ZERO_DOWNTIME"
ENABLE_GCS_FT_REDIS_CLEANUP: Final = "ENABLE_GCS_FT_REDIS_CLEANUP"
ENABLE_RANDOM_POD_DELETE: Final = "ENABLE_RANDOM_POD_DELETE"
RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV: Final = "RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV"
# Worker Pods one RayCluster reconcile pass creates at most (RayClusterOptions); KubeRay: no bound.
WORKER_CREATES_PER_PASS: Final = 16
RAYCLUSTER_DEFAULT_REQUEUE_SECONDS: Final = 300.0
CLUSTER_DOMAIN_ENV: Final = "CLUSTER_DOMAIN"
DEFAULT_CLUSTER_DOMAIN: Final = "cluster.local"
ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE: Final = "ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE"
USE_INGRESS_ON_OPENSHIFT: Final = "USE_INGRESS_ON_OPENSHIFT"
ENABLE_LOGIN_SHELL: Final = "ENABLE_LOGIN_SHELL"
ENABLE_DETERMINISTIC_HEAD_POD_NAME: Final = "ENABLE_DETERMINISTIC_HEAD_POD_NAME"

# --------------------------------------------------------------------------------------------
# Ports
# --------------------------------------------------------------------------------------------
DEFAULT_CLIENT_PORT: Final = 10001
DEFAULT_GCS_SERVER_PORT: Final = 6379
DEFAULT_DASHBOARD_PORT: Final = 8265
DEFAULT_METRICS_PORT: Final = 8080
DEFAULT_DASHBOARD_AGENT_LISTEN_PORT: Final = 52365
DEFAULT_SERVING_PORT: Final = 8000

CLIENT_PORT_NAME: Final = "client"
GCS_SERVER_PORT_NAME: Final = "gcs-server"
DASHBOARD_PORT_NAME: Final = "dashboard"
METRICS_PORT_NAME: Final = "metrics"
SERVING_PORT_NAME: Final = "serve"
DEFAULT_SERVICE_APP_PROTOCOL: Final = "tcp"

# --------------------------------------------------------------------------------------------
# Names
# --------------------------------------------------------------------------------------------
HEAD_SERVICE_SUFFIX: Final = "head-svc"
SERVE_SERVICE_SUFFIX: Final = "serve-svc"
HEADLESS_SERVICE_SUFFIX: Final = "headless"
INGRESS_SUFFIX: Final = "head-ingress"
REDIS_CLEANUP_JOB_SUFFIX: Final = "redis-cleanup"
RAY_CONTAINER_INDEX: Final = 0
AUTOSCALER_CONTAINER_NAME: Final = "autoscaler"
WAIT_GCS_READY_INIT_CONTAINER_NAME: Final = "wait-gcs-ready"
MAX_RAYCLUSTER_NAME_LENGTH: Final = 53
MAX_RAYSERVICE_NAME_LENGTH: Final = MAX_RAYCLUSTER_NAME_LENGTH - 6
DEFAULT_SERVE_APP_NAME: Final = "default"

# --------------------------------------------------------------------------------------------
# Probes (the v1.2.2+ generation: timeouts 2 s worker / 5 s head, `wget --tries 1 -T <n>`)
# --------------------------------------------------------------------------------------------
DEFAULT_READINESS_PROBE_INITIAL_DELAY_SECONDS: Final = 10
DEFAULT_READINESS_PROBE_TIMEOUT_SECONDS: Final = 2
DEFAULT_HEAD_READINESS_PROBE_TIMEOUT_SECONDS: Final = 5
DEFAULT_READINESS_PROBE_PERIOD_SECONDS: Final = 5
DEFAULT_READINESS_PROBE_SUCCESS_THRESHOLD: Final = 1
DEFAULT_READINESS_PROBE_FAILURE_THRESHOLD: Final = 10
SERVE_READINESS_PROBE_FAILURE_THRESHOLD: Final = 1

DEFAULT_LIVENESS_PROBE_INITIAL_DELAY_SECONDS: Final = 30
DEFAULT_LIVENESS_PROBE_TIMEOUT_SECONDS: Final = 2
DEFAULT_HEAD_LIVENESS_PROBE_TIMEOUT_SECONDS: Final = 5
DEFAULT_LIVENESS_PROBE_PERIOD_SECONDS: Final = 5
DEFAULT_LIVENESS_PROBE_SUCCESS_THRESHOLD: Final = 1
DEFAULT_LIVENESS_PROBE_FAILURE_THRESHOLD: Final = 120

RAY_AGENT_RAYLET_HEALTH_PATH: Final = "api/local_raylet_healthz"
RAY_DASHBOARD_GCS_HEALTH_PATH: Final = "api/gcs_healthz"
RAY_SERVE_PROXY_HEALTH_PATH: Final = "-/healthz"
RAY_UNIFIED_HEALTH_PATH: Final = "/api/healthz"
# Format with (timeout_seconds, port, path).
BASE_WGET_HEALTH_COMMAND: Final = "wget --tries 1 -T {} -q -O- http://localhost:{}/{} | grep success"

# --------------------------------------------------------------------------------------------
# RayCluster status: states, condition types and reasons
# --------------------------------------------------------------------------------------------
STATE_READY: Final = "ready"
STATE_SUSPENDED: Final = "suspended"
STATE_FAILED: Final = "failed"  # deprecated in KubeRay, never set by us

COND_HEAD_POD_READY: Final = "HeadPodReady"
COND_RAYCLUSTER_PROVISIONED: Final = "RayClusterProvisioned"
COND_REPLICA_FAILURE: Final = "ReplicaFailure"
COND_RAYCLUSTER_SUSPENDING: Final = "RayClusterSuspending"
COND_RAYCLUSTER_SUSPENDED: Final = "RayClusterSuspended"

REASON_ALL_POD_RUNNING_AND_READY_FIRST_TIME: Final = "AllPodRunningAndReadyFirstTime"
REASON_RAYCLUSTER_PODS_PROVISIONING: Final = "RayClusterPodsProvisioning"
REASON_HEAD_POD_NOT_FOUND: Final = "HeadPodNotFound"
REASON_HEAD_POD_RUNNING_AND_READY: Final = "HeadPodRunningAndReady"
REASON_UNKNOWN: Final = "Unknown"
# ReplicaFailure reasons (KubeRay's errRayClusterReplicaFailure markers).
REASON_FAILED_DELETE_ALL_PODS: Final = "FailedDeleteAllPods"
REASON_FAILED_DELETE_HEAD_POD: Final = "FailedDeleteHeadPod"
REASON_FAILED_CREATE_HEAD_POD: Final = "FailedCreateHeadPod"
REASON_FAILED_DELETE_WORKER_POD: Final = "FailedDeleteWorkerPod"
REASON_FAILED_CREATE_WORKER_POD: Final = "FailedCreateWorkerPod"

# --------------------------------------------------------------------------------------------
# RayService status: condition types and reasons
# --------------------------------------------------------------------------------------------
COND_RAYSERVICE_READY: Final = "Ready"
COND_UPGRADE_IN_PROGRESS: Final = "UpgradeInProgress"
COND_ROLLBACK_IN_PROGRESS: Final = "RollbackInProgress"
COND_RAYSERVICE_SUSPENDING: Final = "Suspending"
COND_RAYSERVICE_SUSPENDED: Final = "Suspended"

REASON_INITIALIZING: Final = "Initializing"
REASON_INITIALIZING_TIMEOUT: Final = "InitializingTimeout"
REASON_ZERO_SERVE_ENDPOINTS: Final = "ZeroServeEndpoints"
REASON_NON_ZERO_SERVE_ENDPOINTS: Final = "NonZeroServeEndpoints"
REASON_BOTH_ACTIVE_PENDING_CLUSTERS_EXIST: Final = "BothActivePendingClustersExist"
REASON_NO_PENDING_CLUSTER: Final = "NoPendingCluster"
REASON_NO_ACTIVE_CLUSTER: Final = "NoActiveCluster"
REASON_VALIDATION_FAILED: Final = "ValidationFailed"
REASON_SUSPEND_REQUESTED: Final = "SuspendRequested"
REASON_SUSPEND_IN_PROGRESS: Final = "SuspendInProgress"
REASON_SUSPEND_COMPLETE: Final = "SuspendComplete"
REASON_RAYSERVICE_RESUMED: Final = "RayServiceResumed"

SERVICE_STATUS_RUNNING: Final = "Running"  # deprecated status.serviceStatus

# --------------------------------------------------------------------------------------------
# Event reasons (events.k8s.io/v1 `reason`)
# --------------------------------------------------------------------------------------------
EVENT_INVALID_RAYCLUSTER_STATUS: Final = "InvalidRayClusterStatus"
EVENT_INVALID_RAYCLUSTER_SPEC: Final = "InvalidRayClusterSpec"
EVENT_INVALID_RAYCLUSTER_METADATA: Final = "InvalidRayClusterMetadata"
EVENT_CREATED_HEAD_POD: Final = "CreatedHeadPod"
EVENT_FAILED_TO_CREATE_HEAD_POD: Final = "FailedToCreateHeadPod"
EVENT_DELETED_HEAD_POD: Final = "DeletedHeadPod"
EVENT_FAILED_TO_DELETE_HEAD_POD: Final = "FailedToDeleteHeadPod"
EVENT_CREATED_WORKER_POD: Final = "CreatedWorkerPod"
EVENT_FAILED_TO_CREATE_WORKER_POD: Final = "FailedToCreateWorkerPod"
EVENT_DELETED_WORKER_POD: Final = "DeletedWorkerPod"
EVENT_FAILED_TO_DELETE_WORKER_POD: Final = "FailedToDeleteWorkerPod"
EVENT_FAILED_TO_DELETE_WORKER_POD_COLLECTION: Final = "FailedToDeleteWorkerPodCollection"
EVENT_DELETED_POD: Final = "DeletedPod"
EVENT_FAILED_TO_DELETE_POD: Final = "FailedToDeletePod"
EVENT_FAILED_TO_DELETE_POD_COLLECTION: Final = "FailedToDeletePodCollection"
EVENT_CREATED_REDIS_CLEANUP_JOB: Final = "CreatedRedisCleanupJob"
EVENT_FAILED_TO_CREATE_REDIS_CLEANUP_JOB: Final = "FailedToCreateRedisCleanupJob"
EVENT_FORCE_DELETED_STUCK_CLUSTER: Final = "ForceDeletedStuckCluster"
EVENT_CREATED_INGRESS: Final = "CreatedIngress"
EVENT_UPDATED_INGRESS: Final = "UpdatedIngress"
EVENT_FAILED_TO_CREATE_INGRESS: Final = "FailedToCreateIngress"
EVENT_FAILED_TO_UPDATE_INGRESS: Final = "FailedToUpdateIngress"
EVENT_CREATED_ROUTE: Final = "CreatedRoute"
EVENT_FAILED_TO_CREATE_ROUTE: Final = "FailedToCreateRoute"
EVENT_CREATED_SERVICE: Final = "CreatedService"
EVENT_UPDATED_SERVICE: Final = "UpdatedService"
EVENT_FAILED_TO_CREATE_SERVICE: Final = "FailedToCreateService"
EVENT_FAILED_TO_UPDATE_SERVICE: Final = "FailedToUpdateService"
EVENT_DELETED_SERVICE: Final = "DeletedService"
EVENT_FAILED_TO_DELETE_SERVICE: Final = "FailedToDeleteService"
EVENT_FAILED_TO_CREATE_SECRET: Final = "FailedToCreateSecret"
EVENT_CREATED_SERVICE_ACCOUNT: Final = "CreatedServiceAccount"
EVENT_FAILED_TO_CREATE_SERVICE_ACCOUNT: Final = "FailedToCreateServiceAccount"
EVENT_AUTOSCALER_SERVICE_ACCOUNT_NOT_FOUND: Final = "AutoscalerServiceAccountNotFound"
EVENT_CREATED_ROLE: Final = "CreatedRole"
EVENT_FAILED_TO_CREATE_ROLE: Final = "FailedToCreateRole"
EVENT_CREATED_ROLE_BINDING: Final = "CreatedRoleBinding"
EVENT_FAILED_TO_CREATE_ROLE_BINDING: Final = "FailedToCreateRoleBinding"

# RayService
EVENT_INVALID_RAYSERVICE_SPEC: Final = "InvalidRayServiceSpec"
EVENT_INVALID_RAYSERVICE_METADATA: Final = "InvalidRayServiceMetadata"
EVENT_CREATED_RAYCLUSTER: Final = "CreatedRayCluster"
EVENT_UPDATED_RAYCLUSTER: Final = "UpdatedRayCluster"
EVENT_DELETED_RAYCLUSTER: Final = "DeletedRayCluster"
EVENT_FAILED_TO_CREATE_RAYCLUSTER: Final = "FailedToCreateRayCluster"
EVENT_FAILED_TO_UPDATE_RAYCLUSTER: Final = "FailedToUpdateRayCluster"
EVENT_FAILED_TO_DELETE_RAYCLUSTER: Final = "FailedToDeleteRayCluster"
EVENT_UPDATED_HEAD_POD_SERVE_LABEL: Final = "UpdatedHeadPodServeLabel"
EVENT_FAILED_TO_UPDATE_HEAD_POD_SERVE_LABEL: Final = "FailedToUpdateHeadPodServeLabel"
EVENT_UPDATED_SERVE_APPLICATIONS: Final = "UpdatedServeApplications"
EVENT_FAILED_TO_UPDATE_SERVE_APPLICATIONS: Final = "FailedToUpdateServeApplications"
EVENT_RAYSERVICE_INITIALIZING_TIMEOUT: Final = "RayServiceInitializingTimeout"

# Event types
NORMAL: Final = "Normal"
WARNING: Final = "Warning"


#: A RayJob submitter container's resources when the user gives none (KubeRay's
#: ``GetDefaultSubmitterTemplate``); the sidecar submitter always has them. Here because the RayJob
#: builders and the batch schedulers (which reserve them in a gang) both need them.
DEFAULT_SUBMITTER_RESOURCES = {
    "limits": {"cpu": "1", "memory": "1Gi"},
    "requests": {"cpu": "500m", "memory": "200Mi"},
}

# Embedded RocksDB GCS fault tolerance (gate GCSFaultToleranceEmbeddedStorage)
RAY_GCS_STORAGE: Final = "RAY_gcs_storage"
RAY_GCS_STORAGE_PATH: Final = "RAY_gcs_storage_path"
GCS_STORAGE_VOLUME_NAME: Final = "gcs-storage"
GCS_STORAGE_MOUNT_PATH: Final = "/data/gcs"
GCS_STORAGE_ROCKSDB: Final = "rocksdb"
GCS_STORAGE_PVC_SUFFIX: Final = "-gcs-pvc"
GCS_STORAGE_DEFAULT_SIZE: Final = "1Gi"
EVENT_CREATED_PVC: Final = "CreatedPVC"
EVENT_FAILED_TO_CREATE_PVC: Final = "FailedToCreatePVC"

# History server collector (gate RayClusterHistoryServer)
COLLECTOR_CONTAINER_NAME: Final = "ray-history-collector"
COLLECTOR_EVENTS_PORT: Final = "8084"
COLLECTOR_MANAGED_ENV: Final = (
    "POD_IP", "FQ_RAY_IP", "RAY_CLUSTER_NAME", "RAY_CLUSTER_NAMESPACE", "RAY_ROLE", "OWNER_KIND",
    "OWNER_NAME", "EVENTS_PORT",
)  # fmt: skip

# mTLS (gate RayClusterMTLS; the PKI comes from cert-manager)
RAY_USE_TLS: Final = "RAY_USE_TLS"
RAY_TLS_SERVER_CERT: Final = "RAY_TLS_SERVER_CERT"
RAY_TLS_SERVER_KEY: Final = "RAY_TLS_SERVER_KEY"
RAY_TLS_CA_CERT: Final = "RAY_TLS_CA_CERT"
RAY_TLS_VOLUME_NAME: Final = "ray-tls"
RAY_TLS_CERT_MOUNT_PATH: Final = "/etc/ray/tls"
CERT_MANAGER_REQUIRED: Final = "tlsOptions requires cert-manager, but cert-manager is not installed"
