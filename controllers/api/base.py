"""The base model every ray.io/v1 type derives from, and the schema markers the CRD generator reads.

Why pydantic v2 with ``extra="allow"``: the operator must never drop a field it does not know.
A user may apply a manifest written for a newer KubeRay; if the controller loaded it into a
closed model and wrote it back, the unknown fields would silently disappear. So every model keeps
unknown keys as extras, dumps with ``exclude_unset`` (a field the user did not write is not
invented on the way out) and remembers the order the keys arrived in, so that
``load(x).to_dict() == x`` holds key for key, and diffs stay readable.

Validation is strict (``strict=True``): ``replicas: "3"`` is an error, never a silent coercion,
because the API server would reject the same value and a coerced copy would round-trip into a
different object.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    ModelWrapValidatorHandler,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel

__all__ = [
    "ApiModel",
    "ApiObject",
    "Int32",
    "Int64",
    "K8s",
    "Quantity",
    "Schema",
    "StringMap",
]


@dataclass(frozen=True)
class Schema:
    """Extra OpenAPI keywords for one field (format, default, enum, CEL rules, list types...).

    The CRD generator merges these into the field's schema. They are data, not behaviour:
    pydantic ignores them at load time, the API server enforces them.
    """

    extra: dict[str, Any] = field(default_factory=dict)

    def __hash__(self) -> int:
        return hash(repr(sorted(self.extra.items())))


@dataclass(frozen=True)
class K8s:
    """Marks a plain mapping as a Kubernetes type, e.g. ``K8s("V1PodTemplateSpec")``.

    The value stays a ``dict`` in Python (the builders edit raw manifests and an unknown field
    must survive); the CRD generator expands the named kubernetes_asyncio model into its
    OpenAPI schema.
    """

    model: str


# Typed aliases used by the models. The Schema markers carry what controller-gen would emit.
Int32 = Annotated[int, Schema({"format": "int32"})]
Int64 = Annotated[int, Schema({"format": "int64"})]
StringMap = dict[str, str]
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|"
    r"(\.[0-9]+))))?$"
)
Quantity = Annotated[int | str, Schema({"x-kubernetes-int-or-string": True, "pattern": QUANTITY_PATTERN})]
DateTime = Annotated[str, Schema({"format": "date-time"})]

_IRREGULAR_ALIASES = {
    # camelCase names that pydantic's to_camel would spell differently.
    "enable_k8s_token_auth": "enableK8sTokenAuth",
    "desired_cpu": "desiredCPU",
    "desired_gpu": "desiredGPU",
    "desired_tpu": "desiredTPU",
    "pod_ip": "podIP",
    "service_ip": "serviceIP",
}


def _alias(name: str) -> str:
    return _IRREGULAR_ALIASES.get(name, to_camel(name))


class ApiModel(BaseModel):
    """Base of every ray.io/v1 model: camelCase aliases, extras kept, key order kept."""

    model_config = ConfigDict(
        extra="allow",
        populate_by_name=True,
        alias_generator=_alias,
        strict=True,
        arbitrary_types_allowed=False,
        protected_namespaces=(),
    )

    # Properties the CRD lists under ``required`` (camelCase). Not enforced at load time: the
    # API server rejects the object, and semantic validation reports it for objects from files.
    crd_required: ClassVar[tuple[str, ...]] = ()

    _key_order: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _remember_key_order(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        obj = handler(data)
        if isinstance(data, dict):
            obj._key_order = tuple(data)
        return obj

    @model_serializer(mode="wrap")
    def _dump_in_input_order(self, handler: SerializerFunctionWrapHandler) -> Any:
        out = handler(self)
        if not self._key_order or not isinstance(out, dict):
            return out
        ordered = {k: out[k] for k in self._key_order if k in out}
        for k, v in out.items():
            if k not in ordered:
                ordered[k] = v
        return ordered

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> Self:
        """Load a manifest (camelCase keys). Raises pydantic.ValidationError on a type error."""
        return cls.model_validate(obj)

    def to_dict(self) -> dict[str, Any]:
        """The manifest form: camelCase keys, only what was set, unknown fields included."""
        out: dict[str, Any] = self.model_dump(by_alias=True, exclude_unset=True)
        return out


class ApiObject(ApiModel):
    """A whole top-level object (RayCluster, RayService): ``spec`` and ``status`` come from the subclass.

    ``metadata`` stays a plain dict because the API server owns it; the accessors read it the
    same way for every kind, so controllers never care which kind they hold.
    """

    api_version: str | None = None
    kind: str | None = None
    metadata: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        return str((self.metadata or {}).get("name", ""))

    @property
    def namespace(self) -> str:
        return str((self.metadata or {}).get("namespace", ""))

    @property
    def annotations(self) -> dict[str, str]:
        return dict((self.metadata or {}).get("annotations") or {})

    @property
    def labels(self) -> dict[str, str]:
        return dict((self.metadata or {}).get("labels") or {})
