"""On a GPU: the board's power is read through NVML while a kernel and cuBLAS run (backends/cuda/energy.py),
and what it reads is a board's power, not a counter's noise: between 30 W and 1000 W."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu
SHAPE = (2048, 2048, 2048)  # about 0.3 ms a run on an H200: far longer than a launch, so the burst keeps the GPU busy
BOARD_WATTS = (30.0, 1000.0)


def test_one_timed_kernel_and_cublas_read_the_boards_power(monkeypatch):
    monkeypatch.setenv("AUTOTUNE_ENERGY", "1")
    from autotune.backends.cuda.backend import CudaBackend
    from autotune.backends.cuda.energy import MAX_BURST_MS
    from autotune.codegen.render import render
    from autotune.families import BLOCKED
    from autotune.space import make_config

    backend = CudaBackend(*SHAPE)
    assert backend.meter is not None, "NVML gives neither the energy counter nor the power reading on this device"
    assert backend.baseline is not None and backend.baseline.watts is not None
    assert BOARD_WATTS[0] < backend.baseline.watts < BOARD_WATTS[1]
    config = make_config(BLOCKED, {})
    outcome = backend.measure(config, render(config))
    assert outcome.status == "ok" and outcome.timing is not None, outcome.reason
    watts = outcome.timing.watts
    assert watts is not None and BOARD_WATTS[0] < watts < BOARD_WATTS[1]
    assert outcome.row()["watts"] == watts
    assert outcome.extra["t_energy_s"] < 2 * MAX_BURST_MS / 1000  # the burst stopped at its steps or its limit
