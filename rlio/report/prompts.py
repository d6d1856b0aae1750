"""The same prompt across training: a key per prompt, a page per tracked prompt, the biggest movers.

The prompt key (docs/format.md §11) is the first 16 hex digits of the SHA-256 of the canonical
JSON of the conversation's system messages and its first user message, in order, each reduced to
``{"content", "role"}`` (keys sorted, no whitespace, UTF-8). Two trajectories whose transcripts
start the same way share a key whatever iteration, group or split logged them.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import orjson

from rlio.logtree.html import page_context
from rlio.logtree.iteration_page import Trajectory
from rlio.outcome import FAILING_RULE, finite, mean
from rlio.reader.conversations import content_text
from rlio.report.trajectories import split_order
from rlio.templating import render

#: At most this many prompt pages are written (prompts seen in the most iterations first).
MAX_PROMPT_PAGES = 2000
#: The report lists this many prompts whose mean reward changed most.
TOP_MOVERS = 20
_MAX_RESPONSE = 4000


def prompt_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]] | None:
    """The system messages and the first user message, as the key hashes them; None without a
    user message."""
    out: list[dict[str, Any]] = []
    for m in messages:
        role = m.get("role")
        if role in ("system", "user"):
            out.append({"content": m.get("content"), "role": role})
            if role == "user":
                return out
    return None


def prompt_key(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """The prompt key of a conversation (see the module docstring), or None without a user
    message."""
    prompt = prompt_messages(messages)
    if prompt is None:
        return None
    try:
        canonical = orjson.dumps(prompt, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return None
    return hashlib.sha256(canonical).hexdigest()[:16]


def response_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """What the policy answered: the assistant messages' text, joined (cut to a few KB)."""
    text = "\n\n".join(content_text(m.get("content")) for m in messages
                       if m.get("role") == "assistant")
    return text if len(text) <= _MAX_RESPONSE else text[:_MAX_RESPONSE] + " …"


@dataclass
class Sample:
    """One trajectory of a tracked prompt."""

    group: int
    traj: int
    reward: float | None
    failing: bool
    response: str
    page: str  # location of its iteration page, relative to the report's folder


@dataclass
class Track:
    """Every logged trajectory of one prompt, by (split, iteration)."""

    key: str
    prompt: list[dict[str, Any]]
    samples: dict[tuple[str, int], list[Sample]] = field(default_factory=dict)

    def iterations(self) -> list[tuple[str, int]]:
        """(split, iteration) pairs in which the prompt was logged, in order."""
        return sorted(self.samples, key=lambda k: (split_order(k[0]), k[1]))

    def mean_by_iteration(self) -> list[tuple[str, int, float]]:
        """Mean finite reward per (split, iteration) where it has one."""
        out = []
        for split, it in self.iterations():
            m = mean(finite(s.reward for s in self.samples[(split, it)]))
            if m is not None:
                out.append((split, it, m))
        return out

    def means(self) -> list[float]:
        """The mean rewards of the first split logged, iteration by iteration."""
        by_it = self.mean_by_iteration()
        return [m for split, _, m in by_it if split == by_it[0][0]]

    def label(self) -> str:
        """The first line of the user message, cut short (for links)."""
        user = next((m for m in reversed(self.prompt) if m.get("role") == "user"), None)
        text = content_text(user.get("content")) if user else ""
        line = text.strip().splitlines()[0] if text.strip() else self.key
        return line if len(line) <= 90 else line[:90] + "…"


