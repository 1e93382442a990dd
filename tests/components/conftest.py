"""Fixtures for the component tests; the mocked runtime lives in pulumi_harness."""

from collections.abc import Callable

import pytest
from pulumi_harness import Program, run_program


@pytest.fixture
def run() -> Callable[..., Program]:
    return run_program
