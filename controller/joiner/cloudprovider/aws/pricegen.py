"""Rebuild the package's on-demand price tables from the Pricing API (a maintainer's tool).

    python -m joiner.cloudprovider.aws.pricegen --region us-east-1 --region eu-west-1

For each region it reads every on-demand EC2 price (``pricing:GetProducts``, the same
query and parsing as the controller's refresh) and writes ``<region>.json`` into the
tables' directory (``--output`` for another), with the source and today's date. A region
whose answer holds no price is an error, and no table is written for it: an empty table
would silently send the controller back to the estimate. It runs with boto3's usual
credentials; ``--endpoint-url`` points it at another Pricing API endpoint.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from joiner.cloudprovider.aws.clients import PRICING_REGION
from joiner.cloudprovider.aws.pricetables import TABLE_DIR, PriceTable, table_path, write_table
from joiner.cloudprovider.aws.pricing import PRODUCT_FILTERS, fetch_on_demand_prices

SOURCE = (
    "AWS Price List Query API (pricing:GetProducts, AmazonEC2, "
    + ", ".join(f"{field}={value}" for field, value in PRODUCT_FILTERS.items())
    + "), USD per hour"
)


class PriceGenError(Exception):
    """A region's table could not be built; the message names the region."""


def generate(pricing_client: Any, regions: Sequence[str], output: Path, today: str) -> list[Path]:
    """Fetch every region first, then write: a failure leaves every table as it was."""
    tables = []
    for region in regions:
        table_path(region, output)  # a bad region name fails before any request
        try:
            prices = fetch_on_demand_prices(pricing_client, region)
        except (BotoCoreError, ClientError) as error:
            raise PriceGenError(f"{region}: the Pricing API failed: {error}") from None
        if not prices:
            raise PriceGenError(f"{region}: the Pricing API returned no on-demand price")
        tables.append(PriceTable(region, SOURCE, today, prices))
    output.mkdir(parents=True, exist_ok=True)
    return [write_table(table, output) for table in tables]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m joiner.cloudprovider.aws.pricegen",
        description="Rebuild the built-in on-demand price tables from the AWS Pricing API.",
    )
    parser.add_argument(
        "--region", action="append", required=True, help="a region to rebuild (repeatable)"
    )
    parser.add_argument("--output", type=Path, default=TABLE_DIR, help="directory of tables")
    parser.add_argument("--endpoint-url", default=None, help="Pricing API endpoint (testing)")
    args = parser.parse_args(argv)
    client = boto3.Session().client(
        "pricing", region_name=PRICING_REGION, endpoint_url=args.endpoint_url
    )
    today = datetime.now(UTC).date().isoformat()
    try:
        written = generate(client, args.region, args.output, today)
    except (PriceGenError, ValueError) as error:
        print(f"pricegen: {error}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
