"""Validate a fleet: find every run under paths and URI prefixes, validate them in parallel.

``discover`` finds runs the way the format defines one (``rlio.layout.is_run_root``: a folder
with ``metrics.jsonl`` or ``config.json`` at its root) at any depth: a local tree is walked with
``os.scandir`` (never following symbolic links, never looking inside a run's own iteration
folders); an object-store prefix is listed once, without a delimiter, and the folders are derived
from the object names, so discovery costs a listing, not a request per folder, and each run's
entries are taken from that listing when it is validated (no second listing per run).

``validate_runs`` hands one ``validate_run`` per run to any ``concurrent.futures.Executor``: a
process pool on this machine by default, or a cluster's executor (Dask ``distributed``'s
``Client.get_executor()``, Ray's) passed by the caller. The library never prints: progress is a
callback.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, as_completed
from dataclasses import dataclass
from functools import partial
from typing import Any

from rlio import layout
from rlio._version import __version__
from rlio.errors import NotARunError, RunNotFoundError
from rlio.findings import Report, Severity
from rlio.storage.base import HIDDEN_PREFIXES, Entry
from rlio.storage.opener import open_storage
from rlio.storage.run_root import no_run
from rlio.validate.engine import validate_run_sized


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A PATH that holds no run, or a run that could not be read: exit code 2."""

    path: str
    message: str

    def to_dict(self) -> dict[str, str]:
        """``{"path", "message"}``."""
        return {"path": self.path, "message": self.message}


@dataclass(frozen=True, slots=True)
class Progress:
    """One progress event: ``done`` of ``total`` runs validated, ``files`` and ``bytes`` read
    so far. The first event (``done == 0``) comes once discovery knows the total."""

    done: int
    total: int
    files: int
    bytes: int
    run: str | None = None


ProgressCallback = Callable[[Progress], None]


@dataclass(frozen=True, slots=True)
class FleetReport:
    """The reports of every run found (in discovery order) and the paths that held none."""

    runs: tuple[Report, ...] = ()
    unreadable: tuple[Unreadable, ...] = ()

    @property
    def ok(self) -> bool:
        """True when every run is ok (no error finding) and every path held a readable run."""
        return not self.unreadable and all(r.ok for r in self.runs)

    def exit_code(self, fail_on: Severity = Severity.ERROR) -> int:
        """The worst exit code over the runs: 2 for an unreadable path, 1 for a run with a
        finding at or above ``fail_on``, else 0."""
        if self.unreadable:
            return 2
        return 1 if any(r.at_or_above(fail_on) for r in self.runs) else 0

    @property
    def counts(self) -> dict[str, int]:
        """Findings per severity, summed over the runs."""
        total = {"error": 0, "warning": 0, "info": 0}
        for r in self.runs:
            for k, n in r.counts.items():
                total[k] += n
        return total

    def to_dict(self, *, fail_on: Severity = Severity.ERROR) -> dict[str, Any]:
        """The fleet JSON document: ``version``, ``ok``, ``counts``, ``runs`` (each ``run``,
        ``ok``, ``counts``, ``findings``) and ``unreadable``; ``ok`` is judged at ``fail_on``. A
        fleet of one run also carries that run's ``run`` and ``findings`` at the top, as a
        one-run report does."""
        runs = []
        for r in self.runs:
            entry = r.to_dict()
            del entry["version"]  # once, at the top
            entry["ok"] = not r.at_or_above(fail_on)
            runs.append(entry)
        doc: dict[str, Any] = {"version": __version__}
        one = len(self.runs) == 1 and not self.unreadable
        if one:
            doc["run"] = runs[0]["run"]
        doc.update(ok=self.exit_code(fail_on) == 0, counts=self.counts)
        if one:
            doc["findings"] = runs[0]["findings"]
        doc["runs"] = runs
        doc["unreadable"] = [u.to_dict() for u in self.unreadable]
        return doc


# -- discovery ------------------------------------------------------------------------------


