"""Which Serve ``import_path`` values "import", and what the applications behind them look like.

The fake Ray nodes run no Python code, so an import path resolves iff it is in a registry of
known applications. The default registry holds the applications of KubeRay's samples and of the
Ray measurements (``fruit.deployment_graph``, ``conditional_dag.serve_dag``,
``...single_deployment_dag:DagNode``, ``fruit:app``). Anything else fails like a real import:
an unknown top-level module gives ``ModuleNotFoundError: No module named '<module>'``, a known
module with an unknown attribute gives an ``AttributeError``. Tests and the demo register more
with :meth:`AppRegistry.register`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["AppRegistry", "DeploymentModel", "ImportFailure", "KnownApp", "default_registry", "respond"]


@dataclass(frozen=True)
class DeploymentModel:
    """A deployment as its ``@serve.deployment`` decorator defines it (what the config overrides)."""

    name: str
    num_replicas: int = 1
    num_cpus: float = 1.0  # Serve's default: each replica reserves one CPU


@dataclass(frozen=True)
class KnownApp:
    import_path: str
    deployments: tuple[DeploymentModel, ...]
    ingress: str
    response: str = ""  # body a request to the app's route gets; "" means a JSON summary


@dataclass(frozen=True)
class ImportFailure:
    message: str  # the last line of the traceback Ray reports


def _module_and_attr(import_path: str) -> tuple[str, str]:
    if ":" in import_path:
        module, attr = import_path.split(":", 1)
    else:
        module, _, attr = import_path.rpartition(".")
    return module, attr


@dataclass
class AppRegistry:
    apps: dict[str, KnownApp] = field(default_factory=dict)

    def register(self, app: KnownApp) -> None:
        self.apps[app.import_path] = app

    def resolve(self, import_path: str) -> KnownApp | ImportFailure:
        app = self.apps.get(import_path)
        if app is not None:
            return app
        module, attr = _module_and_attr(import_path)
        known_modules = {_module_and_attr(p)[0] for p in self.apps}
        if module in known_modules:
            return ImportFailure(f"AttributeError: module '{module}' has no attribute '{attr}'")
        parts = module.split(".")
        missing = parts[0]
        for i in range(1, len(parts) + 1):
            prefix = ".".join(parts[:i])
            if not any(m == prefix or m.startswith(prefix + ".") for m in known_modules):
                missing = prefix
                break
        return ImportFailure(f"ModuleNotFoundError: No module named '{missing}'")


def default_registry() -> AppRegistry:
    registry = AppRegistry()
    for app in (
        KnownApp(
            "fruit.deployment_graph",
            tuple(DeploymentModel(n) for n in ("MangoStand", "OrangeStand", "PearStand", "FruitMarket")),
            ingress="FruitMarket",
        ),
        KnownApp(
            "conditional_dag.serve_dag",
            tuple(DeploymentModel(n) for n in ("Adder", "Multiplier", "Router")),
            ingress="Router",
        ),
        KnownApp(
            "ray-operator.config.samples.ray-serve.single_deployment_dag:DagNode",
            (DeploymentModel("BaseService"),),
            ingress="BaseService",
        ),
        KnownApp("fruit:app", (DeploymentModel("Fruit"),), ingress="Fruit"),
    ):
        registry.register(app)
    return registry


def _user_config(entry: dict[str, Any], deployment: str, key: str, default: float) -> float:
    for dep in entry.get("deployments") or []:
        if dep.get("name") == deployment:
            value = (dep.get("user_config") or {}).get(key, default)
            return float(value) if isinstance(value, int | float) else default
    return default


def respond(app: KnownApp | None, entry: dict[str, Any], method: str, body: bytes) -> tuple[int, str]:
    """What a request to the application's route returns.

    The KubeRay samples' applications answer as their code does (``["MANGO", 2]`` → ``6`` from the
    fruit stand with ``user_config.price``; ``["MUL", 3]`` → ``15 pizzas please!``). A request
    without a JSON body gets a small JSON description of the application instead of the 500 the
    sample code would raise, so plain ``GET`` traffic can be used to test availability.
    """
    name = app.import_path if app else ""
    try:
        payload = json.loads(body) if body else None
    except ValueError:
        payload = None
    if name == "fruit.deployment_graph" and isinstance(payload, list) and len(payload) == 2:
        fruit, amount = payload
        stands = {"MANGO": ("MangoStand", 3.0), "ORANGE": ("OrangeStand", 2.0), "PEAR": ("PearStand", 1.0)}
        if str(fruit).upper() not in stands or not isinstance(amount, int | float):
            return 200, "-1"
        dep, default = stands[str(fruit).upper()]
        total = _user_config(entry, dep, "price", default) * amount
        return 200, str(int(total) if total == int(total) else total)
    if name == "conditional_dag.serve_dag" and isinstance(payload, list) and len(payload) == 2:
        op, value = payload
        if not isinstance(value, int | float):
            return 500, "Internal Server Error"
        if op == "ADD":
            result = value + _user_config(entry, "Adder", "increment", 1)
        else:
            result = value * _user_config(entry, "Multiplier", "factor", 1)
        return 200, f"{int(result) if result == int(result) else result} pizzas please!"
    if name == "fruit:app":
        return 200, json.dumps({"fruit": "mango", "price": int(_user_config(entry, "Fruit", "price", 3))})
    return 200, json.dumps({"app": entry.get("name", "default"), "import_path": name, "method": method})
