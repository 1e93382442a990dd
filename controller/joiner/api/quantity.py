"""Kubernetes resource quantities: parse, exact arithmetic, canonical formatting.

Grammar (k8s.io/apimachinery resource.Quantity):
    <quantity> ::= <signedNumber><suffix>
    <suffix>   ::= Ki | Mi | Gi | Ti | Pi | Ei | n | u | m | "" | k | M | G | T | P | E
                 | e<signedNumber> | E<signedNumber>
Values are kept as exact ``Fraction``s. The scheduler works on integer
milli-units (``to_milli``), which is exact for every real request.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import total_ordering

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_PATTERN = re.compile(
    r"^(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|n|u|m|k|M|G|T|P|E|)$"
)


class QuantityError(ValueError):
    pass


@total_ordering
class Quantity:
    """An exact resource amount that remembers the suffix style it was written in."""

    __slots__ = ("_binary", "_value")

    def __init__(self, value: int | float | str | Fraction | Quantity, binary: bool = False):
        if isinstance(value, Quantity):
            self._value, self._binary = value._value, value._binary
        elif isinstance(value, str):
            parsed = Quantity.parse(value)
            self._value, self._binary = parsed._value, parsed._binary
        elif isinstance(value, float):
            self._value, self._binary = Fraction(value).limit_denominator(10**9), binary
        else:
            self._value, self._binary = Fraction(value), binary

    @staticmethod
    def parse(text: str) -> Quantity:
        if not isinstance(text, str):
            raise QuantityError(f"quantity must be a string, got {type(text).__name__}")
        match = _PATTERN.match(text.strip())
        if not match or text.strip() in ("", "+", "-"):
            raise QuantityError(f"invalid quantity {text!r}")
        number, suffix = Fraction(match["num"]), match["suffix"]
        if suffix in _BINARY:
            return Quantity(number * _BINARY[suffix], binary=True)
        if suffix[:1] in ("e", "E") and len(suffix) > 1:
            return Quantity(number * Fraction(10) ** int(suffix[1:]))
        return Quantity(number * Fraction(10) ** _DECIMAL[suffix])

    @property
    def value(self) -> Fraction:
        return self._value

    def to_milli(self) -> int:
        """Milli-units, rounded up as Kubernetes does for sub-milli amounts."""
        return math.ceil(self._value * 1000)

    def __float__(self) -> float:
        return float(self._value)

    def __add__(self, other: Quantity) -> Quantity:
        return Quantity(self._value + Quantity(other)._value, self._binary)

    def __sub__(self, other: Quantity) -> Quantity:
        return Quantity(self._value - Quantity(other)._value, self._binary)

    def __mul__(self, factor: int | Fraction) -> Quantity:
        return Quantity(self._value * factor, self._binary)

    def __neg__(self) -> Quantity:
        return Quantity(-self._value, self._binary)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Quantity, int, Fraction, str)):
            return self._value == Quantity(other)._value
        return NotImplemented

    def __lt__(self, other: Quantity | int | str) -> bool:
        return self._value < Quantity(other)._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    def __str__(self) -> str:
        return format_quantity(self._value, self._binary)


def format_quantity(value: Fraction, binary: bool = False) -> str:
    """Canonical form: the largest suffix that keeps an integer mantissa.

    Binary style (Ki..Ei) is used when the value was written that way and is a
    whole multiple of 1024; otherwise decimal (n, u, m, "", k, M, ...). Amounts
    finer than a nano are rounded up to the nano, as Kubernetes does.
    """
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    if binary and magnitude.denominator == 1:
        for suffix, factor in reversed(_BINARY.items()):
            if magnitude % factor == 0:
                return f"{sign}{magnitude // factor}{suffix}"
        if magnitude < 1024:
            return f"{sign}{magnitude}"
    nanos = math.ceil(magnitude * 10**9)
    for suffix, exponent in sorted(_DECIMAL.items(), key=lambda kv: -kv[1]):
        factor = 10 ** (exponent + 9)
        if nanos % factor == 0:
            return f"{sign}{nanos // factor}{suffix}"
    raise AssertionError("unreachable: 'n' always divides")


def parse_quantity(text: str | int | float) -> Quantity:
    """Parse a quantity as found in manifests (numbers are accepted as YAML gives them)."""
    if isinstance(text, bool):
        raise QuantityError(f"invalid quantity {text!r}")
    if isinstance(text, (int, float)):
        return Quantity(text)
    return Quantity.parse(text)
