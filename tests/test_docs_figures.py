"""The figures the README and docs/ state are those of their committed sources, so that neither side
goes stale alone: the sampler table (docs/search.md) equals the JSON that `benchmarks/bench_search.py
--json` wrote (the command is in the JSON and in the doc), the space sizes equal what `autotune space`
computes (autotune.space.count_valid), and the results tables equal the suite's and the 3xTF32
benchmark's JSON. No GPU; nothing is re-run."""
from __future__ import annotations

import gzip
import json
import math
import re
import sqlite3
import statistics
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from autotune.api.suite import read_shapes
from autotune.families import BLOCKED, NAIVE, TILED
from autotune.packed import unpacked
from autotune.space import Limits, count_valid
from tests.committed import committed_database
from tests.programs import program

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SEARCH_DOC = ROOT / "docs" / "search.md"  # the sampler table and the space sizes
SAMPLER_JSON = ROOT / "benchmarks" / "data" / "bench-search-naive-tiled-h200.json"
BLOCKED_GT = ROOT / "benchmarks" / "data" / "h200-gt-blocked-4096.sqlite.gz"
SECTION = "## Search efficiency: replayed, against ground truth"


def section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start:end if end >= 0 else None]


def geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs))


def table_rows(text: str) -> list[list[str]]:
    """The first markdown table in text, header and separator left out, bold marks removed."""
    lines = [ln for ln in text.splitlines() if ln.startswith("|")]
    return [[c.strip().replace("**", "") for c in ln.strip("|").split("|")] for ln in lines[2:]]


def _num(x: float | None) -> str:
    """A median as the README writes it: whole numbers without a point; "never" if not reached."""
    return "never" if x is None else f"{x:g}"


def expected_row(name: str, by_size: dict[int, dict]) -> list[str]:
    """The README's cells for one sampler: trials and % of space at 4096³ and 2048³, then vs random
    (one figure where both shapes round alike, else the range)."""
    cells, scores = [], []
    for size in (4096, 2048):
        s = by_size[size]["samplers"][name]
        pct = s["pct_of_space_to_2pct"]
        cells += [_num(s["trials_to_2pct"]["median"]), "never" if pct is None else f"{pct:.1f}"]
        scores.append(s["vs_random_2pct"])
    if None in scores:
        vs = "-"
    else:
        lo, hi = sorted(f"{v:.1f}" for v in scores)
        vs = f"{lo}x" if lo == hi else f"{lo}-{hi}x"
    return cells + [vs]


@pytest.fixture(scope="module")
def search_doc() -> str:
    return SEARCH_DOC.read_text()


@pytest.fixture(scope="module")
def bench() -> dict:
    return json.loads(SAMPLER_JSON.read_text())


def test_the_sampler_table_is_the_committed_benchmark(search_doc, bench):
    text = section(search_doc, SECTION)
    by_size = {d["shape"][0]: d for d in bench["datasets"]}
    assert sorted(by_size) == [2048, 4096]
    rows = table_rows(text)
    readme_names = [row[0].split()[0] for row in rows]
    ran = [n for n in by_size[4096]["samplers"]]
    assert sorted(readme_names) == sorted(ran), "the doc's rows are not the samplers the benchmark ran"
    for row, name in zip(rows, readme_names):
        assert row[1:] == expected_row(name, by_size), f"docs/search.md row {name!r} differs from {SAMPLER_JSON.name}"
    seeds = len(bench["seeds"])
    assert f"(median over {seeds} seeds)" in text and f"over {seeds} seeds" in text
    flat = " ".join(text.split())
    assert f"`{bench['command']}`" in flat, "the README does not quote the command that made the JSON"
    assert f"Optuna {bench['versions']['optuna']};" in flat


def test_the_default_sampler_claim_holds_for_the_committed_benchmark(search_doc, bench):
    """"the default is tpe-mv, of the samplers that work on any space the one with the fewest trials
    over both shapes (tpe needs N fewer at 4096³, N more at 2048³)": model needs every config's SASS."""
    flat = " ".join(section(search_doc, SECTION).split())
    med = {d["shape"][0]: {n: s["trials_to_2pct"]["median"] for n, s in d["samplers"].items()} for d in bench["datasets"]}
    total = {n: sum(med[size][n] or float("inf") for size in med) for n in med[4096] if n != "model"}
    assert "the default is `tpe-mv`, of the samplers that work on any space the one with the fewest" in flat
    assert min(total, key=total.get) == "tpe-mv", total
    m = re.search(r"\(`tpe` needs (\d+) (fewer|more) at 4096³, (\d+) (fewer|more) at 2048³\)", flat)
    assert m, "the README's tpe against tpe-mv sentence is gone or reworded: update this test with it"
    for size, n, word in ((4096, m[1], m[2]), (2048, m[3], m[4])):
        diff = med[size]["tpe"] - med[size]["tpe-mv"]
        assert (f"{abs(diff):g}", "more" if diff > 0 else "fewer") == (n, word), (size, diff)


def test_the_replayed_datasets_are_what_the_search_doc_says(search_doc, bench):
    naive_tiled = count_valid(NAIVE, Limits()) + count_valid(TILED, Limits())
    text = " ".join(search_doc.split())
    quoted = re.findall(r"([\d,]+) valid naive and tiled configs", text) + re.findall(r"the ([\d,]+) naive and tiled configs", text)
    assert quoted and all(q == f"{naive_tiled:,}" for q in quoted), quoted
    for d in bench["datasets"]:  # "every one of the 916 valid naive and tiled configs at 4096³ and at 2048³"
        assert d["exhaustive"] and d["space"] == naive_tiled, d["name"]
    with closing(sqlite3.connect(unpacked(BLOCKED_GT))) as db:
        ok = db.execute("SELECT COUNT(*) FROM results WHERE family = 'blocked' AND status = 'ok' "
                        "AND M = 4096 AND N = 4096 AND K = 4096").fetchone()[0]
    assert f"and {ok} blocked configs at 4096³" in text


def test_the_blocked_space_size_is_what_autotune_space_counts(search_doc):
    quoted = re.findall(r"([\d,]+) blocked ones", " ".join(search_doc.split()))
    assert quoted == [f"{count_valid(BLOCKED, Limits()):,}"]


PYTORCH_DOC = ROOT / "docs" / "pytorch.md"
HOST_DOC = ROOT / "docs" / "host-bound.md"  # what host-bound calls cost, and the rows that cover them
ANYSHAPE_JSON = ROOT / "benchmarks" / "data" / "anyshape-h200.json"


H200_SEEDS = {1: "anyshape-h200.json", 2: "anyshape-seed2-h200.json", 3: "anyshape-seed3-h200.json",
              5: "anyshape-seed5-h200.json"}  # through the database shipped before the small corners


def h200_table(heading: str, names: dict[int, str]) -> tuple[str, dict[int, dict]]:
    """The section of docs/pytorch.md under heading: its table's row for each seed is the summary that
    benchmarks/anyshape.py wrote there, at the commit it names, through the shipped database. Returns the section
    and the runs, by seed."""
    part = section(PYTORCH_DOC.read_text(), heading)
    rows = table_rows(part)
    runs = {seed: json.loads((ROOT / "benchmarks" / "data" / name).read_text()) for seed, name in names.items()}
    assert [int(row[0]) for row in rows] == list(names)
    for row, (seed, data) in zip(rows, runs.items()):
        r, p = data["summary"]["random"], data["summary"]["projection"]
        assert data["seed"] == seed and data["device"].startswith("NVIDIA H200") and r["shapes"] == 40
        assert data["database"].endswith("tuned/h200.sqlite")
        assert row[1:] == [f"`{data['commit']}`", f"{r['geomean_queued']:.3f}", f"{r['geomean_alone']:.3f}",
                           f"{r['min_queued']:.3f}", str(r["below_0.95_queued"]), str(r["kernels"]),
                           f"{p['geomean_queued']:.3f}", f"{r['control_geomean']:.3f}"], seed
    return part, runs


def ran_at_seeds(by_seed: dict[int, dict], flat: str, first: str) -> list[tuple[int, dict]]:
    """The random shapes of the runs by seed, after checking the docs' sentence on where our kernels ran among them
    (how many, torch.matmul's time over ours both ways, by family); first: its first word's case."""
    random = [(seed, s) for seed, run in by_seed.items() for s in run["shapes"] if s["kind"] == "random"]
    ours = [s for _, s in random if not s["kernel"].startswith("cuBLAS")]
    q, a = [s["torch_ms"] / s["ours_ms"] for s in ours], [s["torch_alone_ms"] / s["ours_alone_ms"] for s in ours]
    families = Counter(s["kernel"].split("_")[1] for s in ours)
    assert (f"{first} kernels run at {len(ours)} of the {len(random)} random shapes of seeds 1-10, at {min(q):.2f}-"
            f"{max(q):.2f}x queued and {min(a):.2f}-{max(a):.2f}x alone (`splitk` at {families['splitk']}, `blocked` at "
            f"{families['blocked']}, `tall` at {families['tall']}, `skinny` at {families['skinny']})") in flat
    assert sum(families.values()) == len(ours)
    return random


def test_the_pytorch_docs_aten_steps_table_is_the_h100_runs():
    """docs/pytorch.md's table of load() with api._aten's steps and without, seed by seed, and its figures."""
    text = section(PYTORCH_DOC.read_text(), "## With api._aten's steps (an H100)")
    flat = " ".join(text.split())
    rows, spans = table_rows(text), {k: [] for k in ("library", "ours", "projections")}
    assert [int(r[0]) for r in rows] == list(range(1, 11))
    for row in rows:
        sources = "ccca632" if int(row[0]) <= 7 else "d547f32"  # the two leases
        cells = []
        for way, first in (("c", "C"), ("aten", "C+ATen")):
            run = _json(f"anyshape-seed{row[0]}-first-step-{way}-h100.json")
            assert run["first_step"] == first and run["commit"] == sources and run["device"].startswith("NVIDIA H100")
            shapes = [x for x in run["shapes"] if x["kind"] == "random"]
            library = [x["torch_ms"] / x["ours_ms"] for x in shapes if x["kernel"].startswith("cuBLAS")]
            ours = [x["torch_ms"] / x["ours_ms"] for x in shapes if not x["kernel"].startswith("cuBLAS")]
            summary = run["summary"]["random"]
            cells.append((summary, geomean(library), geomean(ours)))
            spans["library"].append((way, geomean(library)))
            spans["ours"].append((way, geomean(ours)))
            spans["projections"].append((way, run["summary"]["projection"]["geomean_queued"]))
        (c, c_lib, c_ours), (a, a_lib, a_ours) = cells
        assert row[1:] == [f"{c['geomean_queued']:.3f}", f"{a['geomean_queued']:.3f}", f"{c['geomean_alone']:.3f}",
                           f"{a['geomean_alone']:.3f}", str(c["below_0.95_queued"]), str(a["below_0.95_queued"]),
                           f"{c_lib:.3f}", f"{a_lib:.3f}", f"{c_ours:.2f}", f"{a_ours:.2f}"]

    def span(kind: str, way: str, digits: int) -> str:
        values = [v for w, v in spans[kind] if w == way]
        return f"{min(values):.{digits}f}-{max(values):.{digits}f}"

    assert (f"read {span('library', 'aten', 3)} ({span('library', 'c', 3)} without the steps). Our kernels' "
            f"shapes, host-bound most of them, read {span('ours', 'aten', 2)} ({span('ours', 'c', 2)})") in flat
    assert f"{span('projections', 'aten', 3)} with the steps, {span('projections', 'c', 3)} without" in flat
    probe = _probe_lines("aten-steps-h100.txt")
    library = [us for (shape, ran), us in probe if ran.startswith("cuBLAS")]
    [(kernel_shape, at64)] = [(shape, us) for (shape, ran), us in probe if not ran.startswith("cuBLAS")]
    assert len(library) == 5 and kernel_shape == (64, 64, 64)
    assert (f"{_span2([p['C+ATen'] for p in library])} with the steps, torch.matmul "
            f"{_span2([p['torch.matmul'] for p in library])}, the C first step {_span2([p['C'] for p in library])}; "
            f"at 64³ (our kernel) {at64['C+ATen']:.2f}, {at64['C']:.2f} without, torch.matmul "
            f"{at64['torch.matmul']:.2f}") in flat


def _measured_at(shape: dict) -> tuple[int, ...]:
    """The shape a run's kernel was measured at, as its description (Choice.describe) names it."""
    return tuple(map(int, re.search(r"measured at (\d+)x(\d+)x(\d+)", shape["kernel"]).groups()))


def test_the_pytorch_docs_later_seeds_table_is_the_h100_runs():
    """docs/pytorch.md's table of seeds 11-30 with api._aten's steps, its figures, and seed 25's repeats."""
    text = section(PYTORCH_DOC.read_text(), "## Seeds 11-30 (an H100)")
    flat, rows = " ".join(text.split()), table_rows(text)
    assert [int(r[0]) for r in rows] == list(range(11, 31))
    ours, alone, few, below = [], [], [], []
    for row in rows:
        run = _json(f"anyshape-seed{row[0]}-first-step-aten-h100.json")
        sources = "770dd55" if int(row[0]) <= 20 else "c0a2971" if int(row[0]) <= 25 else "f02a679"  # the three leases
        assert run["seed"] == int(row[0]) and run["first_step"] == "C+ATen" and run["commit"] == sources
        assert run["device"].startswith("NVIDIA H100") and "tuned/h100.sqlite" in run["database"]
        r, shapes = run["summary"]["random"], [x for x in run["shapes"] if x["kind"] == "random"]
        library = [x for x in shapes if x["kernel"].startswith("cuBLAS")]
        kernels = [x for x in shapes if not x["kernel"].startswith("cuBLAS")]
        assert row[1:] == [f"{r['geomean_queued']:.3f}", f"{r['geomean_alone']:.3f}", f"{r['min_queued']:.3f}",
                           str(r["below_0.95_queued"]), str(r["kernels"]),
                           f"{geomean([x['torch_ms'] / x['ours_ms'] for x in library]):.3f}",
                           f"{geomean([x['torch_ms'] / x['ours_ms'] for x in kernels]):.2f}",
                           f"{run['summary']['projection']['geomean_queued']:.3f}"], row[0]
        ours += [(x["torch_ms"] / x["ours_ms"], x) for x in kernels]
        alone += [x["torch_alone_ms"] / x["ours_alone_ms"] for x in kernels]
        few += [(x["torch_ms"] / x["ours_ms"], min(_measured_at(x)[:2])) for x in kernels if min(x["M"], x["N"]) <= 2]
        below += [(int(row[0]), x) for x in shapes if x["torch_ms"] / x["ours_ms"] < 0.95]
    _, most = max(ours, key=lambda pair: pair[0])
    assert (f"Our kernels ran at {len(ours)} of the 800 shapes, at {_span2([q for q, _ in ours])}x queued and "
            f"{_span2(alone)}x alone (the most at {most['M']}x{most['N']}x{most['K']}, where torch.matmul took "
            f"{most['torch_ms'] * 1e3:.0f} µs a call and a `{most['kernel'].split('_')[1]}` row measured at "
            f"{'x'.join(map(str, _measured_at(most)))} {most['ours_ms'] * 1e3:.1f}); seven of them are calls of one or "
            f"two rows or columns covered by rows measured at 15 or 16 ({_span2([q for q, _ in few])}x)") in flat
    assert len(few) == 7 and {side for _, side in few} == {15, 16}

    def at(x: dict, queued: str = "") -> str:  # a shape's queued and alone ratios, as the docs' sentence writes them
        return (f"{x['M']}x{x['N']}x{x['K']} at {x['torch_ms'] / x['ours_ms']:.3f}{queued} and "
                f"{x['torch_alone_ms'] / x['ours_alone_ms']:.3f}")

    assert [seed for seed, _ in below] == [11, 25, 25] and all(x["kernel"].startswith("cuBLAS") for _, x in below)
    assert (f"Below 0.95, three shapes of 800, all pass-throughs to cuBLAS: {at(below[0][1], ' queued')} alone (seed 11), "
            f"{at(below[1][1])}, {at(below[2][1])} (seed 25)") in flat
    repeats = [_json(f"anyshape-seed25-first-step-aten-repeat-{x}-h100.json") for x in "ab"]
    assert all(r["commit"] == "c0a2971" and r["seed"] == 25 and r["first_step"] == "C+ATen" for r in repeats)
    again = {(x["M"], x["N"], x["K"]): [] for _, x in below[1:]}
    for r in repeats:
        assert r["summary"]["random"]["below_0.95_queued"] == 0
        for x in r["shapes"]:
            if (x["M"], x["N"], x["K"]) in again:
                again[(x["M"], x["N"], x["K"])].append(x["torch_ms"] / x["ours_ms"])
    assert (f"read {repeats[0]['summary']['random']['geomean_queued']:.3f} and "
            f"{repeats[1]['summary']['random']['geomean_queued']:.3f} queued, none below 0.95, those two shapes "
            f"{' and '.join(f'{min(v):.3f}-{max(v):.3f}' for v in again.values())}") in flat


def test_the_pytorch_docs_h200_table_is_the_shallow_runs(tmp_path):
    """docs/pytorch.md's table through the database shipped now (the shallow corners merged): the corners that won,
    that the shipped database holds their winners, what our kernels gained, the shapes below 0.95, and that the
    suite's shapes choose as they did in the suite's last run."""
    from autotune.api.dispatch import Dispatcher
    from autotune.api.operands import Layout

    part, by_seed = h200_table("## Measured on the H200", {seed: f"anyshape-seed{seed}-shallow-h200.json"
                                                           for seed in range(1, 11)})
    flat = " ".join(part.split())
    assert all(run["commit"] == "4213690" for run in by_seed.values())
    corners = unpacked(ROOT / "benchmarks" / "data" / "h200-shallow-corners.sqlite.gz")
    count, won, quick = corner_wins(corners, lambda r: r["N"] % 4 == 0)  # by whether C's rows are aligned
    assert (f"{count.total()} corners of K 8, 32 and 64" in flat and f"beat cuBLAS by 2% at {won.total()} of them, "
            f"within 11 µs at {quick.total()}, all of N a multiple of 4" in flat) and quick[False] == 0
    shipped = Dispatcher([str(ROOT / "autotune/store/tuned/h200.sqlite")])
    preview = program("benchmarks", "dispatch_preview")
    kernels_at = preview.kernels_at
    merged = Dispatcher([str(merged_into_shipped(corners, tmp_path))])
    assert preview.changed(merged, shipped, "NVIDIA H200", list(by_seed), 40) == []
    random = ran_at_seeds(by_seed, flat, "Our")
    below = [(seed, s) for seed, s in random if s["torch_ms"] < 0.95 * s["ours_ms"]]
    named = [f"{s['M']}x{s['N']}x{s['K']} {s['torch_ms'] / s['ours_ms']:.3f} (seed {seed})" for seed, s in below]
    assert len(below) == 5 and all(n.split(" (")[0] in flat for n in named)
    ran = [s for _, s in below if not s["kernel"].startswith("cuBLAS")]
    assert [(s["M"], s["N"], s["K"]) for s in ran] == [(2, 11427, 189)] and "measured at 16x16383x255" in ran[0]["kernel"]
    assert f"torch.matmul took {ran[0]['torch_ms'] * 1e3:.1f} µs a call there" in flat
    assert f"while our kernel took {ran[0]['ours_ms'] * 1e3:.1f}" in flat
    found = [len(kernels_at(shipped, "NVIDIA H200", seed, 40)) for seed in range(1, 11)]
    assert f"runs a kernel at {', '.join(map(str, found[:-1]))} and {found[-1]} of the 40 random shapes" in flat
    suite_run = _json("anyshape-suite-corners-h200.json")  # the suite's last run, before the shallow corners
    plain = Layout(False, False, False, 1)
    for s in (s for s in suite_run["shapes"] if s["kind"] == "suite"):
        choice = shipped.choose("NVIDIA H200", (s["M"], s["N"], s["K"]), plain)
        assert choice.library == s["kernel"].startswith("cuBLAS"), s
        assert choice.library or s["kernel"] == choice.describe(), s
    assert f"(below, {suite_run['summary']['suite']['geomean_queued']:.3f} queued)" in flat


