"""The embedded AWS cloud's speed-ups (tag lookup, timestamp parsing) give the answers
moto and botocore give."""

from __future__ import annotations

import boto3
from botocore.parsers import DEFAULT_TIMESTAMP_PARSER
from joiner.sim.embedded_aws import _iso_timestamp, _tags_by_id
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ec2.models import ec2_backends
from moto.ec2.models.core import TaggedEC2Resource

REGION = "us-east-1"


def test_tags_by_id_are_the_tags_moto_finds_by_scanning() -> None:
    with mock_aws():
        ec2 = boto3.client("ec2", region_name=REGION)
        ids = [ec2.create_vpc(CidrBlock=f"10.{i}.0.0/16")["Vpc"]["VpcId"] for i in range(3)]
        ec2.create_tags(Resources=ids[:2], Tags=[{"Key": "team", "Value": "web"}])
        ec2.create_tags(Resources=[ids[0]], Tags=[{"Key": "karpenter.sh/discovery", "Value": "a"}])
        backend = ec2_backends[DEFAULT_ACCOUNT_ID][REGION]
        vpcs = [backend.get_vpc(i) for i in ids]
        for vpc in vpcs:
            assert _tags_by_id(vpc) == TaggedEC2Resource.get_tags(vpc)
        assert [len(_tags_by_id(v)) for v in vpcs] == [2, 1, 0]
        assert _tags_by_id(vpcs[0])[1] == {
            "resource_id": ids[0],
            "key": "karpenter.sh/discovery",
            "value": "a",
            "resource_type": "vpc",
        }


def test_timestamps_are_read_as_botocore_reads_them() -> None:
    for text in ("2026-01-01T00:00:00.000Z", "2026-03-04T05:06:07+00:00", "1767225600"):
        assert _iso_timestamp(text) == DEFAULT_TIMESTAMP_PARSER(text)
