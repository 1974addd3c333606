"""The RayClusterSpec rules, shared by RayCluster and by RayService's ``rayClusterConfig``.

Kept apart from ``validation`` so each module has one job: this one knows the cluster spec, the
other knows objects, metadata and RayService. See ``controllers.api.validation`` for the why.
"""

from __future__ import annotations

from typing import Any

from controllers import constants as C
from controllers.api.errors import FieldError
from controllers.api.gates import ClusterGates
from controllers.api.names import dns1123_label_errors, label_value_errors, qualified_name_errors
from controllers.api.podtemplate import containers, pod_spec, ray_container
from controllers.api.raycluster import RayClusterSpec, WorkerGroupSpec
from controllers.common import ray_version

__all__ = ["is_autoscaling_enabled", "is_autoscaling_v2_enabled", "validate_raycluster_spec"]

_RAY_START_RESOURCE_KEYS = ("num-cpus", "num-gpus", "memory", "resources")
_MANAGED_BY_VALUES = ("ray.io/kuberay-operator", "kueue.x-k8s.io/multikueue")
_SNAKE = {"ingressRules": "ingress_rules", "egressRules": "egress_rules"}


def is_autoscaling_enabled(spec: RayClusterSpec) -> bool:
    return bool(spec.enable_in_tree_autoscaling)


def _env_value(container: dict[str, Any] | None, name: str) -> str | None:
    """The literal value of env var ``name`` ("" when it uses valueFrom), or None if absent."""
    for env in (container or {}).get("env") or []:
        if isinstance(env, dict) and env.get("name") == name:
            return str(env.get("value") or "")
    return None


def is_autoscaling_v2_enabled(spec: RayClusterSpec) -> bool:
    """KubeRay's ``IsAutoscalingV2Enabled``: ``autoscalerOptions.version: v2``, nothing else.

    The head env var only counts where KubeRay also accepts it (:func:`_v2_requested`).
    """
    return spec.autoscaler_options is not None and spec.autoscaler_options.version == "v2"


def _v2_requested(spec: RayClusterSpec) -> bool:
    """v2 by ``autoscalerOptions.version`` or the pre-1.4 head env var (exactly "1" or "true"),
    which KubeRay still honours for ``idleTimeoutSeconds`` and ``priority``."""
    if is_autoscaling_v2_enabled(spec):
        return True
    head = ray_container(spec.head_group_spec.template if spec.head_group_spec else None)
    return _env_value(head, C.RAY_ENABLE_AUTOSCALER_V2) in ("1", "true")


def _storage_backend_errors(env: dict[str, dict[str, Any]]) -> list[str]:
    """What the collector's ``STORAGE_BACKEND`` needs next to it (KubeRay's rules and wording)."""

    def has(name: str) -> bool:
        item = env.get(name)
        return item is not None and (bool(item.get("value")) or item.get("valueFrom") is not None)

    backend = str((env.get("STORAGE_BACKEND") or {}).get("value") or "")
    if not backend:
        return [
            "STORAGE_BACKEND environment variable must be set with a literal string value in "
            "historyServerOptions.collectorOptions.env"
        ]
    kind = backend.upper()
    if kind == "GCS" and not has("GCS_BUCKET"):
        return ["GCS_BUCKET environment variable must be set when STORAGE_BACKEND is GCS"]
    if kind == "S3" and not has("S3_REGION"):
        return ["S3_REGION environment variable must be set when STORAGE_BACKEND is S3"]
    if kind == "AZUREBLOB":
        mode = str((env.get("AZURE_STORAGE_AUTH_MODE") or {}).get("value") or "").strip().lower()
        if mode == "connection_string" and not has("AZURE_STORAGE_CONNECTION_STRING"):
            return [
                "AZURE_STORAGE_CONNECTION_STRING environment variable must be set when STORAGE_BACKEND is "
                "AZUREBLOB and AZURE_STORAGE_AUTH_MODE is connection_string"
            ]
        if mode in ("workload_identity", "default") and not has("AZURE_STORAGE_ACCOUNT_URL"):
            return [
                "AZURE_STORAGE_ACCOUNT_URL environment variable must be set when STORAGE_BACKEND is "
                f"AZUREBLOB and AZURE_STORAGE_AUTH_MODE is {mode}"
            ]
        known = ("connection_string", "workload_identity", "default")
        if (
            mode not in known
            and not has("AZURE_STORAGE_CONNECTION_STRING")
            and not has("AZURE_STORAGE_ACCOUNT_URL")
        ):
            return [
                "either AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_ACCOUNT_URL environment variable "
                "must "
                "be set when STORAGE_BACKEND is AZUREBLOB"
            ]
    if kind == "ALIYUNOSS":
        for name in ("OSS_BUCKET", "OSS_ENDPOINT", "OSS_REGION"):
            if not has(name):
                return [f"{name} environment variable must be set when STORAGE_BACKEND is ALIYUNOSS"]
    return []


