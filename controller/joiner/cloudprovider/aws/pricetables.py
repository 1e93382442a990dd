"""The on-demand price tables shipped inside the package: one JSON file per region in
``prices/`` beside this module, each with the prices' source and date.

The AWS provider prices on-demand offerings from them before the first Pricing API answer,
whenever the API fails and with ``ISOLATED_VPC`` [SPEC 5]. A region without a table of
its own uses us-east-1's, as upstream Karpenter does: the relative prices of types (what
ranks them) hardly differ between regions, and a list price of the same type beats a
model of it. ``python -m joiner.cloudprovider.aws.pricegen`` rebuilds the tables from the
Pricing API (docs/aws.md).

A table file::

    {"region": "us-east-1", "source": "...", "as_of": "YYYY-MM-DD",
     "prices": {"m5.large": 0.096, ...}}
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from pathlib import Path

TABLE_DIR = Path(__file__).with_name("prices")
FALLBACK_REGION = "us-east-1"
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-[0-9]+$")


@dataclass(frozen=True)
class PriceTable:
    """On-demand USD per hour by instance type in one region, with where it came from."""

    region: str
    source: str
    as_of: str  # the day the prices were read, YYYY-MM-DD
    prices: dict[str, float]


def load_price_file(path: str | Path) -> dict[str, float]:
    """A price table: ``{"prices": {type: usd_per_hour}}`` or a flat ``{type: price}``."""
    raw = json.loads(Path(path).read_text())
    table = raw.get("prices", raw) if isinstance(raw, dict) else None
    if not isinstance(table, dict):
        raise ValueError(f"{path}: expected an object mapping instance types to prices")
    out = {}
    for name, price in table.items():
        if not isinstance(price, (int, float)) or price < 0:
            raise ValueError(f"{path}: price of {name!r} must be a number >= 0, got {price!r}")
        out[name] = float(price)
    return out


def table_path(region: str, directory: Path = TABLE_DIR) -> Path:
    if not _REGION.match(region):
        raise ValueError(f"region: {region!r} is not an AWS region such as us-east-1")
    return directory / f"{region}.json"


def regions(directory: Path = TABLE_DIR) -> list[str]:
    """The regions that have a table of their own."""
    return sorted(path.stem for path in directory.glob("*.json"))


def read_table(path: Path) -> PriceTable:
    """A table file; a ValueError naming the file and field when it is malformed."""
    raw = json.loads(path.read_text())
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: expected an object with region, source, as_of and prices")
    for field in ("region", "source", "as_of"):
        if not isinstance(raw.get(field), str) or not raw[field]:
            raise ValueError(f"{path}: {field} must be a non-empty string")
    try:
        date.fromisoformat(raw["as_of"])
    except ValueError:
        raise ValueError(f"{path}: as_of must be a date YYYY-MM-DD, got {raw['as_of']!r}") from None
    if path.stem != raw["region"]:
        raise ValueError(f"{path}: region {raw['region']!r} does not match the file name")
    if not isinstance(raw.get("prices"), dict) or not raw["prices"]:
        raise ValueError(f"{path}: prices must be a non-empty object {{type: usd_per_hour}}")
    return PriceTable(raw["region"], raw["source"], raw["as_of"], load_price_file(path))


def write_table(table: PriceTable, directory: Path = TABLE_DIR) -> Path:
    """Write ``table`` as ``<region>.json`` (types sorted, one per line: small diffs)."""
    path = table_path(table.region, directory)
    document = {
        "region": table.region,
        "source": table.source,
        "as_of": table.as_of,
        "prices": dict(sorted(table.prices.items())),
    }
    path.write_text(json.dumps(document, indent=1) + "\n")
    return path


def builtin_table(region: str) -> PriceTable:
    """The shipped table for ``region``, else us-east-1's (see the module docstring)."""
    path = table_path(region)
    return _read_shipped(path if path.is_file() else table_path(FALLBACK_REGION))


@lru_cache(maxsize=8)
def _read_shipped(path: Path) -> PriceTable:
    """Read once per process: every provider of the region shares the (unchanging) file."""
    return read_table(path)
