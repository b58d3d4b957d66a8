import random
import re

import pytest

from autotune.codegen.render import render
from autotune.errors import SpaceError
from autotune.families import FAMILIES, NAIVE, TILED
from autotune.space import combinations, make_config, random_valid, valid_configs
from autotune.space.blas import kernel_params

# the plain signature, or BLAS=1's (autotune/space/blas.py)
SIGNATURE = re.compile(r'extern "C" __global__ void __launch_bounds__\((\d+)(?:, \d+)?\)\s*\n(\w+)\((?:const float\* __restrict__ A, '
                       r'const float\* __restrict__ B, float\* __restrict__ C,\s*int M, int N, int K|'
                       + re.escape(kernel_params()) + r')\)')


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_valid_config_renders_one_kernel_named_after_it(family):
    fam = FAMILIES[family]
    rng = random.Random(0)  # the blocked family has ~400k valid configs: a seeded sample of them
    configs = valid_configs(fam) if combinations(fam) < 10**5 else [random_valid(fam, rng) for _ in range(600)]
    for config in configs:
        source = render(config)
        kernels = SIGNATURE.findall(source)
        assert len(kernels) == 1, config.name
        threads, name = kernels[0]
        assert name == config.name
        assert int(threads) == config.geometry(100, 100).threads
        assert f"// autotune kernel {config.name}" in source
        assert "// launch: block (" in source
        assert "{{" not in source and "{%" not in source


def test_header_comment_carries_config_and_geometry():
    source = render(make_config(TILED, {"T": 16, "bx": 16, "by": 4}))
    assert "// config: T=16 bx=16 by=4 x_over=cols pad=0" in source
    assert "grid (ceil(N/16), ceil(M/16), 1)" in source
    assert "each thread 4x1 outputs" in source


def test_chapter_kernel_shape():
    source = render(make_config(TILED, {}))
    assert "__shared__ float As[T][T + 0];" in source
    assert source.count("__syncthreads();") == 2
    assert "float acc[1][1]" in source


def test_padding_and_x_over_change_the_source():
    a = render(make_config(TILED, {"pad": 0}))
    b = render(make_config(TILED, {"pad": 1}))
    assert "As[T][T + 1]" in b and a != b
    rows = render(make_config(NAIVE, {"x_over": "rows"}))
    assert "const int row = blockIdx.x * 32 + threadIdx.x;" in rows


def test_config_outside_the_space_is_refused_before_rendering():
    with pytest.raises(SpaceError, match="outside the space: threads per block"):
        render(make_config(TILED, {"T": 64, "bx": 64, "by": 64}))


def test_a_bare_checkout_finds_the_top_level_templates():
    """Run from a checkout without installing (python cli.py, pytest on a GPU node), the
    templates are the repository's top-level templates/ folder."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    code = ("import sys; sys.modules['autotune.templates'] = None; "  # as if no installed package held them
            "from autotune.codegen.render import templates_dir; print(templates_dir())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True)
    assert Path(out.stdout.strip()) == root / "templates"


def test_the_templates_are_the_running_checkouts_own():
    """PYTHONPATH=checkout over an editable install of another checkout: the templates still come
    from the checkout whose code runs, not from the one the install points at."""
    from pathlib import Path

    from autotune.codegen.render import templates_dir

    assert templates_dir() == Path(__file__).resolve().parent.parent / "templates"


# A lambda with an `auto` parameter (a generic lambda, a template) in a kernel's source.
GENERIC_LAMBDA = re.compile(r"\[[^\]]*\]\s*\([^)]*\bauto\b")


def test_no_template_writes_a_generic_lambda():
    """NVRTC 13.0 (the H200's) takes a generic lambda in device code for a host function and refuses
    the whole kernel ("host functions are not allowed in JIT mode"), where a newer NVRTC compiles it:
    every lambda of a template names its parameters' types."""
    from autotune.codegen.render import templates_dir

    found = [f"{path.name}: {m.group(0)}" for path in sorted(templates_dir().glob("*.j2"))
             for m in GENERIC_LAMBDA.finditer(path.read_text())]
    assert found == []
