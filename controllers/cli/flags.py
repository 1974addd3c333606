"""Command-line flags: KubeRay v1.7.0's ``/manager`` flags with their meaning and defaults, plus ours.

A Deployment written for KubeRay (its Helm chart, its kustomize manifests) passes its args to us
unchanged, with no subcommand: ``/manager --log-stdout-encoder json --enable-leader-election=true
...``. So ``run`` parses with Go's ``flag`` rules (:mod:`controllers.cli.goflag`), accepts every
flag KubeRay's ``main.go`` and controller-runtime define (zap's and ``--kubeconfig`` included), and
keeps their defaults: ``--enable-metrics`` is off unless given, as in KubeRay. A value KubeRay
rejects is one line on stderr and exit code 2, so a crash-looping Pod's log says what is wrong.

``demo`` and ``crds`` are ours and keep argparse.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from controllers.raycluster.pod_defaults import PodDefaults
from kuberay_py.webhook import WebhookServerOptions

from .goflag import FlagError, FlagSet, HelpRequested, parse_go_bool, parse_go_float, parse_go_int

__all__ = [
    "FEATURE_GATES",
    "OperatorFlags",
    "build_parser",
    "build_run_flagset",
    "operator_flags",
    "parse_args",
    "parse_bind_address",
    "parse_bool",
    "parse_feature_gates",
    "parse_run_args",
]

DEMO_METRICS_ADDR = "127.0.0.1:8080"
DEMO_HEALTH_ADDR = "127.0.0.1:8082"


def parse_bool(value: str) -> bool:
    """Go's ``strconv.ParseBool`` spellings (``true``, ``false``, ``1``, ``0``, ``t``, ``F`` ...)."""
    try:
        return parse_go_bool(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid boolean value {value!r} (use true or false)") from None


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


# Every gate of KubeRay v1.7.0 (ray-operator/pkg/features) with its v1.7.0 default.
FEATURE_GATES: dict[str, bool] = {
    "RayClusterStatusConditions": True,
    "RayJobDeletionPolicy": True,
    "RayMultiHostIndexing": True,
    "RayServiceIncrementalUpgrade": True,
    "RayCronJob": False,
    "SidecarSubmitterRestart": False,
    "RayClusterNetworkPolicy": False,
    "GCSFaultToleranceEmbeddedStorage": False,
    "RayClusterMTLS": False,
    "RayClusterHistoryServer": False,
    "KubernetesWAS": False,
}


def parse_feature_gates(value: str) -> dict[str, bool]:
    """``A=true,B=false`` over the defaults, as k8s.io/component-base's ``featuregate.Set``.

    An unknown gate, a missing ``=`` or a value ``strconv.ParseBool`` rejects is an error.
    """
    gates = dict(FEATURE_GATES)
    for item in value.split(","):
        if not item.strip():
            continue
        name, eq, raw = item.partition("=")
        name, raw = name.strip(), raw.strip()
        if not eq:
            raise argparse.ArgumentTypeError(f"missing bool value for {name}")
        try:
            enabled = parse_go_bool(raw)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"invalid value of {name}={raw}, err: strconv.ParseBool: parsing {raw!r}: invalid syntax"
            ) from None
        if name not in FEATURE_GATES:
            raise argparse.ArgumentTypeError(f"unrecognized feature gate: {name}")
        gates[name] = enabled
    return gates


def _namespaces(value: str) -> list[str]:
    return [ns.strip() for ns in value.split(",") if ns.strip()]


