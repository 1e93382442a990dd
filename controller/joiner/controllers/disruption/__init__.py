"""Disruption [SPEC 7]: expiration, emptiness, drift and consolidation, within budgets."""
