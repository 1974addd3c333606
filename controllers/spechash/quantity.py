"""``resource.Quantity`` text exactly as apimachinery's ``MarshalJSON`` writes it.

The API server stores a quantity inside a custom resource as the user typed it (``1000m``), but
KubeRay decodes it into a ``resource.Quantity`` before hashing, and the re-encoded text (``1``) is
what its hash sees. Reproducing that text byte for byte is what keeps our hash annotations equal
to KubeRay's, so both the "keep the input verbatim" fast path and the canonical form are followed
to the letter (docs/reference/spec-hash.md §4.5), including their oddities (``01`` stays ``01``,
``1000E`` loses its suffix).
"""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal, localcontext

__all__ = ["QuantityTextError", "canonical_quantity_text"]

_DECIMAL_SUFFIX_EXPONENT = {
    "n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18,
}  # fmt: skip
_DECIMAL_SUFFIX_BY_EXPONENT = {v: k for k, v in _DECIMAL_SUFFIX_EXPONENT.items()}
_BINARY_SUFFIX_EXPONENT = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_MAX_INT64 = (1 << 63) - 1
_MAX_INT64_DIGITS = 18
_NANO = Decimal("1e-9")


class QuantityTextError(ValueError):
    """The text is not a Kubernetes quantity (the API server would have rejected it)."""


def canonical_quantity_text(text: str) -> str:
    """The string ``json.Marshal`` of ``resource.MustParse(text)`` produces, without the quotes."""
    text = text.strip()
    if not text:
        raise QuantityTextError("quantity is empty")
    negative, integer, fraction, suffix = _split(text)
    base, exponent = _interpret_suffix(suffix, text)
    fast = _fast_path(text, negative, integer, fraction, base, exponent)
    if fast is not None:
        return fast
    with localcontext() as ctx:
        ctx.prec = 200
        magnitude = Decimal(f"{integer}.{fraction or '0'}") * (Decimal(base) ** exponent)
        return _canonical(magnitude, negative, base, suffix)


def _split(text: str) -> tuple[bool, str, str, str]:
    """Sign, integer digits without leading zeros ("0" if none), fraction digits, suffix."""
    pos = 0
    negative = False
    if text[0] in "+-":
        negative = text[0] == "-"
        pos = 1
    start = pos
    while pos < len(text) and text[pos].isascii() and text[pos].isdigit():
        pos += 1
    integer = text[start:pos].lstrip("0") or "0"
    fraction = ""
    if pos < len(text) and text[pos] == ".":
        pos += 1
        frac_start = pos
        while pos < len(text) and text[pos].isascii() and text[pos].isdigit():
            pos += 1
        fraction = text[frac_start:pos]
    if pos == start:
        raise QuantityTextError(f"quantity {text!r} has no digits")
    return negative, integer, fraction, text[pos:]


def _interpret_suffix(suffix: str, text: str) -> tuple[int, int]:
    """(base, exponent) of the suffix: 10^e for SI letters and exponents, 2^e for binary."""
    if suffix in _DECIMAL_SUFFIX_EXPONENT:
        return 10, _DECIMAL_SUFFIX_EXPONENT[suffix]
    if suffix in _BINARY_SUFFIX_EXPONENT:
        return 2, _BINARY_SUFFIX_EXPONENT[suffix]
    if len(suffix) > 1 and suffix[0] in "eE":
        body = suffix[1:]
        digits = body[1:] if body[0] in "+-" else body
        if digits.isascii() and digits.isdigit():
            return 10, int(body)
    raise QuantityTextError(f"quantity {text!r} has an unknown suffix {suffix!r}")


def _fast_path(
    text: str, negative: bool, integer: str, fraction: str, base: int, exponent: int
) -> str | None:
    """apimachinery keeps the input string itself when it is already in a canonical-enough form."""
    if base == 10:
        if _MAX_INT64_DIGITS - (len(integer) + len(fraction)) < 0:
            return None
        scale = exponent - len(fraction)
        digits = integer + fraction
        if scale < -9 or int(digits) > _MAX_INT64:
            return None
        if scale % 3 == 0 and not digits.endswith("000") and digits[0] != "0":
            return text
        return None
    if fraction:
        return None
    precision = 15 - len(integer) - int(exponent * 3 / 10) - 1
    value = int(integer)
    if precision < 0 or value << exponent > _MAX_INT64:
        return None
    if value & 0x07 != 0:
        return text
    return None


def _canonical(magnitude: Decimal, negative: bool, base: int, suffix: str) -> str:
    exponent = magnitude.as_tuple().exponent
    if isinstance(exponent, int) and exponent < -9:
        magnitude = magnitude.quantize(_NANO, rounding=ROUND_CEILING)
    if magnitude == 0:
        return "0"
    sign = "-" if negative else ""
    if base == 2:
        if magnitude > _MAX_INT64:
            magnitude = Decimal(_MAX_INT64)
        is_integer = magnitude == magnitude.to_integral_value()
        if magnitude >= 1024 and is_integer:
            whole = int(magnitude)
            power = 0
            while power < 6 and whole % 1024 == 0:
                whole //= 1024
                power += 1
            return f"{sign}{whole}{_BINARY_SUFFIXES[power]}"
    exponent_format = len(suffix) > 1 and suffix[0] in "eE"
    mantissa, exp = _mantissa_exponent(magnitude)
    if exponent_format:
        return f"{sign}{mantissa}" + (f"e{exp}" if exp else "")
    letter = _DECIMAL_SUFFIX_BY_EXPONENT.get(exp, "")
    return f"{sign}{mantissa}{letter}"


def _mantissa_exponent(magnitude: Decimal) -> tuple[int, int]:
    """|v| = m * 10^e with m's trailing zeros moved into e, then e lowered to a multiple of 3."""
    _, digits, exp = magnitude.normalize().as_tuple()
    assert isinstance(exp, int)
    mantissa = int("".join(map(str, digits)))
    shift = exp % 3
    return mantissa * 10**shift, exp - shift
