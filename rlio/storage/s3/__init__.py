"""Amazon S3 runs (``s3://``): API requests, the backend, conditional appends, the lease."""
