"""The schema machinery behind ``rlio.schema``: loading, the checker, severity levels, bundling."""
