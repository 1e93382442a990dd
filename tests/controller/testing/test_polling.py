"""joiner.testing.polling: the first truthy value, or a timeout that names the wait."""

from __future__ import annotations

import pytest
from joiner.testing.polling import wait_for


def test_returns_the_first_truthy_value() -> None:
    answers = iter([None, [], {"node": "n1"}, "later"])
    assert wait_for(lambda: next(answers), "a node", timeout=5, interval=0) == {"node": "n1"}


def test_a_timeout_names_what_was_awaited_after_one_last_look() -> None:
    looks = []
    with pytest.raises(AssertionError, match=r"^timed out waiting for the pods to run$"):
        wait_for(lambda: looks.append(1), "the pods to run", timeout=0, interval=0)
    assert looks == [1]
