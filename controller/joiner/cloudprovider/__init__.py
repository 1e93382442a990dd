"""Cloud providers behind one narrow port (``types.CloudProvider``)."""

from joiner.cloudprovider.types import (
    CloudProvider,
    CloudProviderError,
    InstanceType,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
    Offering,
    Overhead,
)

__all__ = [
    "CloudProvider",
    "CloudProviderError",
    "InstanceType",
    "InsufficientCapacityError",
    "NodeClaimNotFoundError",
    "NodeClassNotReadyError",
    "Offering",
    "Overhead",
]