def test_the_pytorch_docs_long_k_tall_wide_table_is_the_corners_runs():
    """docs/pytorch.md's table through the database shipped with the long-K, tall and wide corners merged, what our
    kernels gained, the shapes that read below 0.95 (all run by cuBLAS), the repeats, and the suite's figures."""
    part, by_seed = h200_table("## With the long-K, tall and wide corners",
                               {seed: f"anyshape-seed{seed}-corners-h200.json" for seed in range(1, 11)})
    flat, runs = " ".join(part.split()), list(by_seed.values())
    assert all(run["commit"] == "b4a02e8" for run in runs)
    random = ran_at_seeds(by_seed, flat, "our")
    below = [(seed, s) for seed, s in random if s["torch_ms"] < 0.95 * s["ours_ms"]]
    assert all(s["kernel"].startswith("cuBLAS") for _, s in below)
    named = [f"{s['M']}x{s['N']}x{s['K']} {s['torch_ms'] / s['ours_ms']:.3f}" for _, s in below]
    assert all(n in flat for n in named) and len(below) == 5
    clean = [seed for seed, run in by_seed.items() if run["summary"]["random"]["below_0.95_queued"] == 0]
    assert f"at seeds {', '.join(map(str, clean[:-1]))} and {clean[-1]} of the first pass" in flat
    repeats = {seed: _json(f"anyshape-seed{seed}-corners-repeat-h200.json") for seed in (5, 1, 7, 9, 10)}
    again = [r["summary"]["random"] for r in repeats.values()]
    means = [f"{r['geomean_queued']:.3f}" for r in again[1:]]
    counts = [str(r["below_0.95_queued"]) for r in again[1:]]
    assert (f"seed 5 read {again[0]['geomean_queued']:.3f} with none below 0.95 (worst {again[0]['min_queued']:.3f}), "
            f"and a later call's seeds 1, 7, 9 and 10 read {', '.join(means[:-1])} and {means[-1]} with "
            f"{', '.join(counts[:-1])} and {counts[-1]} below 0.95 (worst {min(r['min_queued'] for r in again[1:]):.3f}), "
            "each again a shape that cuBLAS runs") in flat and again[0]["below_0.95_queued"] == 0
    assert all(s["kernel"].startswith("cuBLAS") for r in repeats.values() for s in r["shapes"]
               if s["kind"] == "random" and s["torch_ms"] < 0.95 * s["ours_ms"])
    suite_run = _json("anyshape-suite-corners-h200.json")
    suite = suite_run["summary"]["suite"]
    ratios = [s["torch_ms"] / s["ours_ms"] for s in suite_run["shapes"] if s["kind"] == "suite"]
    first, few = ratios[:28], ratios[28:]
    assert (f"{suite['geomean_queued']:.3f} queued ({suite['geomean_alone']:.3f} alone), none below 0.95; the 28 of "
            f"the first seven groups {geomean(first):.3f} (worst {min(first):.3f}), the 8 few-tile shapes "
            f"{geomean(few):.3f} (worst {min(few):.3f})") in flat
    assert suite["below_0.95_queued"] == 0 and len(few) == 8 and suite_run["commit"] == "b4a02e8"


def test_the_pytorch_docs_small_corners_table_is_the_small_corners_runs():
    """docs/pytorch.md's table through the database shipped with the small corners alone, the runs before that merge
    on the same lease, what our kernels gained, and the shapes that read below 0.95."""
    part, by_seed = h200_table("## With the small corners alone",
                               {seed: f"anyshape-seed{seed}-small-corners-h200.json" for seed in range(1, 6)})
    flat, runs = " ".join(part.split()), list(by_seed.values())
    before = {seed: json.loads((ROOT / "benchmarks" / "data" / f"anyshape-seed{seed}-before-small-corners-h200.json")
                               .read_text())["summary"]["random"] for seed in (1, 2, 5)}
    assert all(run["commit"] == "742ca37" for run in runs)
    assert (f"before, {before[1]['geomean_queued']:.3f}, {before[2]['geomean_queued']:.3f} "
            f"({before[2]['below_0.95_queued']} below 0.95) and {before[5]['geomean_queued']:.3f}, with kernels at "
            f"{before[1]['kernels']}, {before[2]['kernels']} and {before[5]['kernels']} of the 40") in flat
    random = [s for run in runs for s in run["shapes"] if s["kind"] == "random"]
    ours = [s for s in random if not s["kernel"].startswith("cuBLAS")]
    q, a = [s["torch_ms"] / s["ours_ms"] for s in ours], [s["torch_alone_ms"] / s["ours_alone_ms"] for s in ours]
    assert f"at {min(q):.2f}-{max(q):.2f}x queued and {min(a):.2f}-{max(a):.2f}x alone" in flat
    below = [s for s in random if s["torch_ms"] < 0.95 * s["ours_ms"]]
    ratios = [s["torch_ms"] / s["ours_ms"] for s in below]
    assert all(s["kernel"].startswith("cuBLAS") for s in below)
    assert f"four shapes read {min(ratios):.3f}-{max(ratios):.3f}" in flat and len(below) == 4


def test_the_pytorch_docs_earlier_h200_table_is_the_committed_outputs():
    """docs/pytorch.md's earlier runs: each seed's row; the suite's figures are seed 1's run's."""
    part, runs = h200_table("## Earlier runs on the H200", H200_SEEDS)
    suite = runs[1]["summary"]["suite"]  # seed 1's run is anyshape-h200.json, with the suite
    flat = " ".join(part.split())
    assert (f"The {suite['shapes']} suite shapes of seed 1's run: {suite['geomean_queued']:.3f} queued, "
            f"{suite['geomean_alone']:.3f} alone, worst {suite['min_queued']:.3f}, none below 0.95, tuned kernels at "
            f"{suite['kernels']}") in flat and suite["below_0.95_queued"] == 0
    ratios = [s["torch_ms"] / s["ours_ms"] for s in runs[1]["shapes"] if s["kind"] == "suite"]
    groups = [s.group for s in read_shapes(ROOT / "autotune" / "api" / "shapes.toml")]
    first, few = ratios[:groups.index("few-tiles")], ratios[groups.index("few-tiles"):]
    assert len(ratios) == len(groups) and set(groups[len(first):]) == {"few-tiles"}
    assert (f"The first {len(first)} shapes read {geomean(first):.3f} queued (worst {min(first):.3f}), the "
            f"{len(few)} few-tile shapes {geomean(few):.3f} (worst {min(few):.3f})") in flat
    for seed in (1, 5):  # where a covering row ran, what the call gained
        gains = [f"{s['M']}x{s['N']}x{s['K']} {s['torch_ms'] / s['ours_ms']:.3f}" for s in runs[seed]["shapes"]
                 if s["kind"] == "random" and "(covering" in s["kernel"]]
        assert gains and f"{' and '.join(gains)} (seed {seed})" in flat, gains
    hosts = [runs[seed]["host_per_call"] for seed in (5, 2)]
    assert (f"host time at 64³ was {hosts[0]['ours_us']:.1f} and {hosts[1]['ours_us']:.1f} µs a call against "
            f"torch.matmul's {hosts[0]['torch_us']:.1f} and {hosts[1]['torch_us']:.1f}") in flat


def test_the_streamk_docs_table_is_the_committed_output():
    doc = (ROOT / "docs" / "streamk.md").read_text()
    data = json.loads((ROOT / "benchmarks" / "data" / "streamk-h200.json").read_text())
    rows = table_rows(section(doc, "## Measured on the H200"))
    assert len(rows) == len(data["shapes"])
    for row, s in zip(rows, data["shapes"]):
        assert row == [f"{s['M']} x {s['N']} x {s['K']}", f"{s['cublas_ms']:.4f}", f"{s['streamk_ms']:.4f}",
                       f"{s['blocked_ms']:.4f}", f"{s['cublas_ms'] / s['streamk_ms']:.3f}",
                       f"{s['cublas_ms'] / s['blocked_ms']:.3f}"]


def _readme_row(runs: list[dict], part: str) -> list[str]:
    """The README's load() table cells for anyshape runs of one GPU: queued, alone (a span over seeds), below 0.95."""
    rs = [run["summary"][part] for run in runs]

    def cell(key: str) -> str:
        low, high = min(r[key] for r in rs), max(r[key] for r in rs)
        return f"{low:.3f}" if len(rs) == 1 else f"{low:.3f}-{high:.3f}"

    return [cell("geomean_queued"), cell("geomean_alone"),
            f"{sum(r['below_0.95_queued'] for r in rs)} of {sum(r['shapes'] for r in rs)}"]


def test_the_readmes_load_table_is_the_anyshape_runs():
    """The README's table of load() against torch.matmul: each row from its runs' JSONs (each GPU's seeds, thin and
    one-row x·Wᵀ calls with api._aten's steps through the shipped database, the H200's suite, each GPU after a
    cover), the sentence on the shapes below 0.95 and the one on autotune.torch.Linear at one-row layers."""
    h200 = [_json(f"anyshape-seed{s}-first-step-aten-h200.json") for s in range(1, 11)]
    h100 = [_json(f"anyshape-seed{s}-first-step-aten-h100.json") for s in range(1, 31)]
    suite, covered = _json("anyshape-suite-first-step-aten-h200.json"), {g: _json(f"anyshape-covered-{g}.json") for g in ("h200", "h100")}
    thin200, decode200 = _json("anyshape-thin-seed1-h200.json"), _json("anyshape-decode-seed1-h200.json")
    assert all(r["device"].startswith("NVIDIA H200") for r in [*h200, suite, covered["h200"], thin200, decode200])
    assert all(r["device"].startswith("NVIDIA H100") for r in [*h100, covered["h100"]])
    assert {r["first_step"] for r in [*h100, *h200, suite, thin200, decode200]} == {"C+ATen"}
    assert [r["seed"] for r in h100] == list(range(1, 31)) and [r["seed"] for r in h200] == list(range(1, 11))
    thin = [_json(f"anyshape-thin-seed{s}-h100.json") for s in range(1, 9)]  # docs/pytorch.md's "Thin calls"
    decode = [_json(f"anyshape-decode-seed{s}-h100.json") for s in range(1, 4)]  # its "One-row x·Wᵀ"
    assert all(r["device"].startswith("NVIDIA H100") and r["first_step"] == "C+ATen" for r in [*thin, *decode])
    text = README.read_text()
    rows = table_rows(text.split("Called as a user calls it")[1])
    cover = {g: f"after `autotune cover` ({c['cover']['took_s']:.0f} s)" for g, c in covered.items()}
    steps = "the shipped database, `api._aten`'s steps"
    assert rows == [["H200", steps, "seeds 1-10", *_readme_row(h200, "random")],
                    ["H200", steps, "the 36 suite shapes", *_readme_row([suite], "suite")],
                    ["H200", steps, "thin calls, seed 1", *_readme_row([thin200], "thin")],
                    ["H200", steps, "one-row x·Wᵀ, seed 1", *_readme_row([decode200], "decode")],
                    ["H200", cover["h200"], "seed 1", *_readme_row([covered["h200"]], "random")],
                    ["H100", steps, "seeds 1-30", *_readme_row(h100, "random")],
                    ["H100", steps, "thin calls, seeds 1-8", *_readme_row(thin, "thin")],
                    ["H100", steps, "one-row x·Wᵀ, seeds 1-3", *_readme_row(decode, "decode")],
                    ["H100", cover["h100"], "seed 1", *_readme_row([covered["h100"]], "random")]]
    assert all(c["seed"] == 1 and c["cover"]["trials"] == 12 for c in covered.values())
    low = [s for run in [*h200, *h100] for s in run["shapes"] if s["kind"] == "random" and s["torch_ms"] < 0.95 * s["ours_ms"]]
    assert low and all(s["kernel"].startswith("cuBLAS") for s in low)
    flat = " ".join(text.split())
    assert (f"All {len(low)} shapes below 0.95 run cuBLAS, where the lookup in front of it costs a fraction of a µs") in flat
    layers = _json("linear-layers-seed1-bias-in-matmul-h100.json")
    assert layers["device"].startswith("NVIDIA H100") and layers["rows"] == 1 and not layers["grad"]
    got = {k: f"{v['geomean_queued']:.2f}x" for k, v in layers["summary"].items()}
    grad = _json("linear-layers-grad-seed1-covering-to-flinear-h100.json")["summary"]
    low, high = sorted(f"{grad[k]['geomean_queued']:.2f}" for k in ("no_bias", "bias"))
    assert (f"`autotune.torch.Linear` at one-row layer calls under `torch.no_grad()` reads {got['no_bias']} `nn.Linear` "
            f"without a bias and {got['bias']} with one (an H100; with autograd {low}-{high}x") in flat


def covered_split(covered: dict) -> tuple[int, list[float], list[float], list[float]]:
    """A covered anyshape run's random shapes: how many, and torch.matmul's time over ours where our kernels ran
    (queued, alone) and where cuBLAS ran (queued)."""
    random = [s for s in covered["shapes"] if s["kind"] == "random"]
    ours = [s for s in random if not s["kernel"].startswith("cuBLAS")]
    return (len(random), [s["torch_ms"] / s["ours_ms"] for s in ours],
            [s["torch_alone_ms"] / s["ours_alone_ms"] for s in ours],
            [s["torch_ms"] / s["ours_ms"] for s in random if s["kernel"].startswith("cuBLAS")])


def test_the_h200_cover_figures_are_the_committed_run():
    """docs/pytorch.md after `autotune cover` on the H200: anyshape-covered-h200.json's summary,
    its commit, what ran where, and the cover's seconds."""
    data = json.loads((ROOT / "benchmarks" / "data" / "anyshape-covered-h200.json").read_text())
    r, cover = data["summary"]["random"], data["cover"]
    shapes, q, a, theirs = covered_split(data)
    flat = " ".join(PYTORCH_DOC.read_text().split())
    assert data["seed"] == 1 and data["device"].startswith("NVIDIA H200") and r["below_0.95_queued"] == 0
    assert (f"sources `{data['commit']}`; `benchmarks/data/anyshape-covered-h200.json`): **{r['geomean_queued']:.3f}** "
            f"queued, {r['geomean_alone']:.3f} alone, none below 0.95 (worst {r['min_queued']:.3f})") in flat
    assert (f"Our kernels run at {len(q)} of the {shapes} random shapes, at {min(q):.3f}-{max(q):.3f} queued "
            f"and {min(a):.3f}-{max(a):.3f} alone") in flat
    assert f"cuBLAS runs the other {len(theirs)} at {min(theirs):.3f}-{max(theirs):.3f}" in flat
    assert f"The cover took {cover['took_s']:.1f} s of its {cover['budget_s']:.0f} ({cover['trials']} trials" in flat
    results = " ".join((ROOT / "docs" / "results-h200.md").read_text().split())
    assert f"({r['geomean_queued']:.3f}x queued at `{data['commit']}`)" in results


def test_the_host_bound_docs_covering_probe_figures_are_the_committed_probe():
    """docs/host-bound.md: at 2x11427x189 the covering row's kernel against its own shape's time, and cuBLAS's."""
    rows = {tuple(r["shape"]): r for r in
            json.loads((ROOT / "benchmarks" / "data" / "covering-probe-h200.json").read_text())["rows"]}
    call, own = rows[(2, 11427, 189)], rows[(16, 16383, 255)]
    assert "measured at 16x16383x255" in call["kernel"]
    assert (f"At 2x11427x189 the 16x16383x255 row's kernel took {call['ours_us']:.2f} µs against {own['ours_us']:.2f} "
            f"at its own shape, as the rule expects, while cuBLAS went from {own['torch_us']:.2f} µs to "
            f"{call['torch_us']:.2f}") in " ".join(HOST_DOC.read_text().split())


def corner_wins(corners: Path, group: Callable[[dict], Any]) -> tuple[Counter, Counter, Counter]:
    """A corners database's verified rows, by group(row): how many corners, at how many a kernel beat cuBLAS by the
    dispatcher's margin (beats_library), and at how many one did within HOST_BOUND_MS (a row that covers smaller calls)."""
    from autotune.api.dispatch import HOST_BOUND_MS, beats_library

    with closing(sqlite3.connect(f"file:{corners}?immutable=1", uri=True)) as db:
        db.row_factory = sqlite3.Row
        rows = [dict(r) for r in db.execute("SELECT * FROM results WHERE status = 'ok'")]
    by_corner: dict[tuple, list[dict]] = {}
    for r in rows:
        by_corner.setdefault((group(r), r["M"], r["N"], r["K"]), []).append(r)
    count, won, quick = Counter(), Counter(), Counter()
    for (key, *_), here in by_corner.items():
        count[key] += 1
        won[key] += any(beats_library(r) for r in here)
        quick[key] += any(beats_library(r) and r["time_ms"] <= HOST_BOUND_MS for r in here)
    return count, won, quick


def merged_into_shipped(corners: Path, tmp_path: Path) -> Path:
    """The H200's shipped database with a corners database merged in as corners_ship_check.sh merges it (slim, then
    ship_database.py), written under tmp_path."""
    for script, *args in (("slim_database.py", corners, tmp_path / "slim.sqlite"),
                          ("ship_database.py", ROOT / "autotune/store/tuned/h200.sqlite", tmp_path / "slim.sqlite",
                           tmp_path / "merged.sqlite")):
        subprocess.run([sys.executable, str(ROOT / "scripts" / script), *map(str, args)], check=True,
                       capture_output=True)
    return tmp_path / "merged.sqlite"


