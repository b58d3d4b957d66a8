"""benchmarks/dispatch_preview.py: the kernels load()'s dispatcher would run at anyshape's random shapes, read
offline, are the ones a GPU run through the same shipped database ran."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.programs import program

ROOT = Path(__file__).resolve().parents[1]
H100 = "NVIDIA H100 80GB HBM3"


@pytest.fixture(scope="module")
def preview():
    return program("benchmarks", "dispatch_preview")


# Each seed's latest run through the database shipped now. The H100's: seeds 1 and 4 after the suite's rows were
# merged; seeds 2, 3 and 5 after the tall corners and 6-10 drawn after them, the merge having changed no choice there
# (docs/results-h100.md). The H200's: seeds 1-10 after the shallow corners (docs/pytorch.md).
RUNS = {H100: {1: "suite-h100", 2: "tall-h100", 3: "tall-h100", 4: "suite-h100", 5: "tall-h100",
               **dict.fromkeys(range(6, 11), "h100")},
        "NVIDIA H200": dict.fromkeys(range(1, 11), "shallow-h200")}


@pytest.mark.parametrize(("gpu", "seed"), [(gpu, seed) for gpu, runs in RUNS.items() for seed in runs])
def test_the_preview_names_the_kernels_the_gpu_runs_through_the_shipped_database_ran(preview, seed, gpu):
    from autotune import store
    from autotune.api.dispatch import Dispatcher

    run = json.loads((ROOT / "benchmarks" / "data" / f"anyshape-seed{seed}-{RUNS[gpu][seed]}.json").read_text())
    ran = [((s["M"], s["N"], s["K"]), s["kernel"]) for s in run["shapes"]
           if s["kind"] == "random" and not s["kernel"].startswith("cuBLAS")]
    dispatcher = Dispatcher([str(p) for p in store.shipped_databases()])
    assert run["device"] == gpu and preview.kernels_at(dispatcher, gpu, seed, run["summary"]["random"]["shapes"]) == ran
    assert len(ran) == run["summary"]["random"]["kernels"]


def test_the_preview_prints_a_line_a_seed_and_one_a_kernel(preview, capsys):
    assert preview.main(["--gpu", H100, "--seeds", "4-5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    heads = [line for line in lines if line.startswith("seed ")]
    assert heads == ["seed 4: a kernel at 9 of 40", "seed 5: a kernel at 9 of 40"]
    assert len(lines) == 2 + 9 + 9 and all(line.startswith("  ") for line in lines if line not in heads)
    assert preview.seeds("1,3") == [1, 3] and preview.seeds("2-4") == [2, 3, 4]



def test_changed_from_prints_the_seeds_whose_choices_differ_and_a_missing_database_is_refused(preview, capsys, tmp_path):
    from autotune import store

    h200 = next(str(p) for p in store.shipped_databases() if Path(p).name == "h200.sqlite")
    h100 = next(str(p) for p in store.shipped_databases() if Path(p).name == "h100.sqlite")
    assert preview.main(["--gpu", "NVIDIA H200", "--seeds", "1-3", "--db", h200, "--changed-from", h200]) == 0
    assert capsys.readouterr().out == "\n"
    # through the H100's database every call on an H200 runs cuBLAS, and each of seeds 1-3 runs a kernel of the H200's
    assert preview.main(["--gpu", "NVIDIA H200", "--seeds", "1-3", "--db", h100, "--changed-from", h200]) == 0
    assert capsys.readouterr().out == "1 2 3\n"
    with pytest.raises(SystemExit) as stop:
        preview.main(["--gpu", "NVIDIA H200", "--changed-from", str(tmp_path / "none.sqlite")])
    assert stop.value.code == 2 and "none.sqlite: no such database" in capsys.readouterr().err
    assert not (tmp_path / "none.sqlite").exists()
