"""Print every finding the validator reports on a fixed set of runs, as sorted JSON lines.

    python tools/findings_snapshot.py > before.jsonl     # on one commit
    python tools/findings_snapshot.py > after.jsonl      # on another
    diff before.jsonl after.jsonl                        # a refactoring must show no difference

The runs, all built deterministically:

- every case of the conformance corpus (``conformance/cases/*/run``);
- the runs of ``tests/factories.py`` (``cookbook_run`` with and without quirks, both layouts,
  several lengths, and one with hundreds of per-iteration documents);
- large files that cross every size the validator used to switch paths at (metrics and rollout
  files over 1 MiB and thousands of lines, a logtree over 1 MiB), valid and with defects;
- the damaged small-file runs of ``tests/unit/validate/test_validate_damage.py`` and the mutated
  logtrees of ``tests/unit/validate/test_validate_bigdoc.py``;
- seeded mutants of the quirky run: one file cut, a byte changed, a hostile line inserted, a line
  dropped, repeated or moved, or one JSON value replaced by a value of another type or range.

Each line is one finding (``run``, ``code``, ``severity``, ``file``, ``line``, ``pointer``,
``message``), or ``{"run", "error"}`` for a run the validator refuses (no run found). The runs
are written under ``--workdir`` (emptied first): messages quoting a path inside a run then read the
same on every commit. Standard library and rlio only (``tests/factories.py`` imports pytest).
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "unit" / "validate")]

import factories  # type: ignore[import-not-found]  # noqa: E402  (on the path above)
import orjson  # noqa: E402
import test_validate_bigdoc  # type: ignore[import-not-found]  # noqa: E402
import test_validate_damage  # type: ignore[import-not-found]  # noqa: E402

from rlio import layout  # noqa: E402
from rlio.errors import NotARunError, RunNotFoundError  # noqa: E402
from rlio.validate import validate_run  # noqa: E402

CASES = ROOT / "conformance" / "cases"
MUTANTS = 400
SEED = 20261201

#: Lines a mutant inserts into a JSONL file.
HOSTILE_LINES = (
    b"\n", b"   \n", b"NaN\n", b"[1, 2\n", b"\xff\xfe{}\n", b'{"step": "x"}\n', b"[]\n",
    b'{"step": 1e400}\n', b'{"step": -1}\n', b'{"step": 18446744073709551616}\n',
    b"[" * 2000 + b"]" * 2000 + b"\n", b'{"a": ' * 1100 + b"1" + b"}" * 1100 + b"\n",
    b'{"step": 3, "x": Infinity}\n', b'{"step": 2, "\\ud800": 1}\n', b'{"step": 1}{"step": 2}\n',
    b'{"step": 4, "progress/batch": 4\n', b'"text"\n', b"null\n", b'{"step": true}\n',
)
#: Values a mutant puts in place of a JSON value.
HOSTILE_VALUES: tuple[Any, ...] = (
    None, -1, 0, 1, 2**70, -(2**64), 1.5, -0.0, float("nan"), float("inf"), True, False, "",
    "s", "x" * 300, [], [1, "a"], {}, {"k": None}, "2025-01-01T00:00:00", "../evil",
)


def findings(name: str, run: Path) -> Iterator[dict[str, Any]]:
    """The findings of one run as dicts (or one ``error`` line when it is refused)."""
    try:
        report = validate_run(run, jobs=1)
    except (NotARunError, RunNotFoundError) as exc:
        yield {"run": name, "error": type(exc).__name__}
        return
    for f in report.findings:
        yield {"run": name, "code": f.code, "severity": str(f.severity), "file": f.file,
               "line": f.line, "pointer": f.pointer, "message": f.message}


# -- runs -------------------------------------------------------------------------------------


def corpus() -> Iterator[tuple[str, Path]]:
    """The conformance cases, read where they are."""
    for case in sorted(p for p in CASES.iterdir() if p.is_dir()):
        yield f"conformance/{case.name}", case / "run"


def factory_runs(work: Path) -> Iterator[tuple[str, Path]]:
    """``cookbook_run`` in its variants."""
    for quirks in (True, False):
        for lay in ("flat", "nested"):
            for n in (1, 3, 12):
                name = f"cookbook/{'quirky' if quirks else 'plain'}-{lay}-{n}"
                yield name, factories.cookbook_run(work / name, n, layout_name=lay, quirks=quirks)
    name = "cookbook/plain-nested-300"  # hundreds of documents in one process
    yield name, factories.cookbook_run(work / name, 300, layout_name="nested", quirks=False)
    name = "cookbook/plain-flat-html-only"
    yield name, factories.cookbook_run(work / name, 4, quirks=False, logtrees=False)


def large_runs(work: Path) -> Iterator[tuple[str, Path]]:
    """Runs whose files are large (over 1 MiB, thousands of lines; a logtree over 8 MiB), clean,
    damaged, and with only its logtree's head findings (a naive time, a wrong path)."""
    for variant in ("clean", "damaged", "head"):
        damaged = variant == "damaged"
        name = f"large/{variant}"
        root = factories.cookbook_run(work / name, 3, quirks=False)
        lines = [json.dumps(factories.metrics_line(i, **{"optim/lr": 1e-5, "loss": i / 7,
                                                         "env/all/reward/total": 0.5}))
                 for i in range(30_000)]
        trajs = [factories.ordered_record(g, t, 3) for g in range(600) for t in range(8)]
        for t in trajs:
            t["iteration"] = 1
        if damaged:
            lines[5_000] = '{"step": "five thousand"}'
            lines[12_000] = json.dumps({"step": 12_000, "loss": float("nan")})
            lines[20_000] = '{"step": 20000, "loss": '
            lines[25_000] = ""
            lines[26_000] = json.dumps({"step": 30, "optim/lr": 1e-5})
            lines[27_000] = json.dumps({"loss": 1.0, "step": 27_000, "optim/lr": 1e-5})
            trajs[100]["total_reward"] = 99.0
            trajs[2_000]["steps"][1]["step_idx"] = 5
            trajs[3_000]["split"] = "test"
            trajs[3_500] = copy.deepcopy(trajs[3_499])
            trajs[4_000]["group_idx"] = "g"
            trajs[4_100] = {"traj_idx": trajs[4_100].pop("traj_idx"), **trajs[4_100]}
        factories.write(root, layout.METRICS, "\n".join(lines) + "\n")
        rel = layout.iteration_path("flat", 1, "rollout_summaries")
        factories.write(root, rel, factories.jsonl(trajs))
        twin = layout.iteration_path("flat", 1, "html")
        doc = factories.logtree_doc("RL Iteration 1", "elsewhere.html" if variant == "head"
                                    else twin, "2025-03-01T12:00:00" if variant == "head"
                                    else "2025-03-01T12:00:00Z")
        doc["root"]["children"] += [{"tag": "p", "attrs": {"i": str(i)}, "children": [
            f"text {i}" * 4, {"tag": "span", "attrs": {}, "children": ["x [1] {2}"]}]}
            for i in range(90_000)]
        if damaged:
            doc["root"]["children"][15_000]["children"][1]["attrs"] = {"k": 1}
            doc["root"]["children"][16_000]["data"] = {"type": "no-such-type"}
            doc["root"]["children"][80_000]["data"] = {"type": "no-such-type"}
        factories.write_json(root, layout.iteration_path("flat", 1, "logtree"), doc)
        yield name, root


