"""The boto3 clients the AWS provider talks through, built in one place so tests and
the simulator can point them at moto (``endpoint_url``) and production at AWS."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config

# The Pricing API is served from a few regions only; us-east-1 answers for all.
PRICING_REGION = "us-east-1"


@dataclass
class AWSClients:
    ec2: Any
    ssm: Any
    iam: Any
    pricing: Any | None = None  # None: no pricing access (ISOLATED_VPC)

    @classmethod
    def create(
        cls,
        region: str,
        session: boto3.Session | None = None,
        endpoint_url: str | None = None,
        max_attempts: int = 5,
        with_pricing: bool = True,
    ) -> AWSClients:
        session = session or boto3.Session()
        config = Config(retries={"max_attempts": max_attempts, "mode": "standard"})

        def client(service: str, client_region: str = region) -> Any:
            return session.client(
                service, region_name=client_region, endpoint_url=endpoint_url, config=config
            )

        return cls(
            ec2=client("ec2"),
            ssm=client("ssm"),
            iam=client("iam"),
            pricing=client("pricing", PRICING_REGION) if with_pricing else None,
        )