class PromptTracker:
    """Collects trajectories by prompt key while the report reads the iterations."""

    def __init__(self) -> None:
        self.tracks: dict[str, Track] = {}

    def add(self, split: str, iteration: int, page: str,
            transcripts: Mapping[tuple[int, int], Sequence[Mapping[str, Any]]],
            trajectories: Sequence[Trajectory] | None) -> None:
        """Every transcript of one iteration, joined to its rollout summary row by (group, traj)."""
        rows = {(t.group, t.traj): t for t in trajectories or ()}
        for (g, t), messages in transcripts.items():
            key = prompt_key(messages)
            if key is None:
                continue
            track = self.tracks.get(key)
            if track is None:
                track = self.tracks[key] = Track(key, prompt_messages(messages) or [])
            row = rows.get((g, t))
            track.samples.setdefault((split, iteration), []).append(Sample(
                g, t, None if row is None else row.reward, row is not None and row.failing,
                response_text(messages), page))

    def pages(self) -> list[Track]:
        """The tracks that get a page: seen in the most iterations first, capped."""
        ranked = sorted(self.tracks.values(), key=lambda tr: (-len(tr.iterations()), tr.key))
        return ranked[:MAX_PROMPT_PAGES]

    def movers(self) -> list[tuple[Track, list[float]]]:
        """Tracks whose mean reward changed most between the first and last iteration logged
        (within one split), with those means."""
        scored = [(tr, ms) for tr in self.pages() if len(ms := tr.means()) >= 2]
        scored.sort(key=lambda tm: (-abs(tm[1][-1] - tm[1][0]), tm[0].key))
        return scored[:TOP_MOVERS]


def prompt_location(folder: str, key: str) -> str:
    """Where a prompt's page goes, relative to the report's folder."""
    return f"{folder}/prompts/{key}.html"


@dataclass(frozen=True, slots=True)
class PromptText:
    """One prompt message as shown."""

    role: str
    text: str


@dataclass(frozen=True, slots=True)
class SampleView:
    """One trajectory on a prompt page, with the link to its transcript."""

    group: int
    traj: int
    reward: float | None
    failing: bool
    response: str
    href: str


@dataclass(frozen=True, slots=True)
class IterationView:
    """The trajectories of one prompt in one (split, iteration)."""

    split: str
    iteration: int
    mean: float | None
    samples: list[SampleView]


@dataclass(frozen=True, slots=True)
class PromptPage:
    """A prompt's page: where the report is, the prompt, iteration by iteration the answers."""

    report: str
    prompt: list[PromptText]
    iterations: list[IterationView]
    rule: str = FAILING_RULE


def prompt_page_view(track: Track, location: str, report_name: str) -> PromptPage:
    """The view model of one prompt's page written at ``location``."""
    base = posixpath.dirname(location)
    means = {(s, i): m for s, i, m in track.mean_by_iteration()}
    its = [IterationView(split, it, means.get((split, it)), [
        SampleView(s.group, s.traj, s.reward, s.failing, s.response,
                   quote(posixpath.relpath(s.page, base)) + f"#traj-{s.group}-{s.traj}")
        for s in track.samples[(split, it)]]) for split, it in track.iterations()]
    return PromptPage(quote(posixpath.relpath(report_name, base)),
                      [PromptText(str(m.get("role")), content_text(m.get("content")))
                       for m in track.prompt], its)


def render_prompt_page(track: Track, location: str, report_name: str) -> str:
    """One prompt's page: the prompt once, then iteration by iteration the responses and rewards."""
    return render("prompt.html.j2", v=prompt_page_view(track, location, report_name),
                  **page_context(f"Prompt {track.key}"))


@dataclass(frozen=True, slots=True)
class Mover:
    """A prompt whose mean reward changed most: where its page is, first and last means."""

    label: str
    href: str
    split: str
    iterations: int
    first: float
    last: float

    @property
    def change(self) -> float:
        return self.last - self.first


@dataclass(frozen=True, slots=True)
class PromptsView:
    """The report's prompt section: how many, the movers, every tracked prompt's link."""

    distinct: int
    movers: list[Mover]
    pages: list[tuple[str, str, int]]  # label, href, iterations


def prompts_view(tracker: PromptTracker, href: dict[str, str]) -> PromptsView:
    """The prompts whose reward changed most, and how many are tracked."""
    movers = [Mover(tr.label(), href[tr.key], tr.mean_by_iteration()[0][0], len(ms), ms[0],
                    ms[-1]) for tr, ms in tracker.movers()]
    return PromptsView(len(tracker.tracks), movers,
                       [(tr.label(), href[tr.key], len(tr.iterations()))
                        for tr in tracker.pages()])
