"""Feature gates, named and defaulted as KubeRay's ``pkg/features`` (``--feature-gates=A=true,B=false``).

Only the gates kuberay-py implements are known; naming any other gate is an error at start-up, as
in KubeRay (component-base rejects unknown gates), so a Deployment copied from KubeRay that turns
on a feature we lack fails loudly instead of running without it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

__all__ = ["DEFAULT_GATES", "RAYSERVICE_INCREMENTAL_UPGRADE", "FeatureGates", "parse_feature_gates"]

RAYSERVICE_INCREMENTAL_UPGRADE: Final = "RayServiceIncrementalUpgrade"

# name -> (default, maturity); KubeRay v1.7: beta and on by default.
DEFAULT_GATES: Final[Mapping[str, tuple[bool, str]]] = {
    RAYSERVICE_INCREMENTAL_UPGRADE: (True, "Beta"),
}

_TRUE = {"true", "1", "t"}
_FALSE = {"false", "0", "f"}


@dataclass(frozen=True)
class FeatureGates:
    """The gates in force: the defaults with the explicit settings applied."""

    overrides: Mapping[str, bool] = field(default_factory=dict)

    def enabled(self, name: str) -> bool:
        if name in self.overrides:
            return self.overrides[name]
        return DEFAULT_GATES[name][0]


def parse_feature_gates(text: str) -> FeatureGates:
    """``"RayServiceIncrementalUpgrade=false"`` → gates; raises ValueError naming the bad entry."""
    overrides: dict[str, bool] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, value = part.partition("=")
        name, value = name.strip(), value.strip().lower()
        if not sep:
            raise ValueError(f"missing bool value for {name}")
        if name not in DEFAULT_GATES:
            known = ", ".join(sorted(DEFAULT_GATES))
            raise ValueError(f"unrecognized feature gate: {name} (known: {known})")
        if value in _TRUE:
            overrides[name] = True
        elif value in _FALSE:
            overrides[name] = False
        else:
            raise ValueError(f"invalid value of {name}={value}, err: invalid syntax")
    return FeatureGates(overrides)
