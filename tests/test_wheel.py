"""The built wheel works on its own: templates inside the package, the console script
declared, and nothing collision-prone (cli.py, templates/) at the top of site-packages."""
import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_installs_and_runs(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path), str(ROOT)], check=True)
    wheel = next(tmp_path.glob("sgemm_autotune-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert all(t == "autotune" or t.endswith(".dist-info") for t in tops), tops
    assert "autotune/templates/tiled.cu.j2" in names and "autotune/templates/naive.cu.j2" in names
    assert "autotune/templates/launch.h.j2" in names and "autotune/templates/launch.py.j2" in names  # export's
    assert {"autotune/py.typed", "autotune/api/shapes.toml", "autotune/store/tuned/h200.sqlite",
            "autotune/store/tuned/h200-model-rows.json.gz"} <= set(names)
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    assert "Name: sgemm-autotune" in metadata and "MIT License" in metadata
    entry = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "autotune = autotune.cli:main" in entry

    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
                   check=True)
    code = ("import autotune, autotune.codegen.render as g; print(autotune.__file__); "
            "from autotune.families import TILED; from autotune.space import make_config; "
            "print(len(g.render(make_config(TILED, {}))))")
    # the wheel's folder first; the rest of PYTHONPATH stays (an air-gapped node keeps its deps there)
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
           "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0].startswith(str(site)) and int(out.stdout.splitlines()[1]) > 500
    help_out = subprocess.run([sys.executable, "-m", "autotune.cli", "--help"], capture_output=True, text=True,
                              cwd=tmp_path, env=env)
    assert help_out.returncode == 0 and "search" in help_out.stdout
