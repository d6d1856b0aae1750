"""A number as every text output writes it (``rlio show``, ``diff``, ``compare``, ``query``).

One form everywhere, so the same value reads the same in each command: integers in full, other
numbers with six significant digits (``1e-05``, ``0.20001``, ``1.1``), non-finite numbers as the
JSON tokens rlio reads (``NaN``, ``Infinity``, ``-Infinity``).
"""

from __future__ import annotations

import math


def number_text(value: float) -> str:
    """``value`` (an int or float, not a bool) as text: ``3``, ``1e-05``, ``1.1``, ``NaN``."""
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.6g}"
