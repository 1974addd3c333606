"""``resource.Quantity`` re-encoding, including the verbatim fast path (docs/reference/spec-hash.md §4.5)."""

from __future__ import annotations

import pytest

from controllers.spechash import QuantityTextError, canonical_quantity_text

CANONICAL = [
    ("1000m", "1"), ("0.5", "500m"), ("1.5k", "1500"), ("1000", "1k"),
    ("2000m", "2"), ("0.1", "100m"), ("5000M", "5G"), ("1000000", "1M"),
    ("1.0", "1"), ("0.333", "333m"), ("1.23456789", "1234567890n"), ("0.0000000001", "1n"),
    ("2048Mi", "2Gi"), ("1.5Gi", "1536Mi"), ("0.5Gi", "512Mi"), ("0.5Ki", "512"),
    ("0.1Ki", "102400m"), ("1.1Ki", "1126400m"), ("1024Gi", "1Ti"), ("8Ki", "8Ki"),
    ("1e3", "1e3"), ("1.5e3", "1500"), ("2e2", "200"), ("1e20", "100e18"),
    ("0.5e0", "500e-3"), ("100e-2", "1"), ("0Gi", "0"), ("-1.5Gi", "-1536Mi"),
]  # fmt: skip

VERBATIM = ["+1", "01", "1E3", "1500e-3", "2Gi", "100m", "5Gi", "500m", "7Ki", "123456789012345678"]


@pytest.mark.parametrize(("text", "expected"), CANONICAL)
def test_go_output(text: str, expected: str) -> None:
    assert canonical_quantity_text(text) == expected


@pytest.mark.parametrize("text", VERBATIM)
def test_canonical_enough_input_is_kept_verbatim(text: str) -> None:
    assert canonical_quantity_text(text) == text


def test_surrounding_whitespace_is_trimmed_and_zero_is_zero() -> None:
    assert canonical_quantity_text("  2Gi ") == "2Gi"
    assert [canonical_quantity_text(z) for z in ("0", "-0", "000", "0.0")] == ["0"] * 4


def test_oddities_of_apimachinery_are_kept() -> None:
    assert canonical_quantity_text("1000E") == "1"  # beyond E the suffix is lost
    assert canonical_quantity_text("1.") == "1."  # the fast path keeps the whole input text
    assert canonical_quantity_text("1Ei") == "1Ei"  # never the fast path, canonical again
    assert canonical_quantity_text("9Ei") == str(2**63 - 1)  # binary values are capped


@pytest.mark.parametrize("text", ["", "abc", "1x", "1Mib", "1e", "--1", "1.2.3"])
def test_not_a_quantity(text: str) -> None:
    with pytest.raises(QuantityTextError):
        canonical_quantity_text(text)
