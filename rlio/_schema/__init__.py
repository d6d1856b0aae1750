"""The schema machinery behind ``rlio.schema``: loading, model, compiled checks, decoders."""
