"""Checks of a tensor-core family's kernel on the CPU emulator, shared by its tests: its status and
error under verify.check on one input set (reference.INPUT_SETS: uniform unless a test asks for the
wide set), numpy's FP32 error on the same inputs (the fp32-tc contract's yardstick), a one-place
edit of a rendered source for mutation tests (any family's), and a config's SASS by kernel (offline)."""
from __future__ import annotations

from autotune.backends.reference import INPUT_SETS, UNIFORM, reference, relative_error
from autotune.backends.sim import run
from autotune.backends.verify import VerifyRow, check_on
from autotune.space import Config


def verified(config: Config, source: str, shape: tuple[int, int, int], inputs: str = UNIFORM) -> VerifyRow:
    """verify's row for the given source on one input set (seed 1)."""
    runner = lambda cfg, _src, *rest: run(cfg, source, *rest)  # noqa: E731  (the given source)
    return check_on(config, source, shape, runner, 1, inputs)


def error(config: Config, source: str, shape: tuple[int, int, int], inputs: str = UNIFORM) -> tuple[str, float]:
    row = verified(config, source, shape, inputs)
    return row.status, row.error


def plain_tf32(config: Config) -> tuple[Config, str]:
    """The config with TERMS=1 and its source: plain TF32, which the families' PLAIN_TF32 constraint keeps
    out of every search (render refuses it), rendered by the family less that constraint to compare against."""
    import dataclasses

    from autotune.codegen.render import render
    from autotune.families.tf32x3 import PLAIN_TF32

    family = dataclasses.replace(config.family, constraints=tuple(c for c in config.family.constraints
                                                                  if c is not PLAIN_TF32))
    plain = Config(family, tuple((k, 1 if k == "TERMS" else v) for k, v in config.params))
    return plain, render(plain)


def fp32_error(shape: tuple[int, int, int], inputs: str = UNIFORM) -> float:
    """numpy's float32 product (BLAS SGEMM) against the float64 reference, on check()'s inputs."""
    A, B = INPUT_SETS[inputs](*shape, 1)
    return relative_error(A @ B, reference(A, B))


def assert_fp32_tc_at(config: Config, shapes: tuple[tuple[int, int, int], ...], inputs: str = UNIFORM) -> None:
    """The config verifies at each shape within the fp32-tc contract's bound on one input set: twice
    numpy's FP32 error on those inputs."""
    from autotune.codegen.render import render

    source = render(config)
    for shape in shapes:
        status, err = error(config, source, shape, inputs)
        assert status == "ok", shape
        assert err <= 2 * max(fp32_error(shape, inputs), 2.0**-24), shape


def edit(source: str, old: str, new: str) -> str:
    assert source.count(old) == 1, f"{old!r} is not in the source once; the template changed?"
    return source.replace(old, new)


def assert_mutation_caught(config, old: str, new: str, shape) -> None:
    """The config's kernel is right at the shape and the one with `old` edited to `new` is wrong by far more
    than the right one's error (a mutation test)."""
    from autotune.codegen.render import render

    source = render(config)
    status, whole = error(config, source, shape)
    assert status == "ok"
    status, err = error(config, edit(source, old, new), shape)
    assert status == "wrong" and err > 100 * whole, (status, err, whole)



def sass_kernels(config: Config, arch: str, source: str | None = None) -> tuple[str, dict]:
    """(the arch NVRTC built for, the cubin's instructions by kernel name) of the config's source, compiled offline;
    skips the test where nvdisasm is absent."""
    import pytest

    from autotune.codegen.nvrtc import compile_source
    from autotune.codegen.render import render
    from autotune.errors import AutotuneError
    from autotune.explain.sass import disassemble, split_kernels

    built = compile_source(source or render(config), config.name, arch)
    assert built.ok, built.log[:2000]
    try:
        return built.arch, split_kernels(disassemble(built.cubin))
    except AutotuneError:
        pytest.skip("nvdisasm absent: pip install 'sgemm-autotune[sass]'")
