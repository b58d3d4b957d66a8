import subprocess
import sys

CHECK = """
import sys
import autotune, autotune.cli, autotune.space, autotune.families, autotune.codegen, autotune.store
import autotune.search, autotune.runs, autotune.export
gpu = sorted(m for m in sys.modules if m.startswith(("cuda", "cupy", "torch", "nvidia")))
print(",".join(gpu))
"""


def test_importing_the_package_pulls_in_no_gpu_stack():
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
