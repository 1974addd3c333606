from kuberay_py.envtest.sim.prober import ProbeState, ProbeTiming


def test_api_defaults_apply() -> None:
    t = ProbeTiming.of({"exec": {"command": ["true"]}})
    assert (t.initial_delay, t.period, t.timeout, t.success_threshold, t.failure_threshold) == (
        0,
        10,
        1,
        1,
        3,
    )


def test_readiness_flips_only_after_failure_threshold_consecutive_failures() -> None:
    state = ProbeState("readiness", ProbeTiming.of({"failureThreshold": 3, "successThreshold": 2}))
    assert state.result is False
    assert state.observe(True) is False  # successThreshold 2
    assert state.observe(True) is True and state.result is True
    assert state.observe(False) is False
    assert state.observe(False) is False
    assert state.observe(True) is False  # streak broken
    assert [state.observe(False) for _ in range(3)] == [False, False, True]
    assert state.result is False


def test_liveness_starts_healthy_and_reset_clears_the_streak() -> None:
    state = ProbeState("liveness", ProbeTiming.of({"failureThreshold": 2}))
    assert state.result is True
    state.observe(False)
    state.reset()
    assert state.observe(False) is False
    assert state.observe(False) is True and state.result is False
