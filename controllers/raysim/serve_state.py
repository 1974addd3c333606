"""The Serve controller of a fake Ray cluster: applications, deployments, replicas and proxies.

It is a state machine over an injected clock. ``apply`` takes a validated config (a PUT);
``tick`` moves everything whose time has come: an application's import finishes ``build_s`` after
it was deployed (then fails, or creates its deployments and routes), a placed replica becomes
RUNNING ``replica_start_s`` after placement, and a worker proxy that lost its last replica drains
for ``drain_s`` and then stops. Timings default to what Ray 2.60 showed on a small machine
(see ``ray-serve-behaviour.md``) and are configurable so tests can step them with a FakeClock.

Transitions follow what was measured on Ray 2.60: DEPLOYING (no deployments) → DEPLOYING
(deployments UPDATING) → RUNNING/HEALTHY; an unresolvable import is DEPLOY_FAILED with the
traceback's last line; once RUNNING an application stays RUNNING while Serve replaces replicas
lost with a node; a scale or config change makes it DEPLOYING until the new target is reached.
Changes to ``user_config``/``num_replicas`` are applied in place; a ``ray_actor_options`` or
``max_replicas_per_node`` change replaces the replicas with Serve's rolling update (a few at a time).

A top-level ``target_capacity`` (percent) scales every deployment's replica target the way Ray's
``get_capacity_adjusted_num_replicas`` does: unchanged at None or 100, 0 at 0, otherwise
``num_replicas * target_capacity / 100`` rounded half up, at least 1. Replicas beyond the new
target stop at once; a worker left without replicas has its proxy drained (as for any scale down).
A PUT that changes only ``target_capacity`` rescales in place and rebuilds nothing.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import orjson

from controllers.raysim.apps import AppRegistry, ImportFailure, KnownApp
from controllers.raysim.placement import NodeView, ReplicaView, choose_node, choose_replicas_to_stop
from controllers.raysim.schema import ServeApplicationSchema, ServeDeploySchema

__all__ = ["App", "Deployment", "Node", "Replica", "ServeController", "Timings", "capacity_adjusted"]

_LIGHTWEIGHT = {
    "num_replicas",
    "user_config",
    "autoscaling_config",
    "max_ongoing_requests",
    "max_queued_requests",
    "graceful_shutdown_wait_loop_s",
    "graceful_shutdown_timeout_s",
    "health_check_period_s",
    "health_check_timeout_s",
    "logging_config",
}


@dataclass(frozen=True)
class Timings:
    build_s: float = 2.0  # PUT → deployments created (or DEPLOY_FAILED)
    replica_start_s: float = 2.0  # placement → replica RUNNING
    drain_s: float = 30.0  # RAY_SERVE_PROXY_MIN_DRAINING_PERIOD_S
    unschedulable_warn_s: float = 30.0


@dataclass
class Node:
    node_id: str
    ip: str
    is_head: bool
    num_cpus: float
    pod_name: str


@dataclass
class Replica:
    replica_id: str
    version: str
    seq: int
    created_at: float
    start_time_s: float
    node_id: str | None = None
    placed_at: float | None = None
    state: str = "STARTING"
    pid: int = 0


@dataclass
class Deployment:
    name: str
    app: str
    target: int
    num_cpus: float
    max_per_node: int | None
    version: str
    config: dict[str, Any]
    trigger: str = "CONFIG_UPDATE_STARTED"
    settled: bool = False
    message: str = ""
    change: str = "UPDATING"
    replicas: list[Replica] = field(default_factory=list)
    base_target: int = -1  # the configured replica count, before target_capacity (-1: same as target)

    def running(self, version: str | None = None) -> list[Replica]:
        return [
            r for r in self.replicas if r.state == "RUNNING" and (version is None or r.version == version)
        ]


@dataclass
class App:
    name: str
    entry: dict[str, Any]
    deployed_at: float
    last_deployed_time_s: float
    status: str = "DEPLOYING"
    message: str = ""
    built: bool = False
    route_prefix: str | None = None
    known: KnownApp | None = None
    deployments: dict[str, Deployment] = field(default_factory=dict)


def capacity_adjusted(num_replicas: int, target_capacity: float | None) -> int:
    """Ray's get_capacity_adjusted_num_replicas: 0 only at capacity 0 (or 0 replicas)."""
    if target_capacity is None or target_capacity == 100:
        return num_replicas
    if target_capacity == 0 or num_replicas == 0:
        return 0
    adjusted = (Decimal(num_replicas) * Decimal(str(target_capacity)) / Decimal(100)).to_integral_value(
        rounding=ROUND_HALF_UP
    )
    return max(1, int(adjusted))


