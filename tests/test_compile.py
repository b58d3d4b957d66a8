"""NVRTC needs no GPU: every family compiles to an sm_90 cubin on a CPU-only machine."""
import random

from autotune.codegen.nvrtc import cache_dir, compile_source
from autotune.codegen.render import render
from autotune.families import FAMILIES
from autotune.space import make_config, random_valid


def test_a_sample_of_each_family_compiles_to_sm90_cubins():
    # each family's default (later tests find it in the cubin cache) and one random config of each
    # template (splitk and tailsplit render blocked's); the register-blocked ones compile for seconds
    # each, and tests/test_codegen.py renders many more
    rng = random.Random(0)
    templates: set[str] = set()
    for family in FAMILIES.values():
        randoms = [] if family.template in templates else [random_valid(family, rng)]
        templates.add(family.template)
        for config in [make_config(family, {}), *randoms]:
            built = compile_source(render(config), config.name, "sm_90")
            assert built.ok, built.log
            assert built.cubin[:4] == b"\x7fELF"
            assert config.name.encode() in built.cubin  # the kernel symbol is in the cubin


def test_cache_hit_returns_the_same_cubin():
    config = make_config(FAMILIES["tiled"], {"T": 16})
    first = compile_source(render(config), config.name)
    assert (cache_dir() / f"{first.key}.cubin").exists()
    second = compile_source(render(config), config.name)
    assert second.cubin == first.cubin and second.key == first.key


def test_cache_key_depends_on_arch_and_source():
    config = make_config(FAMILIES["tiled"], {"T": 16})
    source = render(config)
    assert compile_source(source, config.name, "sm_90").key != compile_source(source, config.name, "sm_80").key
    assert compile_source(source + "\n", config.name).key != compile_source(source, config.name).key


def test_compile_error_keeps_the_log():
    built = compile_source('extern "C" __global__ void broken() { int x = ; }', "broken")
    assert not built.ok
    assert "expected an expression" in built.log
