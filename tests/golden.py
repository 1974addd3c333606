"""Normalising what an operator created, as the KubeRay v1.7.0 golden files were normalised.

``tests/fixtures/kuberay/golden/README.md`` lists the rules (numbered below as there). Applying
the same ones to what kuberay-py creates makes the two comparable field by field: generated
names, uids, cluster IPs and times become placeholders, everything else is kept as the API server
returned it. ``diff`` then lists every differing leaf as ``(path, theirs, ours)``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson
import yaml

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "fixtures" / "kuberay" / "golden"

KIND_ORDER = [
    "RayService", "RayCluster", "Pod", "Service", "ServiceAccount", "Role", "RoleBinding",
    "Ingress", "Job", "Secret", "ConfigMap",
]  # fmt: skip
_META_DROP = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink")
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
_EVENT_RAND = "[bcdfghjklmnpqrstvwxz2456789]{5}(?![a-z0-9])"


def golden(sample: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((GOLDEN / sample).read_text())
    return loaded


def _walk_strings(value: Any, fn: Any) -> Any:
    """Apply ``fn`` to every string, map keys included."""
    if isinstance(value, dict):
        return {_walk_strings(k, fn): _walk_strings(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk_strings(v, fn) for v in value]
    if isinstance(value, str):
        return fn(value)
    return value


def _sort_key(obj: dict[str, Any]) -> tuple[int, str, str]:
    kind = obj.get("kind", "")
    rank = KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)
    text = orjson.dumps(obj, option=orjson.OPT_SORT_KEYS).decode()
    return rank, obj["metadata"].get("name", ""), text


def normalise(
    namespace: str,
    objects: list[dict[str, Any]],
    events: list[dict[str, Any]],
    *,
    from_sample: set[tuple[str, str]],
) -> dict[str, Any]:
    """The ``{objects, events}`` document of a golden file for this namespace's contents.

    ``from_sample``: (kind, name) of the sample's RayCluster/RayService (rule 7 keeps only their
    metadata and status). ``events`` are events.k8s.io/v1 Events.
    """
    # Whole-string replacements (rule 4) and name replacements (rule 3), gathered first.
    uids = {o["metadata"].get("uid"): f"UID({o['kind']})" for o in objects if o["metadata"].get("uid")}
    # A uid's first 8 characters as a name's last token (the mTLS CA Secret "<c>-ca-secret-<uid8>").
    uid8 = {u[:8]: f"UID8({kind.removeprefix('UID(').removesuffix(')')})" for u, kind in uids.items()}
    uid8_token = re.compile(r"(?<=-)([0-9a-f]{8})$")
    node_ports: set[int] = set()
    cluster_ips: set[str] = set()
    for o in objects:
        if o["kind"] == "Service":
            spec = o.get("spec") or {}
            cluster_ips.update(ip for ip in [spec.get("clusterIP"), *spec.get("clusterIPs", [])] if ip)
            node_ports.update(p["nodePort"] for p in spec.get("ports") or [] if p.get("nodePort"))
    cluster_ips.discard("None")
    names: dict[str, str] = {}
    rayservice_names = [o["metadata"]["name"] for o in objects if o["kind"] == "RayService"]
    for o in objects:
        meta = o["metadata"]
        if o["kind"] == "Pod" and meta.get("generateName"):
            names[meta["name"]] = meta["generateName"] + "RAND"
        replica = (meta.get("labels") or {}).get("ray.io/worker-group-replica-name")
        if replica:
            names[replica] = replica[: replica.rfind("-") + 1] + "RAND"
    for o in objects:
        owners = o["metadata"].get("ownerReferences") or []
        if o["kind"] == "RayCluster" and any(r.get("kind") in ("RayService", "RayJob") for r in owners):
            name = o["metadata"]["name"]
            names[name] = name[: name.rfind("-") + 1] + "RAND"
    ns_token = re.compile(rf"(?<![A-Za-z0-9-]){re.escape(namespace)}(?![A-Za-z0-9-])")
    ordered = sorted(names, key=len, reverse=True)
    event_patterns = [re.compile(re.escape(p) + _EVENT_RAND) for p in ("-head-", "-worker-")]
    event_patterns += [re.compile(re.escape(f"{r}-") + _EVENT_RAND) for r in rayservice_names]

    def strings(text: str, *, event: bool = False) -> str:
        if text in uids:
            return uids[text]
        if text in cluster_ips:
            return "CLUSTER_IP"
        if _RFC3339.match(text):
            return "TIME"
        text = uid8_token.sub(lambda m: uid8.get(m.group(1), m.group(1)), text)
        text = ns_token.sub("NS", text)
        for name in ordered:
            text = text.replace(name, names[name])
        if event:
            for pattern in event_patterns:
                text = pattern.sub(lambda m: m.group()[:-5] + "RAND", text)
        return text

    out_objects = []
    for o in objects:
        o = _normalise_object(o, from_sample=(o["kind"], o["metadata"]["name"]) in from_sample)
        o = _walk_strings(o, strings)
        if o["kind"] == "Service":
            for p in o["spec"].get("ports") or []:
                if "nodePort" in p:
                    p["nodePort"] = "NODE_PORT"
        if o["kind"] == "RayCluster":
            endpoints = (o.get("status") or {}).get("endpoints") or {}
            for key, value in endpoints.items():
                if value.isdigit() and int(value) in node_ports:
                    endpoints[key] = "NODE_PORT"
        out_objects.append(o)
    out_objects.sort(key=_sort_key)

    seen: dict[str, dict[str, Any]] = {}
    for e in events:
        regarding = e.get("regarding") or {}
        source = (e.get("deprecatedSource") or {}).get("component") or e.get("reportingController", "")
        item = {
            "type": e.get("type"),
            "reason": e.get("reason"),
            "involvedObject": {"kind": regarding.get("kind"), "name": regarding.get("name")},
            "message": e.get("note", ""),
            "source": source,
        }
        item = _walk_strings(item, lambda s: strings(s, event=True))
        seen[orjson.dumps(item, option=orjson.OPT_SORT_KEYS).decode()] = item
    return {"objects": out_objects, "events": [seen[k] for k in sorted(seen)]}


def _normalise_object(obj: dict[str, Any], *, from_sample: bool) -> dict[str, Any]:
    obj = orjson.loads(orjson.dumps(obj))
    meta = obj["metadata"]
    for key in _META_DROP:
        meta.pop(key, None)
    meta["namespace"] = "NS"
    for ref in meta.get("ownerReferences") or []:
        ref.pop("uid", None)
    annotations = meta.get("annotations") or {}
    annotations.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    if not annotations:
        meta.pop("annotations", None)
    kind = obj.get("kind")
    if kind == "Pod":
        obj.pop("status", None)
    if kind == "Service":
        spec = obj.get("spec") or {}
        spec["ports"] = sorted(spec.get("ports") or [], key=lambda p: (p.get("name", ""), p.get("port", 0)))
    if kind == "Secret":
        for field in ("data", "stringData"):
            for key, value in (obj.get(field) or {}).items():
                obj[field][key] = f"<redacted len={len(value)}>"
    if from_sample and kind in ("RayCluster", "RayService"):
        obj = {k: obj[k] for k in ("apiVersion", "kind", "metadata", "status") if k in obj}
    return obj


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every leaf as (JSONPath-like path, value); empty maps and lists are leaves too."""
    if isinstance(value, dict) and value:
        for key in sorted(value):
            yield from leaves(value[key], f"{path}.{key}" if path else key)
    elif isinstance(value, list) and value:
        for i, item in enumerate(value):
            yield from leaves(item, f"{path}[{i}]")
    else:
        yield path, value


