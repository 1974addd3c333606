"""The API resources the RayService controller reads and writes (defined in controllers.constants)."""

from __future__ import annotations

from controllers.constants import RAYCLUSTERS, RAYSERVICES

__all__ = ["RAYCLUSTERS", "RAYSERVICES"]
