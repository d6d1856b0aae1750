"""Bytes in and out: JSONL encode and decode, non-finite numbers, normalization of user values."""
