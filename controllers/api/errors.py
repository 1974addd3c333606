"""``FieldError``: one validation problem, named by its field path."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Category", "FieldError"]

Category = Literal["metadata", "spec", "status"]


@dataclass(frozen=True)
class FieldError:
    """Where (``path``, as the API server spells it), what (``message``) and which kind of check.

    ``category`` picks KubeRay's event reason: ``metadata`` → ``Invalid<Kind>Metadata``,
    ``spec`` → ``Invalid<Kind>Spec``, ``status`` → ``Invalid<Kind>Status``.
    """

    path: str
    message: str
    category: Category = "spec"

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"
