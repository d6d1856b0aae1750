"""Where bytes go: one interface (``base``), a backend per kind of location.

Backends: ``local`` (plain ``os`` calls), ``memory`` (fsspec's memory filesystem), ``gcs/``
(the JSON API over a gcsfs session), ``s3/`` (a boto3 client) and ``azure/`` (the Azure Blob
SDK); object stores share ``batching`` (appends committed off the caller's thread).
``opener.open_storage`` picks one; every backend but the local one, and its library, is imported
only when a URI needs it. ``tail`` moves a torn last line aside.
"""

from rlio.storage.base import TEMP_INFIX, Appender, Entry, Storage
from rlio.storage.local import LocalStorage
from rlio.storage.opener import open_storage

__all__ = ["TEMP_INFIX", "Appender", "Entry", "LocalStorage", "Storage", "open_storage"]
