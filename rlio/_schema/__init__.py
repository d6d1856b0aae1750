"""The schema machinery behind ``rlio.schema``: loading, severity levels, bundling."""
