"""RayCronJob controller options (operator flags; the ray.io/v1 API has no field for them)."""

from __future__ import annotations

from dataclasses import dataclass

from controllers.raycronjob.ticks import REPLAY_ALL, MissedTicks

__all__ = ["RayCronJobOptions"]


@dataclass(frozen=True)
class RayCronJobOptions:
    """``missed_ticks``: ``"all"`` replays every missed tick earliest first (KubeRay's behaviour,
    the default); ``"latest"`` runs only the most recent one (``--raycronjob-missed-ticks``)."""

    missed_ticks: MissedTicks = REPLAY_ALL
