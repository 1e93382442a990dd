"""Quantities: the Kubernetes grammar, exact values and apimachinery's canonical form."""

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from joiner.api.quantity import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    Quantity,
    QuantityError,
    format_quantity,
    parse_quantity,
)

# (input, exact value, canonical string), as apimachinery's String() gives them.
CANONICAL = [
    ("0", Fraction(0), "0"),
    ("-0", Fraction(0), "0"),
    ("0Ki", Fraction(0), "0"),
    ("1", Fraction(1), "1"),
    ("+1", Fraction(1), "1"),
    ("-1", Fraction(-1), "-1"),
    ("1.0", Fraction(1), "1"),
    ("5.", Fraction(5), "5"),
    (".5", Fraction(1, 2), "500m"),
    ("0.5", Fraction(1, 2), "500m"),
    ("1.5", Fraction(3, 2), "1500m"),
    ("0.1", Fraction(1, 10), "100m"),
    ("1.2345", Fraction(12345, 10000), "1234500u"),
    ("1000m", Fraction(1), "1"),
    ("1500m", Fraction(3, 2), "1500m"),
    ("100m", Fraction(1, 10), "100m"),
    ("1n", Fraction(1, 10**9), "1n"),
    ("1000n", Fraction(1, 10**6), "1u"),
    ("1000u", Fraction(1, 1000), "1m"),
    ("1k", Fraction(1000), "1k"),
    ("1000", Fraction(1000), "1k"),
    ("1024", Fraction(1024), "1024"),
    ("2000", Fraction(2000), "2k"),
    ("1000k", Fraction(10**6), "1M"),
    ("1500k", Fraction(1500000), "1500k"),
    ("1M", Fraction(10**6), "1M"),
    ("1G", Fraction(10**9), "1G"),
    ("1T", Fraction(10**12), "1T"),
    ("1P", Fraction(10**15), "1P"),
    ("1E", Fraction(10**18), "1E"),
    ("1000E", Fraction(10**21), "1e21"),
    # BinarySI: a power-of-1024 suffix when whole and at least 1024, else DecimalSI.
    ("1Ki", Fraction(1024), "1Ki"),
    ("100Mi", Fraction(100 * 2**20), "100Mi"),
    ("1.5Gi", Fraction(3 * 2**29), "1536Mi"),
    ("-1.5Gi", Fraction(-3 * 2**29), "-1536Mi"),
    ("2048Ki", Fraction(2**21), "2Mi"),
    ("1024Mi", Fraction(2**30), "1Gi"),
    ("1Ti", Fraction(2**40), "1Ti"),
    ("1Pi", Fraction(2**50), "1Pi"),
    ("1Ei", Fraction(2**60), "1Ei"),
    ("0.5Ki", Fraction(512), "512"),
    ("0.1Ki", Fraction(512, 5), "102400m"),
    ("1.5Ki", Fraction(1536), "1536"),
    ("1.953125Ki", Fraction(2000), "2000"),
    ("1.0009765625Ki", Fraction(1025), "1025"),
    ("1.0001Ki", Fraction(10241024, 10000), "1024102400u"),
    # DecimalExponent keeps its style: the exponent is a multiple of 3.
    ("1e3", Fraction(1000), "1e3"),
    ("1E3", Fraction(1000), "1e3"),
    ("1e+3", Fraction(1000), "1e3"),
    ("12e6", Fraction(12 * 10**6), "12e6"),
    ("100e6", Fraction(10**8), "100e6"),
    ("1.5e3", Fraction(1500), "1500"),
    ("1e0", Fraction(1), "1"),
    ("1.5e-3", Fraction(15, 10**4), "1500e-6"),
    ("1e-3", Fraction(1, 1000), "1e-3"),
    ("-2e9", Fraction(-2 * 10**9), "-2e9"),
    # Finer than a nano rounds away from zero to the nano.
    ("0.9n", Fraction(1, 10**9), "1n"),
    ("-0.9n", Fraction(-1, 10**9), "-1n"),
    ("1.23456789012", Fraction(1234567891, 10**9), "1234567891n"),
    ("1e-10", Fraction(1, 10**9), "1e-9"),
]


@pytest.mark.parametrize(("text", "value", "canonical"), CANONICAL)
def test_parse_and_canonical_form(text: str, value: Fraction, canonical: str) -> None:
    quantity = Quantity.parse(text)
    assert quantity.value == value
    assert str(quantity) == canonical
    assert Quantity.parse(canonical) == quantity


@pytest.mark.parametrize(
    ("text", "style"),
    [("1", DECIMAL_SI), ("1m", DECIMAL_SI), ("1Ki", BINARY_SI), ("1e3", DECIMAL_EXPONENT)],
)
def test_style_is_remembered(text: str, style: str) -> None:
    assert Quantity.parse(text).style == style


GARBAGE = [
    "",
    " ",
    " 1",
    "1 ",
    "1 Gi",
    ".",
    "+",
    "-",
    "Ki",
    "1.2.3",
    "1e",
    "1e+",
    "1e1.5",
    "1ki",
    "1KI",
    "1K",
    "1Gb",
    "1mi",
    "0x10",
    "1_000",
    "++1",
    "abc",
    "1e1001",
    "\u0661",  # a non-ASCII digit
]


