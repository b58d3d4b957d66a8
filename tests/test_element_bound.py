"""The elementwise bound (backends/reference.py): besides the relative Frobenius error, every output
of an FP32 kernel must lie within ELEMENT_FACTOR * K * u * (|A| . |B|) of the reference, so that one
wrong output among many, which the norm dilutes below TOLERANCE, is `wrong`. On the emulator: a
naive kernel mutated to be off in one output beyond the GPU's 131x67x93 check shape (so only the
search shape sees it) is recorded `wrong` by `verify` and by the emulator backend, naming the
element; the unmutated kernel passes both."""
from __future__ import annotations

import numpy as np
import pytest

from autotune.backends.reference import (
    ELEMENT_FACTOR,
    FP32,
    FP32_TC,
    TOLERANCE,
    UNIT_ROUNDOFF,
    abs_product,
    element_violation,
    random_inputs,
    reference,
)
from autotune.backends.sim import run
from autotune.backends.sim.backend import SimBackend
from autotune.backends.verify import check
from autotune.codegen.render import render
from autotune.families import FAMILIES
from tests.emulated import edit

SHAPE = (200, 200, 64)  # larger than the GPU's check shape (131 x 67 x 93) in M and N
ROW, COL = 150, 170  # beyond it in both
NAIVE = FAMILIES["naive"]
STORE = "C[row * N + col] = acc;"
# 0.01 off in one of 40000 outputs: ~2e-5 relative to ||C||_F (~530), under TOLERANCE; ~100x the
# output's own bound (2 * 64 * u * ~16)
OFF_BY_ONE = f"C[row * N + col] = (row == {ROW} && col == {COL}) ? acc + 0.01f : acc;"


def naive():
    from autotune.space import make_config

    return make_config(NAIVE, {})


def runner(source: str):
    return lambda cfg, _src, *rest: run(cfg, source, *rest)


def test_the_bound_names_the_worst_element():
    A, B = random_inputs(20, 30, 40, seed=4)
    ref, scale = reference(A, B), abs_product(A, B)
    assert np.allclose(scale, np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64)))
    fp32 = (A @ B).astype(np.float32)  # an FP32 product: far inside the bound
    assert element_violation(fp32, ref, scale, 40, FP32) is None
    bad = fp32.copy()
    bad[7, 11] += 1e-3
    bound = ELEMENT_FACTOR * 40 * UNIT_ROUNDOFF * scale[7, 11]
    why = element_violation(bad, ref, scale, 40, FP32)
    assert why is not None and "C[7][11]" in why and f"{bound:.3g}" in why
    assert element_violation(bad, ref, scale, 40, FP32_TC) is None  # tensor-core contracts: not this bound


def test_one_wrong_output_beyond_the_check_shape_is_wrong_in_verify():
    config = naive()
    assert check(config, render(config), SHAPE, runner(render(config)), seed=1).status == "ok"
    broken = edit(render(config), STORE, OFF_BY_ONE)
    row = check(config, broken, SHAPE, runner(broken), seed=1)
    assert row.error < TOLERANCE  # the Frobenius check alone passes it
    assert row.status == "wrong" and f"C[{ROW}][{COL}]" in row.reason, row.reason
    assert check(config, broken, (131, 67, 93), runner(broken), seed=1).status == "ok"  # invisible there


@pytest.fixture(scope="module")
def backend() -> SimBackend:
    return SimBackend(*SHAPE, seed=2)


def test_one_wrong_output_is_recorded_wrong_by_the_emulator_backend(backend):
    config = naive()
    assert backend.measure(config, render(config)).status == "ok"
    outcome = backend.measure(config, edit(render(config), STORE, OFF_BY_ONE))
    assert outcome.err is not None and outcome.err < TOLERANCE
    assert outcome.status == "wrong" and f"C[{ROW}][{COL}]" in outcome.reason, outcome.reason
