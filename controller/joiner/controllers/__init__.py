"""Reconcilers, one job each."""