def test_the_h200_corners_figures_are_the_committed_corners(tmp_path):
    """docs/pytorch.md on the H200's small corners: how many won, that the shipped database holds their winners
    (merged again as corners_ship_check.sh merges them, slim then ship_database.py, it runs nothing more), and
    where load() runs a kernel at seeds 1-10 through it."""
    from autotune.api.dispatch import HOST_BOUND_MS, WIN_MARGIN, Dispatcher

    corners = unpacked(ROOT / "benchmarks" / "data" / "h200-host-bound-small.sqlite.gz")  # read here, then merged
    with closing(sqlite3.connect(f"file:{corners}?immutable=1", uri=True)) as db:
        best = list(db.execute("SELECT M, N, K, min(time_ms), cublas_ms FROM results WHERE status = 'ok' "
                               "GROUP BY M, N, K"))
    won = [r for r in best if r[3] <= (1 - WIN_MARGIN) * r[4] and r[3] <= HOST_BOUND_MS]
    merged = merged_into_shipped(corners, tmp_path)
    kernels_at = program("benchmarks", "dispatch_preview").kernels_at

    def counts(paths: list[str]) -> str:  # how many of seeds 1-10's random shapes run a kernel
        found = [len(kernels_at(Dispatcher(paths), "NVIDIA H200", seed, 40)) for seed in range(1, 11)]
        return ", ".join(map(str, found[:-1])) + f" and {found[-1]}"

    flat = " ".join(PYTORCH_DOC.read_text().split())
    assert f"the small host-bound lattice's {len(best)} corners" in flat and f"at {len(won)} a kernel beat" in flat
    shipped = counts([str(ROOT / "autotune/store/tuned/h200.sqlite")])
    assert counts([str(merged)]) == shipped  # the corners' winners are shipped: merging adds none
    assert f"runs a kernel at {shipped} of the 40 random shapes of seeds 1-10" in flat


def test_the_h200_long_k_tall_and_wide_corners_are_shipped_as_the_docs_say(tmp_path):
    """docs/host-bound.md and docs/pytorch.md on the H200's long-K, tall and wide corners: how many a family's kernel
    beat cuBLAS at, within 11 us, that the shipped database holds their winners (merged again as corners_ship_check.sh
    merges them changes no choice at seeds 1-10), and what seed 3's calls that had read below 0.95 run now."""
    from autotune.api.dispatch import Dispatcher

    corners = unpacked(ROOT / "benchmarks" / "data" / "h200-long-k-tall-wide-corners.sqlite.gz")
    count, won, quick = corner_wins(corners, lambda r: r["family"])
    assert dict(count) == {"splitk": 196, "tall": 40, "skinny": 72}
    host = " ".join(HOST_DOC.read_text().split())
    assert (f"its rows beat cuBLAS at {won['skinny']} of the 72 corners, but within 11 µs only at {quick['skinny']}"
            ) in host
    assert (f"within 11 µs at {quick['splitk']} of the 196 long-K corners, {quick['tall']} of the 40 tall ones and "
            f"those {quick['skinny']}") in host
    flat = " ".join(PYTORCH_DOC.read_text().split())
    assert f"At {quick['splitk']} long-K, {quick['tall']} tall and {quick['skinny']} wide corners a kernel" in flat
    merged = Dispatcher([str(merged_into_shipped(corners, tmp_path))])
    shipped = Dispatcher([str(ROOT / "autotune/store/tuned/h200.sqlite")])
    assert program("benchmarks", "dispatch_preview").changed(merged, shipped, "NVIDIA H200", list(range(1, 11)), 40) == []
    seed3 = {(s["M"], s["N"], s["K"]): s for s in _json("anyshape-seed3-corners-h200.json")["shapes"]}
    ran = [(seed3[shape]["torch_ms"] / seed3[shape]["ours_ms"], seed3[shape]["kernel"].split("_")[1])
           for shape in [(733, 36, 306), (4692, 14, 233), (8, 3144, 591)]]
    assert (f"733x36x306 at {ran[0][0]:.2f}x torch.matmul queued (`{ran[0][1]}`), 4692x14x233 at {ran[1][0]:.2f}x "
            f"(`{ran[1][1]}`) and 8x3144x591 at {ran[2][0]:.2f}x (`{ran[2][1]}`)") in host
    seed2 = next(s for s in _json("anyshape-seed2-corners-h200.json")["shapes"] if (s["M"], s["N"], s["K"]) == (1, 6634, 672))
    assert seed2["kernel"].startswith("cuBLAS") and f"still runs cuBLAS, at {seed2['torch_ms'] / seed2['ours_ms']:.3f}" in host


SUITE_JSON = ROOT / "benchmarks" / "data" / "shape-suite-h200.json"
RESULTS_DOC = ROOT / "docs" / "results-h200.md"

def test_the_results_docs_suite_table_is_the_committed_suite():
    """docs/results-h200.md's suite table: one row per shape of the suite's JSON, in its order, each
    cell as the JSON has it (the family is the kernel name's second word); the headline figures too."""
    data = json.loads(SUITE_JSON.read_text())
    doc = RESULTS_DOC.read_text()
    rows = table_rows(section(doc, "## The shape suite"))
    assert len(rows) == len(data["shapes"])
    for row, s in zip(rows, data["shapes"]):
        assert row == [f"{s['M']}x{s['N']}x{s['K']}", s["group"], f"{s['cublas_ms']:.4g}", f"{s['ours_ms']:.4g}",
                       f"{s['cublas_over_ours']:.3f}", f"{s['pct_roofline']:.1f}", f"`{s['kernel'].split('_')[1]}`"]
    flat = " ".join(doc.split())
    assert f"geometric mean of cuBLAS/ours: {data['geomean_cublas_over_ours']:.3f}" in flat.replace("**", "")
    few_tiles = [s["cublas_over_ours"] for s in data["shapes"] if s["group"] == "few-tiles"]
    if few_tiles:
        assert f"the few-tile group: {geomean(few_tiles):.3f}" in flat
    if data["tuning_s"] is None:  # the table read from the databases the tuning passes left (--no-tune)
        few = json.loads((ROOT / "benchmarks" / "data" / "shape-suite-few-tiles-h200.json").read_text())
        assert "autotune suite --no-tune" in flat and f"({few['tuning_s']} s)" in flat
        assert f"--trials {few['budget']['trials']} --timeout {few['budget']['timeout_s']:g}" in flat
    else:
        assert f"Tuning took {data['tuning_s']} s" in flat
    assert f"the suite's JSON names `{data['commit']}`" in flat


def test_the_readmes_results_table_is_the_committed_suite():
    """The README's table: each group's lowest and highest cuBLAS/ours in the suite's JSON."""
    data = json.loads(SUITE_JSON.read_text())
    text = README.read_text()
    groups: dict[str, list[float]] = {}
    for s in data["shapes"]:
        groups.setdefault(s["group"], []).append(s["cublas_over_ours"])
    rows = table_rows(section(text, "## Results").split("Called as a user calls it")[0])
    assert [f"{min(v):.3f}-{max(v):.3f}" for v in groups.values()] == [row[1] for row in rows]
    worst = data["worst"]
    flat = " ".join(text.split()).replace("**", "")
    assert f"geometric mean of cuBLAS/ours {data['geomean_cublas_over_ours']:.3f}" in flat
    assert f"worst shape {worst['M']}x{worst['N']}x{worst['K']} at {worst['cublas_over_ours']:.3f}" in flat


def test_the_results_docs_tf32x3_table_is_the_committed_benchmark():
    data = json.loads((ROOT / "benchmarks" / "data" / "tf32x3-h200.json").read_text())
    rows = table_rows(section(RESULTS_DOC.read_text(), "## 3xTF32 on tensor cores"))
    assert len(rows) == len(data["shapes"])
    for row, s in zip(rows, data["shapes"]):
        assert row == [f"{s['M']}x{s['N']}x{s['K']}", f"{s['ours_ms']:.4g}", f"{s['cublas_ms']:.4g}",
                       f"{s['speedup']:.2f}x", f"{s['err_ours']:.2e}", f"{s['err_cublas']:.2e}", f"{s['ratio']:.2f}"]


def test_the_ozaki_docs_table_is_the_committed_benchmark():
    data = json.loads((ROOT / "benchmarks" / "data" / "ozaki-h200.json").read_text())
    doc = (ROOT / "docs" / "ozaki.md").read_text()
    rows = table_rows(section(doc, "## Measured on the H200"))
    assert len(rows) == len(data["shapes"])
    for row, s in zip(rows, data["shapes"]):
        scaling = "" if s["family"] == "tf32x3wg" else ("norm" if s.get("scale") else "largest")
        assert row == [s["family"], str(s.get("moduli") or ""), scaling, s["inputs"], f"{s['M']}x{s['N']}x{s['K']}",
                       f"{s['ours_ms']:.4g}", f"{s['cublas_ms']:.4g}", f"{s['speedup']:.3f}", f"{s['ratio']:.3f}",
                       s["commit"]]
    assert all(f"commit `{s['commit']}`" in doc for s in data["shapes"])


def test_the_ozaki_docs_tiles_table_is_thecommitted_database():
    with committed_database("ozakiwg-tiles-h200.sqlite.gz") as db:
        data = db.execute("select kernel, M, N, K, time_ms, cublas_ms, err, err_ref from results where status = 'ok' "
                          "order by M desc, id").fetchall()
    rows = table_rows(section((ROOT / "docs" / "ozaki.md").read_text(), "## Tiles on the H200"))
    assert rows == [[k, f"{M}x{N}x{K}", f"{t:.4g}", f"{100 * c / t:.1f}", f"{e / r:.3f}"]
                    for k, M, N, K, t, c, e, r in data]


def test_the_ozaki_docs_search_figures_are_the_committed_search():
    with committed_database("h200-fp32-tc-8192-search.sqlite.gz") as db:
        best = db.execute("select kernel, time_ms, cublas_ms from results where status = 'ok' order by time_ms "
                          "limit 3").fetchall()
        tf32 = db.execute("select min(time_ms) from results where status = 'ok' and family = 'tf32x3wg'").fetchone()[0]
        wrong = db.execute("select count(*) from results where status = 'wrong' and family = 'ozakiwg'").fetchone()[0]
    flat = " ".join(section((ROOT / "docs" / "ozaki.md").read_text(), "## Measured on the H200").split())
    (kernel, ms, cublas), second, third = best
    assert kernel == "sgemm_ozakiwg_BN256_S4_WS1_T7_SCALE1"
    assert f"at {ms:.3f} ms ({100 * cublas / ms:.1f}% of cuBLAS's {cublas:.2f} ms in the same process)" in flat
    assert f"3 stages ({second[1]:.3f} ms)" in flat and f"8 moduli ({third[1]:.3f} ms)" in flat
    assert f"`tf32x3wg`'s best {tf32:.2f} ms; {wrong} `ozakiwg` configs `wrong`" in flat


def test_the_ozaki_docs_energy_table_is_the_committed_benchmark():
    data = json.loads((ROOT / "benchmarks" / "data" / "energy-8192x8192x8192-h200.json").read_text())
    doc = (ROOT / "docs" / "ozaki.md").read_text()
    rows = table_rows(section(doc, "## Energy on the H200"))
    by_family = {r["family"]: r for r in data["rows"]}
    assert rows and {"cuBLAS", "tf32x3wg", "ozakiwg"} <= {row[0] for row in rows}
    for row in rows:
        r = by_family[row[0]]
        assert row == [r["family"], r["kernel"], f"{r['ms']:.4g}", f"{r['tflops']:.4g}", f"{r['watts']:.0f}",
                       f"{r['gflops_per_watt']:.1f}"]
    assert f"commit `{data['commit']}`" in doc


def test_the_host_bound_docs_host_bound_probe_figures_are_the_committed_probe():
    data = json.loads(gzip.decompress((ROOT / "benchmarks" / "data" / "hostbound-probe-h200.json.gz").read_bytes()))
    rows = data["rows"]

    def ratio(r: dict, ours: float) -> float:
        return r["torch"]["queued_us"] / ours

    hidden = [ratio(r, r["nearest"]["queued_us"] if r["nearest"]["gpu_us"] <= 10 else r["load"]["queued_us"])
              for r in rows]
    flat = " ".join(HOST_DOC.read_text().split())
    assert f"at the {len(rows)} of the three seeds' random shapes" in flat
    assert f"load() {geomean([ratio(r, r['load']['queued_us']) for r in rows]):.3f};" in flat
    assert f"load() elsewhere, {geomean(hidden):.3f} ({sum(h < 0.95 for h in hidden)} shapes below 0.95)" in flat
    best = geomean([ratio(r, min(r["load"]["queued_us"], r["nearest"]["queued_us"])) for r in rows])
    assert f"which no rule knows ahead, {best:.3f}" in flat
    assert f"(sources `{data['commit']}`" in flat


def test_the_measuring_docs_pairing_bias_is_the_committed_probe():
    """docs/measuring.md's range of torch.matmul paired with itself under best rounds: the probe's output."""
    import ast

    lines = (ROOT / "benchmarks" / "data" / "pairing-bias-h200.txt").read_text().splitlines()
    selves = [ast.literal_eval(line)["matmul/matmul2"] for line in lines if line.startswith("{'shape'")]
    flat = " ".join((ROOT / "docs" / "measuring.md").read_text().split())
    assert len(selves) == 6 and f"itself measured {min(selves):.3f}-{max(selves):.3f} at six shapes" in flat


def _probe_lines(name: str) -> list[tuple[tuple[int, int, int], dict]]:
    """A host probe's printed lines: (shape, {piece: us}) where a line starts with the shape."""
    import ast

    lines = (ROOT / "benchmarks" / "data" / name).read_text().splitlines()
    parsed = []
    for line in lines:
        if line.startswith("("):
            shape, _, rest = line.partition(") ")
            parsed.append((ast.literal_eval(shape + ")"), ast.literal_eval(rest[rest.index("{"):rest.index("}") + 1])))
    return parsed


def _span(values) -> str:
    return f"{min(values):.1f}-{max(values):.1f}"


def test_the_host_bound_docs_host_path_figures_are_the_committed_probes():
    """docs/host-bound.md's host microseconds of load()'s pass-through to torch.mm: the probes' outputs."""
    flat = " ".join(HOST_DOC.read_text().split())
    path = _probe_lines("host-path-h200.txt")
    assert len(path) == 3
    assert (f"load() took {_span([p['ours'] - p['torch.mm'] for _, p in path])} µs a call above torch.mm's "
            f"{_span([p['torch.mm'] for _, p in path])}") in flat
    steps = _probe_lines("passthrough-h200.txt")
    assert len(steps) == 3
    pieces = [("lookup+mm", "torch.mm"), ("checks+mm", "lookup+mm"), ("sig", "checks+mm"), ("ours", "sig")]
    lookup, checks, sig, call = (_span([p[a] - p[b] for _, p in steps]) for a, b in pieces)
    assert (f"the table's lookup {lookup} µs, the dtype and TF32 checks {checks}, the keyword signature {sig}, "
            f"the method call {call}; load() {_span([p['ours'] - p['torch.mm'] for _, p in steps])} µs above torch.mm "
            f"and {_span([p['ours'] - p['torch.matmul'] for _, p in steps])} above torch.matmul "
            f"({_span([p['torch.matmul'] for _, p in steps])} µs)") in flat
    direct = _probe_lines("cublas-direct-h200.txt")
    extra = [p[k] - p["torch.mm"] for _, p in direct for k in ("direct_ped", "direct_dflt", "direct_untyped")]
    assert len(direct) == 6 and f"cost the host {_span(extra)} µs more than torch.mm" in flat
    at64 = direct[0][1]
    assert direct[0][0] == (64, 64, 64) and f"{at64['ours']:.1f} µs a call, torch.mm {at64['torch.mm']:.1f}" in flat



def test_the_host_bound_docs_c_first_step_figures_are_the_committed_probe():
    """docs/host-bound.md's host microseconds of load() with its first step in C, beside the same steps in Python."""
    flat = " ".join(HOST_DOC.read_text().split())
    lines = [p for _, p in _probe_lines("passthrough-c-h200.txt")]
    assert len(lines) == 3
    assert (f"torch.mm {_span([p['torch.mm'] for p in lines])} µs): load() {_span([p['ours'] for p in lines])} µs "
            f"against the Python steps' {_span([p['ours, Python steps'] for p in lines])} in the same process, "
            f"{_span([p['ours'] - p['torch.matmul'] for p in lines])} above torch.matmul") in flat

def test_the_host_bound_docs_libtorch_figures_are_the_committed_probe():
    """docs/host-bound.md's host microseconds of the pass-through in C++ (aten_direct.py on a CPU build)."""
    flat = " ".join(HOST_DOC.read_text().split())
    [(shape, us)] = _probe_lines("aten-direct-cpu.txt")
    assert shape == (2, 4, 3)
    first_step = us["load()'s first step"]
    assert (f"torch.mm {us['torch.mm']:.2f} µs, torch.matmul {us['torch.matmul']:.2f}, the C first step "
            f"{first_step:.2f}, `at::mm` from C++ {us['at::mm from C++']:.2f}, the short way in "
            f"C++ {us['key, lookup, at::mm in C++']:.2f}") in flat
    assert us["key, lookup, at::mm in C++"] > us["torch.mm"] and us["at::mm from C++"] > us["torch.mm"]



def test_the_host_bound_docs_aten_steps_figures_are_the_committed_probe():
    """docs/host-bound.md's host microseconds of the C first step with api._aten's steps and without (CPU builds)."""
    flat = " ".join(HOST_DOC.read_text().split())
    [((shape, ran), us)] = _probe_lines("aten-steps-cpu.txt")
    assert shape == (2, 4, 3) and ran == "torch.mm"
    assert (f"torch.mm {us['torch.mm']:.2f} µs, torch.matmul {us['torch.matmul']:.2f}, the C first step "
            f"{us['C']:.2f}, with the steps {us['C+ATen']:.2f}") in flat
    assert us["C+ATen"] < us["torch.matmul"] < us["C"]
    [(_, py311)] = _probe_lines("aten-steps-cpu-py311.txt")  # the memo by the dict's version tag
    assert (f"under Python 3.11 (the CI's), torch.matmul {py311['torch.matmul']:.2f}, the C first step "
            f"{py311['C']:.2f}, with the steps {py311['C+ATen']:.2f}") in flat
    assert py311["C+ATen"] < py311["torch.matmul"] < py311["C"]


def test_the_host_bound_docs_memo_figures_are_the_committed_probe():
    """docs/host-bound.md's host microseconds of the C first step with its memo and without (memo_probe.py on a CPU)."""
    flat = " ".join(HOST_DOC.read_text().split())
    [(shape, us)] = _probe_lines("memo-probe-cpu.txt")
    assert shape == (2, 4, 3)
    assert (f"torch.mm {us['torch.mm']:.2f} µs, torch.matmul {us['torch.matmul']:.2f}, the C first step "
            f"{us['first step']:.2f} against {us['before']:.2f} without the memo") in flat
    gpu = [p for _, p in _probe_lines("memo-probe-h100.txt")]
    assert len(gpu) == 5
    memo = [p["first step"] - p["before"] for p in gpu]
    same = [abs(p["torch.mm"] - p["torch.matmul"]) for p in gpu]
    assert (f"took {min(memo):+.2f} to {max(memo):+.2f} µs more than without it, while torch.mm and torch.matmul, "
            f"the same product, were {_span(same)} apart") in flat

