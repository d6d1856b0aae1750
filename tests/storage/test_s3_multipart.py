"""s3:// appends against moto behind the enforcing layer: ETags, multipart part copies, uploads
left behind, lost answers, credentials and the requests an append costs (what every store
shares: test_cloud_writes).

Races are made deterministic by running another writer just before a chosen client call
(``_HookedClient``), since the emulator serves one request at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from clouds import BATCH, append, assert_each_once, feed
from s3_emulator import Emulator

from rlio.errors import StorageUnavailableError
from rlio.storage import open_storage
from rlio.storage.s3.api import MIN_PART, S3Api
from rlio.storage.s3.storage import S3Storage

BIG = b"x" * (MIN_PART + 1024) + b"\n"  # one line that takes a log past the multipart threshold


def _s3(uri: str, *, create: bool = True) -> S3Storage:
    st = open_storage(uri, create=create)
    assert isinstance(st, S3Storage)
    return st


class _HookedClient:
    """A boto3 client that runs ``hook`` once, just before the first call of ``method`` whose
    keyword arguments satisfy ``when``."""

    def __init__(self, base: Any, method: str, hook: Callable[[], None],
                 when: Callable[[dict[str, Any]], bool] = lambda kw: True) -> None:
        self._base, self._method, self._hook, self._when = base, method, hook, when
        self.fired = False

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._base, name)
        if name != self._method:
            return attr

        def call(**kwargs: Any) -> Any:
            if not self.fired and self._when(kwargs):
                self.fired = True
                self._hook()
            return attr(**kwargs)

        return call


def _hook(st: S3Storage, method: str, hook: Callable[[], None],
          when: Callable[[dict[str, Any]], bool] = lambda kw: True) -> _HookedClient:
    hooked = _HookedClient(st.api.s3, method, hook, when)
    st.api = S3Api(hooked, st.bucket)
    return hooked


def _uploads(st: S3Storage) -> list[dict[str, Any]]:
    return list(st.api.uploads(st.key("")))


def _ops(emulator: Emulator) -> dict[str, int]:
    return {op: s["requests"] for op, s in emulator.stats().items()}


def test_emulator_answers_preconditions_as_s3_does(s3_uri: str, s3_emu: Emulator) -> None:
    """The test layer gives 412 for a stale ETag on PutObject, UploadPartCopy and Complete."""
    st = _s3(s3_uri)
    api, key = st.api, st.key("obj")
    e1 = api.put(key, b"one\n", create_only=True)
    with pytest.raises(FileExistsError):
        api.put(key, b"again\n", create_only=True)
    e2 = api.put(key, BIG, if_match=e1)
    with pytest.raises(FileExistsError):
        api.put(key, b"stale\n", if_match=e1)
    with pytest.raises(FileExistsError):  # the copied part is refused: x-amz-copy-source-if-match
        api.append_multipart(key, len(BIG), b"tail\n", if_match=e1, metadata={})
    assert _ops(s3_emu)["copy_part:412"] == 1
    hooked = _hook(st, "complete_multipart_upload", lambda: S3Api(hooked._base, st.bucket).put(
        key, BIG + b"other\n", if_match=e2))
    with pytest.raises(FileExistsError):  # the object changed between the copy and the complete
        st.api.append_multipart(key, len(BIG), b"tail\n", if_match=e2, metadata={})
    assert _ops(s3_emu)["complete:412"] == 1
    assert api.read(key, len(BIG), len(BIG) + 100) == b"other\n"
    assert _uploads(st) == []  # both failed uploads were aborted
    with pytest.raises(FileExistsError):
        api.delete(key, if_match=e2)
    with pytest.raises(FileExistsError):
        api.read(key, 0, 4, if_match=e2)


@pytest.mark.parametrize("method", ["upload_part_copy", "complete_multipart_upload"])
def test_a_multipart_append_racing_another_writer_is_retried_on_the_new_etag(
        s3_uri: str, s3_emu: Emulator, method: str) -> None:
    """Past 5 MiB, a write landing before the copy or before the complete refuses ours (412);
    the appender lands it on top, once, and no upload is left behind."""
    st = _s3(s3_uri)
    append(st, "logs.log", BIG)
    other = _s3(s3_uri)
    hooked = _hook(st, method, lambda: append(other, "logs.log", b"other\n"))
    s3_emu.stats(reset=True)
    append(st, "logs.log", b"mine\n")
    assert hooked.fired
    assert st.read_bytes("logs.log") == BIG + b"other\nmine\n"
    ops = _ops(s3_emu)
    refused = "copy_part:412" if method == "upload_part_copy" else "complete:412"
    assert ops[refused] == 1
    # the other's complete and ours (and, refused at the complete, our first one)
    assert ops["complete"] == (2 if method == "upload_part_copy" else 3)
    assert _uploads(st) == []


def _feed_two(st: S3Storage, rel: str, n: int, first: bytes = b"") -> None:
    if first:
        append(st, rel, first)
    feed(st, rel, ("a", "b"), n)


def _assert_each_once(data: bytes, n: int) -> None:
    assert_each_once(data, ("a", "b"), n)


def test_multipart_writes_whose_answer_is_lost_are_neither_duplicated_nor_dropped(
        s3_uri: str, s3_emu: Emulator) -> None:
    """Past 5 MiB, completes that commit then answer 503 or drop, and failed copies and part
    uploads: every line lands once, and no upload is left in progress."""
    st = _s3(s3_uri)
    log = r"/logs\.log$"
    s3_emu.set_faults([
        {"op": "complete", "name": log, "mode": "commit_then_503", "times": 2},
        {"op": "complete", "name": log, "mode": "commit_then_drop", "skip": 3, "times": 1},
        {"op": "copy_part", "name": log, "mode": "503", "skip": 1, "times": 3},
        {"op": "upload_part", "name": log, "mode": "commit_then_503", "skip": 2, "times": 1},
    ])
    _feed_two(st, "logs.log", 8, first=BIG)
    assert s3_emu.injected() == 7
    data = st.read_bytes("logs.log")
    assert data.startswith(BIG)
    _assert_each_once(data[len(BIG):], 8)
    assert _uploads(st) == []


@pytest.mark.slow
def test_slow_requests_racing_other_writers_land_each_batch_once(s3_uri: str,
                                                                 s3_emu: Emulator) -> None:
    """A PutObject and a Complete held 1.5 s while the other writer goes on: each line once."""
    st = _s3(s3_uri)
    s3_emu.set_faults([
        {"op": "put", "name": r"/checkpoints\.jsonl$", "mode": "slow", "seconds": 1.5,
         "skip": 1, "times": 1},
    ])
    _feed_two(st, "checkpoints.jsonl", 6)
    s3_emu.set_faults([
        {"op": "complete", "name": r"/logs\.log$", "mode": "slow", "seconds": 1.5,
         "skip": 1, "times": 1},
    ])
    _feed_two(st, "logs.log", 4, first=BIG)
    assert s3_emu.injected() == 1
    _assert_each_once(st.read_bytes("checkpoints.jsonl"), 6)
    _assert_each_once(st.read_bytes("logs.log")[len(BIG):], 4)


def test_uploads_a_crashed_writer_left_are_aborted_when_a_writer_reopens(s3_uri: str) -> None:
    """An upload in progress is invisible to readers, and open_storage(create=True) aborts it."""
    st = _s3(s3_uri)
    append(st, "metrics.jsonl", b'{"step": 0}\n')
    for _ in range(2):
        st.api.s3.create_multipart_upload(Bucket=st.bucket, Key=st.key("metrics.jsonl"))
    assert len(_uploads(st)) == 2
    assert [e.path for e in _s3(s3_uri, create=False).walk()] == ["metrics.jsonl"]
    _s3(s3_uri, create=True)
    assert _uploads(st) == []
    assert st.read_bytes("metrics.jsonl") == b'{"step": 0}\n'


def test_an_upload_aborted_by_a_reopening_writer_is_started_again(s3_uri: str) -> None:
    """A sweep aborting a live writer's upload costs it a retry, never a line."""
    st = _s3(s3_uri)
    append(st, "logs.log", BIG)
    sweeper = _s3(s3_uri, create=False)
    swept: list[int] = []
    _hook(st, "complete_multipart_upload", lambda: swept.append(sweeper.sweep_orphans()))
    append(st, "logs.log", b"mine\n")
    assert swept == [1]
    assert st.read_bytes("logs.log") == BIG + b"mine\n"


