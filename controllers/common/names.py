"""KubeRay's generated names: ``<prefix>-<5 random characters>``.

KubeRay names a RayService's clusters (``GenerateRayClusterName``), a RayJob's cluster and its
submission id (``GenerateRayJobId``) with apimachinery's ``rand.String(5)``, whose alphabet has
no vowels and no look-alike digits (so no word and no 0/o, 1/l confusion). One generator, one
alphabet, for every controller (``controllers/ray/utils/util.go`` in KubeRay v1.7.0).
"""

from __future__ import annotations

import random

__all__ = ["RAND_ALPHABET", "generate_name"]

RAND_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand


def generate_name(prefix: str, rng: random.Random | None = None) -> str:
    """``<prefix>-<5 random characters of RAND_ALPHABET>``; ``rng`` makes it reproducible."""
    pick = (rng or random).choice
    return f"{prefix}-{''.join(pick(RAND_ALPHABET) for _ in range(5))}"
