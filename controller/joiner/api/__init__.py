"""Karpenter v1 API objects, labels, quantities and the requirements algebra."""
