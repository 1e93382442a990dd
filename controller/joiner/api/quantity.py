"""Kubernetes resource quantities: parse, exact arithmetic, canonical formatting.

Grammar (k8s.io/apimachinery resource.Quantity):
    <quantity> ::= <signedNumber><suffix>
    <number>   ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
    <suffix>   ::= Ki | Mi | Gi | Ti | Pi | Ei | n | u | m | "" | k | M | G | T | P | E
                 | e<signedInteger> | E<signedInteger>
Values are kept as exact ``Fraction``s, rounded away from zero to the nano when
parsed, as Kubernetes does. A quantity remembers its suffix style (DecimalSI,
BinarySI or DecimalExponent) and formats canonically in that style: the largest
suffix that keeps an integer mantissa ("1.5Gi" -> "1536Mi", "0.5" -> "500m",
"1e3" -> "1e3", "1.5e-3" -> "1500e-6"). The scheduler works on integer
milli-units (``to_milli``).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import total_ordering

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {exponent: suffix for suffix, exponent in _DECIMAL.items()}
_PATTERN = re.compile(
    r"(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE]?)"
)
# Far beyond any real resource; bounds the work a hostile exponent can cause.
_MAX_EXPONENT = 1000
_NANO = 10**9


class QuantityError(ValueError):
    pass


@total_ordering
class Quantity:
    """An exact resource amount that remembers the suffix style it was written in."""

    __slots__ = ("_style", "_value")

    def __init__(
        self,
        value: int | float | str | Fraction | Quantity,
        binary: bool = False,
        *,
        style: str | None = None,
    ) -> None:
        if isinstance(value, Quantity):
            self._value, self._style = value._value, value._style
        elif isinstance(value, str):
            parsed = Quantity.parse(value)
            self._value, self._style = parsed._value, parsed._style
        elif isinstance(value, float):
            self._value = Fraction(value).limit_denominator(_NANO)
            self._style = style or (BINARY_SI if binary else DECIMAL_SI)
        else:
            self._value = Fraction(value)
            self._style = style or (BINARY_SI if binary else DECIMAL_SI)

    @staticmethod
    def parse(text: str) -> Quantity:
        if not isinstance(text, str):
            raise QuantityError(f"quantity must be a string, got {type(text).__name__}")
        match = _PATTERN.fullmatch(text)
        if not match:
            raise QuantityError(
                f"invalid quantity {text!r} (expected a number with an optional suffix "
                "Ki|Mi|Gi|Ti|Pi|Ei, n|u|m|k|M|G|T|P|E or an exponent such as e3)"
            )
        number, suffix = Fraction(match["num"]), match["suffix"]
        if suffix in _BINARY:
            return Quantity(_round_to_nano(number * _BINARY[suffix]), style=BINARY_SI)
        if suffix[:1] in ("e", "E") and len(suffix) > 1:
            exponent = int(suffix[1:])
            if abs(exponent) > _MAX_EXPONENT:
                raise QuantityError(f"invalid quantity {text!r}: exponent out of range")
            return Quantity(
                _round_to_nano(number * Fraction(10) ** exponent), style=DECIMAL_EXPONENT
            )
        return Quantity(_round_to_nano(number * Fraction(10) ** _DECIMAL[suffix]), style=DECIMAL_SI)

    @property
    def value(self) -> Fraction:
        return self._value

    @property
    def style(self) -> str:
        """DecimalSI, BinarySI or DecimalExponent: how the quantity is formatted."""
        return self._style

    @property
    def binary(self) -> bool:
        return self._style == BINARY_SI

    def to_milli(self) -> int:
        """Milli-units, rounded away from zero as Kubernetes' MilliValue does."""
        milli = self._value * 1000
        return math.ceil(milli) if milli >= 0 else math.floor(milli)

    def __float__(self) -> float:
        return float(self._value)

    # Kubernetes keeps the receiver's style unless the receiver is zero.
    def _combined_style(self, other: Quantity) -> str:
        return other._style if self._value == 0 else self._style

    def __add__(self, other: Quantity | int | str) -> Quantity:
        other = Quantity(other)
        return Quantity(self._value + other._value, style=self._combined_style(other))

    def __radd__(self, other: int) -> Quantity:
        # Lets sum() start from 0.
        return Quantity(other) + self

    def __sub__(self, other: Quantity | int | str) -> Quantity:
        other = Quantity(other)
        return Quantity(self._value - other._value, style=self._combined_style(other))

    def __mul__(self, factor: int | Fraction) -> Quantity:
        return Quantity(self._value * factor, style=self._style)

    def __neg__(self) -> Quantity:
        return Quantity(-self._value, style=self._style)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (Quantity, int, Fraction, str)):
            return NotImplemented
        try:
            return self._value == Quantity(other)._value
        except QuantityError:
            return False

    def __lt__(self, other: Quantity | int | str) -> bool:
        return self._value < Quantity(other)._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    def __str__(self) -> str:
        return format_quantity(self._value, style=self._style)


def _round_to_nano(value: Fraction) -> Fraction:
    """Kubernetes keeps nano precision, rounding finer amounts away from zero."""
    nanos = value * _NANO
    rounded = math.ceil(nanos) if nanos >= 0 else math.floor(nanos)
    return Fraction(rounded, _NANO)


def format_quantity(value: Fraction, binary: bool = False, *, style: str | None = None) -> str:
    """The canonical string of ``value`` in ``style`` (BinarySI when ``binary``).

    BinarySI is used only for whole amounts of at least 1024 in magnitude (a
    power-of-1024 suffix, or none: 2000 stays "2000"); anything else falls back
    to DecimalSI. Decimal styles pick the exponent (a multiple of 3) that leaves
    the smallest integer mantissa; DecimalSI beyond "E" writes "e21". Amounts
    finer than a nano are rounded away from zero to the nano.
    """
    style = style or (BINARY_SI if binary else DECIMAL_SI)
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    if style == BINARY_SI and magnitude >= 1024 and magnitude.denominator == 1:
        return sign + _binary_form(int(magnitude))
    mantissa, exponent = _decimal_parts(math.ceil(magnitude * _NANO))
    if style in (DECIMAL_SI, BINARY_SI):
        suffix = _DECIMAL_SUFFIX.get(exponent, f"e{exponent}")
    else:
        suffix = f"e{exponent}" if exponent else ""
    return f"{sign}{mantissa}{suffix}"


def _binary_form(amount: int) -> str:
    for suffix, factor in reversed(_BINARY.items()):
        if amount % factor == 0:
            return f"{amount // factor}{suffix}"
    return str(amount)


def _decimal_parts(nanos: int) -> tuple[int, int]:
    """``nanos * 10**-9`` as ``mantissa * 10**exponent`` with ``exponent % 3 == 0``
    and the exponent as large as an integer mantissa allows."""
    mantissa, exponent = nanos, -9
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    while exponent % 3:
        mantissa *= 10
        exponent -= 1
    return mantissa, exponent


def parse_quantity(text: str | int | float) -> Quantity:
    """Parse a quantity as found in manifests (numbers are accepted as YAML gives them)."""
    if isinstance(text, bool):
        raise QuantityError(f"invalid quantity {text!r}")
    if isinstance(text, (int, float)):
        if isinstance(text, float) and not math.isfinite(text):
            raise QuantityError(f"invalid quantity {text!r}")
        return Quantity(text)
    return Quantity.parse(text)