# KubeRay's batch schedulers (--batch-scheduler); none is implemented here.
BATCH_SCHEDULERS = ("volcano", "yunikorn", "kai-scheduler", "scheduler-plugins")
# controller-runtime's zap flag values (pkg/log/zap/flags.go).
ZAP_LEVELS = {"debug": "debug", "info": "info", "error": "error"}
ZAP_STACKTRACE_LEVELS = {"info": "info", "error": "error", "panic": "critical"}
ZAP_TIME_ENCODINGS = ("rfc3339nano", "rfc3339", "iso8601", "millis", "nanos", "epoch")


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
    # The stdout encoder (--log-stdout-encoder, or our --log-format); lines go to stderr, as
    # controller-runtime's zap logger writes them.
    log_format: str = "json"
    log_level: str = "info"
    # --log-file-path: the same lines, also written to this file (rotated at 500 MB, 10 kept).
    log_file_path: str = ""
    log_file_encoder: str = "json"
    # --zap-stacktrace-level: events at or above this level carry a stack; "" = only exceptions.
    log_stacktrace_level: str = ""
    head_proxy_health_concurrency: int = 16
    head_proxy_health_period: float = 5.0
    # uvloop (libuv, its TLS in C): ~15 % less CPU per API request than asyncio's loop, which
    # decides how fast the operator converges under the chart's 100m limit. asyncio: the stdlib loop.
    event_loop: str = "uvloop"
    graceful_shutdown_timeout: float = 30.0
    # None: KubeRay's RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV, else 300 s.
    raycluster_resync_period: float | None = None
    feature_gates: dict[str, bool] = field(default_factory=lambda: dict(FEATURE_GATES))
    # "all": KubeRay's replay of every missed RayCronJob tick; "latest": only the most recent one.
    raycronjob_missed_ticks: str = "all"
    # KubeRay's --enable-metrics (default false): the kuberay_* CR metrics. /metrics itself
    # (controller, workqueue and client metrics) is served either way, for the chart's probes.
    enable_metrics: bool = False
    # KubeRay's batch scheduler flags (controllers.batchscheduler); checked as KubeRay checks them.
    enable_batch_scheduler: bool = False
    batch_scheduler: str = ""
    # KubeRay's --use-kubernetes-proxy: dashboards (services/proxy) and the head Serve proxy check
    # (pods/proxy) through the API server.
    use_kubernetes_proxy: bool = False
    # Accepted for KubeRay's Deployments, not implemented (run.py says so once).
    forced_cluster_upgrade: bool = False
    # DELETE_RAYJOB_CR_AFTER_JOB_FINISHES, or the Configuration's deleteRayJobAfterJobFinishes.
    delete_rayjob_after_job_finishes: bool | None = None
    # --config FILE: a config.ray.io/v1alpha1 Configuration (see controllers.cli.configuration).
    config: str = ""
    # Pod defaults from the Configuration file (none without --config).
    pod_defaults: PodDefaults = field(default_factory=PodDefaults)
    # ENABLE_WEBHOOKS=true (KubeRay's switch, an environment variable, not a flag): serve the
    # validating webhooks. None: read the environment when the manager is built.
    enable_webhooks: bool | None = None
    # The webhook server: controller-runtime's defaults (:9443, /tmp/k8s-webhook-server/serving-certs),
    # which KubeRay does not change; not flags (tests and embedders set them).
    webhook_server: WebhookServerOptions = field(default_factory=WebhookServerOptions)
    # zap flags KubeRay accepts but whose effect its own encoder setup overrides.
    ignored_zap_flags: list[str] = field(default_factory=list)
    # The run flags given on the command line, in order (for "ignored with --config").
    given: list[str] = field(default_factory=list)
    # (event, fields) lines about the --config file, logged at start (flags it overrides, unknown fields).
    config_notes: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


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
        help=("KubeRay feature gates, e.g. RayCronJob=true (default: KubeRay v1.7.0's)"),
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


