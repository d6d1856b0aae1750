"""Where bytes go: one interface (``base``), a backend per kind of location.

Backends: ``local`` (plain ``os`` calls), ``memory`` (fsspec's memory filesystem), ``gcs/``
(the JSON API over a gcsfs session), ``s3/`` (boto3) and ``azure/`` (azure-storage-blob: append
blobs and blob leases); ``batching`` is the batched appender the object stores share.
``opener.open_storage`` picks one; the remote backends and their libraries are imported only
when a URI needs them. ``tail`` moves a torn last line aside.
"""

from rlio.storage.base import TEMP_INFIX, Appender, Entry, Storage
from rlio.storage.local import LocalStorage
from rlio.storage.opener import open_storage

__all__ = ["TEMP_INFIX", "Appender", "Entry", "LocalStorage", "Storage", "open_storage"]