def test_bytes_sent_per_append_stay_flat_past_5_mib(s3_uri: str, s3_emu: Emulator) -> None:
    """A batch on a 6 MiB log and on a 12 MiB one costs the same four requests and bytes."""
    st = _s3(s3_uri)
    app = st.appender("metrics.jsonl")
    batch = BATCH
    app.append_durable(BIG)

    def cost() -> tuple[dict[str, int], int]:
        s3_emu.stats(reset=True)
        app.append_durable(batch)
        stats = s3_emu.stats()
        return _ops(s3_emu), sum(s["bytes"] for s in stats.values())

    small_ops, small = cost()
    for _ in range(4):
        app.append_durable(b"y" * (2 << 20) + b"\n")
    large_ops, large = cost()
    app.close()
    assert st.size("metrics.jsonl") > 12 << 20
    assert small_ops == large_ops == {"create_mpu": 1, "copy_part": 1, "upload_part": 1,
                                      "complete": 1}
    assert len(batch) < small < len(batch) + 16_000  # the batch and the requests' headers
    assert abs(large - small) <= 64  # only numbers in headers and metadata may grow a digit


def test_a_log_below_5_mib_is_rewritten_whole_in_one_request(s3_uri: str,
                                                             s3_emu: Emulator) -> None:
    """A writer alone on a small log sends one conditional PutObject per batch (no reads)."""
    st = _s3(s3_uri)
    app = st.appender("metrics.jsonl")
    app.append_durable(b'{"step": 0}\n')
    s3_emu.stats(reset=True)
    app.append_durable(b'{"step": 1}\n')
    app.append_durable(b'{"step": 2}\n')
    app.close()
    assert _ops(s3_emu) == {"put": 2}
    assert st.read_bytes("metrics.jsonl") == b'{"step": 0}\n{"step": 1}\n{"step": 2}\n'


