"""Fixtures of the simulator tests (the builders live in sim_builders)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from joiner.sim.result import SimulationResult
from sim_builders import BASE_SCENARIO, build_sample_result


@pytest.fixture
def scenario_doc() -> dict[str, Any]:
    """A fresh copy of a valid scenario document, to break one field at a time."""
    return copy.deepcopy(BASE_SCENARIO)


@pytest.fixture
def sample_result() -> SimulationResult:
    return build_sample_result()