def _checked(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse type function as a Go flag setter (which reports a ValueError)."""

    def check(value: str) -> Any:
        try:
            return convert(value)
        except argparse.ArgumentTypeError as err:
            raise ValueError(str(err)) from None

    return check


def _choice(*allowed: str, lower: bool = True, what: str = "value") -> Callable[[str], str]:
    def check(value: str) -> str:
        key = value.lower() if lower else value
        if key not in allowed:
            raise ValueError(f'invalid {what} "{value}"')
        return key

    return check


def _zap_level(value: str) -> str:
    """controller-runtime's ``levelFlag``: debug, info, error, or N > 0 (a debug verbosity)."""
    if value.lower() in ZAP_LEVELS:
        return ZAP_LEVELS[value.lower()]
    try:
        verbosity = int(value)
    except ValueError:
        raise ValueError(f'invalid log level "{value}"') from None
    if verbosity <= 0:
        raise ValueError(f'invalid log level "{value}"')
    return "debug"  # structlog has no finer level than debug


def _encoder(value: str) -> str:
    """KubeRay's ``newLogEncoder``: ``json`` (also the empty string) or ``console``, case-sensitive."""
    if value in ("json", ""):
        return "json"
    if value == "console":
        return "console"
    raise ValueError(f"invalid encoder \"{value}\" (must be 'json' or 'console')")


RUN_DEFAULTS = OperatorFlags()


def build_run_flagset(values: dict[str, Any], program: str = "kuberay-operator") -> FlagSet:
    """The ``run`` flags; each setter stores its converted value into ``values`` under its field name.

    KubeRay's flags first (``main.go``, controller-runtime's zap flags and ``--kubeconfig``), then
    the ones only kuberay-py has.
    """
    fs = FlagSet(program)

    def define(
        name: str,
        key: str,
        convert: Callable[[str], Any],
        help: str,
        default: object,
        *,
        is_bool: bool = False,
    ) -> None:
        def setter(text: str) -> None:
            values[key] = convert(text)
            values.setdefault("given", []).append(name)

        shown = str(default).lower() if isinstance(default, bool) else str(default)
        fs.define(name, setter, help, is_bool=is_bool, default=shown)

    d = RUN_DEFAULTS
    go_bool, go_int, go_float = parse_go_bool, parse_go_int, parse_go_float
    # -- KubeRay v1.7.0 main.go
    define(
        "metrics-addr", "metrics_addr", _checked(parse_bind_address), "the /metrics address", d.metrics_addr
    )
    define(
        "health-probe-bind-address",
        "health_probe_bind_address",
        _checked(parse_bind_address),
        "the /healthz and /readyz address",
        d.health_probe_bind_address,
    )
    define(
        "enable-leader-election",
        "enable_leader_election",
        go_bool,
        "leader election on the Lease ray-operator-leader",
        True,
        is_bool=True,
    )
    define(
        "leader-election-namespace",
        "leader_election_namespace",
        str,
        "namespace of the Lease (default: the Pod's namespace)",
        "",
    )
    define(
        "reconcile-concurrency",
        "reconcile_concurrency",
        go_int,
        "max concurrent reconciles per controller",
        1,
    )
    define(
        "watch-namespace",
        "watch_namespace",
        _namespaces,
        "comma-separated namespaces to watch (default all)",
        "",
    )
    define(
        "forced-cluster-upgrade",
        "forced_cluster_upgrade",
        go_bool,
        "(deprecated in KubeRay) no effect",
        False,
        is_bool=True,
    )
    define("log-file-path", "log_file_path", str, "also write the log lines to this file", "")
    define(
        "log-file-encoder", "log_file_encoder", _encoder, "encoder of the log file: json or console", "json"
    )
    define("log-stdout-encoder", "log_format", _encoder, "encoder of the log stream: json or console", "json")
    define(
        "enable-batch-scheduler",
        "enable_batch_scheduler",
        go_bool,
        "(deprecated in KubeRay) Volcano",
        False,
        is_bool=True,
    )
    define(
        "batch-scheduler",
        "batch_scheduler",
        str,
        "volcano, yunikorn, kai-scheduler or scheduler-plugins",
        "",
    )
    define("config", "config", str, "a config.ray.io/v1alpha1 Configuration file (then its fields win)", "")
    define(
        "use-kubernetes-proxy",
        "use_kubernetes_proxy",
        go_bool,
        "reach Ray dashboards (services/proxy) and head Serve proxies (pods/proxy) through the API server",
        False,
        is_bool=True,
    )
    define("feature-gates", "feature_gates_text", str, "KubeRay feature gates, e.g. RayCronJob=true", "")
    define(
        "enable-metrics",
        "enable_metrics",
        go_bool,
        "export the kuberay_* RayCluster/RayJob/RayService metrics",
        False,
        is_bool=True,
    )
    define("qps", "qps", go_float, "client-side API QPS", "100")
    define("burst", "burst", go_int, "client-side API burst", 200)
    # -- controller-runtime: zap (pkg/log/zap) and the kubeconfig flag (pkg/client/config)
    define("zap-devel", "zap_devel", go_bool, "development defaults: debug level", False, is_bool=True)
    define(
        "zap-encoder",
        "zap_encoder",
        _choice("json", "console", what="encoder value"),
        "accepted; KubeRay's --log-stdout-encoder decides",
        "",
    )
    define("zap-log-level", "zap_log_level", _zap_level, "debug, info, error, or N > 0 (debug)", "info")
    define(
        "zap-stacktrace-level",
        "log_stacktrace_level",
        lambda v: ZAP_STACKTRACE_LEVELS[_choice(*ZAP_STACKTRACE_LEVELS, what="stacktrace level")(v)],
        "events at or above it carry a stack: info, error or panic",
        "",
    )
    define(
        "zap-time-encoding",
        "zap_time_encoding",
        _choice(*ZAP_TIME_ENCODINGS, what="time-encoding value"),
        "accepted; timestamps are ISO 8601 UTC, as KubeRay's encoder writes them",
        "",
    )
    define("kubeconfig", "kubeconfig", str, "kubeconfig path (default $KUBECONFIG, then in-cluster)", "")
    # -- kuberay-py's own
    define("leader-election-id", "leader_election_id", str, "name of the Lease", d.leader_election_id)
    define(
        "graceful-shutdown-timeout",
        "graceful_shutdown_timeout",
        _checked(_positive_float),
        "seconds to drain in-flight reconciles on SIGTERM",
        "30",
    )
    define(
        "reconcile-retry-qps",
        "reconcile_retry_qps",
        _checked(_non_negative_float),
        "overall retries/s of failed reconciles per controller (0 = per-item back-off only)",
        "10",
    )
    define(
        "reconcile-retry-burst",
        "reconcile_retry_burst",
        _checked(_positive_int),
        "retries allowed at once before --reconcile-retry-qps applies",
        100,
    )
    define(
        "log-format",
        "log_format",
        _choice("json", "console", lower=False, what="log format"),
        "alias of --log-stdout-encoder",
        "json",
    )
    define(
        "log-level",
        "log_level",
        _choice("debug", "info", "warning", "error", lower=False, what="log level"),
        "debug, info, warning or error",
        "info",
    )
    define(
        "head-proxy-health-concurrency",
        "head_proxy_health_concurrency",
        _checked(_positive_int),
        "max head-proxy health checks in flight",
        16,
    )
    define(
        "head-proxy-health-period",
        "head_proxy_health_period",
        _checked(_positive_float),
        "seconds between checks of one head Pod's Serve proxy",
        "5",
    )
    define(
        "event-loop",
        "event_loop",
        _choice("uvloop", "asyncio", lower=False, what="event loop"),
        "the asyncio event loop implementation: uvloop or asyncio (the standard library's)",
        "uvloop",
    )
    define(
        "raycronjob-missed-ticks",
        "raycronjob_missed_ticks",
        _choice("all", "latest", lower=False, what="value"),
        "RayCronJob ticks missed in an outage or a suspend: all (earliest first, as KubeRay) or latest",
        "all",
    )
    define(
        "raycluster-resync-period",
        "raycluster_resync_period",
        _checked(_positive_float),
        "resync of every RayCluster in seconds (default $RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV or 300)",
        "",
    )
    return fs


def parse_run_args(argv: list[str], program: str = "kuberay-operator") -> argparse.Namespace:
    """``run``'s flags with Go's rules; the result has one attribute per :class:`OperatorFlags` field."""
    values: dict[str, Any] = {}
    fs = build_run_flagset(values, program)
    try:
        rest = fs.parse(argv)
    except HelpRequested:
        sys.stderr.write(fs.usage())
        raise SystemExit(0) from None
    except FlagError as err:
        _fail(str(err))
    if rest:
        # Go's flag package stops here and KubeRay would silently ignore this and every later
        # flag; a Deployment that means something else must not start with half its flags.
        _fail(
            f"unexpected argument {rest[0]!r}: Go's flag parsing stops at the first non-flag, so KubeRay "
            "would ignore it and everything after it (a bool flag takes its value as --flag=false)"
        )
    try:
        gates = parse_feature_gates(values.pop("feature_gates_text", ""))
    except argparse.ArgumentTypeError as err:
        _fail(f"unable to set feature gates: {err}")
    flags: dict[str, Any] = {"command": "run", "feature_gates": gates}
    zap_devel = bool(values.pop("zap_devel", False))
    zap_level = values.pop("zap_log_level", None)
    ignored = [
        name for name in ("zap-encoder", "zap-time-encoding") if values.pop(name.replace("-", "_"), None)
    ]
    if zap_level is not None and "log_level" not in values:
        values["log_level"] = zap_level
    elif zap_level is not None:
        # Both given: the later one on the command line wins, as with any repeated Go flag.
        given = values.get("given", [])
        last_zap = max(i for i, n in enumerate(given) if n == "zap-log-level")
        last_ours = max(i for i, n in enumerate(given) if n == "log-level")
        if last_zap > last_ours:
            values["log_level"] = zap_level
    if zap_devel:
        values.setdefault("log_level", "debug")
        values.setdefault("log_stacktrace_level", "warning")
    qps = values.get("qps")
    if qps is not None:
        if math.isnan(qps):
            _fail('invalid value "NaN" for flag -qps')
        if qps == 0:
            values["qps"] = 5.0  # client-go's rest.DefaultQPS for an unset (zero) QPS
    burst = values.get("burst")
    if burst is not None:
        if burst < 0:
            _fail(f'invalid value "{burst}" for flag -burst: must be 0 or more')
        if burst == 0:
            values["burst"] = 10  # client-go's rest.DefaultBurst
    if values.get("reconcile_concurrency", 1) < 1:
        values["reconcile_concurrency"] = 1  # controller-runtime's default for MaxConcurrentReconciles <= 0
    if values.get("kubeconfig") == "":
        values["kubeconfig"] = None
    flags.update(values)
    flags["ignored_zap_flags"] = ignored
    return argparse.Namespace(**flags)


def _fail(message: str) -> NoReturn:
    sys.stderr.write(f"kuberay-operator: error: {message}\n")
    raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    """``demo`` and ``crds`` (argparse); ``run`` is listed for ``--help`` but parsed by Go's rules."""
    parser = _OneLineParser(prog="kuberay-operator", description="A Kubernetes operator for Ray (ray.io/v1).")
    sub = parser.add_subparsers(dest="command", parser_class=_OneLineParser)
    sub.add_parser(
        "run", help="run the operator against a cluster (default; KubeRay's flags)", add_help=False
    )

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
    # The demo's dashboard and alerts read the kuberay_* metrics, so they are on here.
    demo.set_defaults(
        log_format="console", log_level="warning", enable_leader_election=False, enable_metrics=True
    )

    crds = sub.add_parser("crds", help="print or write the generated CRDs")
    crds.add_argument("--out", default=None, help="directory to write the CRD files into (default: print)")
    return parser


def parse_args(argv: list[str]) -> argparse.Namespace:
    """``run`` is the default subcommand: ``kuberay-operator --qps 50`` (and ``/manager --qps 50``)
    run the operator, as KubeRay's ``/manager`` does."""
    if argv and argv[0] in ("demo", "crds"):
        return build_parser().parse_args(argv)
    if argv and argv[0] in ("-h", "--help") and len(argv) == 1:
        build_parser().print_help(sys.stderr)
        raise SystemExit(0)
    return parse_run_args(argv[1:] if argv and argv[0] == "run" else argv)


def operator_flags(ns: argparse.Namespace) -> OperatorFlags:
    flags = OperatorFlags()
    for name in vars(flags):
        if hasattr(ns, name):
            setattr(flags, name, getattr(ns, name))
    return flags