def test_the_host_bound_docs_staged_store_figures_are_the_committed_runs():
    """docs/host-bound.md's CS=1 figures: staged_store.py's pairs and the odd-N cover's products."""
    flat = " ".join(HOST_DOC.read_text().split())
    rows = json.loads((ROOT / "benchmarks" / "data" / "staged-store-h200.json").read_text())["rows"]
    odd = [r["cs0_ms"] / r["cs1_ms"] for r in rows if r["N"] % 4]
    even = [r["cs0_ms"] / r["cs1_ms"] for r in rows if r["N"] % 4 == 0]
    assert (f"CS=0 took {min(odd):.2f}-{max(odd):.2f}x CS=1's time ({geomean(odd):.2f}x, the geometric mean of {len(odd)} pairs)"
            f" at misaligned and odd shapes, and {min(even):.2f}-{max(even):.2f}x at their aligned twins") in flat
    products = json.loads((ROOT / "benchmarks" / "data" / "cover-host-bound-odd-n-cs-h200.json").read_text())["products"]
    runs = [p for p in products if p["runs"] == "kernel"]
    beat = [p["ms"] * 1e3 for p in runs if p["ms"] < p["cublas_ms"]]
    assert (f"of the {len(products)} lattice shapes of odd N" in flat
            and f"found rows load() would run at {len(runs)} of them, {len(beat)} of which beat cuBLAS, all in "
                f"{min(beat):.1f}-{max(beat):.1f} µs" in flat)


def test_the_h100_docs_figures_are_the_committed_corners_and_anyshape_run():
    """docs/results-h100.md: the small corners' rows (how many beat cuBLAS within 11 us, cuBLAS's least time), the
    shipped H100 database's size, and anyshape's seed-4 figures through those rows."""
    from autotune.api.dispatch import HOST_BOUND_MS, WIN_MARGIN

    flat = " ".join((ROOT / "docs" / "results-h100.md").read_text().split())
    with committed_database("h100-host-bound-small.sqlite.gz") as db:
        rows = db.execute("SELECT M, N, K, min(time_ms), cublas_ms FROM results WHERE status = 'ok' GROUP BY M, N, K")
        best = list(rows)
        total = db.execute("SELECT count(*) FROM results").fetchone()[0]
        floor = db.execute("SELECT min(time_ms) FROM baselines").fetchone()[0]
    won = [r for r in best if r[3] <= (1 - WIN_MARGIN) * r[4] and r[3] <= HOST_BOUND_MS]
    assert "At every corner cuBLAS, then" in flat and f"({total:,} rows, all verified)" in flat
    assert (f"At {len(won)} of the {len(best)} a kernel beat cuBLAS by the 2% margin within 11 µs (cuBLAS took "
            f"{floor * 1e3:.2f} µs or more at every corner)") in flat
    shipped = sqlite3.connect(f"file:{ROOT / 'autotune' / 'store' / 'tuned' / 'h100.sqlite'}?immutable=1", uri=True)
    assert f"{shipped.execute('SELECT count(*) FROM results').fetchone()[0]} rows)" in flat
    run = json.loads((ROOT / "benchmarks" / "data" / "anyshape-seed4-corners-h100.json").read_text())
    s = run["summary"]["random"]
    assert (f"**{s['geomean_queued']:.3f}** queued, {s['geomean_alone']:.3f} alone, {s['below_0.95_queued']} shapes "
            f"below 0.95 (worst {s['min_queued']:.3f}") in flat and f"read {s['control_geomean']:.3f}" in flat
    kernels = [x for x in run["shapes"] if x["kind"] == "random" and not x["kernel"].startswith("cuBLAS")]
    assert f"Covering rows ran at {len(kernels)} shapes" in flat and run["device"].startswith("NVIDIA H100")


def test_the_h100_docs_suite_figures_are_the_committed_suite_and_anyshape_runs():
    """docs/results-h100.md, "The shape suite, shipped": the H100 suite's table (its roofline the H100 SXM's), and
    load() through the merged database at the suite's shapes and at seed 4, whose one changed choice it names."""
    flat = " ".join(section((ROOT / "docs" / "results-h100.md").read_text(), "## The shape suite, shipped").split())
    suite = json.loads((ROOT / "benchmarks" / "data" / "shape-suite-h100.json").read_text())
    assert suite["device"].startswith("NVIDIA H100") and suite["roofline_spec"]["preset"] == "h100-sxm"
    worst = suite["worst"]
    assert (f"GPU time alone, cuBLAS/ours: **{suite['geomean_cublas_over_ours']:.3f}**, worst {worst['shape']} at "
            f"{worst['cublas_over_ours']:.3f}") in flat and len(suite["shapes"]) == 28
    run = json.loads((ROOT / "benchmarks" / "data" / "anyshape-seed1-suite-h100.json").read_text())
    tuned = [s for s in run["shapes"] if s["kind"] == "suite"][:28]  # the file's first eight groups
    q = [s["torch_ms"] / s["ours_ms"] for s in tuned]
    a = [s["torch_alone_ms"] / s["ours_alone_ms"] for s in tuned]
    ours = [r for r, s in zip(q, tuned) if not s["kernel"].startswith("cuBLAS")]
    assert [(s["M"], s["N"], s["K"]) for s in tuned] == [(s["M"], s["N"], s["K"]) for s in suite["shapes"]]
    assert (f"the 28 shapes at **{geomean(q):.3f}** queued and {geomean(a):.3f} alone, none below 0.95 (worst "
            f"{min(q):.3f}), our kernels at {len(ours)} of them, at {min(ours):.3f}-{max(ours):.3f}; all 36 at "
            f"{run['summary']['suite']['geomean_queued']:.3f}") in flat and min(q) >= 0.95
    assert f"Seed 1's random shapes read {run['summary']['random']['geomean_queued']:.3f} queued" in flat
    seed4 = json.loads((ROOT / "benchmarks" / "data" / "anyshape-seed4-suite-h100.json").read_text())
    r = seed4["summary"]["random"]
    changed = next(s for s in seed4["shapes"] if (s["M"], s["N"], s["K"]) == (125, 120, 128))
    assert "measured at 256x256x256" in changed["kernel"] and r["below_0.95_queued"] == 0
    assert (f"{r['geomean_queued']:.3f} queued, none below 0.95, that shape at "
            f"{changed['torch_ms'] / changed['ours_ms']:.2f}x") in flat
    steps = {}  # the same command again, without api._aten's steps and with them
    for way, first in (("c", "C"), ("aten", "C+ATen")):
        again = _json(f"anyshape-seed1-suite-first-step-{way}-h100.json")
        assert again["first_step"] == first and again["commit"] == "3b1c4a3"
        shapes = [s for s in again["shapes"] if s["kind"] == "suite"][:28]
        ratios = [s["torch_ms"] / s["ours_ms"] for s in shapes]
        assert min(ratios) >= 0.95
        steps[way] = (geomean(ratios), sum(not s["kernel"].startswith("cuBLAS") for s in shapes),
                      again["summary"]["suite"]["geomean_queued"])
    (c, c_ours, c_all), (a, a_ours, a_all) = steps["c"], steps["aten"]
    assert (f"the 28 shapes at {c:.3f} queued without the steps and {a:.3f} with them, none below 0.95, our kernels "
            f"at {a_ours} of them both times") in flat and a_ours == c_ours
    assert f"all 36 at {a_all:.3f} both ways" in flat and f"{c_all:.3f}" == f"{a_all:.3f}"
    def ours(run: dict) -> set[tuple[int, int, int]]:  # the 28 shapes where a kernel of ours ran
        return {(s["M"], s["N"], s["K"]) for s in [s for s in run["shapes"] if s["kind"] == "suite"][:28]
                if not s["kernel"].startswith("cuBLAS")}

    again = _json("anyshape-seed1-suite-first-step-aten-repeat-h100.json")
    shapes, ran = [s for s in again["shapes"] if s["kind"] == "suite"][:28], ours(again)
    assert ran == ours(_json("anyshape-seed1-suite-first-step-aten-h100.json"))
    assert again["commit"] == "c0a2971" and again["first_step"] == "C+ATen" and min(
        s["torch_ms"] / s["ours_ms"] for s in shapes) >= 0.95
    assert (f"the 28 at {geomean([s['torch_ms'] / s['ours_ms'] for s in shapes]):.3f}, none below 0.95, our kernels at "
            f"the same {len(ran)}; all 36 at {again['summary']['suite']['geomean_queued']:.3f}") in flat


def test_the_h100_docs_shipped_table_is_the_committed_anyshape_runs():
    """docs/results-h100.md's table of anyshape through the shipped databases: one row a seed, from its JSON."""
    text = (ROOT / "docs" / "results-h100.md").read_text()
    table = table_rows(section(text, "## Through the shipped databases"))
    assert [row[0] for row in table] == ["5", "2", "1", "3", "4"]
    ratios, means = [], []
    for seed, queued, alone, below, worst, kernels, projections, control in table:
        run = json.loads((ROOT / "benchmarks" / "data" / f"anyshape-seed{seed}-h100.json").read_text())
        r, p = run["summary"]["random"], run["summary"]["projection"]
        assert run["device"].startswith("NVIDIA H100") and run["commit"] == "0d0f7fc" and run["seed"] == int(seed)
        assert [queued, alone, below, worst, kernels, projections, control] == [
            f"{r['geomean_queued']:.3f}", f"{r['geomean_alone']:.3f}", str(r["below_0.95_queued"]),
            f"{r['min_queued']:.3f}", str(r["kernels"]), f"{p['geomean_queued']:.3f}", f"{r['control_geomean']:.3f}"]
        ratios += [(s["torch_ms"] / s["ours_ms"], s["torch_alone_ms"] / s["ours_alone_ms"]) for s in run["shapes"]
                   if s["kind"] == "random" and not s["kernel"].startswith("cuBLAS")]
        means.append(r["geomean_queued"])
    q, a = [x for x, _ in ratios], [y for _, y in ratios]
    flat = " ".join(text.split())
    assert len(means) == 5
    assert f"the call was {min(q):.2f}-{max(q):.2f}x torch.matmul queued and {min(a):.2f}-{max(a):.2f}x alone" in flat


def _before_after_cells(old: dict, run: dict) -> list[str]:
    """A before-and-after table's cells after the seed: the queued mean before, then after: queued, alone, shapes
    below 0.95, the worst, kernels run, the projections' queued mean."""
    r, p = run["summary"]["random"], run["summary"]["projection"]
    return [f"{old['summary']['random']['geomean_queued']:.3f}", f"{r['geomean_queued']:.3f}", f"{r['geomean_alone']:.3f}",
            str(r["below_0.95_queued"]), f"{r['min_queued']:.3f}", str(r["kernels"]), f"{p['geomean_queued']:.3f}"]


def test_the_h100_docs_older_corners_table_is_the_committed_anyshape_runs():
    """docs/results-h100.md, the older lattices' corners merged: each seed's row, before from the shipped table's
    JSON and after from the merged run's; the shapes where the new rows run; 64^3's host time; the rows shipped."""
    data = ROOT / "benchmarks" / "data"
    before = {s: json.loads((data / f"anyshape-seed{s}-h100.json").read_text()) for s in range(1, 6)}
    after = {s: json.loads((data / f"anyshape-seed{s}-older-corners-h100.json").read_text()) for s in range(1, 6)}
    text = (ROOT / "docs" / "results-h100.md").read_text()
    part = section(text, "## The older lattices' corners, merged")
    flat = " ".join(part.split())
    table = table_rows(part)
    assert [row[0] for row in table] == ["1", "2", "3", "4", "5"]
    for seed, was, now, alone, below, worst, kernels, projections in table:
        old, run = before[int(seed)], after[int(seed)]
        assert run["device"].startswith("NVIDIA H100") and run["seed"] == int(seed)
        assert run["commit"] == ("a335087" if seed in "14" else "31bf6ec")
        assert [was, now, alone, below, worst, kernels, projections] == _before_after_cells(old, run)
        ran = {(s["M"], s["N"], s["K"]) for s in old["shapes"] if not s["kernel"].startswith("cuBLAS")}
        for s in run["shapes"]:
            shape = f"{s['M']}x{s['N']}x{s['K']}"
            if s["kind"] == "random" and not s["kernel"].startswith("cuBLAS") and (s["M"], s["N"], s["K"]) not in ran:
                assert f"{shape} ({s['torch_ms'] / s['ours_ms']:.2f}x" in flat
            if s["torch_ms"] < 0.95 * s["ours_ms"]:
                assert s["kernel"].startswith("cuBLAS") and f"{shape} ({s['torch_ms'] / s['ours_ms']:.3f}" in flat
    hosts = [after[s]["host_per_call"] for s in (1, 4)]
    assert all(h["shape"] == [64, 64, 64] and not h["kernel"].startswith("cuBLAS") for h in hosts)
    later = [after[s]["host_per_call"]["torch_us"] for s in (3, 2, 5)]
    assert f"torch.matmul took {later[0]:.1f} µs a call at 64³, against {later[1]:.1f} and {later[2]:.1f}" in flat
    assert (f"{hosts[0]['ours_us']:.1f} and {hosts[1]['ours_us']:.1f} µs of host time a call, 2,000 calls back to "
            f"back, against torch.matmul's {hosts[0]['torch_us']:.1f} and {hosts[1]['torch_us']:.1f}") in flat
    shipped = sqlite3.connect(f"file:{ROOT / 'autotune' / 'store' / 'tuned' / 'h100.sqlite'}?immutable=1", uri=True)
    rows = shipped.execute("SELECT count(*) FROM results").fetchone()[0]
    assert f"{rows} rows)" in " ".join(section(text, "## Rows at small host-bound corners").split())
    summaries = [run["summary"]["random"] for run in after.values()]
    means = [r["geomean_queued"] for r in summaries]
    counts = [r["below_0.95_queued"] for r in summaries if r["below_0.95_queued"]]
    below = [s["torch_ms"] / s["ours_ms"] for run in after.values() for s in run["shapes"]
             if s["kind"] == "random" and s["torch_ms"] < 0.95 * s["ours_ms"]]
    words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}
    assert f"is not met at {words[len(counts)]} of the five" in flat
    assert min(below) < 0.95 and min(means) >= 1.0


def test_the_h100_docs_cover_figures_are_the_committed_runs():
    """docs/results-h100.md, after `autotune cover`: the cover-rate table (one row a tree) and the figures of
    anyshape after the cover, from their JSONs."""
    text = (ROOT / "docs" / "results-h100.md").read_text()
    part = section(text, "## After `autotune cover`")
    rate = json.loads((ROOT / "benchmarks" / "data" / "cover-rate-12-trials-h100.json").read_text())
    assert rate["device"].startswith("NVIDIA H100") and f"--budget {rate['budget_s']:g} --trials {rate['trials']}" in part
    for row, run in zip(table_rows(part), rate["runs"], strict=True):
        runs_kernel = int(run["summary"].split("runs a tuned kernel at ")[1].split(";")[0])
        assert [row[0].split(",")[0], row[1], row[2], row[3]] == [
            run["code"], f"{run['seconds']:.1f}", str(run["verified_rows"]), str(runs_kernel)]
    flat = " ".join(part.split())
    covered = json.loads((ROOT / "benchmarks" / "data" / "anyshape-covered-h100.json").read_text())
    r, p, cover = covered["summary"]["random"], covered["summary"]["projection"], covered["cover"]
    assert covered["commit"] in flat and f"The cover took {cover['took_s']:.1f} s" in flat
    assert (f"**{r['geomean_queued']:.3f}** queued, {r['geomean_alone']:.3f} alone, none below 0.95 (worst "
            f"{r['min_queued']:.3f}). torch.matmul against itself read {r['control_geomean']:.3f}") in flat
    shapes, q, a, theirs = covered_split(covered)
    assert (f"Our kernels ran at {len(q)} of the {shapes}: {min(q):.2f}-{max(q):.2f}x queued, "
            f"{min(a):.2f}-{max(a):.2f}x alone. cuBLAS ran at the other {len(theirs)}") in flat
    assert f"{min(theirs):.3f}-{max(theirs):.3f} queued" in flat
    assert f"At the projections: {p['geomean_queued']:.3f} queued, our kernel at {p['kernels']} of 8" in flat
    old = json.loads((ROOT / "benchmarks" / "data" / "anyshape-covered-worker-per-product-h200.json").read_text())
    assert f"on the H200 at `{old['commit']}`, with a worker per product, took {old['cover']['took_s']:.1f} s" in flat


def test_the_h100_docs_start_cost_figures_are_the_committed_one_trial_run():
    """docs/results-h100.md: what a cover of one trial a product took, with a worker per product and kept."""
    from autotune.api.cover import MIN_SHARE_S

    flat = " ".join(section((ROOT / "docs" / "results-h100.md").read_text(), "## After `autotune cover`").split())
    rate = json.loads((ROOT / "benchmarks" / "data" / "cover-rate-1-trial-h100.json").read_text())
    old, new = rate["runs"]
    n = new["products_with_baseline"]
    assert rate["trials"] == 1 and rate["device"].startswith("NVIDIA H100") and f"sources `{new['code']}`" in flat
    assert (f"{old['seconds']:.1f} s for the {n} products with a worker each ({old['seconds'] / n:.1f} s a product), "
            f"{new['seconds']:.1f} s with the worker kept ({new['seconds'] / n:.1f} s a product)") in flat
    assert f"refuses a budget under {MIN_SHARE_S:g} s a product" in flat


def test_the_pytorch_docs_describe_example_is_what_load_says_on_the_h200(launcher):
    """docs/pytorch.md's example of Choice.describe(): load() on the H200's shipped database says it today."""
    import autotune

    said = autotune.load(launcher=launcher, gpu="NVIDIA H200").choose(2048, 2048, 2048).describe()
    kernel = said.split(", ")[1]
    example = said.replace(kernel, kernel[:kernel.index("_", len("sgemm_")) + 1] + "...")
    assert f"e.g. on the H200 `{example}`: not 2% faster" in " ".join(PYTORCH_DOC.read_text().split())