def object_key(obj: dict[str, Any]) -> str:
    return f"{obj['kind']}/{obj['metadata']['name']}"


def diff(theirs: dict[str, Any], ours: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(path, golden value, our value) for every differing leaf; a missing side is ``<absent>``.

    Objects are matched by kind and normalised name; same-named objects (several worker Pods)
    in order. Paths start with ``Kind/name#i`` for objects and ``events`` for the event list.
    """
    out: list[tuple[str, Any, Any]] = []
    for prefix, left, right in _pair(theirs["objects"], ours["objects"]):
        a = dict(leaves(left)) if left is not None else {}
        b = dict(leaves(right)) if right is not None else {}
        if left is None or right is None:
            mark = ("<absent>", "<object>") if left is None else ("<object>", "<absent>")
            out.append((prefix, *mark))
            continue
        for path in sorted(a.keys() | b.keys()):
            if a.get(path, "<absent>") != b.get(path, "<absent>"):
                out.append((f"{prefix}.{path}", a.get(path, "<absent>"), b.get(path, "<absent>")))
    theirs_events = {orjson.dumps(e, option=orjson.OPT_SORT_KEYS).decode() for e in theirs["events"]}
    ours_events = {orjson.dumps(e, option=orjson.OPT_SORT_KEYS).decode() for e in ours["events"]}
    out += [("events", e, "<absent>") for e in sorted(theirs_events - ours_events)]
    out += [("events", "<absent>", e) for e in sorted(ours_events - theirs_events)]
    return out


def _pair(
    left: Iterable[dict[str, Any]], right: Iterable[dict[str, Any]]
) -> Iterator[tuple[str, dict[str, Any] | None, dict[str, Any] | None]]:
    groups: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for side, items in ((0, left), (1, right)):
        for obj in items:
            groups.setdefault(object_key(obj), ([], []))[side].append(obj)
    for key, (a, b) in groups.items():
        for i in range(max(len(a), len(b))):
            yield f"{key}#{i}", a[i] if i < len(a) else None, b[i] if i < len(b) else None
