"""Concurrent logging: asyncio tasks and threads each in their own section never interleave."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rlio.logtree import LogTree


def _sections(node: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in node["children"] if isinstance(c, dict) and c["tag"] == "section"]


def _title(section: dict[str, Any]) -> str:
    title: str = section["children"][0]["children"][0]
    return title


def _texts(section: dict[str, Any]) -> list[str]:
    return [c["children"][0] for c in section["children"][1:] if c["tag"] == "p"]


def test_concurrent_tasks_in_their_own_sections_never_interleave() -> None:
    """gather() of tasks that yield between log calls keeps each task's lines in its section."""
    lt = LogTree("async")
    n_tasks, n_lines = 12, 25

    async def rollout(i: int) -> None:
        with lt.section(f"task {i}"):
            for k in range(n_lines):
                lt.text(f"{i}:{k}")
                await asyncio.sleep(0)
                if k == n_lines // 2:
                    with lt.section(f"inner {i}"):
                        await asyncio.sleep(0)
                        lt.text(f"{i}:inner")
                        await asyncio.sleep(0)

    async def main() -> None:
        with lt.section("Group Rollout"):
            await asyncio.gather(*(rollout(i) for i in range(n_tasks)))
            lt.text("after gather")

    asyncio.run(main())
    (group,) = _sections(lt.to_json()["root"])
    tasks = _sections(group)
    assert sorted(_title(s) for s in tasks) == sorted(f"task {i}" for i in range(n_tasks))
    for section in tasks:
        i = int(_title(section).split()[1])
        assert _texts(section) == [f"{i}:{k}" for k in range(n_lines)]
        (inner,) = _sections(section)
        assert _title(inner) == f"inner {i}"
        assert _texts(inner) == [f"{i}:inner"]
    assert _texts(group) == ["after gather"]


def test_tasks_interleave_in_time_while_logging() -> None:
    """The tasks really ran concurrently: their first lines were logged before any finished."""
    lt = LogTree("async")
    order: list[int] = []

    async def rollout(i: int) -> None:
        with lt.section(f"task {i}"):
            for _ in range(3):
                order.append(i)
                lt.text(str(i))
                await asyncio.sleep(0)

    async def main() -> None:
        await asyncio.gather(*(rollout(i) for i in range(4)))

    asyncio.run(main())
    assert order[:4] == [0, 1, 2, 3]  # every task started before any task's second line
    assert all(_texts(s) == [_title(s).split()[1]] * 3 for s in _sections(lt.to_json()["root"]))


def test_task_without_its_own_section_logs_into_its_creators_section() -> None:
    """A task inherits the section open where it was created (context copy)."""
    lt = LogTree("async")

    async def child() -> None:
        await asyncio.sleep(0)
        lt.text("from child")

    async def main() -> None:
        with lt.section("parent"):
            task = asyncio.create_task(child())
        lt.text("root line")
        await task

    asyncio.run(main())
    parent, root_line = lt.to_json()["root"]["children"][2:]
    assert _texts(parent) == ["from child"]
    assert root_line["children"] == ["root line"]


def test_threads_in_their_own_sections_never_interleave() -> None:
    """Threads each inside their own section keep their lines apart."""
    lt = LogTree("threads")
    start = threading.Barrier(6)

    def work(i: int) -> None:
        start.wait()
        with lt.section(f"thread {i}"):
            for k in range(200):
                lt.text(f"{i}:{k}")

    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(work, range(6)))
    sections = _sections(lt.to_json()["root"])
    assert len(sections) == 6
    for section in sections:
        i = int(_title(section).split()[1])
        assert _texts(section) == [f"{i}:{k}" for k in range(200)]


def test_to_thread_work_logs_into_the_callers_section() -> None:
    """asyncio.to_thread copies the context, so the thread logs where its caller is."""
    lt = LogTree("to_thread")

    async def main() -> None:
        with lt.section("grading"):
            await asyncio.to_thread(lt.text, "graded in a thread")

    asyncio.run(main())
    (section,) = _sections(lt.to_json()["root"])
    assert _texts(section) == ["graded in a thread"]
