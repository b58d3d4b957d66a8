"""BLAS=1: the register-blocked kernel with cuBLAS-style operands (leading dimensions, alpha, beta,
strided batches), each layout checked on the emulator against alpha * op(A) * op(B) + beta * C."""
from __future__ import annotations

from functools import lru_cache

import pytest

from autotune.backends.reference import TOLERANCE
from autotune.backends.sim import SimError, run_strided
from autotune.backends.strided import strided_error, strided_inputs
from autotune.codegen.render import render
from autotune.families import BLOCKED, SPLITK, TAILSPLIT
from autotune.space import (
    BLAS_ARGS,
    Config,
    Operands,
    batched,
    make_config,
    operand_problems,
    stored_shapes,
    tight,
    violations,
)
from tests.names import tags

SMALL = {"BM": 32, "BN": 32, "BK": 8, "WM": 16, "WN": 32, "WNITER": 1, "TM": 2, "TN": 4}
KERNELS = (
    {**SMALL, "STAGES": 2, "ASYNC": 0, "BSWAP": 1},  # register prefetch, B's columns swapped
    {**SMALL, "STAGES": 3, "ASYNC": 1, "GM": 8},  # cp.async, block-rows grouped
    {**SMALL, "TN": 2, "STAGES": 1, "ASYNC": 0},  # one stage, scalar stores of C
)
ODD = (17, 33, 9)  # every load guarded and scalar
# Multiples of 4 with leading dimensions 4 longer than the rows: 16-byte loads (the whole first
# tile with the unguarded pointers, the edge tiles guarded) at batch offsets that keep alignment.
EVEN = (36, 40, 24)
LAYOUTS = {"NN": (0, 0), "NT": (0, 1), "TN": (1, 0), "TT": (1, 1)}
# (alpha, beta, batch, extra floats per row, shape): ld > cols throughout; batch strides with a gap.
OPERANDS = ((1.0, 0.0, 1, 3, ODD), (0.5, 2.0, 3, 4, EVEN))


def config(params: dict, layout: str) -> Config:
    ta, tb = LAYOUTS[layout]
    c = make_config(BLOCKED, {**params, "TA": ta, "TB": tb, "BLAS": 1})
    assert not violations(c)
    return c


def operands(M: int, N: int, K: int, ta: int, tb: int, alpha: float, beta: float, batch: int, extra: int,
             broadcast_b: bool = False) -> Operands:
    (ra, ca), (rb, cb) = stored_shapes(M, N, K, bool(ta), bool(tb))
    lda, ldb, ldc = ca + extra, cb + extra, N + extra
    gap = 4 * extra  # a multiple of 4 when the rows are: 16-byte loads stay possible in every batch
    return Operands(lda, ldb, ldc, alpha, beta, batch, ra * lda + gap, 0 if broadcast_b else rb * ldb + gap,
                    M * ldc + gap)


def error(c: Config, source: str, shape, ops: Operands) -> float:
    M, N, K = shape
    given = strided_inputs(M, N, K, bool(c.values["TA"]), bool(c.values["TB"]), ops, seed=3)
    launch = batched(c.geometry(M, N), ops.batch)
    try:
        C = run_strided(source, c.name, launch, M, N, K, ops, given.A, given.B, given.C)
    except SimError:  # out of bounds, crash: as wrong as a wrong answer
        return float("inf")
    return strided_error(C, given, M, N, ops)


@pytest.mark.parametrize("case", range(len(OPERANDS)))
@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_layout_and_operands_match_the_reference(layout, case):
    # One kernel a case, taking turns (each compile costs the emulator ~0.6 s): every kernel meets
    # both operand sets and both transposes of each operand.
    alpha, beta, batch, extra, shape = OPERANDS[case]
    ta, tb = LAYOUTS[layout]
    c = config(KERNELS[(list(LAYOUTS).index(layout) + case) % len(KERNELS)], layout)
    ops = operands(*shape, ta, tb, alpha, beta, batch, extra, broadcast_b=batch > 1 and ta == tb)
    assert not operand_problems(*shape, bool(ta), bool(tb), ops)
    assert error(c, render(c), shape, ops) <= TOLERANCE, (c.name, ops)


