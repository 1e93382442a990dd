"""Resource lists as the scheduler sees them: ``dict[name, int]`` in milli-units.

``{"cpu": 1500, "memory": 536870912000}`` is 1.5 CPU and 512Mi. Integer
milli-units keep arithmetic exact and fast; convert at the Kubernetes edge
with ``parse_resource_list`` / ``format_resource_list``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from functools import lru_cache

from joiner.api.quantity import Quantity, QuantityError, format_quantity, parse_quantity

ResourceList = dict[str, int]

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"
NODES = "nodes"  # a NodePool limit, not a node resource
# Extended resources advertised by device plugins on accelerated instances.
NVIDIA_GPU = "nvidia.com/gpu"
AMD_GPU = "amd.com/gpu"
AWS_NEURON = "aws.amazon.com/neuron"
HABANA_GAUDI = "habana.ai/gaudi"

# Resources written in bytes are formatted with binary suffixes.
_BINARY_RESOURCES = frozenset({MEMORY, EPHEMERAL_STORAGE})


def parse_resource_list(raw: Mapping[str, str | int | float] | None) -> ResourceList:
    """``{"cpu": "1500m"}`` -> ``{"cpu": 1500}``; a bad entry raises QuantityError naming it."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise QuantityError(f"a resource list must be a mapping, got {type(raw).__name__}")
    parsed: ResourceList = {}
    for name, value in raw.items():
        try:
            parsed[name] = milli(value)
        except QuantityError as error:
            raise QuantityError(f"resource {name!r}: {error}") from None
    return parsed


def format_resource_list(resources: Mapping[str, int]) -> dict[str, str]:
    return {
        name: format_quantity(Fraction(milli, 1000), binary=name in _BINARY_RESOURCES)
        for name, milli in sorted(resources.items())
    }


def milli(value: str | int | float) -> int:
    """Milli-units of one quantity: ``milli("500m") == 500``, ``milli("1Gi") == 2**30 * 1000``."""
    if isinstance(value, str):
        return _milli_of_text(value)
    return parse_quantity(value).to_milli()


@lru_cache(maxsize=4096)
def _milli_of_text(value: str) -> int:
    """Parsing is slow, and clusters repeat the same few quantities everywhere."""
    return parse_quantity(value).to_milli()


def to_quantity(name: str, amount_milli: int) -> Quantity:
    return Quantity(Fraction(amount_milli, 1000), binary=name in _BINARY_RESOURCES)


def add(*lists: Mapping[str, int]) -> ResourceList:
    total: ResourceList = {}
    for resources in lists:
        for name, amount in resources.items():
            total[name] = total.get(name, 0) + amount
    return total


def subtract(a: Mapping[str, int], b: Mapping[str, int]) -> ResourceList:
    """``a - b`` over the names of ``a`` (names only in ``b`` are ignored)."""
    return {name: amount - b.get(name, 0) for name, amount in a.items()}


def max_of(*lists: Mapping[str, int]) -> ResourceList:
    result: ResourceList = {}
    for resources in lists:
        for name, amount in resources.items():
            if amount > result.get(name, 0) or name not in result:
                result[name] = amount
    return result


def fits(requests: Mapping[str, int], available: Mapping[str, int]) -> bool:
    """Every requested amount is within what is available (absent means zero)."""
    return all(amount <= available.get(name, 0) for name, amount in requests.items() if amount)


def exceeded(requests: Mapping[str, int], available: Mapping[str, int]) -> list[str]:
    """The names of the resources that do not fit, sorted."""
    return sorted(
        name for name, amount in requests.items() if amount and amount > available.get(name, 0)
    )


def sum_lists(lists: Iterable[Mapping[str, int]]) -> ResourceList:
    return add(*lists)


def to_float(name: str, amount_milli: int) -> float:
    """Cores for CPU, bytes for memory, units otherwise (for reports)."""
    return amount_milli / 1000