def uri_scheme(location: str) -> str | None:
    head, sep, _ = location.partition("://")
    return head.lower() if sep and head.isidentifier() else None


def _local_runs(root: str, skipped: list[Unreadable]) -> list[str]:
    """Every run folder under the local folder ``root`` (``root`` itself included); a folder
    under it that cannot be listed (it may be a run) is added to ``skipped``, never dropped."""
    if not os.path.isdir(root):
        raise no_run(root)
    found: list[str] = []
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            if folder == root:
                raise RunNotFoundError(exc.errno or errno.EIO, f"cannot read {root}: "
                                       f"{exc.strerror or exc}", root) from exc
            skipped.append(Unreadable(folder, f"cannot read {folder}: {exc.strerror or exc} "
                                              "(a run there could not be validated)"))
            continue
        is_run = layout.is_run_root(e.name for e in entries)
        if is_run:
            found.append(folder)
        for e in reversed(entries):  # popped in name order
            # a run's own per-iteration folders hold no run
            with contextlib.suppress(OSError):
                if e.is_dir(follow_symlinks=False) and not (
                        is_run and layout.is_iteration_dir(e.name)):
                    stack.append(e.path)
    return found


#: The runs found under one PATH: each run's location and, for a run found in an object-store
#: listing, its entries from that listing (None: the run is listed when it is read).
Found = dict[str, list[Entry] | None]


