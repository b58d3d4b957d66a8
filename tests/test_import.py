import subprocess
import sys

# Every module but the GPU backend's own and autotune.torch (which load cuda.core, torch, by design).
CHECK = """
import importlib, pkgutil, sys
import autotune
SKIP = ("autotune.backends.cuda.", "autotune.torch")
def walk(path, prefix):
    for m in pkgutil.iter_modules(path, prefix):
        if not m.name.startswith(SKIP) and not m.name.endswith("__main__"):
            module = importlib.import_module(m.name)
            if m.ispkg:
                walk(module.__path__, m.name + ".")
walk(autotune.__path__, "autotune.")
gpu = sorted(m for m in sys.modules if m.startswith(("cuda", "cupy", "torch", "nvidia")))
print(",".join(gpu))
"""

def test_importing_the_package_pulls_in_no_gpu_stack():
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
