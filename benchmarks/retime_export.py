"""Re-time an exported kernel by itself: only its .cu file and .json manifest, NVRTC and
CUDA events, no autotune code. Prints the new median and its ratio to the recorded time.

    python benchmarks/retime_export.py best.cu     (reads best.json beside it)
"""
import json
import statistics
import sys
from pathlib import Path

import numpy as np
from cuda.bindings import driver
from cuda.core import Device, EventOptions, LaunchConfig, ObjectCode, Program, ProgramOptions, launch


def main(cu_path: str, reps: int = 20) -> None:
    cu = Path(cu_path)
    info = json.loads(cu.with_suffix(".json").read_text())
    dev = Device(0)
    dev.set_current()
    stream = dev.create_stream()
    cubin = Program(cu.read_text(), "c++", ProgramOptions(arch=f"sm_{dev.arch}")).compile("cubin")
    kernel = ObjectCode.from_cubin(cubin.code).get_kernel(info["kernel"])
    if info["dynamic_shared_bytes"] > 48 * 1024:  # opt in to more than 48 KiB of dynamic shared memory
        attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        driver.cuKernelSetAttribute(attr, info["dynamic_shared_bytes"], kernel.handle, driver.CUdevice(0))
    M, N, K = (info["shape"][k] for k in "MNK")
    rng = np.random.default_rng(1)
    host = [rng.uniform(-1, 1, (M, K)).astype(np.float32), rng.uniform(-1, 1, (K, N)).astype(np.float32),
            np.zeros((M, N), np.float32)]
    bufs = []
    for h in host:
        buf = dev.allocate(h.nbytes, stream=stream)
        driver.cuMemcpyHtoDAsync(int(buf.handle), h.ctypes.data, h.nbytes, stream.handle)
        bufs.append(buf)
    cfg = LaunchConfig(grid=tuple(info["grid"]), block=tuple(info["block"]), shmem_size=info["dynamic_shared_bytes"])
    args = (*bufs, np.int32(M), np.int32(N), np.int32(K))
    opts = EventOptions(timing_enabled=True)
    for _ in range(3):
        launch(stream, cfg, kernel, *args)
    times = []
    for _ in range(reps):
        start = stream.record(options=opts)
        launch(stream, cfg, kernel, *args)
        end = stream.record(options=opts)
        end.sync()
        times.append(end - start)
    C = np.empty((M, N), np.float32)
    driver.cuMemcpyDtoHAsync(C.ctypes.data, int(bufs[2].handle), C.nbytes, stream.handle)
    stream.sync()
    rows = slice(0, min(M, 64))  # spot-check 64 rows against float64
    ref = host[0][rows].astype(np.float64) @ host[1]
    err = np.linalg.norm(C[rows] - ref) / np.linalg.norm(ref)
    ms = statistics.median(times)
    recorded = (info.get("measured") or {}).get("time_ms")
    ratio = f", {100 * ms / recorded:.1f}% of the recorded {recorded:.4f} ms" if recorded else ""
    tflops = 2 * M * N * K / ms / 1e9
    print(f"{info['kernel']} {M}x{N}x{K}: median {ms:.4f} ms over {reps} (min {min(times):.4f}, "
          f"max {max(times):.4f}) = {tflops:.2f} TFLOP/s{ratio}; spot-check error {err:.2e}")


if __name__ == "__main__":
    main(sys.argv[1])
