"""kube-controller-manager's clusterrole-aggregation controller, for the cluster simulator.

kube-apiserver stores a ClusterRole's ``aggregationRule`` and nothing more: filling in its
``rules`` is this controller's work (``pkg/controller/clusterroleaggregation``). As upstream:

* any ClusterRole added, changed or deleted queues every ClusterRole with an ``aggregationRule``
  (the dependency graph is unknown, and the set of ClusterRoles is small);
* an aggregated role's rules are, selector by selector, the rules of the ClusterRoles that
  selector matches, taken in name order, skipping the role itself and any rule already taken
  (compared semantically: a missing list equals an empty one);
* when that differs from the role's ``rules``, the controller writes it by server-side apply as
  field manager ``clusterrole-aggregation-controller`` with ``force``, sending only the rules'
  ``apiGroups`` / ``resources`` / ``resourceNames`` / ``nonResourceURLs`` / ``verbs``.

Aggregates of aggregates settle over several rounds, as upstream: each write is itself a
ClusterRole change that queues the aggregates again.
"""

from __future__ import annotations

from typing import Any

from kuberay_py.cache import Cache
from kuberay_py.client import Client, resources
from kuberay_py.envtest.apiserver.selectors import label_selector_from_doc
from kuberay_py.envtest.sim.dirtyset import DirtySet
from kuberay_py.log import get_logger

__all__ = ["FIELD_MANAGER", "ClusterRoleAggregationController", "aggregated_rules"]

log = get_logger("kuberay_py.envtest.sim.clusterroles")

FIELD_MANAGER = "clusterrole-aggregation-controller"
_RULE_FIELDS = ("apiGroups", "resources", "resourceNames", "nonResourceURLs", "verbs")

Rule = dict[str, Any]


def _applied(rule: Rule) -> Rule:
    """The rule as ``toApplyPolicyRule`` sends it: the five fields, empty ones left out."""
    return {f: list(rule[f]) for f in _RULE_FIELDS if rule.get(f)}


def aggregated_rules(role: dict[str, Any], all_roles: list[dict[str, Any]]) -> list[Rule]:
    """The rules ``syncClusterRole`` computes for ``role`` from every ClusterRole in the cache."""
    name = role["metadata"]["name"]
    ordered = sorted(all_roles, key=lambda r: str(r["metadata"]["name"]))
    out: list[Rule] = []
    for doc in (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or []:
        selector = label_selector_from_doc(doc)
        if selector is None:
            continue  # upstream returns the selector's error and retries; it can never succeed
        for other in ordered:
            if other["metadata"]["name"] == name or not selector.matches(other):
                continue
            for rule in other.get("rules") or []:
                applied = _applied(rule)
                if applied not in out:
                    out.append(applied)
    return out


class _AnyChange:
    def __init__(self, controller: ClusterRoleAggregationController) -> None:
        self._controller = controller

    def on_add(self, obj: dict[str, Any], is_initial: bool) -> None:
        self._controller.enqueue()

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self._controller.enqueue()

    def on_delete(self, obj: dict[str, Any]) -> None:
        self._controller.enqueue()


class ClusterRoleAggregationController:
    def __init__(self, client: Client, cache: Cache) -> None:
        self.client = client
        self.cache = cache
        self._queue: DirtySet[str] = DirtySet(
            log, "clusterrole aggregation", lambda name: {"clusterrole": name}, order=sorted
        )

    def register(self) -> None:
        self.cache.informer_for(resources.CLUSTERROLES).add_event_handler(_AnyChange(self))

    def enqueue(self) -> None:
        informer = self.cache.informer_for(resources.CLUSTERROLES)
        for role in informer.store.list():
            if role.get("aggregationRule") is not None:
                self._queue.mark(role["metadata"]["name"])

    async def run(self) -> None:
        await self.cache.wait_for_cache_sync()
        await self._queue.run(self.sync)

    async def sync(self, name: str) -> None:
        role = self.cache.get(resources.CLUSTERROLES, name)
        if role is None or role.get("aggregationRule") is None:
            return
        rules = aggregated_rules(role, self.cache.list(resources.CLUSTERROLES))
        if rules == [_applied(r) for r in role.get("rules") or []]:
            return
        body: dict[str, Any] = {
            "apiVersion": resources.CLUSTERROLES.api_version,
            "kind": "ClusterRole",
            "metadata": {"name": name},
        }
        if rules:
            body["rules"] = rules
        await self.client.patch(
            resources.CLUSTERROLES, name, body, patch_type="apply", field_manager=FIELD_MANAGER, force=True
        )
        log.debug("aggregated clusterrole", clusterrole=name, rules=len(rules))
