"""Joiner: a Karpenter-compatible node autoscaler for Amazon EKS."""

__version__ = "0.1.0"