def test_the_host_bound_docs_counts_are_the_committed_databases():
    """docs/host-bound.md: the 27 host-bound shapes' rows that beat cuBLAS (by WIN_MARGIN) and cover (within
    HOST_BOUND_MS), and the shipped rows that run at their own shape though cuBLAS was faster on the GPU."""
    from autotune.api.dispatch import HOST_BOUND_MS, beats_library

    with closing(sqlite3.connect(unpacked(ROOT / "benchmarks" / "data" / "h200-host-bound.sqlite.gz"))) as db:
        db.row_factory = sqlite3.Row
        best: dict[tuple, dict] = {}
        for r in map(dict, db.execute("SELECT * FROM results WHERE status = 'ok'")):
            key = (r["M"], r["N"], r["K"])
            best[key] = min(best.get(key, r), r, key=lambda x: x["time_ms"])
    won = [r for r in best.values() if beats_library(r)]
    with closing(sqlite3.connect(ROOT / "autotune" / "store" / "tuned" / "h200.sqlite")) as db:
        shipped = list(db.execute("SELECT time_ms, cublas_ms FROM results"))
    flat = " ".join(HOST_DOC.read_text().split())
    assert (f"{len(won)} of {len(best)} beat cuBLAS by 2%, {sum(r['time_ms'] <= HOST_BOUND_MS for r in won)} of them "
            f"within 11 µs") in flat
    assert f"{sum(ms > cublas for ms, cublas in shipped)} of its {len(shipped)} rows today" in flat



def test_the_readmes_main_job_is_the_committed_run():
    """The README's main job: benchmarks/main_job.py's output on the H200."""
    job = json.loads((ROOT / "benchmarks" / "data" / "main-job-h200.json").read_text())
    best = job["best"]
    assert job["device"] == "NVIDIA H200" and job["command"] == "autotune search --M 4096"
    assert (f"{job['rows']['ok']} new measurements in {job['seconds']:.1f} s, best {best['time_ms']:.3f} ms = "
            f"{best['tflops']:.1f} TFLOP/s, {best['pct_cublas']:.1f}% of cuBLAS") in " ".join(README.read_text().split())


DATA = ROOT / "benchmarks" / "data"


def _flat(path: Path) -> str:
    return " ".join(path.read_text().split())


