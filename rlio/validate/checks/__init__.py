"""The validator's checks beyond the schemas: one module per file kind, and the cross-file rules."""
