"""The GPU checks under benchmarks/release run on a lent machine whose minutes are few: each one parses as bash,
every file it names is in the tree, and every CLI command it runs exists, so that a typo costs no device time."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted((ROOT / "benchmarks" / "release").glob("*.sh"))
NAMED = re.compile(r"(?:benchmarks|tests|scripts|autotune)/[A-Za-z0-9_./-]*\.(?:py|toml|sh)")


def test_there_are_release_scripts() -> None:
    assert len(SCRIPTS) > 10


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_a_release_script_parses_and_names_what_exists(script: Path) -> None:
    from autotune.cli import cli

    done = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    text = script.read_text()
    missing = [name for name in NAMED.findall(text) if not (ROOT / name).exists()]
    assert not missing, missing
    commands = set(re.findall(r"\$AT ([a-z]+)", text))
    assert commands <= set(cli.commands), commands - set(cli.commands)


def test_corners_ship_check_installs_the_merged_database_where_anyshape_imports_the_package(tmp_path: Path) -> None:
    """anyshape.py, run as a script, imports the package installed on PYTHONPATH; the check runs from the
    checkout's root, where `python3 -c` would import the checkout's own autotune/ first. The line that finds
    where to put the merged database must name the installed package's folder."""
    line = next(x for x in (ROOT / "benchmarks/release/corners_ship_check.sh").read_text().splitlines()
                if x.startswith("INSTALLED="))
    checkout, site = tmp_path / "checkout", tmp_path / "site"
    for root in (checkout, site):
        (root / "autotune").mkdir(parents=True)
        (root / "autotune" / "__init__.py").write_text("")
    done = subprocess.run(["bash", "-c", f'{line}; echo "$INSTALLED"'], cwd=checkout, capture_output=True, text=True,
                          env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "PYTHONPATH": str(site)})
    assert done.stdout.strip() == str(site / "autotune" / "store" / "tuned"), done.stderr


def test_corners_ship_check_with_seeds_changed_runs_the_seeds_whose_choices_the_merge_changes(tmp_path: Path) -> None:
    """SEEDS=changed: of seeds 1-10, those at which the merged database ($OUT/$TAG.sqlite) chooses otherwise than the
    shipped one, read offline: none where the merge changes nothing, every seed where it drops every kernel."""
    import shutil

    text = (ROOT / "benchmarks/release/corners_ship_check.sh").read_text()
    start = text.index("changed_seeds() {")
    function = text[start:text.index("\n}\n", start) + 3]
    assert text.index('SEEDS=$(changed_seeds)') < text.index('for s in $SEEDS; do anyshape "$s" merged')

    def changed(merged: Path) -> str:
        shutil.copy(merged, tmp_path / "h200.sqlite")
        done = subprocess.run(["bash", "-c", f"{function}changed_seeds"], cwd=ROOT, capture_output=True, text=True,
                              env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "OUT": str(tmp_path),
                                   "TAG": "h200", "GPU_NAME": "NVIDIA H200"})
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    tuned = ROOT / "autotune" / "store" / "tuned"
    assert changed(tuned / "h200.sqlite") == ""
    # the H100's rows run on the H100 alone: through its database every call on an H200 is cuBLAS's
    assert changed(tuned / "h100.sqlite") == " ".join(map(str, range(1, 11)))


def test_corners_ship_check_shares_its_budget_by_corners_and_lets_a_file_name_its_families() -> None:
    """SHAPES entries written file@families run small_corners.py with those families for that file alone (the others
    with FAMILIES, or all of small_corners.py's); BUDGET is shared in proportion to each file's corners."""
    text = (ROOT / "benchmarks/release/corners_ship_check.sh").read_text()
    start = text.index("corner_runs() {")
    function = text[start:text.index("\n}\n", start) + 3]
    long_k, tall = "benchmarks/host-bound-long-k-shapes.toml", "benchmarks/host-bound-tall-shapes.toml"

    def runs(**env: str) -> list[list[str]]:
        done = subprocess.run(["bash", "-c", f"{function}corner_runs"], cwd=ROOT, capture_output=True, text=True,
                              env={"PATH": "/usr/bin:/bin", **env})
        assert done.returncode == 0, done.stderr
        return [line.split() for line in done.stdout.splitlines()]

    # 196 long-K corners and 40 tall ones share 300 s as 249 and 50 (whole seconds, rounded down)
    assert runs(SHAPES=f"{long_k}@splitk {tall}@tall", BUDGET="300") == [[long_k, "splitk", "249"], [tall, "tall", "50"]]
    assert runs(SHAPES=f"{long_k} {tall}@tall", FAMILIES="blocked,splitk") == [
        [long_k, "blocked,splitk", str(230 * 196 // 236)], [tall, "tall", str(230 * 40 // 236)]]
    assert runs(SHAPES=tall) == [[tall, "all", "230"]]
    # with the 72 wide corners for skinny, 480 s go as 305, 62 and 112
    wide = "benchmarks/host-bound-wide-shapes.toml"
    assert runs(SHAPES=f"{long_k}@splitk {tall}@tall {wide}@skinny", BUDGET="480") == [
        [long_k, "splitk", "305"], [tall, "tall", "62"], [wide, "skinny", "112"]]