def _json(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def test_the_results_docs_main_job_and_ladder_are_the_committed_runs():
    """docs/results-h200.md's main job (main_job.py's output) and the ladder at 4096³: its first row the main job's
    best, the others the exhaustive naive and tiled ground truth (the best tiled config, the chapter's T=32 kernel
    with one output a thread, and naive's default both ways)."""
    job = _json("main-job-h200.json")
    best = job["best"]
    doc = RESULTS_DOC.read_text()
    assert (f"{job['rows']['ok']} new measurements in {job['seconds']:.1f} s, best the tail split's default at "
            f"{best['time_ms']:.3f} ms = {best['tflops']:.1f} TFLOP/s, {best['pct_cublas']:.1f}% of that process's "
            f"cuBLAS") in " ".join(doc.split()) and best["kernel"].startswith("sgemm_tailsplit_")
    with committed_database("h200-gt-naive-tiled-4096.sqlite.gz") as db:
        def row(where: str) -> tuple[float, float]:
            return db.execute(f"SELECT tflops, pct_cublas FROM results WHERE status = 'ok' AND {where} "
                              "ORDER BY time_ms LIMIT 1").fetchone()
        tiled = db.execute("SELECT kernel, tflops, pct_cublas FROM results WHERE status = 'ok' AND family = 'tiled' "
                           "ORDER BY time_ms LIMIT 1").fetchone()
        chapter = row("kernel = 'sgemm_tiled_T32_bx32_by32_xcols_pad0'")
        cols, rows = row("kernel = 'sgemm_naive_xcols_bx32_by8'"), row("kernel = 'sgemm_naive_xrows_bx32_by8'")
    table = table_rows(doc[doc.index("The ladder at 4096³"):])
    assert [r[1:] for r in table[:4]] == [
        [f"{best['tflops']:.1f}", f"{best['pct_cublas']:.1f}"], [f"{tiled[1]:.1f}", f"{tiled[2]:.0f}"],
        [f"{chapter[0]:.1f}", f"{chapter[1]:.1f}"],
        [f"{cols[0]:.1f} / {rows[0]:.2f}", f"{cols[1]:.1f} / {rows[1]:.1f}"]]
    assert f"`{tiled[0].removeprefix('sgemm_tiled_')}`" in table[1][0]
    assert f"(tiled at best {tiled[2]:.0f}% at 4096³" in _flat(ROOT / "docs" / "families.md")


def test_the_suite_summaries_are_the_committed_suite():
    """The sentences that sum the suite up: results-h200.md's bullets, streamk.md's few-tile paragraph, and
    families.md's cuBLAS/ours where each FP32 family won the first seven groups' shapes."""
    shapes = json.loads(SUITE_JSON.read_text())["shapes"]
    flat = _flat(RESULTS_DOC)
    rows = [s for s in shapes if s["M"] in (8, 16) and s["group"] in ("skinny-m", "llm")]
    pct, ratio = [s["pct_roofline"] for s in rows], [s["cublas_over_ours"] for s in rows]
    assert all(s["memory_bound"] for s in rows) and 1.8 < min(ratio) and max(ratio) < 2.2  # "about 2x"
    assert f"8-16 rows at {min(pct):.0f}-{max(pct):.0f}% of HBM bandwidth, about 2x cuBLAS" in flat
    few = {(s["M"], s["N"], s["K"]): s for s in shapes if s["group"] == "few-tiles"}
    family = {k: s["kernel"].split("_")[1] for k, s in few.items()}
    won = sorted(s["cublas_over_ours"] for k, s in few.items() if family[k] == "streamk" and s["cublas_over_ours"] > 1)
    fewest = [s["cublas_over_ours"] for (m, n, _), s in few.items() if m * n <= 1024 * 1024]
    assert f"waves, {won[0]:.2f}-{won[-1]:.2f};" in flat and f"stay at {min(fewest):.2f}-{max(fewest):.2f} of cuBLAS" in flat
    streamk = _flat(ROOT / "docs" / "streamk.md")
    assert f"geometric mean of cuBLAS/ours {geomean([s['cublas_over_ours'] for s in few.values()]):.3f}" in streamk
    by = {f"{m} x {n} x {k}" if m != n or n != k else f"{m}³": s["cublas_over_ours"] for (m, n, k), s in few.items()}
    assert (f"Stream-K won 1536³ ({by['1536³']:.3f}) and 2176 x 2048 x 2048 ({by['2176 x 2048 x 2048']:.3f}), and "
            f"1024 x 1024 x 16384 at {by['1024 x 1024 x 16384']:.3f}; split-K won 1024 x 2048 x 8192 "
            f"({by['1024 x 2048 x 8192']:.3f})") in streamk
    splitk = [s["cublas_over_ours"] for (m, n, _), s in few.items() if m * n <= 1024 * 1024 and family[m, n, _] == "splitk"]
    assert f"held {min(splitk):.2f}-{max(splitk):.2f} at the fewest-tile shapes" in streamk
    assert f"blocked stayed best ({by['2048 x 2048 x 8192']:.3f})" in streamk and family[2048, 2048, 8192] == "blocked"
    table = {row[0].strip("`"): row[2] for row in table_rows(section((ROOT / "docs" / "families.md").read_text(),
                                                                      "## Where each one wins"))}
    first = [s for s in shapes if s["group"] != "few-tiles"]
    for name in ("blocked", "tailsplit", "splitk", "skinny", "tall"):
        mine = [s["cublas_over_ours"] for s in first if s["kernel"].split("_")[1] == name]
        assert table[name] == f"{min(mine):.2f}-{max(mine):.2f}", name


def test_the_streamk_docs_sentences_are_its_table():
    """docs/streamk.md's sentences under its table: the geometric mean, where stream-K wins, the fewest-tile shapes."""
    shapes = _json("streamk-h200.json")["shapes"]
    sk = [s["cublas_ms"] / s["streamk_ms"] for s in shapes]
    bl = [s["cublas_ms"] / s["blocked_ms"] for s in shapes]
    fewest = [i for i, s in enumerate(shapes) if s["M"] * s["N"] <= 1024 * 1024]
    flat = _flat(ROOT / "docs" / "streamk.md")
    won = [x for x in sk if x > 1]
    assert f"Geometric mean of cuBLAS / streamk: {geomean(sk):.3f}" in flat
    assert f"waves ({min(won):.2f}-{max(won):.2f})" in flat and len(won) == 2
    assert (f"fewest-tile shapes from {min(bl[i] for i in fewest):.2f}-{max(bl[i] for i in fewest):.2f} of cuBLAS to "
            f"{min(sk[i] for i in fewest):.2f}-{max(sk[i] for i in fewest):.2f}") in flat and len(fewest) == 4


def test_the_measuring_docs_verify_and_compile_figures_are_the_committed_outputs():
    """docs/measuring.md: the emulator against the GPU (compare_verify.py's pairs) and NVRTC's time per family;
    docs/search.md's compile time of the register-blocked families from the same CSV."""
    import csv
    import statistics

    def statuses(name: str) -> dict:
        return {(r["config"], tuple(r["shape"])): r["status"] for r in _json(name)}

    sim, gpu = statuses("cpu-verify-sim.json"), statuses("h200-verify-cuda.json")
    flat = _flat(ROOT / "docs" / "measuring.md")
    assert set(sim) == set(gpu) and set(sim.values()) == set(gpu.values()) == {"ok"}
    assert f"{len(sim)} (variant, shape) pairs, all ok on both, none differ" in flat
    assert len({c for c, _ in sim}) == 12 * len({c.split("_")[1] for c, _ in sim})  # 12 variants of each family
    seconds: dict[str, list[float]] = {}
    with open(DATA / "compile-times-nvrtc13.5-sm90.csv") as f:
        for r in csv.DictReader(f):
            assert r["status"] == "ok"
            seconds.setdefault(r["family"], []).append(float(r["seconds"]))
    medians = {fam: statistics.median(v) for fam, v in seconds.items()}
    [count] = {len(v) for v in seconds.values()}
    assert (f"{count} configs each: median {min(medians.values()):.1f}-{max(medians.values()):.1f} s, the slowest "
            f"{max(map(max, seconds.values())):.0f} s") in flat
    blocked = [medians[fam] for fam in ("blocked", "splitk", "tailsplit")]
    assert f"takes NVRTC {min(blocked):.1f}-{max(blocked):.1f} s in the median" in _flat(SEARCH_DOC)


def test_the_host_cost_figures_are_the_committed_runs():
    """What a repeated call costs the host per path (host_cost.py, with the first step in C and in Python): in
    docs/pytorch.md, docs/python.md, docs/measuring.md and the README."""
    c, py = _json("host-cost-h200.json"), _json("host-cost-pure-python-h200.json")
    assert c["first_step"] == "C" and py["first_step"] == "Python" and c["commit"] == py["commit"]

    def first(run: dict, key: str) -> dict[tuple, float]:  # each path's first figure, by shape
        return {tuple(r["shape"]): r[key][0] for r in run["rows"]}

    ours, torch = first(c, "load(library=False)"), first(c, "torch.matmul")
    ours_py, torch_py = first(py, "load(library=False)"), first(py, "torch.matmul")
    slow = (64, 64, 64)  # the row that ran while the host was slower
    rest = [s for s in ours if s != slow]
    assert len(rest) == 4
    pytorch, python, measuring = _flat(PYTORCH_DOC), _flat(ROOT / "docs" / "python.md"), _flat(ROOT / "docs" / "measuring.md")
    c_line = f"{_span([ours[s] for s in rest])} µs a call where torch.matmul took {_span([torch[s] for s in rest])}"
    assert f"our kernel's short way in C took {c_line} (four of the five shapes)" in pytorch
    assert f"and {ours[slow]:.1f} against {torch[slow]:.1f} at 64³" in pytorch
    py_line = f"{_span(ours_py.values())} against {_span(torch_py.values())}"
    assert f"in Python {py_line}." in pytorch
    assert f"a kernel's prepared launch, {c_line} on the H200 (the steps in Python: {py_line};" in python
    assert f"our kernel through `autotune.load()` took {c_line} (" in measuring
    saved = [100 * (1 - ours[s] / torch[s]) for s in ours]
    saved_py = [100 * (1 - ours_py[s] / torch_py[s]) for s in ours_py]
    assert f"the C steps save {min(saved):.0f}-{max(saved):.0f}% of torch.matmul's host time, the Python ones " \
           f"{min(saved_py):.0f}-{max(saved_py):.0f}%" in pytorch
    less = f"{min(saved):.0f}-{max(saved):.0f}% less than `torch.matmul`"
    assert f"costs the host {less}" in pytorch and f"costs the host {less}" in _flat(README)
    assert (f"costs the host {_span([torch_py[s] - ours_py[s] for s in ours_py])} µs less than `torch.matmul` with "
            f"the steps in Python, {_span([torch[s] - ours[s] for s in ours])} with them in C") in pytorch
    assert f"Allocating C (`new_empty`) is {_span([r['new_empty'][0] for r in c['rows']])} µs" in pytorch
    through = [r["load()"][0] - r["torch.matmul"][0] for r in c["rows"] if r["load()"][0] > r["load(library=False)"][0] + 1]
    assert len(through) == 3 and f"cost {_span(through)} µs above torch.matmul at the three shapes" in pytorch
    assert f"the cuBLAS call costs the lookup more, {_span(through)} µs" in pytorch


def test_the_host_times_at_64_cubed_are_the_committed_anyshape_runs():
    """The host time of a call at 64³ that docs/pytorch.md and docs/results-h100.md quote from anyshape's runs."""
    h200 = _json("anyshape-h200.json")["host_per_call"]
    assert h200["shape"] == [64, 64, 64] and "covering" in h200["kernel"] and "256x256x256" in h200["kernel"]
    assert (f"the two in turn: {h200['ours_us']:.1f} µs, torch.matmul {h200['torch_us']:.1f} µs at "
            f"`{_json('anyshape-h200.json')['commit']}` (`benchmarks/data/anyshape-h200.json`") in _flat(PYTORCH_DOC)
    flat = _flat(ROOT / "docs" / "results-h100.md")
    corners = _json("anyshape-seed4-corners-h100.json")["host_per_call"]
    assert (f"torch.matmul took {corners['torch_us']:.1f} µs a call at 64³, 2,000 calls back to back "
            f"(`benchmarks/data/anyshape-seed4-corners-h100.json`, below; {h200['torch_us']:.1f} on the H200's") in flat
    shipped = {s: _json(f"anyshape-seed{s}-h100.json")["host_per_call"] for s in range(1, 6)}
    assert all(h["kernel"].startswith("cuBLAS") for h in shipped.values())
    assert (f"torch.matmul took {_span2([h['torch_us'] for h in shipped.values()])} µs a call at 64³, where a cuBLAS call "
            f"through load() took {_span2([h['ours_us'] for h in shipped.values()])}") in flat
    assert (f"through the pass-through before: {shipped[1]['ours_us']:.1f} against {shipped[1]['torch_us']:.1f} and "
            f"{shipped[4]['torch_us']:.1f}") in flat and f"{shipped[4]['ours_us']:.1f}" == f"{shipped[1]['ours_us']:.1f}"


def _span2(values) -> str:
    return f"{min(values):.2f}-{max(values):.2f}"


def test_the_host_bound_docs_library_and_cover_figures_are_the_committed_outputs():
    """docs/host-bound.md: cuBLASLt through ctypes (cublaslt_direct.py), the misaligned lattice's rows, the staged
    store at 4096x1023x16, and cuBLAS's fastest time at the odd-N lattice."""
    flat = _flat(HOST_DOC)
    lt = dict(_probe_lines("cublaslt-direct-h200.txt"))
    us = list(lt.values())
    assert (f"through ctypes {_span([u['lt'] for u in us])} µs a call where torch.mm took "
            f"{_span([u['torch.mm'] for u in us])}, of which ctypes' conversions and the allocation were "
            f"{_span([u['lt_null'] for u in us])} (the same call with a null handle)") in flat
    queued = re.search(r"queued: \{'lt': ([\d.]+)", (DATA / "cublaslt-direct-h200.txt").read_text().split("(20, 46, 9236)")[1])
    assert f"its algorithm was {1 / float(queued[1]):.0f}x slower at 20x46x9236" in flat
    from autotune.api.dispatch import beats_library

    with committed_database("h200-host-bound-misaligned.sqlite.gz") as db:
        db.row_factory = sqlite3.Row
        best: dict[tuple, dict] = {}
        for r in map(dict, db.execute("SELECT * FROM results WHERE status = 'ok'")):
            key = (r["M"], r["N"], r["K"])
            best[key] = min(best.get(key, r), r, key=lambda x: x["time_ms"])
    won = [k for k, r in best.items() if beats_library(r)]
    assert f"{len(won)} of {len(best)} beat cuBLAS, nearly all with N a multiple of 4 and K odd" in flat
    assert sum(n % 4 == 0 and k % 2 for _, n, k in won) > 0.75 * len(won)
    odd = best[4096, 255, 63]
    assert f"(4096x255x63: {odd['time_ms'] * 1e3:.1f} µs against {odd['cublas_ms'] * 1e3:.1f})" in flat
    [staged] = [r for r in _json("staged-store-h200.json")["rows"]
                if (r["M"], r["N"], r["K"], r["tile"]) == (4096, 1023, 16, "64x64 TM2")]
    assert (f"at 4096x1023x16 a 64x64 tile took {staged['cs1_ms'] * 1e3:.1f} µs against {staged['cs0_ms'] * 1e3:.1f} "
            f"(cuBLAS {staged['cublas_ms'] * 1e3:.1f})") in flat
    products = _json("cover-host-bound-odd-n-cs-h200.json")["products"]
    assert (f"cuBLAS's own time ({min(p['cublas_ms'] for p in products) * 1e3:.1f} µs at the fastest of the "
            f"{len(products)})") in flat


def test_the_host_bound_docs_earlier_covers_are_the_committed_runs():
    """docs/host-bound.md's earlier covers of seed 1's random shapes: each run's summary, and at the host-bound
    shapes where cuBLAS ran (at most 11 µs), the best kernel the cover found over cuBLAS's GPU time."""
    flat = _flat(HOST_DOC)
    worker = _json("anyshape-covered-worker-per-product-h200.json")
    r = worker["summary"]["random"]

    def short(run: dict) -> list[dict]:
        return [p for p in run["cover"]["products"] if p["origin"] == "random" and p["cublas_ms"] <= 0.011]

    lost = [p["ms"] / p["cublas_ms"] for p in short(worker) if p["runs"] == "cuBLAS"]
    assert (f"the same command measured {r['geomean_queued']:.3f} queued, {r['geomean_alone']:.3f} alone, "
            f"{r['below_0.95_queued']} below 0.95 (worst {r['min_queued']:.3f}), our kernels at {r['kernels']} of the "
            f"40; the cover took {worker['cover']['took_s']:.0f} s, and at the {len(lost)} host-bound shapes where "
            f"cuBLAS ran the best kernel found took {min(lost):.2f}-{max(lost):.2f}x its") in flat
    first = _json("anyshape-covered-neighbours-first-h200.json")
    r, cover = first["summary"]["random"], first["cover"]
    assert f"`--cover {cover['budget_s']:.0f} --cover-trials {cover['trials']}`" in flat and first["commit"] in flat
    assert (f"{r['geomean_queued']:.3f} queued, {r['geomean_alone']:.3f} alone, {r['below_0.95_queued']} below "
            f"0.95") in flat
    slower = [p["ms"] / p["cublas_ms"] for p in short(first) if p["ms"] > p["cublas_ms"]]
    assert (f"at {len(slower)} of the {len(short(first))} random shapes where cuBLAS took at most 11 µs the best "
            f"kernel found took {min(slower):.2f}-{max(slower):.2f}x its GPU time") in flat
    [lost_there] = [s["torch_ms"] / s["ours_ms"] for s in first["shapes"] if (s["M"], s["N"], s["K"]) == (15782, 11, 12)]
    assert f"the call took the full path and lost ({lost_there:.3f})" in flat


def test_the_pytorch_docs_cover_split_and_other_runs_are_the_committed_outputs():
    """docs/pytorch.md after the cover (which family runs where, the shapes under 17 µs, the 2% wins), the training
    run and the exported launcher's time."""
    from autotune.api.dispatch import WIN_MARGIN

    flat = _flat(PYTORCH_DOC)
    covered = _json("anyshape-covered-h200.json")
    random = [s for s in covered["shapes"] if s["kind"] == "random"]
    ours = [s for s in random if not s["kernel"].startswith("cuBLAS")]
    families: dict[str, int] = {}
    for s in ours:
        families[s["kernel"].split("_")[1]] = families.get(s["kernel"].split("_")[1], 0) + 1
    fast = [s for s in random if s["torch_ms"] < 0.017]
    assert (f"`blocked` at {families['blocked']} (a kernel runs at {sum(s in ours for s in fast)} of the {len(fast)} "
            f"shapes where torch.matmul took under 17 µs a call), `skinny` at {families['skinny']}, `tall` at "
            f"{families['tall']}, `tailsplit` at one") in flat and families["tailsplit"] == 1 and len(families) == 4
    assert f"torch.matmul against itself read {covered['summary']['random']['control_geomean']:.3f}" in flat
    products = {(p["M"], p["N"], p["K"]): p for p in covered["cover"]["products"]}
    gpu = [products[s["M"], s["N"], s["K"]] for s in ours]
    beat = [p for p in gpu if p["ms"] <= (1 - WIN_MARGIN) * p["cublas_ms"]]
    assert all(p["ms"] - p["cublas_ms"] <= 0.002 for p in gpu if p not in beat)
    assert (f"Of the {len(ours)} random shapes whose kernel runs, at {len(beat)} it beat cuBLAS on the GPU and at "
            f"{len(ours) - len(beat)} it is a host-bound row within 2 µs of it") in flat
    mlp = _json("train-mlp-h200.json")
    assert (f"nn.Linear {mlp['nn_linear_ms']:.2f} ms, swapped {mlp['autotune_ms']:.2f} ms "
            f"({mlp['nn_linear_ms'] / mlp['autotune_ms']:.3f}); gradients identical") in flat
    assert mlp["worst_grad_rel_diff"] == 0
    export = _json("export-time-tf32x3wg-h200.json")
    assert (f"{export['launcher_ms']:.3f} ms through `best.py` against {export['searched_ms']:.3f} ms in the search "
            f"({export['launcher_over_searched']:.3f}), {export['torch_over_launcher']:.2f}x torch.matmul FP32") in flat


def test_the_ozaki_docs_prose_figures_are_the_committed_runs():
    """docs/ozaki.md's figures beside its tables: the tiles timed together, the H200 bullets and the prologue's
    times (ozaki-h200.json), the measured side of the ceiling, and the Nsight Compute run's utilisations."""
    doc = ROOT / "docs" / "ozaki.md"
    flat = _flat(doc)
    with committed_database("ozakiwg-tiles-h200.sqlite.gz") as db:
        ms = dict(db.execute("SELECT kernel, time_ms FROM results WHERE status = 'ok' AND M = 8192"))
    tile = {k.removeprefix("sgemm_ozakiwg_").removesuffix("_T7_SCALE1"): v for k, v in ms.items()}
    assert (f"BN = 256 with WS = 1 took {tile['BN256_S4_WS1']:.2f} ms at 8192³ against BN = 128's "
            f"{tile['BN128_S4_WS1']:.2f}") in flat
    assert (f"(BN = 128, WS = 0: {ms['sgemm_ozakiwg_BN128_S3_WS0_T7_SCALE1_LB2']:.2f} ms against "
            f"{tile['BN128_S3_WS0']:.2f} with one block)") in flat

    rows = _json("ozaki-h200.json")["shapes"]

    def at(family: str, moduli, scale, inputs: str, size: int) -> dict:
        [row] = [r for r in rows if (r["family"], r.get("moduli"), r.get("scale"), r["inputs"], r["M"]) ==
                 (family, moduli, scale, inputs, size)]
        return row

    def x(r: dict) -> float:
        return r["cublas_ms"] / r["ours_ms"]

    def tflops(r: dict) -> float:
        return 2 * r["M"] * r["N"] * r["K"] / r["ours_ms"] / 1e9

    n8, n16, w8 = at("ozakiwg", 7, 1, "randn", 8192), at("ozakiwg", 7, 1, "randn", 16384), at("ozakiwg", 7, 1, "wide", 8192)
    assert (f"7 moduli scaled by the norm run 8192³ at {x(n8):.2f}x cuBLAS ({n8['ours_ms']:.3f} ms, {tflops(n8):.0f} "
            f"TFLOP/s) and 16384³ at {x(n16):.2f}x ({n16['ours_ms']:.2f} ms, {tflops(n16):.0f} TFLOP/s), at "
            f"{n8['ratio']:.2f}x and {n16['ratio']:.2f}x cuBLAS FP32's error on randn inputs; on the wide inputs 8192³ "
            f"runs at {x(w8):.2f}x, at {w8['ratio']:.2f}x its error") in flat
    l16 = at("ozakiwg", 8, 0, "randn", 16384)
    assert f"largest value reach {x(l16):.2f}x at 16384³ with {l16['ratio']:.2f}x the error" in flat
    l8, lw8 = at("ozakiwg", 7, 0, "randn", 8192), at("ozakiwg", 7, 0, "wide", 8192)
    assert (f"faster still ({x(l8):.2f}x at 8192³) but at {l8['ratio']:.2f}x cuBLAS FP32's error on randn and past "
            f"the contract on wide inputs ({lw8['ratio']:.1f}x)") in flat
    assert f"{x(n8):.1f}" == f"{x(n16):.1f}" and f"{x(n8):.1f}x cuBLAS SGEMM on the H200 at 8192³ and 16384³" in flat
    for page in (RESULTS_DOC, ROOT / "docs" / "families.md", README):
        assert f"{x(n8):.1f}x" in _flat(page) and "8192³ and 16384³" in _flat(page), page.name
    assert f"{x(n8):.1f}x at 8192³ and 16384³ with {_span2([n8['ratio'], n16['ratio']])}x its error" in _flat(README)
    assert (f"the prologue ({n8['prologue_ms']:.2f} ms of {n8['ours_ms']:.2f} at 8192³ scaled by the norm") in flat
    n4, l4 = at("ozakiwg", 7, 1, "randn", 4096), at("ozakiwg", 7, 0, "randn", 4096)
    assert (f"{n8['prologue_ms']:.2f} ms at 8192³ and {n4['prologue_ms']:.2f} ms at 4096³ against "
            f"{l8['prologue_ms']:.2f} and {l4['prologue_ms']:.2f} for the largest value") in flat
    o4, o8 = at("ozaki", 8, None, "randn", 4096), at("ozaki", 8, None, "randn", 8192)
    assert f"against {tflops(o4):.1f} and {tflops(o8):.1f} measured at 4096³ and 8192³" in flat
    ncu = (DATA / "ncu-ozakiwg-8192-h200.txt").read_text()

    def metric(name: str) -> float:
        return float(re.search(rf"{re.escape(name)}\s+%?\s*([\d.]+)", ncu)[1])

    tensor = float(re.search(r"Shared is the highest-utilized pipeline \(([\d.]+)%\)", ncu)[1])
    assert "dominated by its Tensor (INT) sub-pipeline" in " ".join(ncu.split())
    assert (f"its INT8 tensor pipe busy {tensor:.0f}% of the elapsed cycles, L2 at "
            f"{metric('L2 Cache Throughput'):.0f}% of its throughput, HBM at {metric('DRAM Throughput'):.0f}%, the "
            f"issue slots {metric('Issue Slots Busy'):.0f}% busy, no local memory") in flat
    assert metric("Local Memory Spilling Requests") == 0
    assert f"put BN = 128's product at {metric('L2 Cache Throughput'):.0f}% of L2's throughput" in flat


def test_the_first_use_docs_row_count_is_the_shipped_model_rows():
    rows = json.loads(gzip.decompress((ROOT / "autotune" / "store" / "tuned" / "h200-model-rows.json.gz").read_bytes()))
    assert f"the package ships the {len(rows['rows']):,} rows of its H200 suite" in _flat(ROOT / "docs" / "first-use.md")


def _long_k_runs(kind: str) -> dict[int, dict]:
    return {s: json.loads((ROOT / "benchmarks" / "data" / f"anyshape-seed{s}-{kind}long-k-h100.json").read_text())
            for s in range(1, 6)}


def test_the_h100_docs_long_k_section_is_the_committed_probe_corners_and_runs():
    """docs/results-h100.md, the long-K corners: the probe's times, the corners that cover (none at the small
    lattice's, most at the smaller ones), each seed's row before and after, the shapes where the new rows run and
    those below 0.95."""
    from autotune.api.dispatch import HOST_BOUND_MS, WIN_MARGIN

    text = (ROOT / "docs" / "results-h100.md").read_text()
    part = section(text, "## Long-K corners, with splitk's small tiles")
    flat = " ".join(part.split())
    probe = (ROOT / "benchmarks" / "data" / "splitk-small-tiles-h100.txt").read_text()
    best = {}
    for block in probe.split("== ")[1:]:
        M, _, N, _, K = block.split()[:5]
        times = [tuple(map(float, line[1:].split(",")[:2])) for line in block.splitlines() if line.startswith("(")]
        best[(int(M), int(N), int(K))] = times[0]
    named = [best[s] for s in ((1024, 64, 511), (128, 512, 511), (64, 128, 4096))]
    assert (f"took {min(t for t, _ in named):.1f}-{max(t for t, _ in named):.1f} µs at 1024x64x511, 128x512x511 and "
            f"64x128x4096, where cuBLAS took {min(c for _, c in named):.1f}-{max(c for _, c in named):.1f}") in flat
    for name, corners, covered in (("h100-small-lattice-long-k-splitk.sqlite.gz", 126, 0),
                                   ("h100-long-k-corners.sqlite.gz", 196, 107)):
        with committed_database(name) as db:
            rows = list(db.execute("SELECT M, N, K, min(time_ms), cublas_ms FROM results WHERE status = 'ok' "
                                   "GROUP BY M, N, K"))
        won = [r for r in rows if r[3] <= (1 - WIN_MARGIN) * r[4] and r[3] <= HOST_BOUND_MS]
        assert (len(rows), len(won)) == (corners, covered), name
        if covered == 0:
            assert f"took {min(r[3] for r in rows) * 1e3:.1f}-{max(r[3] for r in rows) * 1e3:.1f} µs and covered none" in flat
    assert f"At {covered} of the {corners} a kernel beat cuBLAS" in flat
    before, after = _long_k_runs("before-"), _long_k_runs("")
    table = table_rows(part)
    assert [row[0] for row in table] == ["1", "2", "3", "4", "5"]
    new, below, kernels = [], [], []
    for seed, was, now, alone, n_below, worst, n_kernels, projections in table:
        old, run = before[int(seed)], after[int(seed)]
        assert run["device"].startswith("NVIDIA H100") and run["commit"] == old["commit"] == "f32a5b1"
        assert [was, now, alone, n_below, worst, n_kernels, projections] == _before_after_cells(old, run)
        ran = {(s["M"], s["N"], s["K"]) for s in old["shapes"] if not s["kernel"].startswith("cuBLAS")}
        for s in run["shapes"]:
            shape, q = f"{s['M']}x{s['N']}x{s['K']}", s["torch_ms"] / s["ours_ms"]
            if s["kind"] == "random" and not s["kernel"].startswith("cuBLAS"):
                kernels.append((q, s["torch_alone_ms"] / s["ours_alone_ms"], (s["M"], s["N"], s["K"]) not in ran))
                if (s["M"], s["N"], s["K"]) not in ran:
                    new.append(f"{shape} ({q:.2f}x)")
            if s["kind"] == "random" and q < 0.95:
                assert s["kernel"].startswith("cuBLAS")
                below.append(f"{shape} ({q:.3f})")
    fresh = [(q, a) for q, a, is_new in kernels if is_new]
    assert (f"The new rows run at {len(fresh)} shapes, at {min(q for q, _ in fresh):.2f}-{max(q for q, _ in fresh):.2f}x "
            f"torch.matmul queued and {min(a for _, a in fresh):.2f}-{max(a for _, a in fresh):.2f}x alone") in flat
    assert all(n in flat for n in new) and all(b in flat for b in below)
    host = " ".join(HOST_DOC.read_text().split())
    named = [q for seed in (2, 3) for s in after[seed]["shapes"] for q in [s["torch_ms"] / s["ours_ms"]]
             if (s["M"], s["N"], s["K"]) in {(733, 36, 306), (96, 302, 437), (42, 76, 2460)}]
    assert len(named) == 3 and f"at {covered} of the {corners} corners" in host
    assert f"42x76x2460 ran at {min(named):.2f}-{max(named):.2f}x torch.matmul queued" in host
    counts = ", ".join(str(before[s]["summary"]["random"]["below_0.95_queued"]) for s in range(1, 5))
    assert f"the same seeds had {counts} and {before[5]['summary']['random']['below_0.95_queued']} such shapes" in flat


def test_the_h100_docs_gemv_holes_are_the_committed_skinny_measurements():
    """docs/results-h100.md, the GEMV-like holes: at each of the four shapes skinny's fastest of its 12 configs
    against cuBLAS (a win at 8x3144x591 only), cuBLAS's rate of reading B where it won, the slowest configs where K is short."""
    flat = " ".join(section((ROOT / "docs" / "results-h100.md").read_text(), "## Long-K corners, with splitk's small tiles").split())
    with committed_database("h100-skinny-gemv-holes.sqlite.gz") as db:
        rows = {(M, N, K): (best, worst, cublas) for M, N, K, best, worst, cublas in db.execute(
            "SELECT M, N, K, min(time_ms) * 1e3, max(time_ms) * 1e3, cublas_ms * 1e3 FROM results WHERE status = 'ok' "
            "AND family = 'skinny' GROUP BY M, N, K HAVING count(*) = 12")}
        slowest = {(M, N, K): kernel for M, N, K, kernel in db.execute(
            "SELECT M, N, K, kernel FROM results r WHERE time_ms = "
            "(SELECT max(time_ms) FROM results WHERE M = r.M AND N = r.N AND K = r.K)")}
    assert sorted(rows) == [(1, 689, 7472), (1, 6634, 672), (2, 13060, 389), (8, 3144, 591)]
    won = rows[(8, 3144, 591)]
    lost = {shape: row for shape, row in rows.items() if shape != (8, 3144, 591)}
    assert won[0] < won[2] and f"At 8x3144x591 the fastest took {won[0]:.2f} µs against cuBLAS's {won[2]:.2f}" in flat
    assert all(best > cublas for best, _, cublas in lost.values())
    rate = [4 * N * K / (cublas * 1e-6) / 1e12 for (M, N, K), (_, _, cublas) in lost.items()]
    assert (f"{min(b for b, _, _ in lost.values()):.2f}-{max(b for b, _, _ in lost.values()):.2f} µs against "
            f"{min(c for _, _, c in lost.values()):.2f}-{max(c for _, _, c in lost.values()):.2f}, where cuBLAS reads B at "
            f"{min(rate):.2f}-{max(rate):.2f} TB/s") in flat
    short = {shape: worst for shape, (_, worst, _) in rows.items() if shape[2] < 700}
    assert len(short) == 3 and all("_SK64_KW16_" in slowest[shape] for shape in short)
    assert f"the most splits and slices (64 of 16) were the slowest, {min(short.values()):.2f}-{max(short.values()):.2f} µs" in flat


def test_the_host_bound_docs_repeat_figures_are_the_two_runs_through_one_database():
    """docs/host-bound.md, "The pass-through, run twice": the same database read twice at seeds 1-4."""
    flat = " ".join(HOST_DOC.read_text().split())
    pairs = []
    for seed in range(1, 5):
        a, b = (json.loads((ROOT / "benchmarks" / "data" / f"anyshape-seed{seed}-repeat-{x}-h100.json").read_text())
                for x in "ab")
        assert a["commit"] == b["commit"] == "977826c" and a["database"] == b["database"]
        for x, y in zip(a["shapes"], b["shapes"]):
            assert (x["M"], x["N"], x["K"], x["kernel"]) == (y["M"], y["N"], y["K"], y["kernel"])
            if x["kind"] == "random" and x["kernel"].startswith("cuBLAS") and x["torch_ms"] < 0.03:
                pairs.append((x["torch_ms"] / x["ours_ms"], y["torch_ms"] / y["ours_ms"]))
    reads = [v for p in pairs for v in p]
    diffs = [b - a for a, b in pairs]
    low = [p for p in pairs if min(p) < 0.95]
    assert (f"At the {len(pairs)} random shapes where cuBLAS ran and torch.matmul took under 30 µs a call, "
            f"torch.matmul's time over load()'s read {sum(reads) / len(reads):.3f} on average; the two reads of a "
            f"shape differed by {statistics.pstdev(diffs):.3f} (standard deviation), at most by "
            f"{max(map(abs, diffs)):.3f}") in flat
    assert (f"{len(low)} of the {len(reads)} reads were below 0.95 ({min(min(p) for p in low):.3f}-"
            f"{max(min(p) for p in low):.3f}), and the same shape's other read {min(max(p) for p in low):.3f}-"
            f"{max(max(p) for p in low):.3f}") in flat


def test_the_host_bound_docs_misaligned_pairs_cover_is_the_committed_one():
    """docs/host-bound.md: the cover of the 81 misaligned host-bound shapes by blocked with MA and MB free, the
    products where load() runs its kernel (all of 256 rows) and their gain over cuBLAS."""
    flat = " ".join(HOST_DOC.read_text().split())
    products = _json("cover-host-bound-misaligned-pairs-h200.json")["products"]
    ours = [p for p in products if p["runs"] == "kernel"]
    gains = [p["gain"] for p in ours]
    assert {p["M"] for p in ours} == {256}
    assert (f"found a kernel load() runs at {len(ours)} of them, all of 256 rows "
            f"(cuBLAS's GPU time over its kernel's: {min(gains):.2f}-{max(gains):.2f})") in flat
    assert len(products) == 81 and "A second cover of the same 81" in flat


def test_the_h100_docs_tall_section_is_the_committed_probe_corners_and_runs():
    """docs/results-h100.md, the tall corners: the probe's fastest, the corners that cover, MA=1 against the fitted
    default, each seed's row before and after, the shapes where the new rows run; docs/pytorch.md's H100 figures from the
    same runs."""
    from autotune.api.dispatch import HOST_BOUND_MS, WIN_MARGIN

    part = section((ROOT / "docs" / "results-h100.md").read_text(), "## Tall corners, with tall's small tiles")
    flat = " ".join(part.split())
    with committed_database("tall-short-k-h100.sqlite.gz") as db:
        probe = list(db.execute("SELECT min(time_ms) * 1e3, cublas_ms * 1e3, ST, SPLITK FROM results r WHERE status = 'ok' "
                                "AND time_ms = (SELECT min(time_ms) FROM results WHERE M = r.M AND N = r.N AND K = r.K "
                                "AND status = 'ok') GROUP BY M, N, K"))
    assert len(probe) == 4 and all((st, splits) == (0, 1) for _, _, st, splits in probe)
    assert (f"fastest with A through registers in one split: {min(p[0] for p in probe):.1f}-{max(p[0] for p in probe):.1f} "
            f"µs, cuBLAS {min(p[1] for p in probe):.1f}-{max(p[1] for p in probe):.1f}") in flat
    with committed_database("h100-tall-corners.sqlite.gz") as db:
        rows = list(db.execute("SELECT min(time_ms), cublas_ms FROM results WHERE status = 'ok' GROUP BY M, N, K"))
        pairs = list(db.execute("SELECT b.time_ms / a.time_ms FROM results a JOIN results b USING (M, N, K, THREADS, "
                                "LANES, ROWS, NR, KT, SPLITK, ST) WHERE coalesce(a.MA, 0) = 0 AND b.MA = 1 "
                                "AND a.status = 'ok' AND b.status = 'ok'"))
    won = [r for r in rows if r[0] <= (1 - WIN_MARGIN) * r[1] and r[0] <= HOST_BOUND_MS]
    assert f"At {len(won)} of the {len(rows)} a kernel beat cuBLAS" in flat and len(rows) == 40
    assert len(pairs) == 20 and all(ratio > 1 for ratio, in pairs) and "at the 20 corners of odd K" in flat
    before = {s: _json(f"anyshape-seed{s}-before-tall-h100.json") for s in range(1, 6)}
    after = {s: _json(f"anyshape-seed{s}-tall-h100.json") for s in range(1, 6)}
    table = table_rows(part.split("Seeds 1-5 had shown")[0])
    assert [row[0] for row in table] == ["1", "2", "3", "4", "5"]
    fresh = []
    for seed, *cells in table:
        old, run = before[int(seed)], after[int(seed)]
        assert run["device"].startswith("NVIDIA H100") and run["commit"] == old["commit"] == "2c5ca76"
        assert cells == _before_after_cells(old, run)
        ran = {(s["M"], s["N"], s["K"]) for s in old["shapes"] if not s["kernel"].startswith("cuBLAS")}
        for s in run["shapes"]:
            if s["kind"] == "random" and not s["kernel"].startswith("cuBLAS"):
                q = s["torch_ms"] / s["ours_ms"]
                if (s["M"], s["N"], s["K"]) not in ran:
                    fresh.append((q, s["torch_alone_ms"] / s["ours_alone_ms"]))
                    assert f"{s['M']}x{s['N']}x{s['K']} ({q:.2f}x)" in flat and "_tall_" in s["kernel"]
    assert (f"The new rows run at {len(fresh)} shapes, at {min(q for q, _ in fresh):.2f}-{max(q for q, _ in fresh):.2f}x "
            f"torch.matmul queued and {min(a for _, a in fresh):.2f}-{max(a for _, a in fresh):.2f}x alone") in flat
    counts = ", ".join(str(before[s]["summary"]["random"]["below_0.95_queued"]) for s in range(1, 5))
    worst = min(r["summary"]["random"]["min_queued"] for r in before.values())
    assert (f"the merge had {counts} and {before[5]['summary']['random']['below_0.95_queued']} (the worst {worst:.3f})") in flat
    named = [s["torch_ms"] / s["ours_ms"] for run in after.values() for s in run["shapes"]
             if (s["M"], s["N"], s["K"]) in {(11516, 4, 108), (12573, 13, 12), (4692, 14, 233)}]
    host = " ".join(HOST_DOC.read_text().split())
    assert len(named) == 3 and f"at {len(won)} of the {len(rows)} corners of `scripts/host_bound_shapes.py --tall`" in host
    assert f"4692x14x233 ran at {min(named):.2f}-{max(named):.2f}x torch.matmul queued" in host
    rs = [run["summary"]["random"] for run in after.values()]
    assert all(r["below_0.95_queued"] == 0 for r in rs)
    means = f"{min(r['geomean_queued'] for r in rs):.3f}-{max(r['geomean_queued'] for r in rs):.3f}"
    low = min(r["min_queued"] for r in rs)
    assert (f"the geometric mean is {means} at seeds 1-5 and no shape read below 0.95 at any of them (the worst "
            f"{low:.3f};") in " ".join(PYTORCH_DOC.read_text().split())


def test_the_h100_docs_later_seeds_table_is_the_committed_anyshape_runs():
    """docs/results-h100.md, the tall corners: seeds 6-10 drawn after the merge, each seed's row from its JSON, the
    range where our kernels ran; docs/pytorch.md's figures from the same runs."""
    part = section((ROOT / "docs" / "results-h100.md").read_text(), "## Tall corners, with tall's small tiles")
    runs = {s: _json(f"anyshape-seed{s}-h100.json") for s in range(6, 11)}
    table = table_rows(part.split("anyshape-seed{6..10}-h100.json")[1])
    assert [row[0] for row in table] == ["6", "7", "8", "9", "10"]
    ours = []
    for seed, *cells in table:
        run = runs[int(seed)]
        assert run["device"].startswith("NVIDIA H100") and run["commit"] == "cbafbc1"
        r, p = run["summary"]["random"], run["summary"]["projection"]
        assert cells == [f"{r['geomean_queued']:.3f}", f"{r['geomean_alone']:.3f}", str(r["below_0.95_queued"]),
                         f"{r['min_queued']:.3f}", str(r["kernels"]), f"{p['geomean_queued']:.3f}"]
        ours += [s["torch_ms"] / s["ours_ms"] for s in run["shapes"]
                 if s["kind"] == "random" and not s["kernel"].startswith("cuBLAS")]
    flat = " ".join(part.split())
    assert f"Our kernels ran at {min(ours):.2f}-{max(ours):.2f}x torch.matmul queued where they ran" in flat
    rs = [run["summary"]["random"] for run in runs.values()]
    assert all(r["below_0.95_queued"] == 0 for r in rs)
    assert (f"nor at seeds 6-10, drawn afterwards ({min(r['geomean_queued'] for r in rs):.3f}-"
            f"{max(r['geomean_queued'] for r in rs):.3f})") in " ".join(PYTORCH_DOC.read_text().split())


def _queued(x: dict) -> float:
    """A run's shape: torch.matmul's time over ours, calls queued back to back."""
    return x["torch_ms"] / x["ours_ms"]


def test_the_pytorch_docs_thin_calls_table_is_the_h100_runs():
    """docs/pytorch.md's thin calls (anyshape.py --thin 40, seeds 1-8) before and after the pass-through made its own
    transposes: each row from the two runs' JSONs, and the sentences under it."""
    text = section(PYTORCH_DOC.read_text(), "## Thin calls (an H100)")
    flat, rows = " ".join(text.split()), table_rows(text)
    assert [int(r[0]) for r in rows] == list(range(1, 9))

    before_nt, now_nt, ours, sides, thin, hosts, control, projection = [], [], [], [], [], [], [], []
    for row in rows:
        before, now = (_json(f"anyshape-thin-seed{row[0]}-{tag}h100.json") for tag in ("before-transposes-", ""))
        assert (before["commit"], now["commit"]) == ("2f0d3ec", "b8af25f")
        for run in (before, now):
            assert run["seed"] == int(row[0]) and run["first_step"] == "C+ATen" and run["device"].startswith("NVIDIA H100")
            assert "tuned/h100.sqlite" in run["database"] and run["summary"]["thin"]["shapes"] == 40
            assert [x for x in run["shapes"] if x["kind"] == "random"] == []
        b, n = before["summary"]["thin"], now["summary"]["thin"]
        nt = [[_queued(x) for x in run["shapes"] if x["kind"] == "thin" and x["layout"] == "NT"] for run in (before, now)]
        kernels = [x for x in now["shapes"] if x["kind"] == "thin" and not x["kernel"].startswith("cuBLAS")]
        assert row[1:] == [f"{b['geomean_queued']:.3f}", f"{geomean(nt[0]):.3f}", str(b["below_0.95_queued"]),
                           f"{n['geomean_queued']:.3f}", f"{n['geomean_alone']:.3f}", f"{n['min_queued']:.3f}",
                           str(n["below_0.95_queued"]), str(n["kernels"]), f"{geomean(nt[1]):.3f}",
                           f"{geomean([_queued(x) for x in kernels]):.2f}"], row[0]
        before_nt += nt[0]
        now_nt += nt[1]
        ours += [_queued(x) for x in kernels]
        sides += [(x["M"] <= 8, _measured_at(x)[0 if x["M"] <= 8 else 1]) for x in kernels]
        thin += [_queued(x) for x in now["shapes"] if x["kind"] == "thin"]
        hosts.append(now["host_per_call"])
        control.append(n["control_geomean"])
        projection.append(now["summary"]["projection"]["geomean_queued"])
        assert all(x["layout"] == "NN" for x in kernels)
    assert len(before_nt) == len(now_nt) == 80 and len(thin) == 320
    assert (f"read {geomean(before_nt):.3f} queued ({sum(q < 0.95 for q in before_nt)} of 80 below 0.95)") in flat
    assert (f"Now they read {geomean(now_nt):.3f}, and no thin call of 320 is below 0.95 (worst {min(thin):.3f})") in flat
    rows_at, cols_at = ([side for few_rows, side in sides if few_rows == r] for r in (True, False))
    assert (f"Our kernels ran at {len(ours)} of the 320, all of them row-major calls (the H100's shipped database holds "
            f"no row of x·Wᵀ), at {_span2(ours)}x queued: host-bound calls covered by rows measured at larger shapes "
            f"({min(rows_at)}-{max(rows_at)} rows, {min(cols_at)}-{max(cols_at)} columns)") in flat
    assert (f"at 64³ {_span([h['ours_us'] for h in hosts])} µs a call against "
            f"{_span([h['torch_us'] for h in hosts])} on the second lease") in flat
    assert (f"(`control`, the first 8 of each seed): {min(control):.3f}-{max(control):.3f}. The projections: "
            f"{min(projection):.3f}-{max(projection):.3f}.") in flat
    assert "python benchmarks/anyshape.py --seed 1 --count 0 --thin 40" in flat


def test_the_host_bound_docs_transposed_pass_through_figures_are_the_committed_probes():
    """docs/host-bound.md's host microseconds of an x·Wᵀ pass-through before and after it made its own transposes
    (aten_steps.py on a CPU), and at six host-bound shapes on an H100."""
    flat = " ".join(HOST_DOC.read_text().split())
    probe = {name: {(shape[1], ran): us for (shape, ran), us in _probe_lines(f"aten-steps-nt-{name}.txt")}
             for name in ("before-transposes-cpu", "cpu")}
    before, now = probe["before-transposes-cpu"][("NT", "torch.mm")], probe["cpu"]
    assert (f"{before['C+ATen']:.2f} µs a call on the CPU against torch.matmul's {before['torch.matmul']:.2f} with the "
            f"view made once") in flat
    nt, nn = now[("NT", "torch.mm")], now[("NN", "torch.mm")]
    assert (f"{nt['C+ATen']:.2f} µs, the untransposed call {nn['C+ATen']:.2f}, torch.matmul {nt['torch.matmul']:.2f} "
            f"(`benchmarks/data/aten-steps-nt-cpu.txt`, sources `b8af25f`)") in flat
    assert nt["C+ATen"] < nt["torch.matmul"] < before["C+ATen"]
    gpu = [us for (shape, _), us in _probe_lines("aten-steps-nt-h100.txt") if shape[1] == "NT"]
    assert len(gpu) == 6 and "sources b8af25f" in (ROOT / "benchmarks" / "data" / "aten-steps-nt-h100.txt").read_text()
    assert (f"{_span2([u['C+ATen'] for u in gpu])} µs a call with the steps, {_span2([u['torch.matmul'] for u in gpu])} "
            f"torch.matmul, {_span2([u['C'] for u in gpu])} the C first step alone") in flat


def test_the_pytorch_docs_one_row_x_wt_table_is_the_h100_runs():
    """docs/pytorch.md's one-row x·Wᵀ calls (anyshape.py --decode 40, seeds 1-3) computed as W·x where a row covers
    that product: each row from its run's JSON, and the sentences under the table."""
    text = section(PYTORCH_DOC.read_text(), "## One-row x·Wᵀ (an H100)")
    flat, rows = " ".join(text.split()), table_rows(text)
    assert [int(r[0]) for r in rows] == [1, 2, 3]

    def span3(values: list[float]) -> str:
        low, high = f"{min(values):.3f}", f"{max(values):.3f}"
        return f"{low} at each seed" if low == high else f"{low}-{high}"

    ours, alone, library, control, projection, families = [], [], [], [], [], set()
    for row in rows:
        run = _json(f"anyshape-decode-seed{row[0]}-h100.json")
        assert run["seed"] == int(row[0]) and run["commit"] == "a02456c" and run["first_step"] == "C+ATen"
        assert run["device"].startswith("NVIDIA H100") and "tuned/h100.sqlite" in run["database"]
        calls = [x for x in run["shapes"] if x["kind"] == "decode"]
        assert len(calls) == 40 and all(x["M"] == 1 and x["layout"] == "NT" for x in calls)
        swapped = [x for x in calls if not x["kernel"].startswith("cuBLAS")]
        assert all(x["kernel"].endswith(f"; as {x['N']}x1x{x['K']}, A and B swapped)") for x in swapped)
        cublas = [x for x in calls if x["kernel"].startswith("cuBLAS")]
        d = run["summary"]["decode"]
        assert row[1:] == [f"{d['geomean_queued']:.3f}", f"{d['geomean_alone']:.3f}", f"{d['min_queued']:.3f}",
                           str(d["below_0.95_queued"]), str(len(swapped)),
                           f"{geomean([_queued(x) for x in swapped]):.2f}", f"{geomean([_queued(x) for x in cublas]):.3f}"]
        ours += [_queued(x) for x in swapped]
        alone += [x["torch_alone_ms"] / x["ours_alone_ms"] for x in swapped]
        library += [_queued(x) for x in cublas]
        families |= {(x["kernel"].split("_")[1], _measured_at(x)[1]) for x in swapped}
        control.append(d["control_geomean"])
        projection.append(run["summary"]["projection"]["geomean_queued"])
    assert families == {("tall", 15), ("splitk", 31)}
    assert (f"measured at 15 columns (`tall`) or 31 (`splitk`) ran {len(ours)} of the 120 calls, at {_span2(ours)}x "
            f"queued and {_span2(alone)}x alone") in flat
    assert f"The calls cuBLAS computed read {min(library):.3f}-{max(library):.3f}." in flat
    assert (f"(`control`, the first 8 of each seed): {min(control):.3f}-{max(control):.3f}. The projections: "
            f"{span3(projection)}.") in flat
    assert "python benchmarks/anyshape.py --seed 1 --count 0 --decode 40" in flat


def test_the_pytorch_docs_h200_section_with_the_steps_is_its_runs():
    """docs/pytorch.md's "With api._aten's steps (the H200)": the seeds' table, the shapes below 0.95, the suite,
    thin and one-row runs, control and projections, the host probe and autotune.torch.Linear's figures."""
    text = section(PYTORCH_DOC.read_text(), "## With api._aten's steps (the H200)")
    flat, rows = " ".join(text.split()), table_rows(text)
    runs = [_json(f"anyshape-seed{s}-first-step-aten-h200.json") for s in range(1, 11)]
    assert [int(r[0]) for r in rows] == list(range(1, 11))
    for row, run in zip(rows, runs):
        assert run["commit"] == "aaf9388" and run["first_step"] == "C+ATen" and run["device"].startswith("NVIDIA H200")
        d = run["summary"]["random"]
        assert row[1:] == [f"{d['geomean_queued']:.3f}", f"{d['geomean_alone']:.3f}", f"{d['min_queued']:.3f}",
                           str(d["below_0.95_queued"]), str(d["kernels"])]
    low = [(run["seed"], x) for run in runs for x in run["shapes"] if x["kind"] == "random" and _queued(x) < 0.95]
    said = " and ".join(f"{x['M']}x{x['N']}x{x['K']} {_queued(x):.3f} (seed {s}; {x['torch_alone_ms'] / x['ours_alone_ms']:.3f} "
                        f"alone)" for s, x in low)
    assert f"Below 0.95: {said}, both run by cuBLAS" in flat and all(x["kernel"].startswith("cuBLAS") for _, x in low)
    [two] = [x for x in runs[0]["shapes"] if (x["M"], x["N"], x["K"]) == (2, 11427, 189)]
    assert f"read {_queued(two):.3f} queued ({two['torch_alone_ms'] / two['ours_alone_ms']:.3f} alone)" in flat

    def part(name: str, kind: str) -> str:
        d = _json(name)["summary"][kind]
        return (f"{d['geomean_queued']:.3f} queued, {d['geomean_alone']:.3f} alone, worst {d['min_queued']:.3f}, "
                f"our kernels at {d['kernels']} of {d['shapes']}")
    assert f"The 36 suite shapes: {part('anyshape-suite-first-step-aten-h200.json', 'suite')}" in flat
    assert f"Seed 1's thin calls: {part('anyshape-thin-seed1-h200.json', 'thin')}" in flat
    assert f"Seed 1's one-row x·Wᵀ: {part('anyshape-decode-seed1-h200.json', 'decode')} (as W·x)" in flat
    control = [run["summary"]["random"]["control_geomean"] for run in runs]
    projection = [run["summary"]["projection"]["geomean_queued"] for run in runs]
    assert (f"(`control`): {min(control):.3f}-{max(control):.3f}. The projections: "
            f"{min(projection):.3f}-{max(projection):.3f}") in flat
    probe = _probe_lines("aten-steps-nt-h200.txt")
    through = [p for (_, kernel), p in probe if kernel.startswith("cuBLAS")]  # the pass-throughs, NN and NT
    assert len(through) == 11 and sum(p["C+ATen"] < p["torch.matmul"] for p in through) == 10
    assert (f"took {_span2([p['C+ATen'] for p in through])} µs a call against torch.matmul's "
            f"{_span2([p['torch.matmul'] for p in through])}") in flat
    layers = _json("linear-layers-seed1-h200.json")
    assert layers["commit"] == "aaf9388" and layers["device"].startswith("NVIDIA H200")
    got = layers["summary"]
    assert (f"{got['no_bias']['geomean_queued']:.2f}x without a bias (our kernel at {got['no_bias']['kernel_layers']} of 40 "
            f"layers) and {got['bias']['geomean_queued']:.2f}x with one (F.linear at all 40)") in flat
    assert got["bias"]["kernel_layers"] == 0
    def medians(bias: bool) -> tuple[str, str]:  # µs a call, the layer's and nn.Linear's, queued
        calls = [x for x in layers["layers"] if x["bias"] is bias]
        return tuple(f"{statistics.median(x[k] for x in calls) * 1e3:.1f}" for k in ("ours_ms", "torch_ms"))
    (ours, theirs), (kernel, plain) = medians(True), medians(False)
    assert f"a median of {ours} µs a call against nn.Linear's {theirs}" in flat
    assert f"every call took load()'s full path ({kernel} µs against {plain})" in flat


def test_the_pytorch_docs_linear_section_is_its_h100_runs():
    """docs/pytorch.md's "autotune.torch.Linear at one-row layers (an H100)": the table of the three runs, the
    no-bias kernel layers, the with-bias split (cuBLAS's layers, ours) before and after the bias went to load()'s
    matmul, and the autograd run, every layer of it F.linear."""
    text = section(PYTORCH_DOC.read_text(), "## autotune.torch.Linear at one-row layers (an H100)")
    flat, rows = " ".join(text.split()), table_rows(text)
    runs = {name: _json(f"linear-layers-{name}-h100.json")
            for name in ("seed1-bias-added-after", "seed1-bias-in-matmul", "grad-seed1-covering-to-flinear",
                         "seed1-repeat", "grad-seed1-repeat")}
    assert [(r["commit"], r["grad"], r["rows"], r["seed"]) for r in runs.values()] == [
        ("3670d31", False, 1, 1), ("6938188", False, 1, 1), ("6938188", True, 1, 1), ("73e3575", False, 1, 1),
        ("73e3575", True, 1, 1)]
    assert len(rows) == len(runs)
    for row, run in zip(rows, runs.values()):
        assert run["device"].startswith("NVIDIA H100")
        got = run["summary"]
        cells = [f"{got[k][w]:.3f}" for k in ("no_bias", "bias") for w in ("geomean_queued", "geomean_alone")]
        assert [c.strip("*") for c in row[1:]] == [f"`{run['commit']}`", *cells]
    before, now, grad, again, grad_again = runs.values()
    apart = [abs(x["summary"][k]["geomean_queued"] - y["summary"][k]["geomean_queued"])
             for x, y in ((now, again), (grad, grad_again)) for k in ("no_bias", "bias")]
    assert f"{min(apart):.3f}-{max(apart):.3f} from the first figures" in flat
    assert again["summary"]["no_bias"]["below_0.95_queued"] == again["summary"]["bias"]["below_0.95_queued"] == 0
    assert all(x["runs"] == "F.linear" for x in grad_again["layers"])
    plain = [x for x in now["layers"] if not x["bias"]]
    kernel = [x for x in plain if x["runs"] == "kernel"]
    assert (f"our kernel ran {len(kernel)} layers, at {geomean([_queued(x) for x in kernel]):.3f}x (a median of "
            f"{statistics.median(x['ours_ms'] for x in plain) * 1e3:.1f} µs a call against nn.Linear's "
            f"{statistics.median(x['torch_ms'] for x in plain) * 1e3:.1f}); "
            f"{now['summary']['no_bias']['below_0.95_queued']} of 40 below 0.95") in flat

    def split(run: dict) -> tuple[list[float], list[float]]:
        biased = [x for x in run["layers"] if x["bias"]]
        assert len(biased) == 40 and all((x["err"] > 0) == (x["runs"] == "kernel") for x in biased)  # who ran it
        return ([_queued(x) for x in biased if x["runs"] != "kernel"],
                [_queued(x) for x in biased if x["runs"] == "kernel"])

    library, ours = split(before)
    assert (f"F.linear where cuBLAS computes the product, at {geomean(library):.3f}x (the layer's Python in front of "
            f"it), and our kernel then torch's `add_` where it does not, at {geomean(ours):.3f}x "
            f"({before['summary']['bias']['below_0.95_queued']} of 40 below 0.95)") in flat
    library, ours = split(now)
    biased = [x for x in now["layers"] if x["bias"]]
    assert (f"from C++, at {geomean(library):.3f}x; where our kernel does, the bias's kernel follows it, launched from "
            f"C (`api/bias.py`), at {geomean(ours):.3f}x (worst {min(ours):.3f}). None of 40 below 0.95; a median of "
            f"{statistics.median(x['ours_ms'] for x in biased) * 1e3:.1f} µs a call against "
            f"{statistics.median(x['torch_ms'] for x in biased) * 1e3:.1f}") in flat
    assert now["summary"]["bias"]["below_0.95_queued"] == 0
    assert all(x["runs"] == "F.linear" for x in grad["layers"])
    assert (f"the layer reads {grad['summary']['no_bias']['geomean_queued']:.3f}x and "
            f"{grad['summary']['bias']['geomean_queued']:.3f}x, {grad['summary']['no_bias']['below_0.95_queued']} and "
            f"{grad['summary']['bias']['below_0.95_queued']} of 40 below 0.95") in flat
    older = _json("linear-layers-grad-seed1-h100.json")["summary"]["no_bias"]
    assert f"our autograd.Function there read {older['kernel_geomean_queued']:.3f}x at `8a75857`" in flat



def test_the_pytorch_docs_linear_control_table_is_its_runs():
    """docs/pytorch.md's table of the layer beside nn.Linear's twin (linear_layers.py --control 40): each run's
    geometric means, the twin's, and the twin's range over the layers of the runs in each row."""
    text = section(PYTORCH_DOC.read_text(), "## autotune.torch.Linear at one-row layers (an H100)")
    indented = "\n".join(ln.strip() for ln in text.splitlines())  # the table sits in a list item
    rows = [r for r in table_rows(indented) if r[0].startswith(("under no_grad, seed", "with autograd, seed"))]
    runs = [_json(f"linear-layers-{name}-h100.json")
            for name in ("control-seed1", "grad-control-seed1", "grad-control-seed2")]
    assert [(r["grad"], r["seed"], r["commit"], r["method"]["control_layers"]) for r in runs] == [
        (False, 1, "88afd9b", 40), (True, 1, "88afd9b", 40), (True, 2, "88afd9b", 40)]
    for row, run in zip(rows, runs, strict=True):
        got = run["summary"]
        assert run["device"].startswith("NVIDIA H100") and all("control" in x for x in run["layers"])
        low = min(got[k]["control_min"] for k in got)
        high = max(got[k]["control_max"] for k in got)
        assert row[1:] == [f"{got['no_bias']['geomean_queued']:.3f}", f"{got['no_bias']['control_geomean']:.3f}",
                           f"{got['bias']['geomean_queued']:.3f}", f"{got['bias']['control_geomean']:.3f}",
                           f"{low:.3f}-{high:.3f}"]
    flat = " ".join(text.split())
    lowest = min(min(r["summary"][k]["control_min"] for k in ("bias", "no_bias")) for r in runs)
    assert f"nn.Linear against itself reads as low as {lowest:.2f} at one layer" in flat
    gaps = [r["summary"][k]["control_geomean"] - r["summary"][k]["geomean_queued"] for r in runs[1:]
            for k in ("bias", "no_bias")]
    assert min(gaps) < 0 < max(gaps)
    assert (f"With autograd the layer reads from {-min(gaps):.3f} above to {max(gaps):.3f} below its twin's figure"
            in flat)


def _split_times(name: str) -> dict[tuple[int, int, int, int, int], list[tuple[float, float]]]:
    """splitk_fills_check.sh's lines (M N K kernel status ms cuBLAS-ms id): (M, N, K, SPLITK, RED) -> [(ms, cuBLAS ms)]."""
    times: dict[tuple[int, int, int, int, int], list[tuple[float, float]]] = {}
    for line in (ROOT / "benchmarks" / "data" / name).read_text().splitlines():
        M, N, K, kernel, status, ms, cublas, _ = line.split()
        assert status == "ok"
        split, red = (int(re.search(rf"_{tag}(\d+)", kernel).group(1)) for tag in ("SK", "RD"))
        times.setdefault((int(M), int(N), int(K), split, red), []).append((float(ms), float(cublas)))
    return times


def test_the_families_docs_fill_splits_are_the_committed_run():
    """docs/families.md's paragraph on the splits that fill the SMs: the means of the two measurements of each
    config in benchmarks/data/splitk-fills-h100.txt, and cuBLAS's time over them."""
    flat = " ".join((ROOT / "docs" / "families.md").read_text().split())
    times = _split_times("splitk-fills-h100.txt")
    assert all(len(v) == 2 for v in times.values())

    def ms(*key: int) -> str:
        return f"{statistics.mean(t for t, _ in times[key]):.4f}"

    def of_cublas(*key: int) -> str:
        return f"{statistics.mean(c for _, c in times[key]) / statistics.mean(t for t, _ in times[key]):.3f}"

    assert (f"took {ms(256, 256, 100000, 66, 2)} ms at 256x256x100000 against {ms(256, 256, 100000, 64, 2)} in 64, "
            f"and {ms(256, 256, 262144, 66, 2)} against {ms(256, 256, 262144, 64, 2)} at 256x256x262144: "
            f"{of_cublas(256, 256, 100000, 66, 2)} and {of_cublas(256, 256, 262144, 66, 2)} of cuBLAS, against "
            f"{of_cublas(256, 256, 100000, 64, 2)} and {of_cublas(256, 256, 262144, 64, 2)}") in flat
    assert f"66 took {ms(128, 128, 100000, 66, 2)} against {ms(128, 128, 100000, 64, 2)}" in flat
    assert f"took {ms(200, 300, 50000, 33, 2)} against 32's {ms(200, 300, 50000, 32, 2)}" in flat


def test_the_pytorch_docs_linear_grad_probe_figures_are_the_committed_run():
    """docs/pytorch.md's account of the layer's forward with autograd: linear_grad_probe.py's host µs, nn.Linear's
    against the layer's, a bare subclass's and one with the layer's checks only."""
    text = section(PYTORCH_DOC.read_text(), "## autotune.torch.Linear at one-row layers (an H100)")
    flat = " ".join(text.split())
    lines = _probe_lines("linear-grad-probe-h100.txt")
    forward = [us for shape, us in lines if shape[4] == "forward"]
    step = [us for shape, us in lines if shape[4] == "step"]
    assert len(forward) == len(step) == 6

    def more(rows: list[dict], name: str, sep: str) -> str:
        gaps = [r[name] - r["nn"] for r in rows]
        return f"{min(gaps):.1f}{sep}{max(gaps):.1f}"

    checks = sorted(r["flin"] - r["nn"] for r in forward)
    assert checks[0] < 0 < checks[1]
    assert (f"its forward took {more(forward, 'at', '-')} µs more than nn.Linear's {_span([r['nn'] for r in forward])}, "
            f"while a bare subclass of nn.Linear took {more(forward, 'sub', ' to +')} µs more") in flat
    assert f"took {checks[1]:.1f}-{checks[-1]:.1f} µs of it at five of the six shapes" in flat
    assert (f"A whole step took nn.Linear {_span([r['nn'] for r in step])} µs, the layer {more(step, 'at', '-')} µs "
            f"more and the bare subclass {more(step, 'sub', ' to +')}") in flat


def test_the_streamk_docs_warp_tile_hint_is_the_few_tile_database():
    """docs/streamk.md's hint at the warp tile: per few-tile shape, the best 128 x 128 stream-K row with 32 x 64 warps
    against the best with 64 x 64 ones, in the committed database of the suite's few-tile passes."""
    with committed_database("h200-few-tiles.sqlite.gz") as db:
        rows = db.execute("SELECT M, N, K, WM, min(time_ms), count(*) FROM results WHERE family = 'streamk' AND "
                          "status = 'ok' AND BM = 128 AND BN = 128 AND WN = 64 AND WM IN (32, 64) "
                          "GROUP BY M, N, K, WM").fetchall()
    best = {(M, N, K, WM): ms for M, N, K, WM, ms, _ in rows}
    counts = [n for *_, n in rows]
    shapes = sorted({(M, N, K) for M, N, K, *_ in rows})
    both = [s for s in shapes if (*s, 32) in best and (*s, 64) in best]
    faster = {s: best[(*s, 64)] / best[(*s, 32)] for s in both}
    won = sorted(s for s in both if faster[s] > 1)
    assert won == [(1024, 1024, 4096), (1024, 1024, 16384), (1024, 2048, 8192), (2048, 2048, 8192)]
    assert [round(faster[s], 2) for s in both if faster[s] < 1] == [0.80, 0.95]
    assert {s for s in shapes if s not in both} == {(256, 256, 100000), (512, 512, 65536)}
    flat = _flat(ROOT / "docs" / "streamk.md")
    assert (f"ran {min(faster[s] for s in won):.2f}-{max(faster[s] for s in won):.2f}x faster than the best with "
            f"the four 64 x 64 warps the fit then took") in flat
    assert f"the best of {min(counts)} to {max(counts)} rows whose other" in flat


def _measured_rows(name: str) -> list[tuple[tuple[int, int, int], dict[str, int], str, float | None, float | None]]:
    """A release script's lines (M N K kernel status ms cuBLAS-ms registers), in file order: the shape, the kernel
    name's numbered tags (WM=32, SB=2, SK=64, ...; RD 0 where the name has none), status, ms and cuBLAS ms."""
    rows = []
    for line in (ROOT / "benchmarks" / "data" / name).read_text().splitlines():
        M, N, K, kernel, status, ms, cublas, _ = line.split()
        tags = {"RD": 0, **{t: int(v) for t, v in re.findall(r"_([A-Z]+)(\d+)", kernel)}}
        rows.append(((int(M), int(N), int(K)), tags, status,
                     None if ms == "None" else float(ms), None if cublas == "None" else float(cublas)))
    return rows


def test_the_streamk_docs_warp_tile_table_is_the_committed_run():
    """docs/streamk.md's four-against-eight-warps table and the SKB figures: streamk_warps_check.sh's output, the
    first pass's row of a config in the table, the second pass's for SKB."""
    rows = _measured_rows("streamk-warps-h100.txt")
    assert all(status == "ok" for _, _, status, *_ in rows)
    first: dict[tuple, tuple[float, float]] = {}
    last: dict[tuple, tuple[float, float]] = {}
    for shape, tags, _, ms, cublas in rows:
        key = (*shape, tags["WM"], tags["SB"])
        first.setdefault(key, (ms, cublas))
        last[key] = (ms, cublas)
    text = (ROOT / "docs" / "streamk.md").read_text()
    table = table_rows(text[text.index("Measured alone on an H100"):])
    shapes = [(1024, 1024, 4096), (1024, 1024, 16384), (1536, 1536, 1536), (2048, 2048, 8192), (2176, 2048, 2048)]
    expected = []
    for s in shapes:
        (four, c4), (eight, c8) = first[(*s, 64, 2)], first[(*s, 32, 2)]
        expected.append(["x".join(map(str, s)), f"{four:.4f}", f"{eight:.4f}", f"{four / eight:.3f}", f"{c4 / four:.3f}",
                         f"{c8 / eight:.3f}"])
    assert table == expected
    assert all(first[(*s, 64, 2)][0] > first[(*s, 32, 2)][0] for s in shapes)
    flat = " ".join(text.split())
    ratios = [first[(*s, 64, 2)][0] / first[(*s, 32, 2)][0] for s in shapes]
    code = (ROOT / "autotune" / "families" / "streamk.py").read_text()
    assert f"{min(ratios):.3f}-{max(ratios):.3f}x as fast" in " ".join(code.replace("#", " ").split())
    one, two = (last[(1024, 1024, 16384, 32, b)][0] for b in (1, 2))
    one2, two2 = (last[(2048, 2048, 8192, 32, b)][0] for b in (1, 2))
    assert (f"{one:.4f} ms against {two:.4f} at 1024x1024x16384, {one2:.4f} against {two2:.4f} at "
            f"2048x2048x8192") in flat


def test_the_families_docs_splitk_tiles_paragraph_is_the_committed_run():
    """docs/families.md's paragraph on split-K where M and N are just past a tile: splitk_past_a_tile_check.sh's output."""
    rows = _measured_rows("splitk-past-a-tile-h100.txt")
    times = {(*shape, tags["BN"], tags["SK"], tags["RD"]): (ms, cublas) for shape, tags, status, ms, cublas in rows
             if status == "ok"}
    refused = sorted((*shape, tags["SK"], tags["RD"]) for shape, tags, status, *_ in rows if status != "ok")
    assert {r[:3] for r in refused} == {(300, 300, 50000), (200, 600, 50000)} and {r[3:] for r in refused} == {(64, 2)}
    assert len(times) == 20

    def ms(*key: int) -> str:
        return f"{times[key][0]:.4f}"

    def of_cublas(*key: int) -> str:
        return f"{times[key][1] / times[key][0]:.3f}"

    fastest = {s: min((v[0], k) for k, v in times.items() if k[:3] == s)[1] for s in {k[:3] for k in times}}
    assert fastest[(200, 300, 50000)] == (200, 300, 50000, 256, 32, 2)
    assert fastest[(200, 600, 50000)] == (200, 600, 50000, 256, 64, 0)
    assert fastest[(300, 300, 50000)] == (300, 300, 50000, 128, 64, 0)
    flat = _flat(ROOT / "docs" / "families.md")
    assert (f"the fastest at 200x300x50000 ({ms(200, 300, 50000, 256, 32, 2)} ms, {of_cublas(200, 300, 50000, 256, 32, 2)} "
            f"of cuBLAS) and 200x600x50000 ({ms(200, 600, 50000, 256, 64, 0)}, {of_cublas(200, 600, 50000, 256, 64, 0)})"
            ) in flat
    assert (f"128x128 tiles took {ms(300, 300, 50000, 128, 64, 0)} against the fit's {ms(300, 300, 50000, 256, 64, 0)} "
            f"({of_cublas(300, 300, 50000, 256, 64, 0)} of cuBLAS)") in flat
    assert (f"64 chained took {ms(300, 300, 50000, 256, 64, 0)} and {ms(200, 600, 50000, 256, 64, 0)} against "
            f"{ms(300, 300, 50000, 256, 32, 2)} and {ms(200, 600, 50000, 256, 32, 2)} in 32 split in a tree") in flat