def _version(options: dict[str, Any]) -> str:
    return hashlib.sha1(orjson.dumps(options, option=orjson.OPT_SORT_KEYS)).hexdigest()[:12]


class ServeController:
    def __init__(self, registry: AppRegistry, timings: Timings, *, seed: int = 0) -> None:
        self.registry = registry
        self.timings = timings
        self.nodes: dict[str, Node] = {}
        self.apps: dict[str, App] = {}
        self.started = False
        self.proxy_location = "EveryNode"
        self.http_options: dict[str, Any] = {}
        self.grpc_options: dict[str, Any] = {}
        self.target_capacity: float | None = None
        self.proxies: dict[str, tuple[str, float]] = {}  # node_id -> (status, draining since)
        self.draining: set[str] = set()  # nodes being drained (their Pod is terminating)
        self._rand = random.Random(seed)
        self._seq = itertools.count()

    # -- nodes -------------------------------------------------------------------------------
    @property
    def head(self) -> Node | None:
        return next((n for n in self.nodes.values() if n.is_head), None)

    def add_node(self, node: Node) -> None:
        self.nodes[node.node_id] = node

    def remove_node(self, node_id: str) -> None:
        """The node died: its replicas die with it (Serve recreates them elsewhere)."""
        self.nodes.pop(node_id, None)
        self.proxies.pop(node_id, None)
        self.draining.discard(node_id)
        for app in self.apps.values():
            for dep in app.deployments.values():
                dep.replicas = [r for r in dep.replicas if r.node_id != node_id]

    def reset(self) -> None:
        """The head (and with it GCS and the Serve controller) is gone: Serve's state is lost."""
        self.apps.clear()
        self.proxies.clear()
        self.draining.clear()
        self.started = False
        self.http_options = {}
        self.target_capacity = None

    # -- PUT / DELETE ------------------------------------------------------------------------
    def apply(self, config: ServeDeploySchema, raw: dict[str, Any], now: float, wall: float) -> None:
        if not self.started:
            # http_options only take effect when Serve starts; later changes are ignored (Ray logs a warning).
            self.started = True
            self.proxy_location = config.proxy_location
            self.http_options = config.http_options.model_dump()
            self.grpc_options = dict(config.grpc_options or {"port": 9000, "grpc_servicer_functions": []})
        raw_apps = {a.get("name", "default"): a for a in raw.get("applications") or []}
        wanted = {app.name: app for app in config.applications}
        for name in list(self.apps):
            if name not in wanted:
                del self.apps[name]  # PUT is declarative: apps missing from the body are deleted
        for name, app_cfg in wanted.items():
            entry = raw_apps.get(name, {})
            current = self.apps.get(name)
            if current is not None and current.entry == entry:
                continue
            if (
                current is not None
                and current.built
                and current.known is not None
                and current.status != "DEPLOY_FAILED"
                and _same_code(current.entry, entry)
            ):
                self._update_in_place(current, app_cfg, entry, now, wall)
            else:
                self.apps[name] = App(name, entry, deployed_at=now, last_deployed_time_s=wall)
                if current is not None:
                    # keep serving from the old replicas until the rebuilt deployments replace them
                    self.apps[name].deployments = current.deployments
                    self.apps[name].route_prefix = current.route_prefix
                    self.apps[name].known = current.known
        self._set_target_capacity(config.target_capacity)

    def _set_target_capacity(self, value: float | None) -> None:
        """Rescale every deployment to the (possibly new) capacity; unchanged targets stay settled."""
        self.target_capacity = value
        for app in self.apps.values():
            for dep in app.deployments.values():
                base = dep.target if dep.base_target < 0 else dep.base_target
                dep.base_target = base
                target = capacity_adjusted(base, value)
                if target == dep.target:
                    continue
                dep.change = "UPSCALING" if target > dep.target else "DOWNSCALING"
                dep.trigger = "AUTOSCALING"
                dep.target = target
                dep.settled = False
                if app.status == "RUNNING":
                    app.status = "DEPLOYING"

    def shutdown(self) -> None:
        self.reset()

    # -- time --------------------------------------------------------------------------------
    def tick(self, now: float, wall: float) -> float | None:
        """Apply every transition due at ``now``; returns the next time something is due."""
        deadlines: list[float] = []
        for app in list(self.apps.values()):
            if not app.built:
                due = app.deployed_at + self.timings.build_s
                if now + 1e-9 < due:
                    deadlines.append(due)
                    continue
                self._build(app, due, wall)
                if app.status != "DEPLOY_FAILED":
                    # replicas are placed the moment the import finishes, not when we noticed it
                    for dep in app.deployments.values():
                        self._reconcile_deployment(app, dep, due, wall)
            for dep in app.deployments.values():
                deadlines.extend(self._reconcile_deployment(app, dep, now, wall))
            if app.status == "DEPLOY_FAILED":
                continue
            if all(d.settled for d in app.deployments.values()):
                app.status, app.message = "RUNNING", ""
            else:
                app.status = "DEPLOYING"
        deadlines.extend(self._reconcile_proxies(now))
        return min(deadlines) if deadlines else None

    # -- internals ---------------------------------------------------------------------------
    def _build(self, app: App, now: float, wall: float) -> None:
        app.built = True
        resolved = self.registry.resolve(app.entry.get("import_path", ""))
        prefix = app.entry.get("route_prefix", "/")
        failure: str | None = None
        if isinstance(resolved, ImportFailure):
            failure = resolved.message
        elif prefix is not None and not str(prefix).startswith("/"):
            failure = f"ValueError: Invalid route_prefix '{prefix}', must start with a forward slash ('/')."
        else:
            available = [d.name for d in resolved.deployments]
            for dep_cfg in app.entry.get("deployments") or []:
                if dep_cfg.get("name") not in available:
                    missing = dep_cfg.get("name")
                    failure = f"ValueError: Deployment '{missing}' does not exist. Available: {available}"
                    break
        if failure is not None:
            app.status = "DEPLOY_FAILED"
            if not app.deployments:  # a redeploy that fails leaves the previous deployments serving
                app.route_prefix = None
            app.message = (
                f"Deploying app '{app.name}' failed with exception:\nTraceback (most recent call last):\n"
                f'  File "/home/ray/anaconda3/lib/python3.11/site-packages/ray/serve/_private/api.py", '
                f"line 318, in call_user_app_builder_with_args_if_necessary\n{failure}\n"
            )
            return
        assert isinstance(resolved, KnownApp)
        app.known = resolved
        app.route_prefix = prefix
        overrides = {d.get("name"): d for d in app.entry.get("deployments") or []}
        old = app.deployments
        app.deployments = {}
        for model in resolved.deployments:
            cfg = overrides.get(model.name, {})
            dep = self._new_deployment(app, model.name, cfg, model.num_replicas, model.num_cpus)
            previous = old.get(model.name)
            if previous is not None:
                dep.replicas = previous.replicas  # old-version replicas keep serving during the rollout
            app.deployments[model.name] = dep

    def _new_deployment(
        self, app: App, name: str, cfg: dict[str, Any], default_replicas: int, default_cpus: float
    ) -> Deployment:
        options = dict(cfg.get("ray_actor_options") or {})
        num_cpus = float(options.get("num_cpus", default_cpus))
        options["num_cpus"] = num_cpus
        target = cfg.get("num_replicas", default_replicas)
        autoscaling = cfg.get("autoscaling_config")
        if target == "auto" or (autoscaling and target is None):
            auto = autoscaling or {}
            target = int(auto.get("initial_replicas") or auto.get("min_replicas") or 1)
        max_per_node = cfg.get("max_replicas_per_node")
        config = {
            "name": name,
            "num_replicas": int(target or default_replicas),
            "max_ongoing_requests": cfg.get("max_ongoing_requests", 5),
            "max_queued_requests": cfg.get("max_queued_requests", -1),
            "user_config": cfg.get("user_config"),
            "autoscaling_config": autoscaling,
            "graceful_shutdown_wait_loop_s": cfg.get("graceful_shutdown_wait_loop_s", 2.0),
            "graceful_shutdown_timeout_s": cfg.get("graceful_shutdown_timeout_s", 20.0),
            "health_check_period_s": cfg.get("health_check_period_s", 10.0),
            "health_check_timeout_s": cfg.get("health_check_timeout_s", 30.0),
            "ray_actor_options": options,
            "max_replicas_per_node": max_per_node,
        }
        code = {k: app.entry.get(k) for k in ("import_path", "runtime_env", "args")}
        version = _version(
            {"ray_actor_options": options, "max_replicas_per_node": max_per_node, "code": code}
        )
        base = int(target or default_replicas)
        return Deployment(
            name=name,
            app=app.name,
            target=capacity_adjusted(base, self.target_capacity),
            base_target=base,
            num_cpus=num_cpus,
            max_per_node=max_per_node,
            version=version,
            config=config,
        )

    def _update_in_place(
        self, app: App, app_cfg: ServeApplicationSchema, entry: dict[str, Any], now: float, wall: float
    ) -> None:
        app.entry = entry
        app.last_deployed_time_s = wall
        app.status = "DEPLOYING"
        overrides = {d.get("name"): d for d in entry.get("deployments") or []}
        assert app.known is not None
        for model in app.known.deployments:
            old = app.deployments[model.name]
            cfg = overrides.get(model.name, {})
            new = self._new_deployment(app, model.name, cfg, model.num_replicas, model.num_cpus)
            if new.config == old.config:
                continue
            changed = {k for k in new.config if new.config[k] != old.config.get(k)}
            new.replicas = old.replicas
            if changed <= _LIGHTWEIGHT and new.version == old.version:
                if changed == {"num_replicas"}:
                    new.change = "UPSCALING" if new.target > old.target else "DOWNSCALING"
                new.trigger = "CONFIG_UPDATE_STARTED" if new.change == "UPDATING" else "AUTOSCALING"
            app.deployments[model.name] = new

    def _reconcile_deployment(self, app: App, dep: Deployment, now: float, wall: float) -> list[float]:
        deadlines: list[float] = []
        # Replicas on a draining node (PENDING_MIGRATION in Ray) keep serving until replacements
        # elsewhere run, then stop.
        migrating = [r for r in dep.replicas if r.node_id in self.draining]
        dep.replicas = [r for r in dep.replicas if r.node_id not in self.draining]
        current = [r for r in dep.replicas if r.version == dep.version]
        old = sorted(
            (r for r in dep.replicas if r.version != dep.version),
            key=lambda r: (r.state == "RUNNING", -r.seq),
        )
        if old:
            # Serve's rolling update (_stop_or_update_outdated_version_replicas): stop at most
            # max(20% of the target, 1) outdated replicas beyond those still pending, then start
            # new ones in their place. With one replica there is a short gap; the proxy waits it out.
            running = sum(1 for r in dep.replicas if r.state == "RUNNING")
            pending = dep.target - running
            rollout = max(int(0.2 * dep.target), 1)
            old = old[min(max(rollout - pending, 0), len(old)) :]
        excess = len(current) + len(old) - dep.target
        if excess > 0 and old:
            dropped = min(excess, len(old))
            old, excess = old[dropped:], excess - dropped
        if excess > 0:
            views = self._node_views(dep)
            stop = set(
                choose_replicas_to_stop(
                    [ReplicaView(r.replica_id, r.node_id, r.state == "RUNNING", r.seq) for r in current],
                    excess,
                    views,
                    self.head.node_id if self.head else None,
                )
            )
            current = [r for r in current if r.replica_id not in stop]
        for _ in range(max(0, dep.target - len(current) - len(old))):
            seq = next(self._seq)
            rid = "".join(self._rand.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(8))
            current.append(Replica(rid, dep.version, seq, created_at=now, start_time_s=wall))
        dep.replicas = current + old
        for r in current:
            if r.node_id is None:
                views = self._node_views(dep)
                candidates = [v for nid, v in views.items() if nid not in self.draining]
                r.node_id = choose_node(candidates, dep.num_cpus, dep.max_per_node)
                if r.node_id is not None:
                    r.placed_at = now
                    r.pid = self._rand.randint(1000, 60000)
            if r.state == "STARTING" and r.placed_at is not None:
                due = r.placed_at + self.timings.replica_start_s
                if now + 1e-9 >= due:
                    r.state = "RUNNING"
                else:
                    deadlines.append(due)
        running_new = sum(1 for r in current if r.state == "RUNNING")
        keep = max(0, dep.target - running_new - sum(1 for r in old if r.state == "RUNNING"))
        dep.replicas += [r for r in migrating if r.state == "RUNNING"][:keep]
        unplaced = [r for r in current if r.node_id is None]
        if running_new >= dep.target and not old:
            if not dep.settled:
                dep.settled = True
                dep.trigger = {"UPSCALING": "UPSCALE_COMPLETED", "DOWNSCALING": "DOWNSCALE_COMPLETED"}.get(
                    dep.change, "CONFIG_UPDATE_COMPLETED"
                )
            dep.message = ""
        elif unplaced and running_new > 0 and running_new + len(unplaced) >= dep.target:
            dep.settled = True  # Ray 2.60 reports HEALTHY while extra replicas wait for resources
        if unplaced:
            oldest = min(r.created_at for r in unplaced)
            due = oldest + self.timings.unschedulable_warn_s
            if now + 1e-9 >= due:
                dep.message = self._unschedulable_message(app.name, dep, len(unplaced))
            else:
                deadlines.append(due)
        return deadlines

    def _unschedulable_message(self, app: str, dep: Deployment, count: int) -> str:
        free = sum(n.num_cpus for n in self.nodes.values()) - sum(
            d.num_cpus
            for a in self.apps.values()
            for d in a.deployments.values()
            for r in d.replicas
            if r.node_id
        )
        return (
            f"Deployment '{dep.name}' in application '{app}' has {count} replicas that have taken more than "
            f"{self.timings.unschedulable_warn_s:g}s to be scheduled. This may be due to waiting for the "
            "cluster to auto-scale or for a runtime environment to be installed. Resources required for each "
            "replica: "
            f'{{"CPU": {dep.num_cpus:g}}}, total resources available: {{"CPU": {max(0.0, free):g}}}. '
            "Use `ray status` for more details."
        )

    def _node_views(self, dep: Deployment) -> dict[str, NodeView]:
        used: dict[str, float] = {n: 0.0 for n in self.nodes}
        total: dict[str, int] = {n: 0 for n in self.nodes}
        mine: dict[str, int] = {n: 0 for n in self.nodes}
        for app in self.apps.values():
            for d in app.deployments.values():
                for r in d.replicas:
                    if r.node_id in used:
                        used[r.node_id] += d.num_cpus
                        total[r.node_id] += 1
                        if d is dep:
                            mine[r.node_id] += 1
        return {
            nid: NodeView(nid, n.is_head, n.num_cpus, used[nid], mine[nid], total[nid])
            for nid, n in self.nodes.items()
        }

    def node_drained(self, node_id: str) -> bool:
        """Nothing runs on the node any more: no replica and no proxy (not even a draining one)."""
        return node_id not in self.replica_nodes() and node_id not in self.proxies

    def replica_nodes(self) -> set[str]:
        return {
            r.node_id
            for app in self.apps.values()
            for d in app.deployments.values()
            for r in d.replicas
            if r.node_id is not None
        }

    def _reconcile_proxies(self, now: float) -> list[float]:
        desired: set[str] = set()
        if self.started and self.proxy_location != "Disabled" and self.head is not None:
            desired.add(self.head.node_id)
            if self.proxy_location == "EveryNode":
                desired |= self.replica_nodes() & set(self.nodes)
            desired -= self.draining - {self.head.node_id}  # _update_proxy_nodes drops draining nodes
        deadlines: list[float] = []
        for nid in desired:
            self.proxies[nid] = ("HEALTHY", 0.0)
        for nid, (status, since) in list(self.proxies.items()):
            if nid in desired:
                continue
            if status != "DRAINING":
                self.proxies[nid] = ("DRAINING", now)
                since = now
            if now + 1e-9 >= since + self.timings.drain_s:
                del self.proxies[nid]
            else:
                deadlines.append(since + self.timings.drain_s)
        return deadlines

    # -- queries used by the proxies ------------------------------------------------------------
    def routes(self) -> dict[str, str]:
        return {
            a.route_prefix: a.name
            for a in self.apps.values()
            if a.built and a.route_prefix is not None and a.deployments
        }

    def match_route(self, path: str) -> App | None:
        for prefix in sorted(self.routes(), key=len, reverse=True):
            if path.startswith(prefix) and (
                prefix.endswith("/") or len(path) == len(prefix) or path[len(prefix)] == "/"
            ):
                return self.apps[self.routes()[prefix]]
        return None

    def running_ingress_replicas(self, app: App) -> list[Replica]:
        if app.known is None or app.known.ingress not in app.deployments:
            return []
        return app.deployments[app.known.ingress].running()

    def any_running_replica(self) -> bool:
        return any(d.running() for a in self.apps.values() for d in a.deployments.values())


def _same_code(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """True when only deployment options changed (no re-import needed)."""
    keys = ("import_path", "runtime_env", "args", "route_prefix")
    if any(old.get(k) != new.get(k) for k in keys):
        return False
    return {d.get("name") for d in old.get("deployments") or []} == {
        d.get("name") for d in new.get("deployments") or []
    }