class _Checker:
    """Collects errors for one spec; ``path`` is where the spec sits in the object."""

    def __init__(
        self,
        spec: RayClusterSpec,
        annotations: dict[str, str],
        path: str,
        owner_kind: str,
        gates: ClusterGates,
    ) -> None:
        self.spec = spec
        self.gates = gates
        self.annotations = annotations
        self.path = path
        self.owner_kind = owner_kind
        self.errors: list[FieldError] = []

    def add(self, rel: str, message: str) -> None:
        self.errors.append(FieldError(f"{self.path}.{rel}" if rel else self.path, message, "spec"))

    # ------------------------------------------------------------------------------------ groups

    def group_params(
        self, rel: str, label: str, params: dict[str, str] | None, resources: Any, labels: Any
    ) -> None:
        params = params or {}
        if any(params.get(k) for k in _RAY_START_RESOURCE_KEYS) and resources:
            self.add(
                f"{rel}.resources",
                f"resource fields should not be set in both rayStartParams and resources for {label} group; "
                "please use only one",
            )
        if "labels" in params:
            self.add(
                f"{rel}.rayStartParams",
                f"rayStartParams['labels'] is not supported for {label} group; please use the top-level "
                "labels field instead",
            )
        for key, value in (labels or {}).items():
            for msg in qualified_name_errors(key):
                self.add(f"{rel}.labels", f"invalid label key '{key}': {msg}")
            for msg in label_value_errors(value):
                self.add(f"{rel}.labels[{key}]", f"invalid label value '{value}': {msg}")

    def head(self) -> dict[str, Any] | None:
        head = self.spec.head_group_spec
        if head is None:
            self.add("headGroupSpec", "headGroupSpec is required")
            return None
        if head.template is None:
            self.add("headGroupSpec.template", "template is required")
        elif not containers(head.template):
            self.add(
                "headGroupSpec.template.spec.containers", "headGroupSpec should have at least one container"
            )
        self.group_params("headGroupSpec", "Head", head.ray_start_params, head.resources, head.labels)
        return ray_container(head.template)

    def worker(self, i: int, group: WorkerGroupSpec, autoscaling: bool, seen: dict[str, int]) -> None:
        rel = f"workerGroupSpecs[{i}]"
        name = group.group_name or ""
        if not name:
            self.add(f"{rel}.groupName", "groupName is required")
        elif name in seen:
            self.add(
                f"{rel}.groupName",
                f"duplicate worker group name {name!r} (also workerGroupSpecs[{seen[name]}])",
            )
        else:
            seen[name] = i
        if group.template is None:
            self.add(f"{rel}.template", "template is required")
        elif not containers(group.template):
            self.add(f"{rel}.template.spec.containers", "workerGroupSpec should have at least one container")
        lo, hi = group.min_replicas, group.max_replicas
        if not autoscaling and (lo is None or hi is None):
            missing = "minReplicas" if lo is None else "maxReplicas"
            self.add(
                f"{rel}.{missing}",
                f"worker group {name} must set both minReplicas and maxReplicas when autoscaling is disabled",
            )
        if lo is not None and lo < 0:
            self.add(f"{rel}.minReplicas", f"worker group {name} has negative minReplicas {lo}")
        if hi is not None and hi < 0:
            self.add(f"{rel}.maxReplicas", f"worker group {name} has negative maxReplicas {hi}")
        if lo is not None and hi is not None and lo > hi:
            self.add(
                f"{rel}.minReplicas",
                f"worker group {name} has minReplicas {lo} greater than maxReplicas {hi}",
            )
        if group.replicas is not None and group.replicas < 0:
            self.add(f"{rel}.replicas", f"worker group {name} has negative replicas {group.replicas}")
        if group.num_of_hosts is not None and group.num_of_hosts < 1:
            self.add(
                f"{rel}.numOfHosts",
                f"worker group {name} must have numOfHosts >= 1, got {group.num_of_hosts}",
            )
        self.group_params(rel, name, group.ray_start_params, group.resources, group.labels)
        if group.idle_timeout_seconds is not None:
            if group.idle_timeout_seconds < 0:
                self.add(
                    f"{rel}.idleTimeoutSeconds", f"must be non-negative, got {group.idle_timeout_seconds}"
                )
            elif not _v2_requested(self.spec):
                self.add(
                    f"{rel}.idleTimeoutSeconds",
                    "idleTimeoutSeconds is set, but autoscaler v2 is not enabled. Please set "
                    ".spec.autoscalerOptions.version to 'v2'",
                )
        self.worker_priority(rel, name, group.priority)
        if group.suspend and autoscaling:
            self.add(f"{rel}.suspend", f"worker group {name} cannot be suspended with Autoscaler enabled")
        if autoscaling and is_autoscaling_v2_enabled(self.spec):
            policy = pod_spec(group.template).get("restartPolicy")
            if policy not in (None, "", "Never"):
                self.add(
                    f"{rel}.template.spec.restartPolicy",
                    f"restartPolicy for worker group {name} should be Never or unset when using "
                    "autoscaler V2",
                )

    def worker_priority(self, rel: str, name: str, priority: int | None) -> None:
        """``priority`` (Ray >= 2.56.0) steers autoscaler v2 only: KubeRay rejects it elsewhere."""
        if not priority:
            return
        error = ray_version.requirement_error(
            self.spec.ray_version, ray_version.WORKER_GROUP_PRIORITY, f"worker group {name}: priority is set,"
        )
        if error is not None:
            self.add(f"{rel}.priority", error)
            return
        if not _v2_requested(self.spec):
            self.add(
                f"{rel}.priority",
                f"worker group {name}: priority is set to {priority}, but autoscaler v2 is not enabled. "
                "Priority is only supported with autoscaler v2 enabled",
            )

    # ------------------------------------------------------------------------------- cluster-wide

    def fault_tolerance(self, head: dict[str, Any] | None) -> None:
        ft = self.spec.gcs_fault_tolerance_options
        head_params = (
            self.spec.head_group_spec.ray_start_params if self.spec.head_group_spec else None
        ) or {}
        env_path = "headGroupSpec.template.spec.containers[0].env"
        if self.annotations.get(C.RAY_FT_ENABLED_ANNOTATION_KEY) and ft is not None:
            self.add(
                "gcsFaultToleranceOptions",
                f"{C.RAY_FT_ENABLED_ANNOTATION_KEY} annotation and gcsFaultToleranceOptions are both set. "
                "Please use only gcsFaultToleranceOptions to configure GCS fault tolerance",
            )
        ft_enabled = ft is not None or self.annotations.get(C.RAY_FT_ENABLED_ANNOTATION_KEY) == "true"
        if not ft_enabled and _env_value(head, C.RAY_REDIS_ADDRESS) is not None:
            self.add(
                env_path,
                f"{C.RAY_REDIS_ADDRESS} is set which implicitly enables GCS fault tolerance, but "
                "gcsFaultToleranceOptions is not set. Please set gcsFaultToleranceOptions",
            )
        if ft is not None:
            if head_params.get("redis-password"):
                self.add(
                    "headGroupSpec.rayStartParams",
                    "cannot set `redis-password` in rayStartParams when gcsFaultToleranceOptions is enabled "
                    "- use gcsFaultToleranceOptions.redisPassword instead",
                )
            for env, field in ((C.REDIS_PASSWORD, "redisPassword"), (C.RAY_REDIS_ADDRESS, "redisAddress")):
                if _env_value(head, env) is not None:
                    self.add(
                        env_path,
                        f"cannot set `{env}` env var in head Pod when gcsFaultToleranceOptions is enabled "
                        f"- use gcsFaultToleranceOptions.{field} instead",
                    )
            if self.annotations.get(C.RAY_EXTERNAL_STORAGE_NS_ANNOTATION_KEY):
                self.add(
                    "gcsFaultToleranceOptions",
                    f"cannot set `{C.RAY_EXTERNAL_STORAGE_NS_ANNOTATION_KEY}` annotation when "
                    "gcsFaultToleranceOptions is enabled - use externalStorageNamespace instead",
                )
            if ft.backend == C.GCS_STORAGE_ROCKSDB:
                self.embedded_backend(head)
            elif ft.storage is not None:
                self.add(
                    "gcsFaultToleranceOptions.storage",
                    "cannot set storage when backend is 'redis' - it only applies to the 'rocksdb' backend",
                )
        if head_params.get("redis-username") or _env_value(head, C.REDIS_USERNAME) is not None:
            self.add(
                "headGroupSpec.rayStartParams",
                "cannot set redis username in rayStartParams or environment variables - use "
                "gcsFaultToleranceOptions.redisUsername instead",
            )

    def embedded_backend(self, head: dict[str, Any] | None) -> None:
        """KubeRay's rules for ``backend: rocksdb``: behind its gate, no Redis settings, and the
        env, mount and volume the operator adds left to the operator."""
        ft = self.spec.gcs_fault_tolerance_options
        assert ft is not None
        if not self.gates.embedded_gcs:
            self.add(
                "gcsFaultToleranceOptions.backend",
                "the embedded RocksDB GCS fault tolerance backend "
                "(GcsFaultToleranceOptions.Backend: 'rocksdb') "
                "requires the GCSFaultToleranceEmbeddedStorage feature gate to be enabled",
            )
            return
        for field, value in (
            ("redisAddress", ft.redis_address),
            ("redisUsername", ft.redis_username),
            ("redisPassword", ft.redis_password),
            ("externalStorageNamespace", ft.external_storage_namespace),
        ):
            if value:
                self.add(
                    f"gcsFaultToleranceOptions.{field}",
                    f"cannot set GcsFaultToleranceOptions.{field[0].upper()}{field[1:]} "
                    "when backend is 'rocksdb'",
                )
        storage = ft.storage
        if storage is not None and storage.claim_name:
            if storage.size is not None or storage.storage_class_name is not None or storage.access_modes:
                self.add(
                    "gcsFaultToleranceOptions.storage.claimName",
                    "GcsFaultToleranceOptions.Storage.ClaimName is mutually exclusive with size, "
                    "storageClassName, and accessModes",
                )
        container = "headGroupSpec.template.spec.containers[0]"
        if (
            _env_value(head, C.RAY_GCS_STORAGE) is not None
            or _env_value(head, C.RAY_GCS_STORAGE_PATH) is not None
        ):
            self.add(
                f"{container}.env",
                f"cannot set `{C.RAY_GCS_STORAGE}` or `{C.RAY_GCS_STORAGE_PATH}` env var in head Pod "
                "when the "
                "embedded GCS FT backend is used - these are managed by KubeRay",
            )
        for mount in (head or {}).get("volumeMounts") or []:
            if (
                mount.get("mountPath") == C.GCS_STORAGE_MOUNT_PATH
                or mount.get("name") == C.GCS_STORAGE_VOLUME_NAME
            ):
                self.add(
                    f"{container}.volumeMounts",
                    f'cannot set a volume mount named "{C.GCS_STORAGE_VOLUME_NAME}" or mounted at '
                    f"{C.GCS_STORAGE_MOUNT_PATH} in the head container when the embedded GCS FT backend is "
                    "used - it is managed by KubeRay",
                )
                break
        template = self.spec.head_group_spec.template if self.spec.head_group_spec else None
        for volume in pod_spec(template).get("volumes") or []:
            if volume.get("name") == C.GCS_STORAGE_VOLUME_NAME:
                self.add(
                    "headGroupSpec.template.spec.volumes",
                    f'cannot set a volume named "{C.GCS_STORAGE_VOLUME_NAME}" in the head Pod '
                    "when the embedded "
                    "GCS FT backend is used - it is managed by KubeRay",
                )

    def autoscaler(self, head: dict[str, Any] | None, autoscaling: bool) -> None:
        v2_env = _env_value(head, C.RAY_ENABLE_AUTOSCALER_V2)
        options = self.spec.autoscaler_options
        if not autoscaling and v2_env in ("1", "true"):
            self.add(
                "headGroupSpec.template.spec.containers[0].env",
                f"environment variable {C.RAY_ENABLE_AUTOSCALER_V2} cannot be set to '{v2_env}' when "
                "enableInTreeAutoscaling is false",
            )
        if autoscaling and options is not None and options.version is not None and v2_env is not None:
            self.add(
                "autoscalerOptions.version",
                f"both autoscalerOptions.version and head Pod env var {C.RAY_ENABLE_AUTOSCALER_V2} are set, "
                "please only use the former",
            )
        if autoscaling and is_autoscaling_v2_enabled(self.spec) and self.spec.head_group_spec is not None:
            policy = pod_spec(self.spec.head_group_spec.template).get("restartPolicy")
            if policy not in (None, "", "Never"):
                self.add(
                    "headGroupSpec.template.spec.restartPolicy",
                    "restartPolicy for head Pod should be Never or unset when using autoscaler V2",
                )
        if options is not None:
            if options.idle_timeout_seconds is not None and options.idle_timeout_seconds < 0:
                self.add(
                    "autoscalerOptions.idleTimeoutSeconds",
                    f"must be non-negative, got {options.idle_timeout_seconds}",
                )
            for env in options.env or []:
                if env.get("name") == C.KUBERAY_GEN_AUTOSCALER_START_CMD:
                    self.add(
                        "autoscalerOptions.env",
                        f"must not contain {C.KUBERAY_GEN_AUTOSCALER_START_CMD}: "
                        "it is managed by the operator",
                    )

    def auth(self) -> None:
        auth = self.spec.auth_options
        if auth is None:
            return
        if auth.mode == "token":
            error = ray_version.requirement_error(
                self.spec.ray_version, ray_version.TOKEN_AUTH, "authOptions.mode is 'token'"
            )
            if error is not None:
                self.add("rayVersion", error)
            elif auth.enable_k8s_token_auth:
                k8s_error = ray_version.requirement_error(
                    self.spec.ray_version,
                    ray_version.K8S_TOKEN_AUTH,
                    "authOptions.enableK8sTokenAuth is enabled",
                )
                if k8s_error is not None:
                    self.add("authOptions.enableK8sTokenAuth", k8s_error)
            if auth.enable_k8s_token_auth and auth.secret_name:
                self.add(
                    "authOptions.secretName",
                    "authOptions.enableK8sTokenAuth is enabled and authOptions.secretName is also set",
                )
        elif auth.enable_k8s_token_auth:
            self.add("authOptions.enableK8sTokenAuth", "is enabled but authOptions.mode is not 'token'")

    def tls(self) -> None:
        """KubeRay's gate check and ``validateTLSOptions``: with mTLS on, the TLS env vars and
        the certificate mount are the operator's, in the Ray containers and the autoscaler."""
        options = self.spec.tls_options
        if options is None:
            return
        if not self.gates.mtls:
            self.add("tlsOptions", "spec.tlsOptions requires the RayClusterMTLS feature gate to be enabled")
            return
        if not options.enabled:
            return
        managed = "- the operator manages TLS configuration automatically"
        env_names = (C.RAY_USE_TLS, C.RAY_TLS_SERVER_CERT, C.RAY_TLS_SERVER_KEY, C.RAY_TLS_CA_CERT)

        def container(rel: str, where: str, ray: dict[str, Any] | None) -> None:
            if ray is None:
                return
            for name in env_names:
                if _env_value(ray, name) is not None:
                    self.add(
                        f"{rel}.env",
                        f"cannot set {name} environment variable in {where} when tlsOptions is set {managed}",
                    )
            self.tls_mounts(f"{rel}.volumeMounts", where, ray.get("volumeMounts") or [], managed)

        head = self.spec.head_group_spec
        container(
            "headGroupSpec.template.spec.containers[0]",
            "head Pod",
            ray_container(head.template if head else None),
        )
        for i, group in enumerate(self.spec.worker_group_specs or []):
            container(
                f"workerGroupSpecs[{i}].template.spec.containers[0]",
                f'worker group "{group.group_name}"',
                ray_container(group.template),
            )
        autoscaler = self.spec.autoscaler_options
        if autoscaler is not None:
            for name in env_names:
                if any(e.get("name") == name for e in autoscaler.env or []):
                    self.add(
                        "autoscalerOptions.env",
                        f"cannot set {name} environment variable in autoscalerOptions.env "
                        "when tlsOptions is set "
                        "- the operator manages TLS configuration for the autoscaler automatically",
                    )
            mounts = list(autoscaler.volume_mounts or [])
            self.tls_mounts(
                "autoscalerOptions.volumeMounts", "autoscalerOptions.volumeMounts", mounts, managed
            )

    def tls_mounts(self, rel: str, where: str, mounts: list[Any], managed: str) -> None:
        for mount in mounts:
            if mount.get("name") == C.RAY_TLS_VOLUME_NAME:
                self.add(
                    rel,
                    f'cannot use volume mount named "{C.RAY_TLS_VOLUME_NAME}" in {where} '
                    f"when tlsOptions is set {managed}",
                )
                return
            if mount.get("mountPath") == C.RAY_TLS_CERT_MOUNT_PATH:
                self.add(
                    rel,
                    f'cannot use volume mount at path "{C.RAY_TLS_CERT_MOUNT_PATH}" in {where} '
                    f"when tlsOptions is set {managed}",
                )
                return

    def history_server(self) -> None:
        """KubeRay's gate check and ``validateCollectorOptions``: an image, a storage backend
        with its settings, and the env and container name the operator manages left to it."""
        options = self.spec.history_server_options
        if options is None:
            return
        if not self.gates.history_server:
            self.add("historyServerOptions", "RayClusterHistoryServer feature gate is not enabled")
            return
        collector = options.collector_options
        if collector is None:
            self.add(
                "historyServerOptions.collectorOptions", "historyServerOptions.collectorOptions must be set"
            )
            return
        rel = "historyServerOptions.collectorOptions"
        if not collector.image:
            self.add(f"{rel}.image", "historyServerOptions.collectorOptions.image must be set")
        env = {str(e.get("name")): e for e in collector.env or []}
        for name in C.COLLECTOR_MANAGED_ENV:
            if name in env:
                self.add(
                    f"{rel}.env",
                    f"historyServerOptions.collectorOptions.env must not contain {name}: "
                    "it is managed by KubeRay "
                    "and injected automatically into the collector container",
                )
        for message in _storage_backend_errors(env):
            self.add(f"{rel}.env", message)
        head_template = self.spec.head_group_spec.template if self.spec.head_group_spec else None
        if any(c.get("name") == C.COLLECTOR_CONTAINER_NAME for c in containers(head_template)):
            self.add(
                "headGroupSpec.template.spec.containers",
                "head pod template must not define a container with name "
                f"'{C.COLLECTOR_CONTAINER_NAME}' when "
                "history server collector options are enabled",
            )
        for i, group in enumerate(self.spec.worker_group_specs or []):
            if any(c.get("name") == C.COLLECTOR_CONTAINER_NAME for c in containers(group.template)):
                self.add(
                    f"workerGroupSpecs[{i}].template.spec.containers",
                    f"worker group {group.group_name} pod template must not define a container with name "
                    f"'{C.COLLECTOR_CONTAINER_NAME}' when history server collector options are enabled",
                )

    def network_policy(self) -> None:
        """KubeRay's gate check, then ``validateNetworkPolicy``: rules only for a denied direction,
        group overrides naming existing groups, group names usable in an object name."""
        policy = self.spec.network_policy
        if policy is None:
            return
        if not self.gates.network_policy:
            self.add(
                "networkPolicy",
                "spec.networkPolicy requires the RayClusterNetworkPolicy feature gate to be enabled",
            )
            return
        mode = policy.mode or "DenyAll"
        unrestricted = {"DenyAllEgress": "ingressRules", "DenyAllIngress": "egressRules"}.get(mode)
        direction = "ingress" if mode == "DenyAllEgress" else "egress"

        def rules_for_mode(rel: str, label: str, rules: Any) -> None:
            if unrestricted is not None and getattr(rules, _SNAKE[unrestricted]):
                self.add(
                    f"networkPolicy.{rel}.{unrestricted}",
                    f'networkPolicy.{label}.{unrestricted} cannot be set when mode is "{mode}" '
                    f"({direction} is not restricted)",
                )

        if policy.head is not None:
            rules_for_mode("head", "head", policy.head)
        if policy.worker is not None:
            rules_for_mode("worker", "worker", policy.worker)
        names = set()
        for i, group in enumerate(self.spec.worker_group_specs or []):
            name = group.group_name or ""
            names.add(name)
            errs = dns1123_label_errors(name)
            if errs:
                self.add(
                    f"workerGroupSpecs[{i}].groupName",
                    f'worker group name "{name}" must be a valid DNS1123 label when networkPolicy is '
                    f"enabled (it is embedded in the NetworkPolicy name): {'; '.join(errs)}",
                )
        for i, override in enumerate(policy.worker_groups or []):
            label = f'workerGroups["{override.group_name}"]'
            rules_for_mode(f"workerGroups[{i}]", label, override)
            if override.group_name not in names:
                self.add(
                    f"networkPolicy.workerGroups[{i}].groupName",
                    f"networkPolicy.{label} does not match any group name in workerGroupSpecs",
                )

    def upgrade_and_ownership(self, labels: dict[str, str]) -> None:
        strategy = self.spec.upgrade_strategy
        if strategy is not None and strategy.type is not None:
            if strategy.type not in ("Recreate", "None"):
                self.add(
                    "upgradeStrategy.type",
                    f"value {strategy.type} is invalid, valid options are Recreate or None",
                )
            creator = labels.get(C.RAY_ORIGINATED_FROM_CRD_LABEL_KEY)
            if self.owner_kind == "RayService" or creator in (C.CRD_RAYSERVICE, C.CRD_RAYJOB):
                self.add(
                    "upgradeStrategy",
                    "upgradeStrategy cannot be set when RayCluster is created by "
                    f"{creator or self.owner_kind}",
                )
        if self.spec.managed_by is not None and self.spec.managed_by not in _MANAGED_BY_VALUES:
            self.add("managedBy", f"must be either {_MANAGED_BY_VALUES[0]!r} or {_MANAGED_BY_VALUES[1]!r}")


def validate_raycluster_spec(
    spec: RayClusterSpec,
    annotations: dict[str, str] | None = None,
    *,
    path: str = "spec",
    labels: dict[str, str] | None = None,
    owner_kind: str = "RayCluster",
    gates: ClusterGates = ClusterGates(),
) -> list[FieldError]:
    """Every rule KubeRay applies to a RayClusterSpec; ``path`` prefixes each error path.

    ``annotations``/``labels`` are the owning object's (the FT annotation and the creator label
    change what is allowed); ``owner_kind`` is "RayService" when this is a ``rayClusterConfig``.
    """
    check = _Checker(spec, annotations or {}, path, owner_kind, gates)
    autoscaling = is_autoscaling_enabled(spec)
    head = check.head()
    seen: dict[str, int] = {}
    for i, group in enumerate(spec.worker_group_specs or []):
        check.worker(i, group, autoscaling, seen)
    check.fault_tolerance(head)
    check.autoscaler(head, autoscaling)
    check.auth()
    check.tls()
    check.history_server()
    check.network_policy()
    check.upgrade_and_ownership(labels or {})
    return check.errors