@pytest.mark.parametrize("old, new", [
    ("alpha * v + beta * *c", "alpha * v"),  # beta ignored (scalar stores)
    ("C += blockIdx.z * strideC;", "C += blockIdx.z * strideA;"),  # the wrong batch stride
    ("B += blockIdx.z * strideB;", ""),  # every batch reads batch 0's B
    ("beta == 0.0f ? alpha * v : alpha * v + beta * *c", "alpha * v + beta * *c"),  # reads C when beta == 0
])
def test_a_kernel_that_breaks_the_operands_is_wrong(old, new):
    c, source = MUTATED, render(MUTATED)
    assert old in source, "the template changed?"
    beta = 0.0 if "beta == 0.0f" in old else 2.0
    ops = operands(*ODD, 0, 1, 0.5, beta, 3, 3)
    assert unbroken_error(beta) <= TOLERANCE  # the kernel itself passes these very operands
    assert error(c, source.replace(old, new), ODD, ops) > TOLERANCE


MUTATED = config(KERNELS[2], "NT")


@lru_cache(maxsize=None)
def unbroken_error(beta: float) -> float:
    return error(MUTATED, render(MUTATED), ODD, operands(*ODD, 0, 1, 0.5, beta, 3, 3))


def test_tight_operands_with_one_batch_are_a_plain_product():
    c = config(KERNELS[0], "NN")
    M, N, K = ODD
    ops = tight(M, N, K, False, False)
    assert (ops.lda, ops.ldb, ops.ldc, ops.batch) == (K, N, N, 1)
    assert error(c, render(c), ODD, ops) <= TOLERANCE


def test_the_signature_is_written_once_and_old_kernels_keep_theirs():
    plain, blas = make_config(BLOCKED, KERNELS[0]), config(KERNELS[0], "NN")
    assert tags(blas.name) == tags(plain.name) | {"BLAS1"}
    src = render(blas)
    header = src[src.index(blas.name + "("):]
    positions = [header.index(f" {name},") if i + 1 < len(BLAS_ARGS) else header.index(f" {name})")
                 for i, (name, _) in enumerate(BLAS_ARGS)]
    assert positions == sorted(positions)
    assert "lda" not in render(plain) and "int M, int N, int K)" in render(plain)
    # the split-K families keep one signature: their turnstiles are per tile, not per batch
    assert all("BLAS" not in {p.name for p in f.params} for f in (SPLITK, TAILSPLIT))


def test_operand_problems_say_what_is_wrong():
    M, N, K = ODD
    ops = Operands(lda=K - 1, ldb=N, ldc=N, batch=2, strideA=M * K, strideB=0, strideC=M * N - 1)
    problems = operand_problems(M, N, K, False, False, ops)
    assert any(p.startswith("lda=") for p in problems) and any(p.startswith("strideC=") for p in problems)
    assert not operand_problems(M, N, K, False, False, tight(M, N, K, False, False, batch=2))



def test_a_search_takes_blas_kernels_only_when_asked():
    from autotune.cli.options import narrow_families

    [plain] = narrow_families([BLOCKED], ())
    [asked] = narrow_families([BLOCKED], ("BLAS=1",))
    assert plain.param("BLAS").values == (0,) and asked.param("BLAS").values == (1,)


def test_plain_calls_leave_blas_kernels_alone(tmp_path):
    # a plain call passes the plain (A, B, C, M, N, K): a faster BLAS=1 row is not its kernel
    import autotune
    from autotune import store
    from tests.fakes import GPU, FakeLauncher
    from tests.test_starts import record

    path = tmp_path / "r.sqlite"
    db = store.open_db(path)
    plain = record(db, (64, 64, 32), "blocked", 2.0, backend="cuda", gpu=GPU, **SMALL)
    record(db, (64, 64, 32), "blocked", 1.0, backend="cuda", gpu=GPU, BLAS=1, **SMALL)  # faster
    assert autotune.load(db=str(path), launcher=FakeLauncher(), library=False).choose(64, 64, 32).kernel == plain
