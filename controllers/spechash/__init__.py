"""KubeRay-identical spec hashes and typed specs over a table-driven Go ``encoding/json`` encoder."""

from controllers.spechash.gojson import GoJsonEncoder, GoJsonError, default_encoder, go_string
from controllers.spechash.hashes import (
    RAYCLUSTER_SPEC_TYPE,
    hash_preimage,
    hash_without_replicas_and_workers_to_delete,
    muted_spec,
    rayservice_cluster_hash,
    rayservice_partial_hash,
    recreate_hash,
)
from controllers.spechash.quantity import QuantityTextError, canonical_quantity_text
from controllers.spechash.typed import (
    RAYCRONJOB_SPEC_TYPE,
    RAYJOB_SPEC_TYPE,
    RAYSERVICE_SPEC_TYPE,
    SPEC_TYPES,
    go_round_trip,
    go_typed_spec,
    kuberay_cluster_defaults,
)

__all__ = [
    "RAYCLUSTER_SPEC_TYPE",
    "RAYCRONJOB_SPEC_TYPE",
    "RAYJOB_SPEC_TYPE",
    "RAYSERVICE_SPEC_TYPE",
    "SPEC_TYPES",
    "GoJsonEncoder",
    "GoJsonError",
    "QuantityTextError",
    "canonical_quantity_text",
    "default_encoder",
    "go_round_trip",
    "go_string",
    "go_typed_spec",
    "hash_preimage",
    "hash_without_replicas_and_workers_to_delete",
    "kuberay_cluster_defaults",
    "muted_spec",
    "rayservice_cluster_hash",
    "rayservice_partial_hash",
    "recreate_hash",
]
