"""The price-table generator against recorded Pricing API answers (pricing_api.py), and the
tables shipped in the package."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from joiner.cloudprovider.aws.pricegen import SOURCE, PriceGenError, generate, main
from joiner.cloudprovider.aws.pricetables import (
    FALLBACK_REGION,
    TABLE_DIR,
    builtin_table,
    read_table,
    regions,
)
from pricing_api import RecordedPricingAPI

TODAY = "2026-08-01"
US_EAST_1 = {
    "m5.large": 0.096,
    "c6i.xlarge": 0.17,
    "r7g.2xlarge": 0.4284,
    "t3.micro": 0.0104,
    "x8g.metal-48xl": 19.6224,
}  # the recorded m5.xlarge is listed at $0: no price
EXPECTED_FILTERS = {
    "operatingSystem": "Linux",
    "preInstalledSw": "NA",
    "tenancy": "Shared",
    "capacitystatus": "Used",
    "marketoption": "OnDemand",
}


def pricing_client(url: str) -> object:
    session = boto3.Session(
        aws_access_key_id="maintainer", aws_secret_access_key="maintainer", region_name="us-east-1"
    )
    return session.client("pricing", endpoint_url=url)


def test_tables_are_rebuilt_from_every_page_of_the_pricing_api(tmp_path: Path) -> None:
    with RecordedPricingAPI() as api:
        written = generate(pricing_client(api.url), ["us-east-1", "eu-west-1"], tmp_path, TODAY)
    assert written == [tmp_path / "us-east-1.json", tmp_path / "eu-west-1.json"]
    table = read_table(tmp_path / "us-east-1.json")
    assert (table.region, table.source, table.as_of) == ("us-east-1", SOURCE, TODAY)
    assert table.prices == US_EAST_1
    eu_west_1 = read_table(tmp_path / "eu-west-1.json").prices
    assert eu_west_1 == {"m5.large": 0.107, "c6i.xlarge": 0.192}
    # two pages for us-east-1 (the second asked by the first's NextToken), one for eu-west-1
    assert [r.get("NextToken") for r in api.requests] == [
        None,
        "eyJ2ZXJzaW9uIjoidjEiLCJwYWdlIjoyfQ==",
        None,
    ]
    for request, region in zip(api.requests, ["us-east-1", "us-east-1", "eu-west-1"], strict=True):
        assert request["ServiceCode"] == "AmazonEC2"
        assert request["FormatVersion"] == "aws_v1"
        assert request["MaxResults"] == 100
        assert all(f["Type"] == "TERM_MATCH" for f in request["Filters"])
        filters = {f["Field"]: f["Value"] for f in request["Filters"]}
        assert filters == {**EXPECTED_FILTERS, "regionCode": region}


def test_the_command_writes_the_tables_and_names_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "maintainer")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "maintainer")
    with RecordedPricingAPI() as api:
        code = main(["--region", "eu-west-1", "--output", str(tmp_path), "--endpoint-url", api.url])
    assert code == 0
    assert capsys.readouterr().out == f"{tmp_path / 'eu-west-1.json'}\n"
    assert json.loads((tmp_path / "eu-west-1.json").read_text())["prices"] == {
        "c6i.xlarge": 0.192,
        "m5.large": 0.107,
    }


def test_a_region_without_prices_fails_and_writes_nothing(tmp_path: Path) -> None:
    with (
        RecordedPricingAPI() as api,
        pytest.raises(PriceGenError, match=r"^ap-south-2: the Pricing API returned no on-demand"),
    ):
        generate(pricing_client(api.url), ["us-east-1", "ap-south-2"], tmp_path, TODAY)
    assert list(tmp_path.iterdir()) == []  # not even the good region's table


def test_a_failing_api_is_named_with_the_region(tmp_path: Path) -> None:
    with RecordedPricingAPI() as api:
        api.fail_with = 400
        with pytest.raises(PriceGenError, match=r"^eu-west-1: the Pricing API failed: .*recorded"):
            generate(pricing_client(api.url), ["eu-west-1"], tmp_path, TODAY)
    assert list(tmp_path.iterdir()) == []


def test_a_bad_region_name_is_refused_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with RecordedPricingAPI() as api:
        code = main(["--region", "../etc", "--output", str(tmp_path), "--endpoint-url", api.url])
        assert api.requests == []
    assert code == 1
    assert capsys.readouterr().err == (
        "pricegen: region: '../etc' is not an AWS region such as us-east-1\n"
    )


# -- the shipped tables ------------------------------------------------------------------


def test_shipped_tables_name_their_source_and_date() -> None:
    assert FALLBACK_REGION in regions()
    for region in regions():
        table = read_table(TABLE_DIR / f"{region}.json")
        assert table.region == region
        assert table.source and table.as_of
        assert all(price > 0 for price in table.prices.values()), region


def test_a_region_without_a_table_uses_us_east_1s() -> None:
    assert "ap-south-2" not in regions()
    assert builtin_table("ap-south-2") == builtin_table("us-east-1")
    assert builtin_table("us-east-1").prices["m5.large"] == 0.096


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"source": "s", "as_of": "2026-01-01", "prices": {}}, "region must be a non-empty"),
        ({"region": "us-east-1", "as_of": "2026-01-01", "prices": {}}, "source must be"),
        ({"region": "us-east-1", "source": "s", "as_of": "July", "prices": {}}, "as_of must be"),
        ({"region": "eu-west-1", "source": "s", "as_of": "2026-01-01"}, "does not match"),
        ({"region": "us-east-1", "source": "s", "as_of": "2026-01-01"}, "prices must be"),
        (
            {"region": "us-east-1", "source": "s", "as_of": "2026-01-01", "prices": {"a": -1}},
            "price of 'a' must be a number >= 0",
        ),
    ],
)
def test_a_malformed_table_names_the_field(tmp_path: Path, document: dict, message: str) -> None:
    path = tmp_path / "us-east-1.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match=message):
        read_table(path)
