"""The prepared launch of load()'s short way (backends.cuda.fastlaunch), without a GPU: the configuration
block has the driver's CUlaunchConfig layout, and a call hands the driver the grid, block, shared memory,
stream, function and the kernel's six arguments (three pointers, M, N, K), through cuLaunchKernelEx or,
where the driver lacks it, cuLaunchKernel."""
from __future__ import annotations

import ctypes

import pytest

from autotune.backends.cuda import fastlaunch
from autotune.space import Launch


def test_config_block_is_the_drivers_layout():
    # cuda.h: seven unsigned ints (grid, block, sharedMemBytes), then CUstream, CUlaunchAttribute*, numAttrs
    c = fastlaunch.LaunchConfig
    assert [(name, getattr(c, name).offset) for name, _ in c._fields_] == [
        ("grid", 0), ("block", 12), ("shared", 24), ("stream", 32), ("attrs", 40), ("attr_count", 48)]
    assert ctypes.sizeof(c) == 56


def _arguments(params: int) -> list[int]:
    """The six kernel arguments that a kernelParams array points at, each read from its 8-byte slot."""
    pointers = (ctypes.c_void_p * 6).from_address(params)
    return [ctypes.c_uint64.from_address(p).value for p in pointers]


@pytest.mark.parametrize("has_ex", [True, False])
def test_a_call_hands_the_driver_the_launch(monkeypatch, has_ex):
    seen = []

    def ex(config, function, params, extra):
        cfg = fastlaunch.LaunchConfig.from_address(config)
        seen.append((list(cfg.grid), list(cfg.block), cfg.shared, cfg.stream, cfg.attr_count, function,
                     _arguments(params), extra))
        return 0

    def plain(function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        seen.append(([gx, gy, gz], [bx, by, bz], shared, stream, 0, function,
                     _arguments(ctypes.addressof(params)), extra))
        return 0

    monkeypatch.setattr(fastlaunch, "_lib", (ex if has_ex else None, plain))
    launch = Launch((7, 3, 2), (256, 1, 1), 49152)
    run = fastlaunch.PreparedLaunch(0xF00, launch, 131, 67, 93)
    assert run(0x5000, 0xA000, 0xB000, 0xC000) == 0
    assert run(0x6000, 0xA100, 0xB100, 0xC100) == 0
    assert seen == [([7, 3, 2], [256, 1, 1], 49152, stream, 0, 0xF00, [a, b, c, 131, 67, 93], None)
                    for stream, a, b, c in ((0x5000, 0xA000, 0xB000, 0xC000), (0x6000, 0xA100, 0xB100, 0xC100))]


def test_the_drivers_status_comes_back(monkeypatch):
    monkeypatch.setattr(fastlaunch, "_lib", (lambda *args: 201, None))  # CUDA_ERROR_INVALID_CONTEXT
    run = fastlaunch.PreparedLaunch(1, Launch((1, 1, 1), (32, 1, 1), 0), 1, 1, 1)
    assert run(0, 1, 2, 3) == 201
