"""Broken kernels, made by editing rendered source, are caught, each the same way every time.

Every edit asserts that the text it replaces is in the source, so a template change
breaks these tests loudly instead of silently testing an unbroken kernel. Each case also
runs the unedited kernel (it must be ok), so a broken emulator cannot pass by failing
everything.
"""
from __future__ import annotations

import numpy as np
import pytest

from autotune.backends.sim import SimError, run, run_kernel
from autotune.backends.verify import check
from autotune.codegen.render import render
from autotune.families import FAMILIES
from autotune.space import Config, make_config

# K > T in both, so the tiled kernel runs several phases and a missing write-after-read
# barrier matters; neither M nor N is a multiple of any tile, so tail guards run.
SHAPES = ((100, 37, 129), (33, 70, 48))
BARRIER = "__syncthreads();"
TILED = (
    {"T": 16, "bx": 8, "by": 16, "x_over": "cols"},
    {"T": 8, "bx": 4, "by": 8, "x_over": "rows", "pad": 1},
)




def edit(source: str, old: str, new: str, nth: int = 0) -> str:
    """Replace the nth occurrence of old (which must be there) by new."""
    parts = source.split(old)
    assert len(parts) > nth + 1, f"{old!r} occurs {len(parts) - 1} times; the template changed?"
    return old.join(parts[: nth + 1]) + new + old.join(parts[nth + 1 :])


def tiled(params: dict) -> Config:
    return make_config(FAMILIES["tiled"], params)


def statuses(config: Config, source: str) -> list[str]:
    runner = lambda cfg, _src, *rest: run(cfg, source, *rest)  # noqa: E731  (the broken source)
    return [check(config, source, shape, runner, seed=1).status for shape in SHAPES]


def expect(config: Config, broken: str, status: str, repeat: int = 1) -> None:
    assert statuses(config, render(config)) == ["ok"] * len(SHAPES)
    for _ in range(repeat):
        assert statuses(config, broken) == [status] * len(SHAPES)


def sim_error(config: Config, source: str, shape: tuple[int, int, int] = SHAPES[0], timeout: float = 60.0) -> SimError:
    M, N, K = shape
    A, B = np.ones((M, K), np.float32), np.ones((K, N), np.float32)
    with pytest.raises(SimError) as caught:
        run_kernel(source, config.name, config.geometry(M, N), A, B, M, N, K, timeout=timeout)
    assert "\n" not in str(caught.value)
    return caught.value


@pytest.mark.parametrize("params", TILED)
@pytest.mark.parametrize("which", [0, 1], ids=["read-after-write", "write-after-read"])
def test_missing_barrier_is_wrong_every_time(params: dict, which: int) -> None:
    config = tiled(params)
    broken = edit(render(config), BARRIER, "", which)
    expect(config, broken, "wrong", repeat=3)
    # and identically so: the schedule is deterministic, not timing-dependent
    M, N, K = SHAPES[0]
    A, B = np.random.default_rng(2).uniform(-1, 1, (M, K)), np.random.default_rng(3).uniform(-1, 1, (K, N))
    first, second = (run_kernel(broken, config.name, config.geometry(M, N), A, B, M, N, K) for _ in range(2))
    assert np.array_equal(first, second, equal_nan=True)


@pytest.mark.parametrize("params", TILED)
def test_tail_guard_off_by_one_is_wrong(params: dict) -> None:
    config = tiled(params)
    expect(config, edit(render(config), "if (row < M && col < N)", "if (row < M - 1 && col < N)"), "wrong")


def test_naive_tail_guard_off_by_one_is_wrong() -> None:
    config = make_config(FAMILIES["naive"], {"bx": 16, "by": 4})
    expect(config, edit(render(config), "if (row >= M ||", "if (row >= M - 1 ||"), "wrong")


@pytest.mark.parametrize("params", TILED)
def test_barrier_in_a_branch_is_a_barrier_error(params: dict) -> None:
    config = tiled(params)
    broken = edit(render(config), BARRIER, f"if (tid % 2 == 0) {BARRIER}")
    expect(config, broken, "barrier")
    err = sim_error(config, broken)
    assert config.name in str(err) and "block (0,0,0)" in str(err) and "different __syncthreads()" in str(err)


def test_early_exit_before_a_barrier_is_a_barrier_error() -> None:
    config = tiled(TILED[0])
    broken = edit(render(config), "    float acc[", "    if (tid == 3) return;\n    float acc[")
    err = sim_error(config, broken)
    assert err.kind == "barrier" and "1 of 128 threads exited" in str(err) and config.name in str(err)


@pytest.mark.parametrize("params", TILED)
def test_out_of_bounds_writes_are_caught(params: dict) -> None:
    config = tiled(params)
    source = render(config)
    loose_store = edit(source, "if (row < M && col < N)", "if (row < M && col <= N)")
    expect(config, loose_store, "out_of_bounds")
    err = sim_error(config, loose_store)
    assert "WRITE" in str(err) and "past the end of C" in str(err) and f"{config.name}.cu:" in str(err)
    shared = sim_error(config, edit(source, "As[r][c] =", "As[r + 1][c] ="))
    assert shared.kind == "out_of_bounds" and "__shared__ array 'As'" in str(shared)


def test_out_of_bounds_read_names_the_buffer() -> None:
    config = tiled(TILED[0])
    err = sim_error(config, edit(render(config), "row0 + r < M &&", "row0 + r <= M &&"))
    assert err.kind == "out_of_bounds" and "READ" in str(err) and "past the end of A" in str(err)


def test_wild_pointer_is_out_of_bounds_not_a_segfault() -> None:
    config = make_config(FAMILIES["naive"], {})
    err = sim_error(config, edit(render(config), "C[row * N + col] = acc", "C[row * N + col + (1 << 30)] = acc"))
    assert err.kind == "out_of_bounds"


def test_endless_loop_times_out() -> None:
    config = tiled(TILED[0])
    err = sim_error(config, edit(render(config), "k0 += T", "k0 += 0"), timeout=2.0)
    assert err.kind == "timeout"


def test_compile_error_is_reported() -> None:
    config = tiled(TILED[0])
    err = sim_error(config, edit(render(config), "float acc[", "flaot acc["))
    assert err.kind == "compile" and "flaot" in str(err) and f"{config.name}.cu:" in str(err)
    missing = sim_error(config, render(config).replace('extern "C" ', ""))
    assert missing.kind == "compile" and config.name in str(missing)
