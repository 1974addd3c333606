"""Validating a Serve config the way Ray 2.60's dashboard does before it answers a PUT.

Ray validates ``PUT /api/serve/applications/`` with pydantic (``ServeDeploySchema``) and answers a
validation error with **400 and pydantic's plain-text message**, not JSON; malformed JSON is a 500
with a traceback. These models reproduce the checks the operator can trigger (required fields,
import-path shape, positive replica counts, duplicate names and route prefixes, local
``working_dir``) under the same class name, so the texts match Ray's. Unknown fields are ignored,
as Ray's forward-compatible schema does. Semantic problems (an import path that does not resolve,
a route prefix without a slash) pass here and fail later, in the application status.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveInt,
    ValidationError,
    field_validator,
    model_validator,
)

__all__ = ["ServeApplicationSchema", "ServeDeploySchema", "ValidationError", "validate_config"]


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="allow")


class RayActorOptionsSchema(_Lenient):
    num_cpus: float | None = Field(default=None, ge=0)
    num_gpus: float | None = Field(default=None, ge=0)
    memory: float | None = Field(default=None, ge=0)
    resources: dict[str, float] = Field(default_factory=dict)
    runtime_env: dict[str, Any] = Field(default_factory=dict)


class DeploymentSchema(_Lenient):
    name: str
    num_replicas: PositiveInt | Literal["auto"] | None = None
    max_replicas_per_node: int | None = Field(default=None, ge=1, le=100)
    max_ongoing_requests: PositiveInt | None = None
    user_config: dict[str, Any] | None = None
    autoscaling_config: dict[str, Any] | None = None
    ray_actor_options: RayActorOptionsSchema | None = None


def _check_runtime_env(env: dict[str, Any]) -> dict[str, Any]:
    uris = [env.get("working_dir"), *(env.get("py_modules") or [])]
    for uri in uris:
        if isinstance(uri, str) and "://" not in uri:
            raise ValueError(
                "runtime_envs in the Serve config support only remote URIs in working_dir and py_modules, "
                f'or "local://" URIs. Got error when parsing URI: Invalid URI {uri!r}.'
            )
    return env


class ServeApplicationSchema(_Lenient):
    name: str = "default"
    route_prefix: str | None = "/"
    import_path: str
    runtime_env: dict[str, Any] = Field(default_factory=dict)
    deployments: list[DeploymentSchema] = Field(default_factory=list)
    args: dict[str, Any] = Field(default_factory=dict)

    @field_validator("import_path")
    @classmethod
    def _import_path_shape(cls, v: str) -> str:
        if ":" not in v and "." not in v:
            raise ValueError(
                f'Got invalid import path "{v}". An import path must contain at least on dot or colon '
                "separating the module (and potentially submodules) from the deployment graph. E.g.: "
                '"module.deployment_graph".'
            )
        if v.count(":") > 1:
            raise ValueError(f'Got invalid import path "{v}". An import path may have at most one colon.')
        return v

    @field_validator("runtime_env")
    @classmethod
    def _runtime_env_uris(cls, v: dict[str, Any]) -> dict[str, Any]:
        return _check_runtime_env(v)


class HTTPOptionsSchema(_Lenient):
    host: str | None = "0.0.0.0"
    port: int = Field(default=8000, ge=1, le=65535)
    root_path: str = ""
    request_timeout_s: float | None = None
    keep_alive_timeout_s: int = 90
    ssl_keyfile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile_password: str | None = None
    ssl_ca_certs: str | None = None


class ServeDeploySchema(_Lenient):
    proxy_location: Literal["Disabled", "HeadOnly", "EveryNode"] = "EveryNode"
    http_options: HTTPOptionsSchema = Field(default_factory=HTTPOptionsSchema)
    grpc_options: dict[str, Any] | None = None
    logging_config: dict[str, Any] | None = None
    target_capacity: float | None = Field(default=None, ge=0, le=100)
    applications: list[ServeApplicationSchema]

    @model_validator(mode="after")
    def _unique(self) -> ServeDeploySchema:
        names: set[str] = set()
        prefixes: set[str] = set()
        for app in self.applications:
            if app.name in names:
                raise ValueError(f'Found multiple configs for application "{app.name}".')
            names.add(app.name)
            if app.route_prefix is not None:
                if app.route_prefix in prefixes:
                    raise ValueError(f'Found duplicate applications for route prefix "{app.route_prefix}".')
                prefixes.add(app.route_prefix)
        return self


def validate_config(doc: Any) -> ServeDeploySchema:
    """Raises pydantic's ValidationError, whose ``str()`` is the 400 body Ray sends."""
    return ServeDeploySchema.model_validate(doc)
