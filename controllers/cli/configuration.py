"""KubeRay's operator ``Configuration`` file (``--config FILE``, ``config.ray.io/v1alpha1``).

KubeRay's Helm chart with ``configuration.enabled`` mounts a ConfigMap holding this document and
passes only ``--config /etc/kuberay/config.yaml`` (plus ``--feature-gates``). As in KubeRay v1.7.0:

* the file replaces the flags it has fields for; those flags, if also given, are ignored (we say
  so in one log line, KubeRay does not);
* unset fields take ``defaults.go``'s values (``:8080``, ``:8082``, leader election on,
  concurrency 1, QPS 100, burst 200); ``enableMetrics`` and the rest default to false/empty;
* ``--feature-gates``, the zap flags and ``--kubeconfig`` still come from the command line.

The file must parse into the Go types: a field of the wrong type, a missing or foreign
``apiVersion``/``kind`` or unreadable YAML is one line and exit code 2 (KubeRay exits 1 with a
stack of Go errors). Unknown fields are ignored as Go's decoder ignores them, but named in a
warning, since a misspelt ``defaultPodLabels`` would otherwise vanish without a trace.

Deliberate difference: ``logStdoutEncoder``/``logFileEncoder`` from the file are honoured
(KubeRay v1.7.0 reads its encoder flags instead, so the chart's values only work as flags).
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
)

from controllers.raycluster.pod_defaults import PodDefaults

from .flags import OperatorFlags, parse_bind_address

__all__ = [
    "API_VERSION",
    "KIND",
    "Configuration",
    "ConfigurationError",
    "apply_configuration",
    "load_configuration",
]

API_VERSION = "config.ray.io/v1alpha1"
KIND = "Configuration"

# The flags whose values the file replaces (KubeRay's main.go copies exactly these into the config).
CONFIG_FLAGS = frozenset(
    {
        "metrics-addr",
        "health-probe-bind-address",
        "enable-leader-election",
        "leader-election-namespace",
        "reconcile-concurrency",
        "watch-namespace",
        "log-file-path",
        "enable-batch-scheduler",
        "batch-scheduler",
        "use-kubernetes-proxy",
        "enable-metrics",
        "qps",
        "burst",
    }
)


class ConfigurationError(ValueError):
    """The file cannot be used; the message is one line naming the file and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class EnvVar(_Strict):
    """``corev1.EnvVar``: a name, and a value or a valueFrom source (kept as given)."""

    name: StrictStr = Field(min_length=1)
    value: StrictStr | None = None
    value_from: dict[str, Any] | None = Field(default=None, alias="valueFrom")


class Container(_Strict):
    """``corev1.Container`` for a sidecar: checked for a name; every other field is kept as given."""

    name: StrictStr = Field(min_length=1)
    image: StrictStr | None = None


# Go's float64 takes a JSON integer too; a bool or a string it does not.
GoFloat = Annotated[float, Field(strict=False)]


