"""Every ``python`` block of the docs users read, type-checked with ``mypy --strict`` and run.

The blocks are found, not listed: a block added to README.md, docs/*.md or either binding's
README is a test at once. The conventions (a hidden prelude in an HTML comment before the
fence, ``check-only``, ``xfail``) are docs/CONTRIBUTING.md's. Each block runs in a process of
its own, in a fresh directory, with ``DATABASE_URL`` naming a PostgreSQL schema of its own.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "bindings-python" / "README.md",
    ROOT / "bindings-node" / "README.md",
]
LANGUAGES = {"python", "py"}
POSTGRES = os.environ.get("TOOLJIG_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test")

#: What every block may take for granted, as a user's module would import it.
PRELUDE = """\
import asyncio
import json
import os
from typing import Any

import tooljig
"""

#: Top-level ``await``/``async for`` is how the docs show async code: the runner awaits it.
RUNNER = """\
import ast, asyncio, sys, types
path = sys.argv[1]
code = compile(open(path).read(), path, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
run = types.FunctionType(code, {"__name__": "__main__", "__file__": path})
result = run()
if asyncio.iscoroutine(result):
    asyncio.run(result)
"""


@dataclass(frozen=True)
class Snippet:
    """One fenced block and the comments before it."""

    doc: Path
    line: int
    language: str
    code: str
    prelude: str
    after: str
    check_only: str | None
    xfail: str | None

    @property
    def id(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"

    @property
    def module(self) -> str:
        return "snippet_" + re.sub(r"\W", "_", self.id)

    def source(self) -> str:
        return f"{PRELUDE}{self.prelude}\n{self.code}{self.after}\n"

    def offset(self) -> int:
        """Lines before the block's first line in :meth:`source`."""
        return PRELUDE.count("\n") + self.prelude.count("\n") + 1


def hidden(comments: list[str], kind: str) -> str:
    """The code of the ``<!-- prelude`` (or ``after``) comments before a block."""
    return "\n".join(c[len(kind) + 1 :] for c in comments if c.startswith(kind + "\n"))


def snippets(doc: Path) -> Iterator[Snippet]:
    """The fenced blocks of ``doc`` with their hidden prelude and markers."""
    lines = doc.read_text().splitlines()
    comments: list[str] = []
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if len(lines[i]) - len(lines[i].lstrip()) >= 4:
            comments = []  # an indented code block: shown, never run
        elif stripped.startswith("<!--"):
            start = i
            while "-->" not in lines[i]:
                i += 1
            comments.append("\n".join(lines[start : i + 1]).strip()[4:-3].strip())
        elif stripped.startswith("```"):
            indent = len(lines[i]) - len(lines[i].lstrip())
            language = stripped[3:].split(",")[0].strip()
            start = i
            i += 1
            while lines[i].strip() != "```":
                i += 1
            body = "\n".join(line[indent:] for line in lines[start + 1 : i])
            marks = dict(c.split(":", 1) for c in comments if re.match(r"[\w-]+:", c))
            marks = {k.strip(): v.strip() for k, v in marks.items()}
            yield Snippet(doc, start + 1, language, body + "\n", hidden(comments, "prelude"), hidden(comments, "after"), marks.get("check-only"), marks.get("xfail"))
            comments = []
        else:
            comments = [] if stripped else comments
        i += 1


ALL = [s for doc in DOCS for s in snippets(doc) if s.language in LANGUAGES]


def params(*, run: bool) -> list[object]:
    """Every block; an ``xfail`` block's run expected to fail (its types must hold already)."""
    return [
        pytest.param(s, id=s.id, marks=[pytest.mark.xfail(strict=True, reason=s.xfail)] if s.xfail and run else [])
        for s in ALL
    ]


@cache
def mypy_errors(folder: str) -> dict[str, list[str]]:
    """One ``mypy --strict`` over every block (a module each); the errors by module."""
    out = Path(folder)
    for s in ALL:
        (out / f"{s.module}.py").write_text(s.source())
    r = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--disable-error-code", "top-level-await",
         "--cache-dir", str(out / ".mypy_cache"), "--no-error-summary", "--show-error-codes", str(out)],
        check=False, capture_output=True, text=True, timeout=600,
    )
    errors: dict[str, list[str]] = {}
    for line in r.stdout.splitlines():
        m = re.match(r".*?(snippet_\w+)\.py:(\d+): (.*)", line)
        if m:
            errors.setdefault(m.group(1), []).append(f"{m.group(2)}: {m.group(3)}")
    assert r.returncode in (0, 1), r.stdout + r.stderr
    return errors


@pytest.fixture(scope="session")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    return mypy_errors(str(tmp_path_factory.mktemp("doc-snippets")))


def test_the_docs_have_python_snippets() -> None:
    assert len(ALL) >= 20, [s.id for s in ALL]


@pytest.mark.parametrize("snippet", params(run=False))
def test_snippet_type_checks(snippet: Snippet, checked: dict[str, list[str]]) -> None:
    errors = []
    for error in checked.get(snippet.module, []):
        line, message = error.split(": ", 1)
        at = int(line) - snippet.offset()
        where = f"{snippet.doc.name}:{snippet.line + at}" if at > 0 else f"prelude line {int(line)}"
        errors.append(f"{where}: {message}")
    assert not errors, "\n".join(errors)


@pytest.fixture
def database_url() -> Iterator[str]:
    """A ``?schema=`` of the block's own (created on first use, dropped after)."""
    schema = f"tj_doc_{uuid.uuid4().hex}"
    yield f"{POSTGRES}?schema={schema}"
    if shutil.which("psql"):
        subprocess.run(["psql", POSTGRES, "-qc", f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'],
                       check=False, capture_output=True, timeout=30)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("snippet", params(run=True))
def test_snippet_runs(snippet: Snippet, tmp_path: Path, database_url: str) -> None:
    if snippet.check_only:
        pytest.skip(f"check-only: {snippet.check_only}")
    path = tmp_path / f"{snippet.module}.py"
    path.write_text(snippet.source())
    env = {**os.environ, "DATABASE_URL": database_url}
    r = subprocess.run([sys.executable, "-c", RUNNER, str(path)], check=False, cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=170)
    assert r.returncode == 0, f"{snippet.id} failed:\n{r.stdout}\n{r.stderr}"


def test_the_files_the_docs_name_exist() -> None:
    """A file a doc points the reader to (`core/src/x.rs`, `tests/y.py`, a relative link) is there.
    An archive is history: it names files as they were on its dates."""
    missing = []
    for doc in [d for d in [*DOCS, ROOT / "apps" / "README.md"] if "archive" not in d.name]:
        for n, line in enumerate(doc.read_text().splitlines(), 1):
            named = re.findall(r"`((?:core|cli|bindings-python|bindings-node|tests|examples|apps|scripts|docs)/[\w./-]+\.\w+)`", line)
            linked = [p for p in re.findall(r"\]\(([^)#\s]+)", line) if "://" not in p]
            for path in named:
                if not (ROOT / path).exists() and not (doc.parent / path).exists():
                    missing.append(f"{doc.relative_to(ROOT)}:{n}: {path}")
            for path in linked:
                if not (doc.parent / path).exists():
                    missing.append(f"{doc.relative_to(ROOT)}:{n}: link {path}")
    assert not missing, "\n".join(missing)
