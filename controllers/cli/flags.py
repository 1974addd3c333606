"""Command-line flags, named and defaulted as KubeRay's ``main.go`` names them.

Users switching from KubeRay keep their Deployment args: ``--metrics-addr``,
``--health-probe-bind-address``, ``--enable-leader-election``, ``--reconcile-concurrency``,
``--watch-namespace``, ``--qps``/``--burst`` mean the same thing here. A bad flag or value is one
line on stderr and exit code 2, so a crash-looping Pod's log says exactly what is wrong.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from typing import NoReturn

__all__ = ["OperatorFlags", "build_parser", "parse_bind_address", "parse_bool"]

DEMO_METRICS_ADDR = "127.0.0.1:8080"
DEMO_HEALTH_ADDR = "127.0.0.1:8082"

_TRUE = {"true", "1", "yes", "on", "t"}
_FALSE = {"false", "0", "no", "off", "f"}


def parse_bool(value: str) -> bool:
    """Go's flag package accepts ``--flag=true``/``--flag=false``; so do we."""
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean value {value!r} (use true or false)")


def parse_bind_address(value: str) -> str:
    """``:8080``, ``127.0.0.1:0`` or ``0`` (disabled), as controller-runtime accepts."""
    if value == "0":
        return value
    _host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"invalid bind address {value!r} (want [host]:port or 0)")
    return value


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def _positive_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {value!r}") from None
    if not number > 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {value}")
    return number


def _non_negative_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {value!r}") from None
    if not number >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return number


# KubeRay v1.7's gates this operator implements, with their defaults (docs/reference/rayjob.md §9).
FEATURE_GATES: dict[str, bool] = {
    "RayCronJob": False,
    "RayClusterNetworkPolicy": False,
    "RayClusterMTLS": False,
    "RayClusterHistoryServer": False,
    "GCSFaultToleranceEmbeddedStorage": False,
    "RayJobDeletionPolicy": True,
    "RayServiceIncrementalUpgrade": True,
}


def parse_feature_gates(value: str) -> dict[str, bool]:
    """``A=true,B=false`` (Kubernetes' syntax) over the defaults; an unknown gate is an error."""
    gates = dict(FEATURE_GATES)
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        name, eq, raw = item.partition("=")
        if name not in FEATURE_GATES:
            raise argparse.ArgumentTypeError(f"unrecognized feature gate: {name}")
        if not eq or raw.lower() not in ("true", "false"):
            raise argparse.ArgumentTypeError(f"invalid value of {name}: {raw!r}, want true or false")
        gates[name] = raw.lower() == "true"
    return gates


def _namespaces(value: str) -> list[str]:
    return [ns.strip() for ns in value.split(",") if ns.strip()]


@dataclass
class OperatorFlags:
    """The parsed ``run`` flags (``demo`` reuses the operator-tuning ones)."""

    metrics_addr: str = ":8080"
    health_probe_bind_address: str = ":8082"
    enable_leader_election: bool = True
    leader_election_namespace: str = ""
    leader_election_id: str = "ray-operator-leader"
    reconcile_concurrency: int = 1
    watch_namespace: list[str] = field(default_factory=list)
    qps: float = 100.0
    burst: int = 200
    reconcile_retry_qps: float = 10.0
    reconcile_retry_burst: int = 100
    kubeconfig: str | None = None
    log_format: str = "json"
    log_level: str = "info"
    head_proxy_health_concurrency: int = 16
    head_proxy_health_period: float = 5.0
    graceful_shutdown_timeout: float = 30.0
    # None: KubeRay's RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV, else 300 s.
    raycluster_resync_period: float | None = None
    feature_gates: dict[str, bool] = field(default_factory=lambda: dict(FEATURE_GATES))
    # "all": KubeRay's replay of every missed RayCronJob tick; "latest": only the most recent one.
    raycronjob_missed_ticks: str = "all"


