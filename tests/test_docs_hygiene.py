"""What the repository's docs and data stay: history lives in git and CHANGELOG.md, so no file under
README.md, docs/, autotune/, tests/ or benchmarks/ names a numbered working session, in its text or
its path; benchmarks/data holds only datasets named by what they hold, small enough to clone; and
every relative link in the README and docs/ points at a file that exists. No GPU."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data"
SESSION = re.compile(r"[Ss]ession ?\d")
DATA_LIMIT = 16 * 2**20  # bytes: the clone's share of measured data (the shipped database's datasets grow with each cover)
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def tracked_files() -> list[Path]:
    """The files this check covers, walked from the tree (not git: a copy without .git still checks)."""
    roots = [ROOT / "README.md", *(ROOT / d for d in ("docs", "autotune", "tests", "benchmarks"))]
    files = []
    for root in roots:
        for path in [root] if root.is_file() else sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                files.append(path)
    return files


def test_no_file_names_a_numbered_session():
    found = []
    for path in tracked_files():
        rel = path.relative_to(ROOT).as_posix()
        if SESSION.search(rel):
            found.append(rel)
            continue
        if path.suffix in {".gz", ".sqlite", ".png", ".pyc"}:
            continue  # binary: their paths are checked above
        text = path.read_text(errors="replace")
        found += [f"{rel}:{text.count(chr(10), 0, m.start()) + 1}" for m in SESSION.finditer(text)]
    assert not found, f"history belongs in git and CHANGELOG.md: {found[:20]}"


def test_benchmark_data_is_small_and_named_by_content():
    files = [p for p in DATA.rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in files)
    assert files and total < DATA_LIMIT, f"benchmarks/data holds {total / 2**20:.1f} MiB"
    folders = [p.relative_to(DATA).as_posix() for p in DATA.rglob("*") if p.is_dir()]
    assert not [f for f in folders if SESSION.search(f)], folders
    leftovers = [p.name for p in files if p.name.endswith(("-wal", "-shm"))]
    assert not leftovers, f"SQLite's side files beside a committed database: {leftovers}"


def test_every_relative_link_in_the_docs_resolves():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    broken = []
    for page in pages:
        for target in LINK.findall(page.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT).as_posix()} -> {target}")
    assert not broken, broken