def _remote_runs(prefix: str) -> Found:
    """Every run under an object-store prefix, with its entries, from one listing of the whole
    prefix (its existence is not asked first: a prefix with no object holds no run)."""
    base = prefix.rstrip("/")
    try:
        storage = open_storage(base, listed=True)
        listing = list(storage.walk())
    except (OSError, ValueError, NotImplementedError, ImportError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise RunNotFoundError(errno.ENOENT, f"cannot read {prefix}: {why}", prefix) from exc
    children: dict[str, set[str]] = {}
    for e in listing:
        parent, _, leaf = e.path.rpartition("/")
        children.setdefault(parent, set()).add(leaf)
        while parent:  # every ancestor folder exists, even one holding only folders
            up, _, leaf = parent.rpartition("/")
            children.setdefault(up, set()).add(leaf)
            parent = up
    roots = {d for d, kids in children.items() if layout.is_run_root(kids)}

    def inside_iteration(d: str) -> bool:
        parts = d.split("/") if d else []
        return any(layout.is_iteration_dir(parts[i]) and "/".join(parts[:i]) in roots
                   for i in range(len(parts)))

    return {f"{base}/{d}" if d else base: _entries_under(listing, d)
            for d in sorted(roots) if not inside_iteration(d)}


def _entries_under(listing: list[Entry], folder: str) -> list[Entry]:
    """The entries of ``listing`` under ``folder``, relative to it, as a walk of it yields them
    (rlio's hidden objects left out)."""
    if not folder:
        return listing
    head = folder + "/"
    return [e._replace(path=e.path[len(head):]) for e in listing if e.path.startswith(head)
            and not e.path[len(head):].startswith(HIDDEN_PREFIXES)]


def _runs_at(path: str, skipped: list[Unreadable]) -> Found:
    """The runs under one PATH (folders under it that cannot be read go to ``skipped``);
    raises ``NotARunError`` when it holds none and none was skipped."""
    scheme = uri_scheme(path)
    runs: Found
    if scheme in (None, "file"):
        local = path[len("file://"):] if scheme == "file" else path
        runs = dict.fromkeys(_local_runs((local.rstrip("/") or "/") if local else ".", skipped))
    else:
        runs = _remote_runs(path)
    if not runs and not skipped:
        raise no_run(path)
    return runs


def default_runs_root() -> str:
    """The cookbook's run root: ``$TINKER_COOKBOOK_RUNS_DIR`` when set, else ``~/tinker-runs``."""
    return os.environ.get(layout.RUNS_DIR_ENV) or os.path.expanduser(layout.DEFAULT_RUNS_DIR)


def discover(paths: Iterable[str | os.PathLike[str]],
             unreadable: list[Unreadable] | None = None) -> list[str]:
    """The location of every run under ``paths`` (runs, parent folders, URI prefixes), once;
    no paths at all: under the cookbook's run root (``default_runs_root``).

    Raises:
        NotARunError: a path holds no run. RunNotFoundError: a path does not exist, or a folder
        under it cannot be listed. Unless ``unreadable`` is given: such a path is then added
        to it.
    """
    return list(discover_listed(paths, unreadable))


def discover_listed(paths: Iterable[str | os.PathLike[str]],
                    unreadable: list[Unreadable] | None = None) -> Found:
    """``discover``, with each run's entries where the discovery listed them (object stores),
    so that reading the run need not list it again."""
    found: Found = {}
    paths = list(paths) or [default_runs_root()]
    for p in paths:
        shown = os.fspath(p)
        skipped: list[Unreadable] = []
        try:
            for run, entries in _runs_at(shown, skipped).items():
                found.setdefault(run, entries)
        except (RunNotFoundError, OSError) as exc:
            if unreadable is None:
                raise
            unreadable.append(Unreadable(shown, f"{exc.strerror or exc}"))  # names the path
        if skipped and unreadable is None:
            raise RunNotFoundError(errno.EACCES, skipped[0].message, skipped[0].path)
        if unreadable is not None:
            unreadable.extend(skipped)
    return found


def each_run(fn: Callable[..., Any], locations: Sequence[str], *args: Any,
             executor: Executor | None = None, jobs: int | None = None,
             listings: Found | None = None) -> Iterator[Any]:
    """``fn(location, *args)`` of each location, in order, computed in parallel as
    ``validate_runs`` runs its checks: on ``executor`` (a Dask or Ray cluster's), else a process
    pool of ``jobs`` workers (None: the CPU count; 1, or a single location: in this process).
    At most twice as many runs as workers are in flight, so results do not pile up in memory.
    ``fn`` must be a module-level function returning plain values, so any executor ships it.
    ``listings`` (from ``discover_named``): ``fn`` also gets ``listing=`` the run's entries
    (``rlio.storage.listed``: the run is read without listing it again)."""
    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    if listings is not None:
        fn = partial(_with_listing, fn, listings)
    if executor is None and (workers <= 1 or len(locations) <= 1):
        yield from (fn(loc, *args) for loc in locations)
        return
    own = None
    if executor is None:
        from concurrent.futures import ProcessPoolExecutor  # here: see validate_runs

        executor = own = ProcessPoolExecutor(max_workers=min(workers, len(locations)))
    window = 2 * max(1, workers)
    try:
        pending: list[Any] = []
        for loc in locations:
            pending.append(executor.submit(fn, loc, *args))
            if len(pending) >= window:
                yield pending.pop(0).result()
        for f in pending:
            yield f.result()
    finally:
        if own is not None:
            own.shutdown(wait=True, cancel_futures=True)


def _with_listing(fn: Callable[..., Any], listings: Found, location: str, *args: Any) -> Any:
    return fn(location, *args, listing=listings.get(location))


def discover_named(paths: Iterable[str | os.PathLike[str]],
                   unreadable: list[Unreadable] | None = None,
                   listings: Found | None = None) -> list[tuple[str, str]]:
    """``(name, location)`` of every run ``discover`` finds under ``paths``; the name is the
    run's path relative to the PATH it was found under (the PATH's last part when the PATH is
    the run itself), made distinct with ``-2``, ``-3``... when two PATHs give the same one.
    ``listings``: filled with each run's entries where discovery listed them (for ``each_run``).
    """
    out: list[tuple[str, str]] = []
    names: set[str] = set()
    seen: set[str] = set()
    for p in paths:
        base = os.fspath(p).rstrip("/")
        for loc, entries in discover_listed([p], unreadable).items():
            if loc in seen:
                continue
            seen.add(loc)
            if listings is not None:
                listings[loc] = entries
            rel = loc[len(base):].strip("/") if loc.startswith(base) else ""
            last = (base.rsplit("/", 1)[-1] if uri_scheme(base)
                    else os.path.basename(os.path.abspath(base or ".")))
            name = rel.replace(os.sep, "/") or last or base
            unique, n = name, 2
            while unique in names:
                unique, n = f"{name}-{n}", n + 1
            names.add(unique)
            out.append((unique, loc))
    return out


# -- validation -----------------------------------------------------------------------------

_Result = tuple[str, Report | None, str, int, int]


def check_one(location: str, cap: int, jobs: int | None,
              entries: list[Entry] | None = None) -> _Result:
    """Validate one run: ``(location, report or None, error message, files, bytes)``;
    ``entries``: its listing when discovery has it.

    Module-level and returning plain values, so any executor (a process pool, a cluster) can
    run and ship it; it never raises for a run that cannot be read.
    """
    try:
        report, files, size = validate_run_sized(location, max_findings_per_code=cap, jobs=jobs,
                                                 entries=entries)
    except (RunNotFoundError, OSError) as exc:
        why = str(exc.strerror or exc)
        message = why if isinstance(exc, NotARunError) else f"cannot read {location}: {why}"
        return location, None, message, 0, 0
    except Exception as exc:  # a validator bug must not take the fleet down: report it
        return location, None, f"could not be validated ({type(exc).__name__}: {exc})", 0, 0
    return location, report, "", files, size


def validate_runs(
    paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str], *,
    executor: Executor | None = None, jobs: int | None = None,
    progress: ProgressCallback | None = None, max_findings_per_code: int = 100,
) -> FleetReport:
    """Validate every run under ``paths``, in parallel.

    Args:
        paths: runs, parent folders and URI prefixes (``gs://bucket/sweep/``); empty: the
            cookbook's run root (``$TINKER_COOKBOOK_RUNS_DIR``, else ``~/tinker-runs``).
        executor: any ``concurrent.futures.Executor`` (a Dask or Ray cluster's); None: a
            process pool of ``jobs`` workers on this machine.
        jobs: workers of the default pool (None: the CPU count); 1 validates in this process.
        progress: called with a ``Progress`` once the runs are found, then after each run.
        max_findings_per_code: as for ``validate_run``.

    Returns:
        The fleet report; a path holding no run is listed in ``unreadable``, never raised.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    unreadable: list[Unreadable] = []
    listed = discover_listed(paths, unreadable)
    runs = list(listed)
    total = len(runs)
    if progress is not None:
        progress(Progress(0, total, 0, 0))
    cap = max_findings_per_code
    results: dict[str, _Result] = {}
    files = size = 0
    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    own = None
    if executor is None and workers > 1 and total > 1:
        # imported here: the process pool (multiprocessing) is a third of a one-run
        # validate's start-up (benchmarks/fleet.py, start-up row)
        from concurrent.futures import ProcessPoolExecutor

        executor = own = ProcessPoolExecutor(max_workers=min(workers, total))
    try:
        if executor is None:  # in this process; one run may split its large files
            outcomes: Iterator[_Result] = (check_one(r, cap, None if total <= 1 else 1,
                                                     listed[r]) for r in runs)
        else:  # one process per run: a within-file split inside each would oversubscribe it
            outcomes = (f.result() for f in as_completed(
                [executor.submit(check_one, r, cap, 1, listed[r]) for r in runs]))
        for res in outcomes:
            results[res[0]] = res
            files += res[3]
            size += res[4]
            if progress is not None:
                progress(Progress(len(results), total, files, size, res[0]))
    finally:
        if own is not None:
            own.shutdown(wait=True, cancel_futures=True)
    reports = []
    for run in runs:
        _, report, message, _, _ = results[run]
        if report is None:
            unreadable.append(Unreadable(run, message))
        else:
            reports.append(report)
    return FleetReport(tuple(reports), tuple(unreadable))
