"""Validation time grows with the size of the object, not with the square of its errors:
deciding whether each schema rule may read its data once asked every error, so 100,000
errors took minutes (50,000 about five). Run in a child process whose timeout is only
a guard."""

from __future__ import annotations

import subprocess
import sys

from joiner.api.validation import NOT_CHECKED, is_malformed

MANY_ERRORS = """
from joiner import testing
from joiner.api.validation import validate_object

broken = [{"key": "a", "operator": "Bogus", "values": [1]} for _ in range(25_000)]
errors = validate_object(testing.nodepool(requirements=broken))
print(len(errors), errors[-2])
print(errors[-1])
"""


def test_fifty_thousand_errors_are_found_in_linear_time():
    result = subprocess.run(
        [sys.executable, "-c", MANY_ERRORS], capture_output=True, text=True, timeout=60
    )
    # two per requirement (operator, values[0]), one for the list's length, and the note
    # that the cross-field rules were not run (as the server stops them)
    last = "spec.template.spec.requirements[24999].values[0]: must be a string, got integer 1"
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == f"50002 {last} (quote it in YAML)\n{NOT_CHECKED}\n"


def test_a_path_is_malformed_when_an_error_is_at_or_below_it():
    errors = ["spec.limits[cpu.x]", "spec.template.spec.requirements[3].values[0]"]
    below = ["", "spec", "spec.limits", "spec.template.spec.requirements[3]"]
    assert [is_malformed(errors, path) for path in below] == [True] * 4
    elsewhere = ["spec.limit", "spec.template.spec.requirements[30]", "spec.weight", "status"]
    assert [is_malformed(errors, path) for path in elsewhere] == [False] * 4
    assert not is_malformed([], "")
