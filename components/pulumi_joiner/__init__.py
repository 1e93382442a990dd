"""Pulumi components that ship Joiner as an infrastructure module."""
