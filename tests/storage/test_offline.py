"""A cloud store that cannot be reached fails fast, in one line, for every command and the API.

The endpoint is a real loopback port with a socket bound to it and nothing listening (so every
connection is refused, and no other process can take the port meanwhile).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rlio import RunWriter, open_run, read_resume_state, validate_run
from rlio.cli import main
from rlio.errors import RlioError, StorageUnavailableError

REPO = Path(__file__).resolve().parents[2]
SCHEMES = ["gs", "s3", "az"]


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port bound by this test and not listening: connections to it are refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield int(s.getsockname()[1])


def _env(scheme: str, port: int) -> dict[str, str]:
    """The standard variables pointing ``scheme`` at the closed port."""
    if scheme == "gs":
        return {"STORAGE_EMULATOR_HOST": f"http://127.0.0.1:{port}"}
    if scheme == "s3":
        return {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "rlio",
                "AWS_SECRET_ACCESS_KEY": "rlio", "AWS_DEFAULT_REGION": "us-east-1"}
    return {"AZURE_STORAGE_CONNECTION_STRING": (
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;"
        f"BlobEndpoint=http://127.0.0.1:{port}/devstoreaccount1;")}


def _names_endpoint(message: str) -> bool:
    """True when ``message`` says the store cannot be reached and names the loopback endpoint."""
    return "cannot reach" in message and "127.0.0.1:" in message


@pytest.fixture(params=SCHEMES)
def offline(request: pytest.FixtureRequest, closed_port: int,
            monkeypatch: pytest.MonkeyPatch) -> str:
    """A run URI of each cloud scheme whose endpoint refuses connections."""
    for k, v in _env(request.param, closed_port).items():
        monkeypatch.setenv(k, v)
    return f"{request.param}://rlio-offline/run"


def test_the_cli_fails_in_one_line_with_exit_2_well_within_10_s(offline: str,
                                                                 tmp_path: Path) -> None:
    """`rlio validate` in a new process: exit 2, one line naming the endpoint, no traceback."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "rlio", "validate", offline],
                          capture_output=True, text=True, env=env, timeout=60, cwd=tmp_path)
    elapsed = time.monotonic() - start
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and _names_endpoint(lines[0]), proc.stderr
    assert "Traceback" not in proc.stderr
    assert elapsed < 10, elapsed


@pytest.mark.parametrize("argv", [
    ["validate", "{u}"], ["validate", "{u}/", "--jobs", "2"], ["resume", "{u}"],
    ["report", "{u}"], ["show", "{u}"], ["diff", "{u}", "{u}"], ["export", "{u}", "{out}"],
])
def test_every_command_says_the_store_is_unreachable_in_one_line(
        offline: str, argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each subcommand over an unreachable store exits 2 with one `rlio: error:` line naming it."""
    code = main([a.format(u=offline, out=tmp_path / "out") for a in argv])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("rlio: error: "), err
    assert _names_endpoint(err), err


def test_the_api_raises_storage_unavailable_error(offline: str) -> None:
    """RunWriter (owner and attached), open_run and read_resume_state raise
    StorageUnavailableError (an RlioError and an OSError); validate_run reports no run."""
    for call in (lambda: RunWriter(offline), lambda: RunWriter(offline, attach=True),
                 lambda: open_run(offline), lambda: read_resume_state(offline)):
        with pytest.raises(StorageUnavailableError) as info:
            call()
        assert _names_endpoint(str(info.value)), info.value
        assert isinstance(info.value, RlioError) and isinstance(info.value, OSError)
    with pytest.raises(StorageUnavailableError):
        validate_run(offline)


def test_az_without_credentials_names_the_variables(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """With no Azure variables set at all, az:// fails at once naming what to set."""
    for k in ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT_NAME",
              "AZURE_STORAGE_ACCOUNT"):
        monkeypatch.delenv(k, raising=False)
    assert main(["validate", "az://c/run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "AZURE_STORAGE_CONNECTION_STRING" in err, err


def _s3_without_keys(tmp_path: Path) -> dict[str, str]:
    """An environment with no AWS credentials anywhere and an endpoint nothing listens on."""
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(REPO),
           "AWS_CONFIG_FILE": str(tmp_path / "none"),
           "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"), "AWS_DEFAULT_REGION": "us-east-1"}
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        env["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{s.getsockname()[1]}"
    return env


def _fails_fast_naming_keys(env: dict[str, str], args: list[str]) -> None:
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "rlio", *args], env=env, capture_output=True,
                         text=True, timeout=60)
    assert time.monotonic() - start < 10, args
    assert out.returncode == 2, (args, out.stdout, out.stderr)
    assert out.stderr.count("\n") == 1 and "no AWS credentials" in out.stderr, (args, out.stderr)


def test_s3_without_credentials_the_api_and_validate_fail_fast(tmp_path: Path) -> None:
    """With no AWS credentials anywhere, RunWriter raises StorageUnavailableError and
    `rlio validate` exits 2 within 10 s with one line naming them."""
    env = _s3_without_keys(tmp_path)
    _fails_fast_naming_keys(env, ["validate", "s3://bucket/run"])
    code = ("from rlio import RunWriter\nfrom rlio.errors import StorageUnavailableError\n"
            "try:\n    RunWriter('s3://bucket/run')\n"
            "except StorageUnavailableError as exc:\n    print('refused', exc)\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.startswith("refused") and "no AWS credentials" in out.stdout, (
        out.stdout + out.stderr)


@pytest.mark.slow
def test_s3_without_credentials_every_command_fails_fast_in_one_line(tmp_path: Path) -> None:
    """Without AWS credentials, each command exits 2 within 10 s with one line naming them."""
    uri, env = "s3://bucket/run", _s3_without_keys(tmp_path)
    for args in (["resume", uri], ["show", uri], ["report", uri],
                 ["export", uri, str(tmp_path / "x")], ["diff", uri, uri]):
        _fails_fast_naming_keys(env, args)