@pytest.mark.parametrize("text", GARBAGE)
def test_garbage_is_rejected_with_the_input_named(text: str) -> None:
    with pytest.raises(QuantityError) as raised:
        Quantity.parse(text)
    assert repr(text) in str(raised.value)


@pytest.mark.parametrize("value", [None, True, float("nan"), float("inf"), [1]])
def test_parse_quantity_rejects_non_quantities(value: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("raw", "canonical"), [(2, "2"), (0.5, "500m"), (0.1, "100m"), ("250m", "250m")]
)
def test_parse_quantity_accepts_yaml_numbers(raw: object, canonical: str) -> None:
    assert str(parse_quantity(raw)) == canonical  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "milli"),
    [("1", 1000), ("1.5", 1500), ("250m", 250), ("1Ki", 1024000), ("1u", 1), ("-1u", -1)],
)
def test_to_milli_rounds_away_from_zero(text: str, milli: int) -> None:
    assert Quantity(text).to_milli() == milli


def test_arithmetic_is_exact_and_keeps_the_receivers_style() -> None:
    assert str(Quantity("1Gi") + Quantity("512Mi")) == "1536Mi"
    assert str(Quantity("1Gi") - Quantity("1Mi")) == "1023Mi"
    assert str(Quantity("100m") + Quantity("200m")) == "300m"
    assert str(Quantity("0.1") + Quantity("0.2")) == "300m"
    assert (Quantity("0.1") + Quantity("0.2")).value == Fraction(3, 10)
    assert str(Quantity("1k") + Quantity("1Ki")) == "2024"
    # A zero receiver takes the other side's style.
    assert str(Quantity(0) + Quantity("1Gi")) == "1Gi"
    assert str(sum([Quantity("1Gi"), Quantity("1Gi")])) == "2Gi"
    assert str(Quantity("1Gi") * 3) == "3Gi"
    assert str(-Quantity("1Gi")) == "-1Gi"


def test_comparison_and_hash_follow_the_value() -> None:
    assert Quantity("1Ki") == Quantity("1024")
    assert Quantity("1Ki") == "1024"
    assert Quantity("1Ki") == 1024
    assert Quantity("1k") < Quantity("1Ki") < Quantity("1.1k")
    assert Quantity("999m") < 1
    assert Quantity("-1") < Quantity("0")
    assert sorted(map(Quantity, ["1Gi", "1G", "500Mi", "2"]), key=lambda q: q) == [
        Quantity("2"),
        Quantity("500Mi"),
        Quantity("1G"),
        Quantity("1Gi"),
    ]
    assert hash(Quantity("1Ki")) == hash(Quantity("1024"))
    assert Quantity("1") != "not a quantity"
    assert Quantity("1") != 1.5  # floats are not compared implicitly


def test_format_quantity_takes_a_style() -> None:
    assert format_quantity(Fraction(2**30), binary=True) == "1Gi"
    assert format_quantity(Fraction(2**30)) == "1073741824"
    assert format_quantity(Fraction(1000), style=DECIMAL_EXPONENT) == "1e3"
    assert format_quantity(Fraction(1, 3)) == "333333334n"


# --- properties ---------------------------------------------------------------

_nanos = st.integers(min_value=-(10**24), max_value=10**24)
_styles = st.sampled_from([DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT])


@given(_nanos, _styles)
def test_format_then_parse_is_identity(nanos: int, style: str) -> None:
    value = Fraction(nanos, 10**9)
    text = format_quantity(value, style=style)
    assert Quantity.parse(text).value == value
    # Canonical strings are fixed points, except a BinarySI amount with no power-of-1024
    # suffix ("3125000"): it reads back as DecimalSI ("3125k"), as in Kubernetes.
    expected = format_quantity(value) if style == BINARY_SI and text[-1].isdigit() else text
    assert str(Quantity.parse(text)) == expected


def test_a_binary_amount_without_a_binary_suffix_reads_back_as_decimal() -> None:
    text = format_quantity(Fraction(3_125_000), style=BINARY_SI)
    assert text == "3125000"
    assert str(Quantity.parse(text)) == "3125k"


@given(st.integers(min_value=-(2**70), max_value=2**70), st.sampled_from(["", "Ki", "Mi", "Gi"]))
def test_binary_values_round_trip(amount: int, suffix: str) -> None:
    quantity = Quantity.parse(f"{amount}{suffix}")
    assert Quantity.parse(str(quantity)) == quantity


@given(_nanos, _nanos)
def test_ordering_is_consistent_with_values(a: int, b: int) -> None:
    qa = Quantity.parse(format_quantity(Fraction(a, 10**9)))
    qb = Quantity.parse(format_quantity(Fraction(b, 10**9), style=BINARY_SI))
    assert (qa < qb) == (a < b)
    assert (qa == qb) == (a == b)
    assert (qa + qb).value == Fraction(a + b, 10**9)
    assert (qa - qb).value == Fraction(a - b, 10**9)
