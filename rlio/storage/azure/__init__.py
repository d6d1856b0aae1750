"""Azure Blob Storage runs (``az://``): requests, the backend, append-blob appends, the lease."""
