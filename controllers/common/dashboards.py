"""The pooled dashboard connections of a controller, closed when its manager stops.

The RayService and RayJob controllers each keep one :class:`DashboardClientFactory` (a connection
pool per head) for their whole life. Registering its close as a manager runnable ties the pool's
end to the manager's: it waits for the manager to stop, then closes every connection, so no
aiohttp session outlives the event loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from controllers.ray.dashboard import DashboardClientFactory

if TYPE_CHECKING:
    from kuberay_py.manager.manager import Manager

__all__ = ["close_with_manager"]


def close_with_manager(manager: Manager, dashboards: DashboardClientFactory, name: str) -> None:
    async def close_dashboards() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            await dashboards.close()

    manager.add_runnable(close_dashboards, needs_leader_election=False, name=name)
