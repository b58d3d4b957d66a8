"""A program that launches one kernel a few times at one shape with random inputs and does
nothing else: what `autotune profile` runs under Nsight Compute, which profiles its last launch.
It reads a JSON spec (written by api.profile) naming the source file, the kernel, its family
and parameters (for the launch geometry), the shape, the device and the number of launches."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from autotune.backends.cuda.backend import plain_operands, required_kernel, upload
from autotune.backends.cuda.device import device_info
from autotune.backends.cuda.launch import Kernels, launch_config
from autotune.backends.cuda.workspaces import Workspaces
from autotune.backends.reference import random_inputs
from autotune.errors import AutotuneError
from autotune.families import FAMILIES
from autotune.space import PROLOGUE_SUFFIX, make_config


def launch(spec: dict[str, Any]) -> None:
    from cuda.core import Device

    info = device_info(spec["device"])
    config = make_config(FAMILIES[spec["family"]], spec["params"])
    M, N, K = spec["shape"]
    name = spec["kernel"]
    dev = Device(info.index)
    dev.set_current()
    stream = dev.create_stream()
    geo = config.geometry(M, N)
    source = Path(spec["source"]).read_text()
    kernel = required_kernel(source, name, info.arch, geo.shared_bytes, info.index)
    pre = config.prologue(M, N, K) and required_kernel(source, name + PROLOGUE_SUFFIX, info.arch, 0, info.index)
    A, B = random_inputs(M, N, K, spec["seed"])
    a, b = upload(dev, stream, A), upload(dev, stream, B)
    c = dev.allocate(M * N * 4, stream=stream)
    workspaces = Workspaces()
    for _ in range(spec["launches"]):
        launch_config(stream, Kernels(kernel, pre), config, geo, a, b, c, M, N, K, plain_operands(config, M, N, K),
                      workspaces)
    stream.sync()


def main(spec_path: str) -> int:
    try:
        launch(json.loads(Path(spec_path).read_text()))
    except AutotuneError as exc:  # ncu passes this line on; api.profile reports it
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
