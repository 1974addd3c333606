import pytest

from kuberay_py.envtest.sim.exec_probe import ExecParseError, FetchResult, parse_exec_command

KUBERAY_HEAD = [
    "bash",
    "-c",
    "wget --tries 1 -T 2 -q -O- http://localhost:52365/api/local_raylet_healthz | grep success && "
    "wget --tries 1 -T 10 -q -O- http://localhost:8265/api/gcs_healthz | grep success",
]


class FakeNet:
    def __init__(self, answers: dict[str, FetchResult]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, float]] = []

    async def __call__(self, url: str, timeout: float) -> FetchResult:
        self.calls.append((url, timeout))
        return self.answers.get(url, FetchResult(None, error="connection refused"))


async def test_kuberay_probe_is_two_gets_against_the_pod_address() -> None:
    script = parse_exec_command(KUBERAY_HEAD)
    net = FakeNet(
        {
            "http://127.1.0.9:52365/api/local_raylet_healthz": FetchResult(200, b"success"),
            "http://127.1.0.9:8265/api/gcs_healthz": FetchResult(200, b"success"),
        }
    )
    status, _ = await script.run(net, "127.1.0.9", timeout=5)
    assert status == 0
    # each wget's -T caps the probe's own timeout
    assert net.calls == [
        ("http://127.1.0.9:52365/api/local_raylet_healthz", 2.0),
        ("http://127.1.0.9:8265/api/gcs_healthz", 5.0),
    ]


async def test_and_chain_stops_at_the_first_failure() -> None:
    script = parse_exec_command(KUBERAY_HEAD)
    net = FakeNet({"http://127.1.0.9:52365/api/local_raylet_healthz": FetchResult(503, b"success")})
    status, reason = await script.run(net, "127.1.0.9", timeout=5)
    assert status != 0 and "HTTP 503" in reason
    assert len(net.calls) == 1


async def test_grep_needs_the_word_in_the_body() -> None:
    script = parse_exec_command(
        ["sh", "-c", "wget -T 2 -q -O- http://localhost:8000/-/healthz | grep success"]
    )
    bad = FakeNet({"http://127.1.0.2:8000/-/healthz": FetchResult(200, b"still starting")})
    assert (await script.run(bad, "127.1.0.2", timeout=1))[0] == 1
    good = FakeNet({"http://127.1.0.2:8000/-/healthz": FetchResult(200, b"success")})
    assert (await script.run(good, "127.1.0.2", timeout=1))[0] == 0


async def test_refused_connection_fails_and_or_falls_back() -> None:
    script = parse_exec_command(["bash", "-c", "wget -q -O- http://localhost:1/x || true"])
    status, _ = await script.run(FakeNet({}), "127.1.0.3", timeout=1)
    assert status == 0
    script = parse_exec_command(["bash", "-c", "wget -q -O- http://localhost:1/x"])
    status, reason = await script.run(FakeNet({}), "127.1.0.3", timeout=1)
    assert status == 4 and "connection refused" in reason


async def test_curl_without_fail_flag_succeeds_on_http_errors() -> None:
    net = FakeNet({"http://127.1.0.3:80/": FetchResult(500, b"oops")})
    assert (await parse_exec_command(["curl", "-s", "http://localhost:80/"]).run(net, "127.1.0.3", 1))[0] == 0
    assert (await parse_exec_command(["curl", "-sf", "http://localhost:80/"]).run(net, "127.1.0.3", 1))[
        0
    ] == 22


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["bash", "-c", "cat /tmp/ready"],
        ["bash", "-c", "wget -q -O /tmp/x http://localhost/"],
        ["bash", "-c", "wget -q -O- http://localhost/ | grep"],
        ["bash", "-c", "wget -q -O- http://localhost/ &"],
        ["bash", "script.sh"],
        ["bash", "-c", "wget -q 'unterminated"],
    ],
)
def test_uninterpretable_commands_are_rejected_with_a_reason(command: list[str]) -> None:
    with pytest.raises(ExecParseError):
        parse_exec_command(command)
