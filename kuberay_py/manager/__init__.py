"""The manager: runs caches, controllers and runnables with servers, leader election and events.

See :mod:`kuberay_py.manager.manager` for the start and stop order.
"""

from kuberay_py.manager.events import EventBroadcaster, EventRecorder
from kuberay_py.manager.healthz import HealthChecks
from kuberay_py.manager.leaderelection import LeaderElectionRecord, LeaderElector
from kuberay_py.manager.leaselock import LeaseLock
from kuberay_py.manager.manager import LeaderElectionLost, Manager
from kuberay_py.manager.options import ManagerOptions

__all__ = [
    "EventBroadcaster",
    "EventRecorder",
    "HealthChecks",
    "LeaderElectionLost",
    "LeaderElectionRecord",
    "LeaderElector",
    "LeaseLock",
    "Manager",
    "ManagerOptions",
]
