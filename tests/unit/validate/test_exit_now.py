"""`rlio validate` run as the program ends the process once its output is flushed, but never
where an exit handler or another thread still has work to do."""

from __future__ import annotations

from pathlib import Path

from factories import cookbook_run, run_cli, run_python


def test_buffered_output_is_flushed_and_the_code_kept() -> None:
    """Text still buffered on stdout and stderr reaches the pipes; the exit code is kept."""
    done = run_python("""
        import sys
        from rlio.cli.main import exit_now
        sys.stdout.write("out" * 1000)
        sys.stderr.write("err")
        exit_now(3)
        sys.stdout.write("not reached")
    """)
    assert done.returncode == 3 and done.stdout == "out" * 1000 and done.stderr == "err"


def test_an_exit_handler_makes_it_return() -> None:
    """With an atexit handler registered it returns, and the usual exit runs the handler."""
    done = run_python("""
        import atexit, sys
        from rlio.cli.main import exit_now
        atexit.register(lambda: print("handler ran"))
        exit_now(3)
        print("returned")
    """)
    assert done.returncode == 0 and done.stdout == "returned\nhandler ran\n"


def test_another_thread_makes_it_return() -> None:
    """With another (non-daemon) thread alive it returns, and the usual exit waits for it."""
    done = run_python("""
        import threading, time
        from rlio.cli.main import exit_now
        t = threading.Thread(target=lambda: (time.sleep(0.2), print("thread done")))
        t.start()
        exit_now(3)
        print("returned")
    """)
    assert done.returncode == 0 and done.stdout == "returned\nthread done\n"


def test_validate_as_the_program_prints_everything(tmp_path: Path) -> None:
    """`python -m rlio validate` of a run prints its whole verdict and exits 0 on the fast exit."""
    run = cookbook_run(tmp_path / "run")
    done = run_cli("validate", str(run), "--format", "json")
    assert done.returncode == 0 and done.stdout.endswith("}\n") and '"ok": true' in done.stdout
