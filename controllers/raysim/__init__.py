"""Fake Ray nodes for tests and the demo: a PodRuntime that makes simulated Pods behave like Ray 2.60.

See docs/simulator.md for what is modelled and how it differs from real Ray.
"""

from controllers.raysim.apps import AppRegistry, DeploymentModel, KnownApp, default_registry
from controllers.raysim.cluster import NodeFaults, RayClusterSim
from controllers.raysim.runtime import RayPodRuntime
from controllers.raysim.serve_state import Timings

__all__ = [
    "AppRegistry",
    "DeploymentModel",
    "KnownApp",
    "NodeFaults",
    "RayClusterSim",
    "RayPodRuntime",
    "Timings",
    "default_registry",
]
