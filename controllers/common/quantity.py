"""Kubernetes resource quantities: parse, sum and print them the way apimachinery does.

KubeRay infers ``num-cpus``/``memory``/``num-gpus`` from container limits with
``Quantity.Value()`` (which rounds *up* to an integer) and reports ``status.desiredCPU`` etc. as
summed ``resource.Quantity`` values, whose JSON form is the canonical string (``1500m``, ``6Gi``).
Users and ``kubectl get raycluster`` columns compare these strings, so we reproduce the canonical
form instead of printing floats.
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from enum import Enum
from typing import Any

__all__ = ["Format", "QuantityError", "format_quantity", "parse_quantity", "parse_with_format", "value_ceil"]


class QuantityError(ValueError):
    """Raised for a string that is not a Kubernetes quantity."""


class Format(Enum):
    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX_BY_EXP = {v: k for k, v in _DECIMAL.items()}


def parse_with_format(value: Any) -> tuple[Decimal, Format]:
    """Return the exact value of a quantity and the format apimachinery would keep for it."""
    if isinstance(value, bool):
        raise QuantityError(f"invalid quantity {value!r}")
    if isinstance(value, int):
        return Decimal(value), Format.DECIMAL_SI
    if isinstance(value, float):
        return Decimal(str(value)), Format.DECIMAL_SI
    if not isinstance(value, str) or not value.strip():
        raise QuantityError(f"invalid quantity {value!r}")
    text = value.strip()
    for suffix, power in _BINARY.items():
        if text.endswith(suffix):
            return _number(text[: -len(suffix)], value) * (Decimal(1024) ** power), Format.BINARY_SI
    lowered = text.lower()
    if "e" in lowered[1:] and not text.endswith("E"):
        return _number(text, value), Format.DECIMAL_EXPONENT
    suffix = text[-1] if text[-1] in "numkMGTPE" else ""
    number = text[: -len(suffix)] if suffix else text
    return _number(number, value) * (Decimal(10) ** _DECIMAL[suffix]), Format.DECIMAL_SI


def parse_quantity(value: Any) -> Decimal:
    return parse_with_format(value)[0]


def _number(text: str, original: Any) -> Decimal:
    try:
        number = Decimal(text)
    except InvalidOperation:
        raise QuantityError(f"invalid quantity {original!r}") from None
    if not number.is_finite():
        raise QuantityError(f"invalid quantity {original!r}")
    return number


def value_ceil(value: Any) -> int:
    """``Quantity.Value()``: the integer value, rounded up away from zero."""
    number = parse_quantity(value)
    return math.ceil(number) if number >= 0 else math.floor(number)


def format_quantity(value: Decimal, fmt: Format = Format.DECIMAL_SI) -> str:
    """The canonical string apimachinery serialises a quantity to (its precision is milli-units)."""
    if value == 0:
        return "0"
    # Anything below a milli-unit rounds up to 1m, as Quantity does for sub-milli values.
    milli = (value * 1000).to_integral_value(rounding="ROUND_CEILING")
    if fmt is Format.BINARY_SI and milli % 1000 == 0 and abs(value) >= 1024:
        whole = int(value)
        power = 0
        while power < 6 and whole % 1024 == 0:
            whole //= 1024
            power += 1
        if power:
            return f"{whole}{next(k for k, v in _BINARY.items() if v == power)}"
        return str(int(value))
    exponent = -3
    mantissa = int(milli)
    while mantissa % 1000 == 0 and exponent < 18:
        mantissa //= 1000
        exponent += 3
    return f"{mantissa}{_DECIMAL_SUFFIX_BY_EXP[exponent]}"
