"""What every answer of ``joiner explain`` shares: its error for an object that is not
there, and how prices read."""

from __future__ import annotations


class NotFoundError(LookupError):
    """The object asked about is not in the snapshot (the message names kind and name)."""


def format_price(price: float | None) -> str:
    return "-" if price is None else f"${price:.4f}/h"
