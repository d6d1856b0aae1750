"""Google Cloud Storage runs (``gs://``): API requests, the backend, composed appends."""
