"""KubeRay-identical spec hashes over a table-driven Go ``encoding/json`` encoder."""

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

__all__ = [
    "RAYCLUSTER_SPEC_TYPE",
    "GoJsonEncoder",
    "GoJsonError",
    "QuantityTextError",
    "canonical_quantity_text",
    "default_encoder",
    "go_string",
    "hash_preimage",
    "hash_without_replicas_and_workers_to_delete",
    "muted_spec",
    "rayservice_cluster_hash",
    "rayservice_partial_hash",
    "recreate_hash",
]
