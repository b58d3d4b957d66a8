"""benchmarks/main_job.py on the CPU emulator: the README's main job run as a user runs it, and what best reads."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_main_job_script_records_the_search_and_its_best(tmp_path):
    out = tmp_path / "job.json"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "main_job.py"), "--backend", "sim", "--M", "32",
                    "--commit", "abc1234", "-o", str(out)], check=True, capture_output=True, cwd=tmp_path)
    job = json.loads(out.read_text())
    assert job["command"] == "autotune search --M 32 --backend sim" and job["commit"] == "abc1234"
    assert job["rows"].get("ok", 0) >= 1 and job["seconds"] > 0
    assert job["best"]["kernel"].startswith("sgemm_") and job["best"]["time_ms"] > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.json"]  # its database was a temporary one
