"""az:// append blobs against Azurite behind the fault proxy: append positions, lost answers,
slow requests, block-blob logs of other tools, compaction near the block limit, credentials and
the bytes each append costs (what every store shares: test_cloud_writes)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from azurite import FaultProxy
from clouds import assert_each_once, feed

from rlio.storage import open_storage
from rlio.storage.azure.api import PARTS_DIR, AzureApi, blocks
from rlio.storage.azure.append import AzureAppender
from rlio.storage.azure.storage import AzureStorage


def _az(uri: str) -> AzureStorage:
    st = open_storage(uri, create=True)
    assert isinstance(st, AzureStorage)
    return st


def _records(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.splitlines()]


def _parts(st: AzureStorage) -> list[str]:
    return [name for name, _ in st.api.list(st.key(PARTS_DIR) + "/")]


def _feed(st: AzureStorage, tags: tuple[str, ...], n: int) -> None:
    """Each tag's thread appends ``n`` lines through its own appender, every third durably."""
    feed(st, "metrics.jsonl", tags, n, durable=lambda i: i % 3 == 0)


def _assert_once_in_order(st: AzureStorage, tags: tuple[str, ...], n: int) -> None:
    assert_each_once(st.read_bytes("metrics.jsonl"), tags, n)


def test_blocks_cut_at_line_ends_and_keep_a_long_line_whole() -> None:
    """blocks() groups whole lines up to the limit and sends a longer line alone."""
    data = b"aa\nbb\ncc\n" + b"x" * 10 + b"\n" + b"dd\n"
    got = blocks(data, limit=6)
    assert b"".join(got) == data
    assert got == [b"aa\nbb\n", b"cc\n", b"x" * 10 + b"\n", b"dd\n"]
    assert blocks(b"") == []


def test_a_stale_append_position_is_refused_by_the_service(az_uri: str) -> None:
    """AppendBlock at a position that is no longer the end gets 412 (FileExistsError)."""
    st = _az(az_uri)
    api: AzureApi = st.api
    key = st.key("logs.log")
    api.create_append(key, ctype="text/plain", metadata={})
    assert api.append_block(key, b"a\n", at=0)[0] == 2
    with pytest.raises(FileExistsError):
        api.append_block(key, b"b\n", at=0)
    assert st.read_bytes("logs.log") == b"a\n"


def test_slow_requests_delay_appends_but_lose_nothing(az_uri: str, az: FaultProxy) -> None:
    """An AppendBlock answered after a delay lands once; the writers wait, then go on."""
    st = _az(az_uri)
    az.set_faults([{"op": "append", "name": r"/metrics\.jsonl$", "mode": "slow", "delay": 0.5,
                    "skip": 2, "times": 2}])
    _feed(st, ("a", "b"), 9)
    assert az.injected() == 2
    _assert_once_in_order(st, ("a", "b"), 9)


def test_a_block_blob_log_written_by_another_tool_becomes_an_append_blob(az_uri: str) -> None:
    """A log another tool wrote as a block blob is converted (same bytes), then appended to."""
    st = _az(az_uri)
    st.api.upload(st.key("metrics.jsonl"), b'{"step": 0}\n')  # what adlfs writes
    props = st.api.props(st.key("metrics.jsonl"))
    assert props is not None and not props.append_blob
    app = st.appender("metrics.jsonl")
    app.append_durable(b'{"step": 1}\n')
    app.close()
    props = st.api.props(st.key("metrics.jsonl"))
    assert props is not None and props.append_blob
    assert st.read_bytes("metrics.jsonl") == b'{"step": 0}\n{"step": 1}\n'
    assert _parts(st) == []


def test_bytes_sent_per_append_do_not_grow_with_the_file(az_uri: str, az: FaultProxy) -> None:
    """A batch costs the same requests and bytes on a 10 KB log as on a 12 MB one."""
    st = _az(az_uri)
    app = st.appender("metrics.jsonl")
    line = b'{"step": 1, "pad": "' + b"x" * 100 + b'"}\n'

    def cost() -> tuple[int, int]:
        az.stats(reset=True)
        app.append_durable(line)
        s = az.stats()
        return sum(v["requests"] for v in s.values()), sum(v["bytes"] for v in s.values())

    app.append_durable(line * 100)
    small = cost()
    for _ in range(3):
        app.append_durable(line * 40_000)  # 4.2 MB, sent as one block of whole lines each
    big = cost()
    app.close()
    assert st.size("metrics.jsonl") > 12_000_000
    assert small[0] == big[0] == 1  # one AppendBlock request per batch
    assert abs(big[1] - small[1]) < 64  # the same bytes, give or take a header's digits


def test_an_account_name_and_key_work_without_a_connection_string(
        az_uri: str, az: FaultProxy, monkeypatch: pytest.MonkeyPatch) -> None:
    """AZURE_STORAGE_ACCOUNT_NAME + _KEY (+ _URL for a non-public endpoint) reach the same
    container as the connection string does."""
    import azurite

    _az(az_uri).replace("config.json", b"{}")
    monkeypatch.delenv("AZURE_STORAGE_CONNECTION_STRING")
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", azurite.ACCOUNT)
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", azurite.KEY)
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_URL", f"http://127.0.0.1:{az.port}/{azurite.ACCOUNT}")
    assert open_storage(az_uri).read_bytes("config.json") == b"{}"


def test_a_log_near_azures_block_limit_is_compacted_to_the_same_bytes(az_uri: str) -> None:
    """Past compact_at committed blocks the log is rewritten in few blocks, bytes unchanged, and
    appends (this writer's and another's) go on after it."""
    st = _az(az_uri)
    app = st.appender("metrics.jsonl")
    assert isinstance(app, AzureAppender)
    app.compact_at = 6
    other = st.appender("metrics.jsonl")
    for i in range(10):
        (app if i % 2 else other).append_durable(json.dumps({"i": i}).encode() + b"\n")
    app.close()
    other.close()
    blob = st.api.blob(st.key("metrics.jsonl")).get_blob_properties()
    assert blob.append_blob_committed_block_count < 6  # compacted at least once
    assert [r["i"] for r in _records(st.read_bytes("metrics.jsonl"))] == list(range(10))
    assert _parts(st) == []
