"""The production wiring round trips seed the session's moto server (``moto_url``) like a
cluster's AWS account with the AWS provider tests' seeding module (``aws_account``), and
run against the local Kubernetes API server (``apiserver``) or a real control plane of
their own (``envtest_assets``); the session fixtures live in tests/conftest.py."""

from __future__ import annotations

import sys
from pathlib import Path

import boto3
import pytest

# The seeding helpers live with the AWS provider tests; one copy, imported from there.
sys.path.insert(
    0, str(Path(__file__).resolve().parents[1] / "controller" / "cloudprovider" / "aws")
)

from aws_moto_seed import CLUSTER, K8S_VERSION, REGION, seed_env


@pytest.fixture
def aws_account(moto_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """A seeded account with the EKS cluster the controller describes at startup."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    env = seed_env(moto_url)
    eks = boto3.client("eks", region_name=REGION, endpoint_url=moto_url)
    eks.create_cluster(
        name=CLUSTER,
        version=K8S_VERSION,
        roleArn="arn:aws:iam::123456789012:role/cluster",
        resourcesVpcConfig={"subnetIds": sorted(env.subnets.values())},
    )
    return moto_url
