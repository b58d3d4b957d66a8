"""Launch cuBLAS SGEMM (pedantic FP32) and one lab variant a few times each at M=N=K, for
Nsight Compute to profile side by side (see benchmarks/profiling/lab_and_stalls.sh)."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernel_lab import source_of  # noqa: E402

from autotune.backends.cuda.backend import CudaBackend  # noqa: E402
from autotune.backends.cuda.launch import launch_kernel, load_kernel  # noqa: E402
from autotune.codegen.nvrtc import compile_source  # noqa: E402

M = int(sys.argv[2]) if len(sys.argv) > 2 else 4096
variant = json.loads(Path(sys.argv[1]).read_text())[0]
be = CudaBackend(M, M, M)
p = be.main
for _ in range(3):
    be.blas.sgemm(int(p.a.handle), int(p.b.handle), int(p.c.handle), M, M, M)
config, text = source_of("blocked", variant["params"], variant.get("knobs", {}))
kernel = load_kernel(compile_source(text, config.name, be.info.arch).cubin, config.name,
                     config.geometry(M, M).shared_bytes, be.info.index)
for _ in range(3):
    launch_kernel(be.stream, kernel, config.geometry(M, M), p.a, p.b, p.c, M, M, M)
be.stream.sync()
print("done", config.name)
