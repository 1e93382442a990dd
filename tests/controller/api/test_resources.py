"""Resource lists in integer milli-units."""

import pytest
from joiner.api import resources as res
from joiner.api.quantity import QuantityError

GI = 2**30 * 1000  # one GiB in milli-bytes


def test_parse_resource_list_gives_milli_units() -> None:
    parsed = res.parse_resource_list(
        {"cpu": "1500m", "memory": "1Gi", "pods": 110, "nvidia.com/gpu": "1", "ephemeral": 0.5}
    )
    assert parsed == {
        "cpu": 1500,
        "memory": GI,
        "pods": 110_000,
        "nvidia.com/gpu": 1000,
        "ephemeral": 500,
    }


def test_parse_resource_list_of_nothing_is_empty() -> None:
    assert res.parse_resource_list(None) == {}
    assert res.parse_resource_list({}) == {}


def test_parse_resource_list_names_the_bad_entry() -> None:
    with pytest.raises(QuantityError, match=r"resource 'memory': invalid quantity '1 GB'"):
        res.parse_resource_list({"cpu": "1", "memory": "1 GB"})
    with pytest.raises(QuantityError, match="must be a mapping, got list"):
        res.parse_resource_list(["cpu"])  # type: ignore[arg-type]


def test_format_resource_list_is_canonical_and_sorted() -> None:
    formatted = res.format_resource_list(
        {"pods": 110_000, "memory": 3 * GI // 2, "cpu": 1500, "ephemeral-storage": 20 * GI}
    )
    assert formatted == {
        "cpu": "1500m",
        "ephemeral-storage": "20Gi",
        "memory": "1536Mi",
        "pods": "110",
    }
    assert list(formatted) == ["cpu", "ephemeral-storage", "memory", "pods"]


def test_format_then_parse_round_trips() -> None:
    resources = {"cpu": 3920, "memory": 15_000_000 * 1024 * 1000, "pods": 58_000}
    assert res.parse_resource_list(res.format_resource_list(resources)) == resources
    assert res.format_resource_list({"memory": 2000 * 1000}) == {"memory": "2000"}


def test_milli_and_to_quantity() -> None:
    assert res.milli("500m") == 500
    assert res.milli("1Gi") == GI
    assert res.milli(2) == 2000
    assert str(res.to_quantity("memory", GI)) == "1Gi"
    assert str(res.to_quantity("cpu", 250)) == "250m"
    assert res.to_float("cpu", 1500) == 1.5


def test_add_sums_every_name() -> None:
    assert res.add({"cpu": 1000, "memory": 5}, {"cpu": 500, "pods": 1000}, {}) == {
        "cpu": 1500,
        "memory": 5,
        "pods": 1000,
    }
    assert res.add() == {}
    assert res.sum_lists([{"cpu": 1}, {"cpu": 2}]) == {"cpu": 3}


def test_add_does_not_mutate_its_inputs() -> None:
    first = {"cpu": 1}
    res.add(first, {"cpu": 2})
    assert first == {"cpu": 1}


def test_subtract_is_over_the_first_lists_names() -> None:
    assert res.subtract({"cpu": 4000, "memory": 10}, {"cpu": 1500, "pods": 3}) == {
        "cpu": 2500,
        "memory": 10,
    }
    assert res.subtract({"cpu": 1000}, {"cpu": 1500}) == {"cpu": -500}


def test_max_of_takes_the_largest_per_name() -> None:
    assert res.max_of({"cpu": 1000, "memory": 5}, {"cpu": 500, "memory": 8, "pods": 1}) == {
        "cpu": 1000,
        "memory": 8,
        "pods": 1,
    }
    # A negative amount still counts when it is the only one.
    assert res.max_of({"cpu": -1}) == {"cpu": -1}
    assert res.max_of() == {}


@pytest.mark.parametrize(
    ("requests", "available", "fits", "exceeded"),
    [
        ({"cpu": 1000}, {"cpu": 1000}, True, []),
        ({"cpu": 1001}, {"cpu": 1000}, False, ["cpu"]),
        ({"cpu": 500, "memory": 10}, {"cpu": 1000, "memory": 9}, False, ["memory"]),
        ({"nvidia.com/gpu": 1000}, {"cpu": 1000}, False, ["nvidia.com/gpu"]),
        ({"nvidia.com/gpu": 0}, {"cpu": 1000}, True, []),  # a zero request needs nothing
        ({}, {}, True, []),
        ({"pods": 2000, "cpu": 5000}, {"cpu": 1000, "pods": 1000}, False, ["cpu", "pods"]),
    ],
)
def test_fits_and_exceeded(
    requests: dict[str, int], available: dict[str, int], fits: bool, exceeded: list[str]
) -> None:
    assert res.fits(requests, available) is fits
    assert res.exceeded(requests, available) == exceeded