class _OneLineParser(argparse.ArgumentParser):
    """argparse prints the whole usage on error; a Pod log wants one line and exit code 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"kuberay-operator: error: {message}\n")
        raise SystemExit(2)


def _add_operator_tuning(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--reconcile-concurrency",
        type=_positive_int,
        default=1,
        help="max concurrent reconciles per controller (default 1, as KubeRay)",
    )
    p.add_argument("--qps", type=_positive_float, default=100.0, help="client-side API QPS (default 100)")
    p.add_argument("--burst", type=_positive_int, default=200, help="client-side API burst (default 200)")
    p.add_argument(
        "--reconcile-retry-qps",
        type=_non_negative_float,
        default=10.0,
        help="overall retries/s of failed reconciles per controller (default 10; 0 = per-item back-off only)",
    )
    p.add_argument(
        "--reconcile-retry-burst",
        type=_positive_int,
        default=100,
        help="retries allowed at once before --reconcile-retry-qps applies (default 100)",
    )
    p.add_argument("--log-format", choices=["json", "console"], default="json")
    p.add_argument("--log-level", choices=["debug", "info", "warning", "error"], default="info")
    p.add_argument(
        "--head-proxy-health-concurrency",
        type=_positive_int,
        default=16,
        help="max head-proxy health checks in flight (default 16)",
    )
    p.add_argument(
        "--head-proxy-health-period",
        type=_positive_float,
        default=5.0,
        help="seconds between checks of one head Pod's Serve proxy (default 5)",
    )
    p.add_argument(
        "--feature-gates",
        type=parse_feature_gates,
        default=dict(FEATURE_GATES),
        help=(
            "KubeRay feature gates, e.g. RayCronJob=true (default: RayJobDeletionPolicy and "
            "RayServiceIncrementalUpgrade on, the alpha ones off)"
        ),
    )
    p.add_argument(
        "--raycronjob-missed-ticks",
        choices=["all", "latest"],
        default="all",
        help=(
            "RayCronJob ticks missed during an outage or a suspend: all = one RayJob each, earliest "
            "first, as KubeRay (default); latest = only the most recent, as a batch/v1 CronJob"
        ),
    )
    p.add_argument(
        "--raycluster-resync-period",
        type=_positive_float,
        default=None,
        help="resync of every RayCluster in seconds (default $RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV or 300)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(prog="kuberay-operator", description="A Kubernetes operator for Ray (ray.io/v1).")
    sub = parser.add_subparsers(dest="command", parser_class=_OneLineParser)

    run = sub.add_parser("run", help="run the operator against a cluster (default)")
    run.add_argument("--metrics-addr", type=parse_bind_address, default=":8080")
    run.add_argument("--health-probe-bind-address", type=parse_bind_address, default=":8082")
    run.add_argument("--enable-leader-election", type=parse_bool, default=True, nargs="?", const=True)
    run.add_argument("--leader-election-namespace", default="")
    run.add_argument("--leader-election-id", default="ray-operator-leader")
    run.add_argument(
        "--watch-namespace",
        type=_namespaces,
        default=[],
        help="comma-separated namespaces to watch (default all)",
    )
    run.add_argument("--kubeconfig", default=None, help="kubeconfig path (default $KUBECONFIG or in-cluster)")
    run.add_argument(
        "--graceful-shutdown-timeout",
        type=_positive_float,
        default=30.0,
        help="seconds to drain in-flight reconciles on SIGTERM (default 30)",
    )
    _add_operator_tuning(run)

    demo = sub.add_parser("demo", help="run everything on an embedded control plane")
    demo.add_argument(
        "-f",
        "--filename",
        action="append",
        default=None,
        dest="files",
        help="manifest to apply instead of the samples (repeatable; an empty file applies nothing)",
    )
    demo.add_argument("--until-ready", action="store_true", help="exit 0 once every object is ready")
    demo.add_argument(
        "--timeout",
        type=_positive_float,
        default=300.0,
        help="with --until-ready: give up after this many seconds (default 300)",
    )
    demo.add_argument(
        "--kubeconfig-out", default=None, help="write the embedded API server's kubeconfig here"
    )
    demo.add_argument(
        "--no-operator",
        action="store_true",
        help="run only the embedded cluster (API server, simulator, fake Ray)",
    )
    # Loopback only; when a default port is taken the demo moves to a free one (demo.py).
    demo.add_argument("--metrics-addr", type=parse_bind_address, default=DEMO_METRICS_ADDR)
    demo.add_argument("--health-probe-bind-address", type=parse_bind_address, default=DEMO_HEALTH_ADDR)
    _add_operator_tuning(demo)
    # The demo prints progress on stdout; keep its logs readable and quiet on stderr.
    demo.set_defaults(log_format="console", log_level="warning", enable_leader_election=False)

    crds = sub.add_parser("crds", help="print or write the generated CRDs")
    crds.add_argument("--out", default=None, help="directory to write the CRD files into (default: print)")
    return parser


def parse_args(argv: list[str]) -> argparse.Namespace:
    """``run`` is the default subcommand, so ``kuberay-operator --qps 50`` works as KubeRay's does."""
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help")):
        argv = ["run", *argv]
    return build_parser().parse_args(argv)


def operator_flags(ns: argparse.Namespace) -> OperatorFlags:
    flags = OperatorFlags()
    for name in vars(flags):
        if hasattr(ns, name):
            setattr(flags, name, getattr(ns, name))
    return flags