def test_refused_credentials_fail_the_first_request(s3_uri: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A 403 answer is StorageUnavailableError naming the credentials, not a raw botocore error."""
    st = _s3(s3_uri)

    def refuse() -> None:
        from botocore.exceptions import ClientError

        raise ClientError({"Error": {"Code": "InvalidAccessKeyId", "Message": "no such key"},
                           "ResponseMetadata": {"HTTPStatusCode": 403}}, "ListObjectsV2")

    _hook(st, "list_objects_v2", refuse)
    with pytest.raises(StorageUnavailableError, match="credentials"):
        st.exists()


def test_a_writer_without_permission_to_list_uploads_still_opens_the_run(s3_uri: str) -> None:
    """A 403 on ListMultipartUploads leaves the sweep undone (0), never a refused writer."""
    st = _s3(s3_uri)

    def refuse() -> None:
        from botocore.exceptions import ClientError

        raise ClientError({"Error": {"Code": "AccessDenied", "Message": "not allowed"},
                           "ResponseMetadata": {"HTTPStatusCode": 403}}, "ListMultipartUploads")

    st.api.s3.create_multipart_upload(Bucket=st.bucket, Key=st.key("metrics.jsonl"))
    _hook(st, "list_multipart_uploads", refuse)
    assert st.sweep_orphans() == 0
    assert len(list(S3Api(st.api.s3._base, st.bucket).uploads(st.key("")))) == 1
