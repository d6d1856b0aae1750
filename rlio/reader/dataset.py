"""Training datasets from a run's rollouts: one row per trajectory, or chosen/rejected pairs.

``dataset_batches(run, selection)`` reads a run one (split, iteration) at a time: the rollout
summaries give each trajectory's reward (``total_reward``, the step rewards plus
``final_reward``), its group and its advantage, as ``rlio.outcome`` (their one owner) has them;
the iteration's logtree gives its conversation (the report's own walk,
``rlio.logtree.iteration_page.find_transcripts``: group sections, ``Trajectory <i>`` sections).
A row holds the conversation as chat messages split into ``prompt`` (the messages before the
first assistant message) and ``completion`` (the rest), the reward, the advantage
(the reward minus its group's mean reward), where it comes from (run, split, iteration, group,
trajectory) and its provenance: the sampler's checkpoint where ``sampling_client_step`` is logged
(the checkpoint record whose ``batch`` is that step), the run's location and the SHA-256 of its
``config.json`` and ``code.diff``.

With ``pairs``, each group gives at most one preference pair: its best trajectory (``chosen``)
and its worst (``rejected``), when they share the prompt and their rewards differ by more than
``min_margin``.

``write_dataset(runs, out, selection)`` writes ``<kind>.parquet`` (one row group per split and
iteration: memory stays flat over a long run), ``<kind>.jsonl`` and ``manifest.json`` (what was
selected, and how many trajectories each filter dropped) into a new folder; ``<kind>`` is
``trajectories`` or ``pairs``. The Parquet file has one fixed schema, which ``datasets``,
pandas, polars and DuckDB read as is. pyarrow is the optional extra ``rlio[parquet]``.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import orjson

from rlio import layout
from rlio._version import __version__
from rlio.errors import RlioError
from rlio.outcome import GroupStats, group_stats
from rlio.outcome import Trajectory as Outcome
from rlio.outcome import trajectory as outcome
from rlio.reader.conversations import content_text
from rlio.reader.extras import require

if TYPE_CHECKING:
    from rlio.reader.run import Run

__all__ = ["DatasetResult", "RunFiles", "Selection", "Trajectory", "dataset_batches",
           "write_dataset"]

#: The columns of a trajectory row, in order.
TRAJECTORY_COLUMNS: Final = (
    "run", "split", "iteration", "group_idx", "traj_idx", "prompt", "completion", "reward",
    "advantage", "group_mean", "group_size", "sampling_client_step", "checkpoint",
    "sampler_path", "conversation_json", "run_location", "config_sha256", "code_diff_sha256",
)
#: The columns of a pair row, in order.
PAIR_COLUMNS: Final = (
    "run", "split", "iteration", "group_idx", "chosen_traj_idx", "rejected_traj_idx", "prompt",
    "chosen", "rejected", "chosen_reward", "rejected_reward", "margin", "chosen_advantage",
    "rejected_advantage", "group_mean", "group_size", "sampling_client_step", "checkpoint",
    "sampler_path", "run_location", "config_sha256", "code_diff_sha256",
)
_INT_COLUMNS: Final = frozenset({"iteration", "group_idx", "traj_idx", "group_size",
                                 "sampling_client_step", "chosen_traj_idx",
                                 "rejected_traj_idx"})
_FLOAT_COLUMNS: Final = frozenset({"reward", "advantage", "group_mean", "chosen_reward",
                                   "rejected_reward", "margin", "chosen_advantage",
                                   "rejected_advantage"})
_MESSAGE_COLUMNS: Final = frozenset({"prompt", "completion", "chosen", "rejected"})


@dataclass(frozen=True)
class Selection:
    """What a dataset holds.

    Attributes:
        split: ``"train"``, an evaluator's split (``"eval/test"``) or label (``"test"``), or
            None for every split.
        iterations: the iterations to read (None: all).
        min_reward: keep trajectories whose reward is at least this (pairs: the chosen one's).
        min_advantage: keep trajectories whose advantage is at least this (pairs: the chosen).
        top_k: keep the ``k`` best trajectories of each group by reward (after the minimums;
            ties by ``traj_idx``). Not with ``pairs``.
        dedupe: keep the first of rows with an identical prompt and response (pairs: prompt,
            chosen and rejected), across the whole dataset.
        pairs: one chosen/rejected pair per group instead of one row per trajectory.
        min_margin: a pair's rewards must differ by more than this.
    """

    split: str | None = "train"
    iterations: tuple[int, ...] | None = None
    min_reward: float | None = None
    min_advantage: float | None = None
    top_k: int | None = None
    dedupe: bool = False
    pairs: bool = False
    min_margin: float = 0.0

    def __post_init__(self) -> None:
        if self.top_k is not None and (type(self.top_k) is not int or self.top_k < 1):
            raise ValueError(f"top_k must be an int >= 1, got {self.top_k!r}")
        if self.top_k is not None and self.pairs:
            raise ValueError("top_k selects trajectories; a pair is each group's best and worst")
        if self.iterations is not None:
            object.__setattr__(self, "iterations",
                               tuple(sorted({layout.iteration_number(i)
                                             for i in self.iterations})))
        if not self.min_margin >= 0:
            raise ValueError(f"min_margin must be >= 0, got {self.min_margin!r}")

    @property
    def kind(self) -> str:
        """``"pairs"`` or ``"trajectories"``: the dataset's file names."""
        return "pairs" if self.pairs else "trajectories"


@dataclass
class Counts:
    """How many trajectories a dataset read, and why those it did not keep were dropped."""

    trajectories: int = 0
    no_transcript: int = 0
    no_reward: int = 0
    below_min_reward: int = 0
    below_min_advantage: int = 0
    outside_top_k: int = 0
    groups: int = 0
    no_margin: int = 0
    prompts_differ: int = 0
    duplicates: int = 0
    rows: int = 0

    def add(self, other: Counts) -> None:
        """Add ``other``'s counts to these."""
        for key, value in asdict(other).items():
            setattr(self, key, getattr(self, key) + value)


@dataclass
class DatasetResult:
    """What ``write_dataset`` wrote: the manifest (as written) and the files, sorted."""

    manifest: dict[str, Any]
    files: list[str] = field(default_factory=list)

    @property
    def rows(self) -> int:
        """Rows written."""
        return int(self.manifest["counts"]["rows"])


# -- one run's rows ----------------------------------------------------------------------------


def chat(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Messages as ``{"role", "content"}`` with text content (what chat templates take)."""
    return [{"role": str(m.get("role", "")), "content": content_text(m.get("content"))}
            for m in messages]


def split_prompt(messages: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, str]],
                                                                 list[dict[str, str]]]:
    """``(prompt, completion)``: the messages before the first assistant message, and the rest."""
    msgs = chat(messages)
    cut = next((i for i, m in enumerate(msgs) if m["role"] == "assistant"), len(msgs))
    return msgs[:cut], msgs[cut:]


def _sha256(run: Run, rel: str) -> str | None:
    entry = run.storage.stat(rel)
    if entry is None or entry.kind != "file":
        return None
    return hashlib.sha256(run.storage.read_bytes(rel)).hexdigest()


@dataclass
class Trajectory:
    """One trajectory as a dataset reads it: where it is, its reward, its transcript.

    Attributes:
        group, traj: ``group_idx`` and ``traj_idx``.
        reward: the outcome (``rlio.outcome``: ``total_reward``) when it is finite, else None.
        step: ``sampling_client_step`` when logged, else None.
        messages: the conversation the logtree logged for it, or None.
        row: ``rlio.outcome``'s row of the record.
        record: the rollout-summary record itself.
        advantage: ``rlio.outcome``'s advantage (set when read by groups).
    """

    group: int
    traj: int
    reward: float | None
    step: int | None
    messages: list[Mapping[str, Any]] | None
    row: Outcome = field(repr=False)
    record: Mapping[str, Any] = field(repr=False, default_factory=dict)
    advantage: float | None = None


class _RunContext:
    """What every row of one run repeats: its name, location, hashes, checkpoints by batch."""

    def __init__(self, run: Run, name: str) -> None:
        self.run = run
        self.files = RunFiles(run)
        self.head = {"run": name}
        self.tail = {"run_location": run.location,
                     "config_sha256": _sha256(run, layout.CONFIG),
                     "code_diff_sha256": _sha256(run, layout.CODE_DIFF)}
        self.by_batch: dict[int, Mapping[str, Any]] = {}
        for rec in run.checkpoints():  # a later record of one batch (a resume) wins
            batch = rec.get("batch")
            if type(batch) is int:
                self.by_batch[batch] = rec

    def sampler(self, step: int | None) -> dict[str, Any]:
        ckpt = self.by_batch.get(step) if step is not None else None
        return {"sampling_client_step": step,
                "checkpoint": None if ckpt is None else ckpt.get("name"),
                "sampler_path": None if ckpt is None else ckpt.get("sampler_path")}


class RunFiles:
    """A run's rollout summaries and logtrees by (iteration, evaluator label), listed once, so
    that reading a long run iteration by iteration lists it only once."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self._paths: dict[tuple[int, str | None], dict[str, str]] = {}
        for info in run.iterations():
            for rel in info.files:
                rp = layout.parse_path(rel)
                if rp.kind in ("rollout_summaries", "logtree") and rp.iteration is not None:
                    self._paths.setdefault((rp.iteration, rp.label), {}).setdefault(rp.kind, rel)

    def splits(self) -> dict[str | None, list[int]]:
        """Evaluator label (None: training) -> the iterations with its rollout summaries;
        training first, then the labels in order."""
        found: dict[str | None, list[int]] = {}
        for (i, label), kinds in sorted(self._paths.items(), key=lambda kv: kv[0][0]):
            if "rollout_summaries" in kinds:
                found.setdefault(label, []).append(i)
        return {k: found[k] for k in sorted(found, key=lambda x: (x is not None, x or ""))}

    def pick(self, wanted: str | None) -> list[tuple[str | None, str]]:
        """The ``(label, split)`` pairs of ``wanted`` (``"train"``, ``"eval/<label>"``, an
        evaluator's label or name; None: every split), in order.

        Raises:
            ValueError: the run has no rollouts of that split (the message lists those it has).
        """
        out = [(label, layout.split_name(label)) for label in self.splits()]
        if wanted is None:
            return out
        names = layout.label_candidates(wanted) if wanted != "train" else ()
        keep = [(label, split) for label, split in out
                if wanted in (split, label) or (label is not None and label in names)]
        if not keep:
            raise ValueError(
                f"no split {wanted!r} in run {self.run.location!r}; splits: "
                f"{', '.join(s for _, s in out) or 'none (no rollout summaries)'}")
        return keep

    def trajectories(self, iteration: int, label: str | None) -> list[Trajectory]:
        """The trajectories of one iteration and split (``label``: an evaluator's label as on
        disk, None: training) in file order, each joined to the conversation the iteration's
        logtree logged for it (the report's walk: ``Group g`` sections, ``Trajectory t``
        sections within)."""
        from rlio.logtree.iteration_page import find_transcripts
        from rlio.reader.source import iter_records, read_document

        paths = self._paths.get((iteration, label), {})
        doc = read_document(self.run.storage, paths["logtree"]) if "logtree" in paths else None
        transcripts = find_transcripts(doc.get("root")).messages \
            if isinstance(doc, dict) else {}
        out = []
        rel = paths.get("rollout_summaries")
        split = layout.split_name(label)
        for rec in iter_records(self.run.storage, rel) if rel is not None else ():
            g, t = rec.get("group_idx"), rec.get("traj_idx")
            if type(g) is not int or type(t) is not int or g < 0 or t < 0:
                continue  # not an index (the validator reports it)
            row = outcome(rec, split, iteration)
            reward = row.reward if row.reward is not None and math.isfinite(row.reward) else None
            out.append(Trajectory(g, t, reward, row.sampling_client_step,
                                  transcripts.get((g, t)), row, rec))
        return out


_Groups = list[tuple[GroupStats, list[Trajectory]]]


def _groups(trajs: list[Trajectory]) -> _Groups:
    """Trajectories by group, in group order, with the group's ``rlio.outcome`` statistics;
    each trajectory's ``advantage`` set from them."""
    members: dict[int, list[Trajectory]] = {}
    for t in trajs:
        members.setdefault(t.group, []).append(t)
    stats = group_stats(t.row for t in trajs)
    for st in stats:
        for t in members[st.group]:
            t.advantage = st.advantages.get(t.traj)
    return [(st, members[st.group]) for st in stats]


def _group_columns(st: GroupStats) -> dict[str, Any]:
    return {"group_mean": st.mean, "group_size": st.size}


class _Selector:
    """Applies a selection to the groups of one (split, iteration), counting what it drops."""

    def __init__(self, selection: Selection, counts: Counts) -> None:
        self.sel = selection
        self.counts = counts
        self.seen: set[bytes] = set()

    def usable(self, members: list[Trajectory]) -> list[Trajectory]:
        """The trajectories with a transcript and a finite reward."""
        out = []
        for t in members:
            self.counts.trajectories += 1
            if t.messages is None:
                self.counts.no_transcript += 1
            elif t.reward is None:
                self.counts.no_reward += 1
            else:
                out.append(t)
        return out

    def passes(self, t: Trajectory) -> bool:
        """Whether ``t`` meets the minimums (counted when not)."""
        s = self.sel
        if s.min_reward is not None and (t.reward is None or t.reward < s.min_reward):
            self.counts.below_min_reward += 1
            return False
        if s.min_advantage is not None and (t.advantage is None
                                            or t.advantage < s.min_advantage):
            self.counts.below_min_advantage += 1
            return False
        return True

    def top(self, kept: list[Trajectory]) -> list[Trajectory]:
        """The ``top_k`` best of a group's kept trajectories, in trajectory order."""
        k = self.sel.top_k
        if k is None or len(kept) <= k:
            return kept
        best = sorted(kept, key=lambda t: (-(t.reward or 0.0), t.traj))[:k]
        self.counts.outside_top_k += len(kept) - k
        return sorted(best, key=lambda t: t.traj)

    def fresh(self, *parts: Any) -> bool:
        """False for a repeat of rows already kept (with ``dedupe``; counted)."""
        if not self.sel.dedupe:
            return True
        key = hashlib.blake2b(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS),
                              digest_size=16).digest()
        if key in self.seen:
            self.counts.duplicates += 1
            return False
        self.seen.add(key)
        return True


def _trajectory_rows(ctx: _RunContext, sel: _Selector, split: str, iteration: int,
                     groups: _Groups) -> Iterator[dict[str, Any]]:
    for st, members in groups:
        g, stats = st.group, _group_columns(st)
        kept = [t for t in sel.usable(members) if sel.passes(t)]
        for t in sel.top(kept):
            assert t.messages is not None  # usable() kept only trajectories with a transcript
            prompt, completion = split_prompt(t.messages)
            if not sel.fresh(prompt, completion):
                continue
            yield {**ctx.head, "split": split, "iteration": iteration, "group_idx": g,
                   "traj_idx": t.traj, "prompt": prompt, "completion": completion,
                   "reward": t.reward, "advantage": t.advantage, **stats,
                   **ctx.sampler(t.step),
                   "conversation_json": orjson.dumps(t.messages).decode(), **ctx.tail}


def _pair_rows(ctx: _RunContext, sel: _Selector, split: str, iteration: int,
               groups: _Groups) -> Iterator[dict[str, Any]]:
    for st, members in groups:
        g = st.group
        usable = sel.usable(members)
        if len(usable) < 2:
            continue
        sel.counts.groups += 1
        ranked = sorted(usable, key=lambda t: (-(t.reward or 0.0), t.traj))
        best, worst = ranked[0], min(usable, key=lambda t: (t.reward or 0.0, t.traj))
        margin = (best.reward or 0.0) - (worst.reward or 0.0)
        if not margin > sel.sel.min_margin:
            sel.counts.no_margin += 1
            continue
        assert best.messages is not None and worst.messages is not None
        prompt, chosen = split_prompt(best.messages)
        other, rejected = split_prompt(worst.messages)
        if prompt != other:
            sel.counts.prompts_differ += 1
            continue
        if not sel.passes(best) or not sel.fresh(prompt, chosen, rejected):
            continue
        yield {**ctx.head, "split": split, "iteration": iteration, "group_idx": g,
               "chosen_traj_idx": best.traj, "rejected_traj_idx": worst.traj, "prompt": prompt,
               "chosen": chosen, "rejected": rejected, "chosen_reward": best.reward,
               "rejected_reward": worst.reward, "margin": margin,
               "chosen_advantage": best.advantage, "rejected_advantage": worst.advantage,
               **_group_columns(st), **ctx.sampler(best.step), **ctx.tail}


def dataset_batches(run: Run, selection: Selection = Selection(), *, name: str | None = None,
                    counts: Counts | None = None) -> Iterator[list[dict[str, Any]]]:
    """The dataset rows of ``run``, one list per (split, iteration) in order (the module
    docstring says what a row holds). ``name`` is the ``run`` column (default: the folder
    name); ``counts`` is filled in as the rows are read.

    Raises:
        ValueError: ``selection.split`` names no split of the run (the message lists them).
    """
    counts = counts if counts is not None else Counts()
    ctx = _RunContext(run, name or run.name)
    splits = ctx.files.pick(selection.split)  # raises here, not at the first row
    return _batches(ctx, selection, splits, _Selector(selection, counts))


def _batches(ctx: _RunContext, selection: Selection, splits: list[tuple[str | None, str]],
             sel: _Selector) -> Iterator[list[dict[str, Any]]]:
    make = _pair_rows if selection.pairs else _trajectory_rows
    wanted = None if selection.iterations is None else set(selection.iterations)
    for label, split in splits:
        for i in ctx.files.splits()[label]:
            if wanted is not None and i not in wanted:
                continue
            groups = _groups(ctx.files.trajectories(i, label))
            if groups:
                rows = list(make(ctx, sel, split, i, groups))
                sel.counts.rows += len(rows)
                yield rows


# -- writing -----------------------------------------------------------------------------------


def _schema(pa: Any, columns: Iterable[str]) -> Any:
    message = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
    fields = []
    for c in columns:
        if c in _INT_COLUMNS:
            fields.append((c, pa.int64()))
        elif c in _FLOAT_COLUMNS:
            fields.append((c, pa.float64()))
        elif c in _MESSAGE_COLUMNS:
            fields.append((c, message))
        else:
            fields.append((c, pa.string()))
    return pa.schema(fields)


def _names(runs: Sequence[Run]) -> list[str]:
    """Each run's ``run`` column: its folder name, ``-2``, ``-3`` ... for a repeated one."""
    seen: dict[str, int] = {}
    names = []
    for run in runs:
        n = seen[run.name] = seen.get(run.name, 0) + 1
        names.append(run.name if n == 1 else f"{run.name}-{n}")
    return names


def write_dataset(runs: Sequence[Run], out: str | os.PathLike[str],
                  selection: Selection = Selection(), *,
                  jsonl: bool = True) -> DatasetResult:
    """Write the dataset of ``runs`` into the new (or empty) local folder ``out``:
    ``<kind>.parquet``, ``<kind>.jsonl`` (unless ``jsonl`` is False) and ``manifest.json``.

    Raises:
        RlioError: ``out`` exists and is not an empty folder.
        ValueError: a run does not have the selection's split (nothing is written).
        MissingExtraError: pyarrow is not installed (``pip install 'rlio[parquet]'``).
    """
    pa = require("pyarrow", "parquet", purpose="the dataset export")
    pq = require("pyarrow.parquet", "parquet", purpose="the dataset export")
    root = Path(out)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise RlioError(f"{root}: exists and is not an empty folder; export to a new folder")
    columns = PAIR_COLUMNS if selection.pairs else TRAJECTORY_COLUMNS
    schema = _schema(pa, columns)
    contexts = [_RunContext(run, name) for run, name in zip(runs, _names(runs), strict=True)]
    # a run without the split fails here, before anything is written
    splits = [ctx.files.pick(selection.split) for ctx in contexts]
    root.mkdir(parents=True, exist_ok=True)
    parquet, text = root / f"{selection.kind}.parquet", root / f"{selection.kind}.jsonl"
    total, per_run = Counts(), []
    selector = _Selector(selection, total)  # one for all runs: duplicates across runs too
    with pq.ParquetWriter(parquet, schema) as writer, \
            (text.open("wb") if jsonl else open(os.devnull, "wb")) as lines:
        for ctx, found in zip(contexts, splits, strict=True):
            before = total.rows
            for rows in _batches(ctx, selection, found, selector):
                if rows:  # one row group per split and iteration
                    writer.write_table(pa.Table.from_pylist(rows, schema=schema))
                    lines.write(b"".join(orjson.dumps(r) + b"\n" for r in rows))
            per_run.append({**ctx.head, "location": ctx.run.location,
                            "config_sha256": ctx.tail["config_sha256"],
                            "code_diff_sha256": ctx.tail["code_diff_sha256"],
                            "rows": total.rows - before})
    files = [parquet, *([text] if jsonl else [])]
    manifest = {
        "rlio_version": __version__, "kind": selection.kind,
        "files": [p.name for p in files], "columns": list(columns),
        "selection": asdict(selection) | {"iterations": None if selection.iterations is None
                                          else list(selection.iterations)},
        "runs": per_run, "counts": asdict(total),
    }
    (root / "manifest.json").write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2)
                                         + b"\n")
    return DatasetResult(manifest, sorted(str(p) for p in [*files, root / "manifest.json"]))
