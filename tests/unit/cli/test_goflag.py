"""Go's ``flag`` package rules, on a FlagSet of our own (errors worded as Go words them)."""

from __future__ import annotations

import pytest

from controllers.cli.goflag import FlagError, FlagSet, HelpRequested, parse_go_bool, parse_go_int


def _set() -> tuple[FlagSet, list[tuple[str, str]]]:
    seen: list[tuple[str, str]] = []
    fs = FlagSet("manager")
    fs.define("name", lambda v: seen.append(("name", v)), "a string")
    fs.define("on", lambda v: seen.append(("on", str(parse_go_bool(v)))), "a bool", is_bool=True)
    return fs, seen


def test_spellings_order_and_what_is_left() -> None:
    fs, seen = _set()
    rest = fs.parse(["-name", "a", "--name=b", "--on", "-on=false", "--name", "--on", "x", "-on", "-z"])
    # A non-bool flag takes the next argument even if it looks like a flag; a bool never does.
    assert seen == [("name", "a"), ("name", "b"), ("on", "True"), ("on", "False"), ("name", "--on")]
    assert rest == ["x", "-on", "-z"]  # parsing stops at the first non-flag


def test_stops_at_a_lone_dash_and_after_double_dash() -> None:
    fs, _ = _set()
    assert fs.parse(["-", "--on"]) == ["-", "--on"]
    assert fs.parse(["--", "--on"]) == ["--on"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--nope"], "flag provided but not defined: -nope"),
        (["--name"], "flag needs an argument: -name"),
        (["--on=maybe"], 'invalid boolean value "maybe" for -on: parse error'),
        (["---on"], "bad flag syntax: ---on"),
        (["-=x"], "bad flag syntax: -=x"),
    ],
)
def test_errors_read_as_gos(argv: list[str], message: str) -> None:
    fs, _ = _set()
    with pytest.raises(FlagError) as err:
        fs.parse(argv)
    assert str(err.value) == message


def test_help_is_asked_for_with_h_or_help() -> None:
    for arg in ("-h", "--help", "-help"):
        fs, _ = _set()
        with pytest.raises(HelpRequested):
            fs.parse([arg])


def test_go_number_and_bool_spellings() -> None:
    assert [parse_go_int(v) for v in ("10", "-7", "0x1f", "0o17", "017", "0b11", "1_000")] == [
        10,
        -7,
        31,
        15,
        15,
        3,
        1000,
    ]
    for bad in (" 1", "1.0", "", "ten"):
        with pytest.raises(ValueError):
            parse_go_int(bad)
    assert [parse_go_bool(v) for v in ("1", "t", "T", "TRUE", "true", "True")] == [True] * 6
    assert [parse_go_bool(v) for v in ("0", "f", "F", "FALSE", "false", "False")] == [False] * 6
    for bad in ("yes", "on", "tRUE", ""):
        with pytest.raises(ValueError):
            parse_go_bool(bad)