class Configuration(BaseModel):
    """The fields of KubeRay v1.7.0's ``Configuration`` (``apis/config/v1alpha1``), camelCase as in YAML."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    api_version: StrictStr = Field(alias="apiVersion")
    kind: StrictStr
    metrics_addr: StrictStr = Field(default="", alias="metricsAddr")
    probe_addr: StrictStr = Field(default="", alias="probeAddr")
    enable_leader_election: StrictBool | None = Field(default=None, alias="enableLeaderElection")
    leader_election_namespace: StrictStr = Field(default="", alias="leaderElectionNamespace")
    reconcile_concurrency: StrictInt = Field(default=0, alias="reconcileConcurrency")
    watch_namespace: StrictStr = Field(default="", alias="watchNamespace")
    log_file: StrictStr = Field(default="", alias="logFile")
    log_file_encoder: StrictStr = Field(default="", alias="logFileEncoder")
    log_stdout_encoder: StrictStr = Field(default="", alias="logStdoutEncoder")
    enable_batch_scheduler: StrictBool = Field(default=False, alias="enableBatchScheduler")
    batch_scheduler: StrictStr = Field(default="", alias="batchScheduler")
    head_sidecar_containers: list[Container] = Field(default_factory=list, alias="headSidecarContainers")
    worker_sidecar_containers: list[Container] = Field(default_factory=list, alias="workerSidecarContainers")
    default_container_envs: list[EnvVar] = Field(default_factory=list, alias="defaultContainerEnvs")
    default_pod_annotations: dict[StrictStr, StrictStr] = Field(
        default_factory=dict, alias="defaultPodAnnotations"
    )
    default_pod_labels: dict[StrictStr, StrictStr] = Field(default_factory=dict, alias="defaultPodLabels")
    enable_metrics: StrictBool = Field(default=False, alias="enableMetrics")
    qps: GoFloat | None = None
    burst: StrictInt | None = None
    use_kubernetes_proxy: StrictBool = Field(default=False, alias="useKubernetesProxy")
    delete_ray_job_after_job_finishes: StrictBool = Field(default=False, alias="deleteRayJobAfterJobFinishes")

    @field_validator("qps", mode="before")
    @classmethod
    def _no_bool_or_text(cls, value: Any) -> Any:
        if isinstance(value, bool | str):
            raise ValueError("must be a number")
        return value

    @field_validator("metrics_addr", "probe_addr")
    @classmethod
    def _bind_address(cls, value: str) -> str:
        if value:
            try:
                parse_bind_address(value)
            except argparse.ArgumentTypeError as err:
                raise ValueError(str(err)) from None
        return value

    @field_validator("log_file_encoder", "log_stdout_encoder")
    @classmethod
    def _encoder(cls, value: str) -> str:
        if value not in ("", "json", "console"):
            raise ValueError(f"invalid encoder {value!r} (must be 'json' or 'console')")
        return value

    @field_validator("burst")
    @classmethod
    def _burst(cls, value: int | None) -> int | None:
        if value is not None and value < 0:
            raise ValueError("must be 0 or more")
        return value

    def unknown_fields(self) -> list[str]:
        return sorted(self.model_extra or {})

    def pod_defaults(self) -> PodDefaults:
        return PodDefaults(
            container_envs=tuple(
                e.model_dump(by_alias=True, exclude_none=True) for e in self.default_container_envs
            ),
            annotations=tuple(self.default_pod_annotations.items()),
            labels=tuple(self.default_pod_labels.items()),
            head_sidecars=tuple(
                c.model_dump(by_alias=True, exclude_none=True) for c in self.head_sidecar_containers
            ),
            worker_sidecars=tuple(
                c.model_dump(by_alias=True, exclude_none=True) for c in self.worker_sidecar_containers
            ),
        )


def _location(err: dict[str, Any]) -> str:
    return ".".join(str(p) for p in err.get("loc") or ()) or "(document)"


def parse_configuration(text: str, source: str = "config") -> Configuration:
    """The document in ``text``; :class:`ConfigurationError` with one line for anything wrong."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigurationError(f"{source}: not valid YAML{where}: {getattr(err, 'problem', err)}") from None
    if not isinstance(data, dict):
        raise ConfigurationError(f"{source}: expected a {KIND} object, got {type(data).__name__}")
    if "kind" not in data:
        raise ConfigurationError(f"{source}: Object 'Kind' is missing")
    if data.get("apiVersion") != API_VERSION or data.get("kind") != KIND:
        raise ConfigurationError(
            f"{source}: want apiVersion {API_VERSION} and kind {KIND}, "
            f"got {data.get('apiVersion')!r} and {data.get('kind')!r}"
        )
    try:
        return Configuration.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
        raise ConfigurationError(f"{source}: {_location(dict(first))}: {first['msg']}{more}") from None


def load_configuration(path: str) -> Configuration:
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise ConfigurationError(f"cannot read config file {path}: {err.strerror or err}") from None
    except UnicodeDecodeError:
        raise ConfigurationError(f"cannot read config file {path}: not UTF-8 text") from None
    return parse_configuration(text, path)


def apply_configuration(flags: OperatorFlags, config: Configuration) -> OperatorFlags:
    """``flags`` with the file's values (and defaults.go's) in place of the flags the file covers."""
    qps = 100.0 if config.qps is None else (5.0 if config.qps == 0 else float(config.qps))
    burst = 200 if config.burst is None else (10 if config.burst == 0 else config.burst)
    return dataclasses.replace(
        flags,
        metrics_addr=config.metrics_addr or ":8080",
        health_probe_bind_address=config.probe_addr or ":8082",
        enable_leader_election=True
        if config.enable_leader_election is None
        else config.enable_leader_election,
        leader_election_namespace=config.leader_election_namespace,
        reconcile_concurrency=max(1, config.reconcile_concurrency),
        watch_namespace=[ns.strip() for ns in config.watch_namespace.split(",") if ns.strip()],
        log_file_path=config.log_file,
        log_format=config.log_stdout_encoder or flags.log_format,
        log_file_encoder=config.log_file_encoder or flags.log_file_encoder,
        enable_batch_scheduler=config.enable_batch_scheduler,
        batch_scheduler=config.batch_scheduler,
        use_kubernetes_proxy=config.use_kubernetes_proxy,
        delete_rayjob_after_job_finishes=config.delete_ray_job_after_job_finishes,
        enable_metrics=config.enable_metrics,
        qps=qps,
        burst=burst,
        pod_defaults=config.pod_defaults(),
    )


def ignored_flags(flags: OperatorFlags) -> list[str]:
    """The command-line flags a Configuration file overrides, in the order given (each once)."""
    seen: list[str] = []
    for name in flags.given:
        if name in CONFIG_FLAGS and name not in seen:
            seen.append(name)
    return seen
