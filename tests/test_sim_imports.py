"""The emulator and verify run without a GPU stack: importing them loads no CUDA module."""
from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
import autotune.backends.sim, autotune.backends.verify
bad = sorted(m for m in sys.modules if m.split('.')[0] in ('cuda', 'cuda_core', 'cupy', 'pycuda', 'nvidia')
             or m.startswith('cuda'))
print(' '.join(bad))
"""


def test_sim_and_verify_import_no_cuda() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"CUDA modules imported: {done.stdout.strip()}"