def test_case_runs(work: Path) -> Iterator[tuple[str, Path]]:
    """The damage cases and logtree mutations of the validator's tests."""
    for name, damage in test_validate_damage.DAMAGE:
        root = test_validate_damage.small_run(work / "damage" / name, 11)
        damage(root)
        yield f"damage/{name}", root
    doc = orjson.dumps(test_validate_bigdoc.demo_doc(3, nest=True))
    for name, mutate, _ in test_validate_bigdoc.MUTATIONS:
        root = test_validate_bigdoc.run_with(work / "logtree" / name, mutate(doc))
        yield f"logtree/{name}", root


# -- mutants ----------------------------------------------------------------------------------


def _paths(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a value inside a parsed JSON value (the root excluded)."""
    items = value.items() if isinstance(value, dict) else (
        enumerate(value) if isinstance(value, list) else ())
    for k, v in items:
        yield (*at, k)
        yield from _paths(v, (*at, k))


def _replace_value(rng: random.Random, data: bytes, jsonl: bool) -> bytes:
    """One JSON value of the file replaced by a hostile one (cookbook serialization)."""
    if jsonl:
        lines = data.split(b"\n")
        at = rng.randrange(len(lines))
        lines[at] = _replace_value(rng, lines[at], False)
        return b"\n".join(lines)
    try:
        value = json.loads(data)
    except ValueError:
        return data
    paths = list(_paths(value))
    if not paths:
        return data
    path = rng.choice(paths)
    node = value
    for k in path[:-1]:
        node = node[k]
    if rng.random() < 0.2 and isinstance(node, dict):
        del node[path[-1]]
    else:
        node[path[-1]] = copy.deepcopy(rng.choice(HOSTILE_VALUES))
    return json.dumps(value).encode()


def _mutate(rng: random.Random, data: bytes, jsonl: bool) -> bytes:
    """``data`` with one random mutation."""
    how = rng.randrange(7)
    lines = data.split(b"\n")
    if how == 0:
        return data[: rng.randrange(len(data) + 1)]
    if how == 1 and data:
        at = rng.randrange(len(data))
        return data[:at] + bytes([rng.randrange(256)]) + data[at + 1:]
    if how == 2:
        at = rng.randrange(len(lines))
        lines.insert(at, rng.choice(HOSTILE_LINES).rstrip(b"\n"))
    elif how == 3 and len(lines) > 1:
        del lines[rng.randrange(len(lines))]
    elif how == 4:
        at = rng.randrange(len(lines))
        lines.insert(at, lines[at])
    elif how == 5 and len(lines) > 1:
        a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[a], lines[b] = lines[b], lines[a]
    else:
        return _replace_value(rng, data, jsonl)
    return b"\n".join(lines)


def mutants(work: Path) -> Iterator[tuple[str, Path]]:
    """``MUTANTS`` quirky runs (both layouts), each with one file changed at random."""
    rng = random.Random(SEED)
    bases = {lay: factories.cookbook_run(work / f"base-{lay}", 3, layout_name=lay)
             for lay in ("flat", "nested")}
    for n in range(MUTANTS):
        lay = ("flat", "nested")[n % 2]
        name = f"mutant/{n:04d}-{lay}"
        root = work / name
        shutil.copytree(bases[lay], root)
        files = sorted(p for p in root.rglob("*") if p.is_file())
        target = rng.choice(files)
        target.write_bytes(_mutate(rng, target.read_bytes(), target.suffix == ".jsonl"))
        yield name, root


def snapshot(work: Path, write: Callable[[str], object]) -> None:
    """Build every run under ``work`` and write its findings, sorted, one JSON line each."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    rows: list[str] = []
    for source in (corpus(), factory_runs(work), large_runs(work), test_case_runs(work),
                   mutants(work)):
        for name, run in source:
            rows.extend(json.dumps(f, sort_keys=True) for f in findings(name, run))
    for row in sorted(rows):
        write(row + "\n")


def main(argv: list[str] | None = None) -> int:
    """Print the snapshot on standard output."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/rlio-findings-snapshot"),
                        help="where the runs are built (emptied first)")
    args = parser.parse_args(argv)
    snapshot(args.workdir, sys.stdout.write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
