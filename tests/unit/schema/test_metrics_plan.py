"""``int_bounds``: the bounds the C hot path judges an int by are exactly the schema's verdict.

For random subschemas of ``type``, ``minimum``, ``maximum`` and the exclusive bounds (ints and
floats, integer and number types), an int is inside the derived bounds exactly when jsonschema
accepts it; any other keyword leaves the verdict to the compiled statements (None).
"""

from __future__ import annotations

from typing import Any

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from rlio._schema.metrics_check import int_bounds

EDGES = st.integers(-5, 5) | st.floats(-5, 5, allow_nan=False) | st.sampled_from([2**63, -2**63])
SUBS = st.fixed_dictionaries({"type": st.sampled_from(["integer", "number", ["integer", "null"],
                                                       ["number", "string"]])},
                             optional={"minimum": EDGES, "maximum": EDGES,
                                       "exclusiveMinimum": EDGES, "exclusiveMaximum": EDGES,
                                       "title": st.just("t")})


@settings(max_examples=300, deadline=None)
@given(st.lists(SUBS, min_size=1, max_size=3), st.lists(st.integers(-8, 8) | st.sampled_from(
    [2**63 - 1, 2**63, -2**63, -2**63 - 1]), min_size=1, max_size=8))
def test_bounds_give_the_schema_verdict_on_ints(subs: list[dict[str, Any]],
                                                values: list[int]) -> None:
    """Every int is inside the derived bounds exactly when every subschema accepts it."""
    bounds = int_bounds(subs)
    assert bounds is not None
    lo, hi = bounds
    for v in values:
        expected = all(jsonschema.Draft202012Validator(s).is_valid(v) for s in subs)
        assert ((lo is None or v >= lo) and (hi is None or v <= hi)) == expected, (subs, v)


def test_other_keywords_leave_the_verdict_to_the_statements() -> None:
    """A subschema with any keyword beyond type and bounds (or no integer type) gives None."""
    for sub in [{"type": "integer", "multipleOf": 2}, {"type": "string"}, {"enum": [1, 2]},
                {"type": "integer", "not": {"const": 3}}, {"minimum": True},
                {"minimum": float("nan")}, {"type": "integer", "if": {}, "then": {}}]:
        assert int_bounds([sub]) is None, sub
