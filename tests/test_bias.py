"""mm(A, B, bias=b) without a GPU: the full path checks the bias (one line for anything wrong with it), launches
the product's kernel and then the bias's (api.bias) on the call's stream with C's pointer and row stride, loads
the bias's kernel once, and NVRTC compiles that kernel. The short ways' bias steps: tests/test_fastcall.py."""
from __future__ import annotations

import numpy as np
import pytest

from autotune.api import bias as biases
from autotune.codegen.nvrtc import compile_source
from autotune.errors import AutotuneError
from autotune.space import Limits
from tests.test_api import DeviceArray, refused

A_PTR, B_PTR, C_PTR, BIAS_PTR = 0x100000, 0x200000, 0x300000, 0x400000


def test_a_call_with_a_bias_launches_the_bias_s_kernel_on_c_after_the_product(mm, launcher):
    a, b, c = DeviceArray((33, 17), A_PTR), DeviceArray((17, 9), B_PTR), DeviceArray((33, 9), C_PTR)
    for _ in range(2):
        assert mm(a, b, out=c, stream=7, bias=DeviceArray((9,), BIAS_PTR)) is c
    product, added = launcher.launches[:2]
    assert product["ptrs"] == (A_PTR, B_PTR, C_PTR) and product["stream"] == 7
    assert added == {"device": 0, "kernel": f"loaded {biases.KERNEL}", "launch": biases.geometry(33, 9, Limits()),
                     "stream": 7, "ptrs": (BIAS_PTR, BIAS_PTR, C_PTR), "shape": (33, 9, 9), "ops": None}
    assert [load[1] for load in launcher.loads].count(biases.KERNEL) == 1  # loaded once, for both calls
    assert len(launcher.launches) == 4


def test_the_bias_s_kernel_steps_over_rows_of_an_out_with_a_leading_dimension(mm, launcher):
    a, b = DeviceArray((8, 4), A_PTR), DeviceArray((4, 5), B_PTR)
    mm(a, b, out=DeviceArray((8, 5), C_PTR, strides=(16, 1)), bias=DeviceArray((5,), BIAS_PTR))
    assert launcher.launches[-1]["shape"] == (8, 5, 16)  # rows, columns, ldc


def test_without_a_bias_nothing_more_is_launched_or_loaded(mm, launcher):
    mm(DeviceArray((8, 4), A_PTR), DeviceArray((4, 5), B_PTR), out=DeviceArray((8, 5), C_PTR), bias=None)
    assert len(launcher.launches) == 1 and biases.KERNEL not in [load[1] for load in launcher.loads]


@pytest.mark.parametrize("bias,message", [
    (DeviceArray((4,), BIAS_PTR), "bias has shape (4,); pass a vector of 5 (C's columns)"),
    (DeviceArray((1, 5), BIAS_PTR), "bias has shape (1, 5); pass a vector of 5 (C's columns)"),
    (DeviceArray((5,), BIAS_PTR, bits=64), "bias is float64; pass float32"),
    (DeviceArray((5,), BIAS_PTR, strides=(2,)), "bias's stride is 2; pass a contiguous vector (.contiguous())"),
    (DeviceArray((5,), BIAS_PTR, device=1), "bias is on device 1 and A on 0; pass it on A's device"),
    (np.ones(5, np.float32), "bias is in host memory; pass it on the GPU, as A"),
])
def test_a_bias_that_does_not_fit_is_one_line_and_nothing_runs(mm, launcher, bias, message):
    out = DeviceArray((8, 5), C_PTR)
    assert message in refused(mm, DeviceArray((8, 4), A_PTR), DeviceArray((4, 5), B_PTR), out=out, bias=bias)
    assert launcher.launches == []


def test_a_batched_call_with_a_bias_is_one_line(mm, launcher):
    a, b, c = DeviceArray((2, 8, 4), A_PTR), DeviceArray((2, 4, 5), B_PTR), DeviceArray((2, 8, 5), C_PTR)
    assert "bias= takes 2-D A and B" in refused(mm, a, b, out=c, bias=DeviceArray((5,), BIAS_PTR))
    assert launcher.launches == []


def test_an_out_that_shares_memory_with_the_bias_is_refused(mm, launcher):
    message = refused(mm, DeviceArray((8, 4), A_PTR), DeviceArray((4, 5), B_PTR), out=DeviceArray((8, 5), C_PTR),
                      bias=DeviceArray((5,), C_PTR + 8))
    assert message.startswith("out shares memory with bias") and launcher.launches == []


def test_the_bias_s_grid_is_sized_for_the_device_not_the_product():
    limits = Limits(sms=100)
    assert biases.geometry(1, 100, limits).grid == (1, 1, 1)
    assert biases.geometry(3, 1000, limits).grid == (12, 1, 1)  # ceil(3000 / 256)
    assert biases.geometry(100000, 4096, limits).grid == (100 * biases.BLOCKS_PER_SM, 1, 1)  # a grid-stride loop
    assert biases.geometry(0, 5, limits).grid == (1, 1, 1)


def test_the_bias_s_kernel_compiles_with_nvrtc():
    built = compile_source(biases.source(), biases.KERNEL, "sm_80")
    assert built.ok, built.log
    assert biases.KERNEL.encode() in built.cubin


def test_a_bias_check_names_everything_wrong_at_once(mm):
    with pytest.raises(AutotuneError) as exc:
        mm(DeviceArray((8, 4), A_PTR), DeviceArray((4, 5), B_PTR), out=DeviceArray((8, 5), C_PTR),
           bias=DeviceArray((4,), BIAS_PTR, bits=64, device=1))
    message = str(exc.value)
    assert "\n" not in message and all(part in message for part in ("float64", "shape (4,)", "device 1"))
