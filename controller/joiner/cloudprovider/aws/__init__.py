"""The AWS cloud provider: boto3 against EC2, SSM, IAM and the Pricing API.

Build one with ``AWSCloudProvider(clients, clock, cluster, region, nodeclasses)``; see
docs/aws.md for discovery, AMI selection, pricing and the IAM actions it needs.
"""

from joiner.cloudprovider.aws.clients import AWSClients
from joiner.cloudprovider.aws.cluster import ClusterInfo
from joiner.cloudprovider.aws.instancetypes import InstanceTypeCatalogue
from joiner.cloudprovider.aws.nodeclass import NodeClassResolver
from joiner.cloudprovider.aws.offerings import UnavailableOfferings
from joiner.cloudprovider.aws.pricetables import load_price_file
from joiner.cloudprovider.aws.pricing import PricingProvider
from joiner.cloudprovider.aws.provider import AWSCloudProvider

__all__ = [
    "AWSClients",
    "AWSCloudProvider",
    "ClusterInfo",
    "InstanceTypeCatalogue",
    "NodeClassResolver",
    "PricingProvider",
    "UnavailableOfferings",
    "load_price_file",
]
