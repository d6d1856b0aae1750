"""``rlio sync``: mirror a local run to a bucket while it is written (``rlio.storage.sync``)."""

from __future__ import annotations

import argparse
import sys

from rlio.cli.common import EXIT_OK, add_command, fail, printable, run_failure


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``sync`` to the ``rlio`` parser."""
    p = add_command(
        sub,
        "sync",
        summary="mirror a local run to gs://, s3:// or az:// (only the bytes the bucket lacks)",
        examples=(
            ("rlio sync runs/exp1 gs://bucket/exp1", "copy what changed once"),
            ("rlio sync runs/exp1 gs://bucket/exp1 --follow",
             "keep mirroring a live run until interrupted"),
        ),
    )
    p.add_argument("run", metavar="RUN", help="local run folder")
    p.add_argument("uri", metavar="URI", help="where the mirror lives (gs://, s3://, az://)")
    p.add_argument("--follow", action="store_true", help="keep mirroring as the run grows")
    p.add_argument("--poll", type=float, default=2.0, metavar="S",
                   help="seconds between passes with --follow (default 2)")
    p.add_argument("--idle-timeout", type=float, default=None, metavar="S",
                   help="with --follow, stop after S seconds without anything to send")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Mirror ``args.run`` to ``args.uri``; one summary line at the end."""
    from rlio.errors import RunNotFoundError
    from rlio.storage.sync import SyncStats, sync

    stats = SyncStats()
    try:
        stats = sync(args.run, args.uri, follow=args.follow, poll=args.poll,
                     idle_timeout=args.idle_timeout)
    except (RunNotFoundError, NotADirectoryError) as exc:
        return run_failure(args.run, exc)
    except ValueError as exc:  # a URI as RUN, a negative --poll
        return fail(str(exc))
    except KeyboardInterrupt:
        pass  # --follow until interrupted: what was sent is whole
    sys.stdout.write(f"{printable(args.run)} -> {printable(args.uri)}: {stats.passes} passes, "
                     f"{stats.appended} appends, {stats.replaced} files written, "
                     f"{stats.bytes_sent} bytes sent\n")
    return EXIT_OK
