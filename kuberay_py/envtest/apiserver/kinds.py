"""Kind-specific behaviour of the built-in kinds: defaulting, immutability, allocation.

Controllers compare what they sent with what they read back, so the fields the real server
defaults (a Pod's ``restartPolicy``, a Service's ``clusterIP``) must come back defaulted here too,
and the updates a real server refuses (changing a Pod's containers) must be refused.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
from typing import Any

from .core import ApiCore, Obj
from .errors import Cause
from .meta import clone
from .podvalidation import duplicate, validate_pod_spec
from .registry import ResourceType
from .validation import field_cause, forbidden, invalid, name_problems, required

__all__ = ["NamespaceHooks", "NoHooks", "PodHooks", "SecretHooks", "ServiceHooks"]


class NoHooks:
    """Hooks that change nothing: kinds override only the steps they take part in."""

    def prepare_create(self, core: ApiCore, rt: ResourceType, obj: Obj) -> list[Cause]:
        return []

    def prepare_update(
        self, core: ApiCore, rt: ResourceType, old: Obj, new: Obj, subresource: str | None
    ) -> list[Cause]:
        return []

    def after_write(self, core: ApiCore, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        return None

    def after_delete(self, core: ApiCore, rt: ResourceType, obj: Obj) -> None:
        return None


def _default_container(c: dict[str, Any]) -> None:
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    image = str(c.get("image", ""))
    tag = image.rsplit("/", 1)[-1]
    if "imagePullPolicy" not in c:
        c["imagePullPolicy"] = (
            "Always" if ("@" not in tag and (":" not in tag or tag.endswith(":latest"))) else "IfNotPresent"
        )
    c.setdefault("resources", {})
    for p in c.get("ports") or []:
        if isinstance(p, dict):
            p.setdefault("protocol", "TCP")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        pr = c.get(probe)
        if isinstance(pr, dict):
            pr.setdefault("timeoutSeconds", 1)
            pr.setdefault("periodSeconds", 10)
            pr.setdefault("successThreshold", 1)
            pr.setdefault("failureThreshold", 3)
            hg = pr.get("httpGet")
            if isinstance(hg, dict):
                hg.setdefault("path", "/")
                hg.setdefault("scheme", "HTTP")


_DEFAULT_NOEXECUTE_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


def _default_field_refs(container: dict[str, Any]) -> None:
    """``fieldRef.apiVersion`` defaults to ``v1`` (SetDefaults_ObjectFieldSelector)."""
    for env in container.get("env") or []:
        ref = (env.get("valueFrom") or {}).get("fieldRef") if isinstance(env, dict) else None
        if isinstance(ref, dict):
            ref.setdefault("apiVersion", "v1")


def _default_toleration_seconds(spec: dict[str, Any]) -> None:
    """The DefaultTolerationSeconds admission plugin (on by default): 300 s for the two taints."""
    tolerations = spec.get("tolerations") or []
    for key in _DEFAULT_NOEXECUTE_TAINTS:
        tolerated = any(
            isinstance(t, dict)
            and (t.get("key") == key or (not t.get("key") and t.get("operator") == "Exists"))
            and t.get("effect") in (None, "", "NoExecute")
            for t in tolerations
        )
        if not tolerated:
            tolerations.append(
                {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            )
    spec["tolerations"] = tolerations


def default_pod_spec(spec: dict[str, Any]) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("priority", 0)
    if spec.get("serviceAccountName") and "serviceAccount" not in spec:
        spec["serviceAccount"] = spec["serviceAccountName"]
    for key in ("initContainers", "containers"):
        for c in spec.get(key) or []:
            if isinstance(c, dict):
                _default_container(c)
                _default_field_refs(c)
    for v in spec.get("volumes") or []:
        if isinstance(v, dict):
            for src in ("configMap", "secret"):
                if isinstance(v.get(src), dict):
                    v[src].setdefault("defaultMode", 420)


def _qos(spec: dict[str, Any]) -> str:
    containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    reqs = [(c.get("resources") or {}) for c in containers]
    if not any(r.get("requests") or r.get("limits") for r in reqs):
        return "BestEffort"
    guaranteed = all(
        (r.get("limits") or {}).get("cpu")
        and (r.get("limits") or {}).get("memory")
        and all(
            (r.get("requests") or {}).get(k, (r.get("limits") or {}).get(k)) == (r.get("limits") or {}).get(k)
            for k in ("cpu", "memory")
        )
        for r in reqs
    )
    return "Guaranteed" if guaranteed else "Burstable"


# Pod spec fields an update may change (pod strategy's ValidatePodUpdate).
_MUTABLE_POD_SPEC = (
    "activeDeadlineSeconds",
    "terminationGracePeriodSeconds",
    "tolerations",
    "schedulingGates",
)


class PodHooks(NoHooks):
    def prepare_create(self, core: ApiCore, rt: ResourceType, obj: Obj) -> list[Cause]:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return [required("spec.containers")]
        causes = validate_pod_spec(spec)
        if causes:
            return causes
        default_pod_spec(spec)
        _default_toleration_seconds(spec)
        obj["status"] = {"phase": "Pending", "qosClass": _qos(spec)}
        return []

    def prepare_update(
        self, core: ApiCore, rt: ResourceType, old: Obj, new: Obj, subresource: str | None
    ) -> list[Cause]:
        if subresource == "status":
            return []
        ospec = clone(old.get("spec") or {})
        nspec = clone(new.get("spec") or {})
        if isinstance(nspec, dict):
            default_pod_spec(nspec)
            new["spec"] = clone(nspec)
        for f in _MUTABLE_POD_SPEC:
            ospec.pop(f, None)
            nspec.pop(f, None)
        # Container images may change in place; nothing else about the containers may.
        for key in ("containers", "initContainers"):
            for c in nspec.get(key) or []:
                if isinstance(c, dict):
                    c.pop("image", None)
            for c in ospec.get(key) or []:
                if isinstance(c, dict):
                    c.pop("image", None)
        if ospec != nspec:
            return [
                forbidden(
                    "spec",
                    "pod updates may not change fields other than `spec.containers[*].image`,"
                    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
                    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
                    "(allow it to be set to 1 if it was previously negative)",
                )
            ]
        return []


def _service_port_problems(
    p: dict[str, Any], path: str, names: set[str], ports: set[tuple[int, str]]
) -> list[Cause]:
    causes: list[Cause] = []
    port = p.get("port")
    if not isinstance(port, int) or not 1 <= port <= 65535:
        causes.append(invalid(f"{path}.port", port, "must be between 1 and 65535, inclusive"))
    elif (port, p["protocol"]) in ports:
        causes.append(duplicate(path, {"port": port, "protocol": p["protocol"]}))
    else:
        ports.add((port, p["protocol"]))
    name = p.get("name")
    if name:
        causes.extend(invalid(f"{path}.name", name, m) for m in name_problems(str(name), "label"))
        if name in names:
            causes.append(duplicate(f"{path}.name", name))
        names.add(name)
    target = p.get("targetPort")
    if isinstance(target, int) and not 1 <= target <= 65535:
        causes.append(invalid(f"{path}.targetPort", target, "must be between 1 and 65535, inclusive"))
    return causes


class ServiceHooks(NoHooks):
    """ClusterIP allocation from the service range (envtest's 10.0.0.0/24 by default) and defaults."""

    def __init__(self, cidr: str = "10.0.0.0/16") -> None:
        self.network = ipaddress.ip_network(cidr)
        self.used: set[str] = {str(self.network.network_address + 1)}  # the "kubernetes" Service
        self._next = 10
        self.node_ports: set[int] = set()
        self._next_node_port = 30000

    def _allocate_node_port(self) -> int | None:
        """The next free port of the default NodePort range 30000-32767."""
        for _ in range(2768):
            port = self._next_node_port
            self._next_node_port = port + 1 if port < 32767 else 30000
            if port not in self.node_ports:
                self.node_ports.add(port)
                return port
        return None

    def _default_node_ports(self, spec: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
        """NodePort and LoadBalancer Services: a nodePort per port, as kube-apiserver allocates them.

        On update an omitted nodePort keeps the old one of the same port (patchAllocatedValues).
        """
        if spec.get("type") not in ("NodePort", "LoadBalancer"):
            return []
        spec.setdefault("externalTrafficPolicy", "Cluster")
        if spec["type"] == "LoadBalancer":
            spec.setdefault("allocateLoadBalancerNodePorts", True)
            if spec["allocateLoadBalancerNodePorts"] is False:
                return []
        previous = {
            (p.get("port"), p.get("protocol", "TCP")): p.get("nodePort")
            for p in (old or {}).get("ports") or []
            if isinstance(p, dict)
        }
        for i, p in enumerate(spec.get("ports") or []):
            if not isinstance(p, dict) or p.get("nodePort"):
                if isinstance(p, dict) and old is None:
                    self.node_ports.add(int(p["nodePort"]))
                continue
            kept = previous.get((p.get("port"), p.get("protocol", "TCP")))
            port = kept or self._allocate_node_port()
            if port is None:
                return [invalid(f"spec.ports[{i}].nodePort", 0, "range is full")]
            p["nodePort"] = port
        return []

    def _allocate(self) -> str | None:
        size = self.network.num_addresses - 2
        for _ in range(size):
            ip = str(self.network.network_address + self._next)
            self._next = self._next + 1 if self._next < size else 1
            if ip not in self.used:
                self.used.add(ip)
                return ip
        return None

    def prepare_create(self, core: ApiCore, rt: ResourceType, obj: Obj) -> list[Cause]:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return [invalid("spec", spec, "must be an object")]
        stype = spec.setdefault("type", "ClusterIP")
        if stype not in ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName"):
            return [
                field_cause(
                    "FieldValueNotSupported",
                    "spec.type",
                    f'Unsupported value: "{stype}": supported values: "ClusterIP", "ExternalName", '
                    '"LoadBalancer", "NodePort"',
                )
            ]
        ports = spec.get("ports") or []
        causes: list[Cause] = []
        seen_names: set[str] = set()
        seen_ports: set[tuple[int, str]] = set()
        if stype != "ExternalName" and not ports and spec.get("clusterIP") != "None":
            causes.append(required("spec.ports"))
        for i, p in enumerate(ports):
            if not isinstance(p, dict) or "port" not in p:
                causes.append(required(f"spec.ports[{i}].port"))
                continue
            p.setdefault("protocol", "TCP")
            p.setdefault("targetPort", p["port"])
            causes.extend(_service_port_problems(p, f"spec.ports[{i}]", seen_names, seen_ports))
            if len(ports) > 1 and not p.get("name"):
                causes.append(required(f"spec.ports[{i}].name"))
        if causes:
            return causes
        spec.setdefault("sessionAffinity", "None")
        if stype == "ExternalName":
            return []
        node_port_causes = self._default_node_ports(spec, None)
        if node_port_causes:
            return node_port_causes
        spec.setdefault("internalTrafficPolicy", "Cluster")
        ip = spec.get("clusterIP")
        if ip in (None, ""):
            allocated = self._allocate()
            if allocated is None:
                return [
                    field_cause(
                        "FieldValueInvalid",
                        "spec.clusterIPs",
                        "Internal error: failed to allocate a serviceIP: range is full",
                    )
                ]
            spec["clusterIP"] = allocated
        elif ip != "None":
            if ip in self.used:
                return [
                    invalid(
                        "spec.clusterIPs",
                        [ip],
                        f"failed to allocate IP {ip}: provided IP is already allocated",
                    )
                ]
            self.used.add(ip)
        spec["clusterIPs"] = [spec["clusterIP"]]
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        obj["status"] = {"loadBalancer": {}}
        return []

    def prepare_update(
        self, core: ApiCore, rt: ResourceType, old: Obj, new: Obj, subresource: str | None
    ) -> list[Cause]:
        if subresource == "status":
            return []
        ospec = old.get("spec") or {}
        nspec = new.setdefault("spec", {})
        if not nspec.get("clusterIP") and ospec.get("clusterIP"):
            nspec["clusterIP"] = ospec["clusterIP"]  # omitted on update means "keep"
            nspec.setdefault("clusterIPs", ospec.get("clusterIPs"))
        if nspec.get("clusterIP") != ospec.get("clusterIP"):
            return [invalid("spec.clusterIPs[0]", nspec.get("clusterIP"), "may not change once set")]
        for p in nspec.get("ports") or []:
            if isinstance(p, dict) and "port" in p:
                p.setdefault("protocol", "TCP")
                p.setdefault("targetPort", p["port"])
        for k in ("type", "sessionAffinity", "ipFamilies", "ipFamilyPolicy", "internalTrafficPolicy"):
            if k in ospec:
                nspec.setdefault(k, ospec[k])
        return self._default_node_ports(nspec, ospec)

    def after_delete(self, core: ApiCore, rt: ResourceType, obj: Obj) -> None:
        ip = (obj.get("spec") or {}).get("clusterIP")
        if ip and ip != "None":
            self.used.discard(ip)
        for p in (obj.get("spec") or {}).get("ports") or []:
            if isinstance(p, dict) and p.get("nodePort"):
                self.node_ports.discard(int(p["nodePort"]))


class SecretHooks(NoHooks):
    """``stringData`` is write-only: merged into base64 ``data`` on every write, as the API does."""

    @staticmethod
    def _fold(obj: Obj) -> list[Cause]:
        string_data = obj.pop("stringData", None)
        obj.setdefault("type", "Opaque")
        if string_data is None:
            return []
        if not isinstance(string_data, dict):
            return [invalid("stringData", string_data, "must be a map of strings")]
        data = obj.get("data") or {}
        for k, v in string_data.items():
            data[k] = base64.b64encode(str(v).encode()).decode()
        obj["data"] = data
        return []

    def prepare_create(self, core: ApiCore, rt: ResourceType, obj: Obj) -> list[Cause]:
        return self._fold(obj)

    def prepare_update(
        self, core: ApiCore, rt: ResourceType, old: Obj, new: Obj, subresource: str | None
    ) -> list[Cause]:
        causes = self._fold(new)
        if old.get("type") != new.get("type"):
            causes.append(invalid("type", new.get("type"), "field is immutable"))
        return causes


class NamespaceHooks(NoHooks):
    def __init__(self, controller: bool = True) -> None:
        self.controller = controller

    def after_write(self, core: ApiCore, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        if (
            self.controller
            and obj["metadata"].get("deletionTimestamp")
            and (old is None or not old["metadata"].get("deletionTimestamp"))
        ):
            from .namespaces import finalize_namespace

            asyncio.get_running_loop().call_soon(finalize_namespace, core, obj["metadata"]["name"])

    def prepare_create(self, core: ApiCore, rt: ResourceType, obj: Obj) -> list[Cause]:
        name = obj["metadata"]["name"]
        obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = name
        obj["spec"] = {"finalizers": ["kubernetes"]}
        obj["status"] = {"phase": "Active"}
        return []

    def prepare_update(
        self, core: ApiCore, rt: ResourceType, old: Obj, new: Obj, subresource: str | None
    ) -> list[Cause]:
        new["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = new["metadata"]["name"]
        if subresource != "finalize":
            new["spec"] = clone(old.get("spec") or {})
        return []
