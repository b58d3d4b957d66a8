"""No GPU, NVRTC only: on each architecture NVRTC 13 knows (sm_80 to sm_120), every family's default, fitted
to the architecture's preset device as a search's first trial is, and a seeded random config of each template
compile to a cubin; a family whose instructions the architecture lacks is refused with its one-line reason
(Family.needs) and has no configs there. One random config per template and architecture, not per family
(splitk, tailsplit and streamk render blocked's): the register-blocked kernels compile for seconds each."""
import random

import pytest

from autotune.codegen.nvrtc import compile_source
from autotune.codegen.render import render
from autotune.families import FAMILIES
from autotune.space import arch_refusal, count_valid, fitted, make_config, on_device, random_valid
from autotune.space.devices import ARCH_PRESETS, PRESETS

SHAPE = (1000, 1000, 1000)  # the fit's shape: a few waves of tiles, rows not 16-byte aligned


def supported() -> set[str]:
    from cuda.bindings import nvrtc

    _, archs = nvrtc.nvrtcGetSupportedArchs()
    return {f"sm_{a}" for a in archs}


ARCHS = [arch for arch in ARCH_PRESETS if arch in supported()]


def test_nvrtc_knows_the_architectures_every_user_has():
    assert {"sm_80", "sm_86", "sm_89", "sm_90"} <= set(ARCHS)


@pytest.mark.parametrize("arch", ARCHS)
def test_every_family_compiles_or_is_refused_in_one_line(arch):
    limits = PRESETS[ARCH_PRESETS[arch]]
    rng, templates = random.Random(arch), set()
    for family in FAMILIES.values():
        refused = arch_refusal(family, limits)
        if refused:
            assert refused == f"family {family.name} needs {family.needs.what}; the device is {arch}"
            assert count_valid(family, limits) == 0
            continue
        randoms = [] if family.template in templates else [random_valid(on_device(family, limits), rng, limits)]
        templates.add(family.template)
        for config in [fitted(make_config(family, {}), SHAPE, limits), *randoms]:
            built = compile_source(render(config, limits), config.name, limits.arch)
            assert built.ok, f"{config} on {arch}: {built.log[:2000]}"
            assert config.name.encode() in built.cubin


def test_the_families_that_need_an_architecture_say_so():
    assert arch_refusal(FAMILIES["tf32x3wg"], PRESETS["h100-pcie"]) is None
    for name in ("a100", "rtx4090", "b200", "rtx5090"):
        assert "wgmma" in (arch_refusal(FAMILIES["tf32x3wg"], PRESETS[name]) or "")
    assert arch_refusal(FAMILIES["tf32x3"], PRESETS["a100"]) is None
    assert arch_refusal(FAMILIES["tf32x3"], PRESETS["a100"].__class__(arch="sm_75")) == \
        "family tf32x3 needs mma.sync with TF32 operands (sm_80 or newer); the device is sm_75"
