"""Suite-wide settings: a hypothesis profile that does not flake on a loaded 2-core machine."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "rlio",
    deadline=None,  # timings are never pass/fail; a busy CI core must not fail a property
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile("ci", parent=settings.get_profile("rlio"), derandomize=True)
_PROFILE = "ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "rlio")
settings.load_profile(_PROFILE)

