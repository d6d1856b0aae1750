"""The run report: one self-contained HTML page for a whole run.

Inside: ``reading`` and ``columns`` (what the report reads from a run), ``run_report`` (putting
it together), ``page``, ``trajectories``, ``prompts`` and ``iterations`` (the pages' HTML),
``svg`` (the charts) and ``style`` (the CSS).
"""

from __future__ import annotations

from rlio.report.run_report import (
    REPORT_NAME,
    render_run_report,
    write_run_report,
)

__all__ = ["REPORT_NAME", "render_run_report", "write_run_report"]
