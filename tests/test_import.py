import subprocess
import sys

# Every module but the GPU backend's own (which load cuda.core when imported by design).
CHECK = """
import importlib, pkgutil, sys
import autotune
for m in pkgutil.walk_packages(autotune.__path__, "autotune."):
    if not m.name.startswith("autotune.backends.cuda.") and not m.name.endswith("__main__"):
        importlib.import_module(m.name)
gpu = sorted(m for m in sys.modules if m.startswith(("cuda", "cupy", "torch", "nvidia")))
print(",".join(gpu))
"""


def test_importing_the_package_pulls_in_no_gpu_stack():
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
