"""SASS counting: parser tests on hand-written text, then what NVRTC really produces."""
from __future__ import annotations

import pytest

from autotune.errors import AutotuneError
from autotune.explain.sass import count, find_nvdisasm, resources, width
from autotune.families import FAMILIES
from autotune.space import make_config

SAMPLE = """
//--------------------- .text.k                   --------------------------
\t.section\t.text.k,"ax",@progbits
k:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   LDS.U.128 R4, [R2] ;
.L_x_1:
        /*0020*/                   LDS.128 R8, [R2+0x10] ;
        /*0030*/              @!P0 LDS R12, [R3] ;
        /*0040*/                   LDS.64 R14, [R3+0x80] ;
        /*0048*/              @!PT LDS RZ, [RZ] ;
        /*0050*/                   FFMA R0, R12, R8, R0 ;
        /*0060*/                   FFMA.FTZ R0, R14, R9, R0 ;
        /*0070*/                   HFMA2.MMA R5, -RZ, RZ, 0, 0 ;
        /*0080*/               @P1 LDG.E.64.CONSTANT R6, desc[UR4][R10.64] ;
        /*0090*/                   LDG.E R7, desc[UR4][R10.64] ;
        /*00a0*/                   STS.128 [R3], R4 ;
        /*00b0*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*00c0*/               @P0 BRA `(.L_x_1) ;
        /*00d0*/                   STL [R1], R4 ;
        /*00e0*/                   STG.E desc[UR4][R2.64], R0 ;
        /*00f0*/                   EXIT ;
.L_x_2:
        /*0100*/                   BRA `(.L_x_2);


//--------------------- .nv.shared.k              --------------------------
"""


def test_width_reads_the_size_modifier() -> None:
    assert width("LDS.U.128") == 128
    assert width("LDS.64") == 64
    assert width("LDG.E.128.CONSTANT") == 128
    assert width("LDG.E.CONSTANT") == 32
    assert width("LDS.U8") == 8


def test_loop_scope_counts_the_loop_body_only() -> None:
    c = count(SAMPLE)["k"]
    assert c.scope == "loop"
    assert c.ffma == 2  # FFMA and FFMA.FTZ; HFMA2.MMA is a move, not an FFMA
    # the LDS.U.128 before the label is outside; @!PT never runs (ptxas's padding), so it is not counted
    assert c.lds == {128: 1, 32: 1, 64: 1}
    assert c.lds_named() == {"LDS": 1, "LDS.64": 1, "LDS.128": 1}
    assert c.ldg == {64: 1, 32: 1}
    assert c.sts == {128: 1} and c.bar == 1 and c.stl == 0
    assert c.lds_per_ffma == pytest.approx(1.5)


def test_kernel_scope_counts_everything() -> None:
    c = count(SAMPLE, scope="kernel")["k"]
    assert c.scope == "kernel"
    assert c.lds == {128: 2, 32: 1, 64: 1}
    assert c.stl == 1 and c.stg == {32: 1}


def test_no_loop_with_ffma_falls_back_to_the_kernel() -> None:
    text = SAMPLE.replace("FFMA", "FMUL")
    c = count(text)["k"]
    assert c.scope == "kernel" and c.ffma == 0
    assert c.lds_per_ffma == float("inf")


# Integer MMAs as nvdisasm prints them: mma.sync m16n8k32 s8 (sm_80+) and wgmma .s8 (sm_90a; the second loop's
# lines are a compiled wgmma m64n64k32 probe's), beside a TF32 warpgroup MMA of another N
MMA_SAMPLE = """
//--------------------- .text.k                   --------------------------
\t.section\t.text.k,"ax",@progbits
k:
        /*0000*/                   IMMA.16832.S8.S8 R20, R4, R8, R20 ;
.L_x_1:
        /*0010*/                   LDS R4, [R2] ;
        /*0020*/                   LDS R8, [R3] ;
        /*0030*/                   IMMA.16832.S8.S8 R12, R4, R8, R12 ;
        /*0040*/                   IMMA.16832.S8.S8 R16, R4, R9, R16 ;
        /*0050*/               @P0 BRA `(.L_x_1) ;
        /*0060*/                   FMUL R0, R12, R16 ;
        /*0070*/                   EXIT ;

//--------------------- .text.wg                  --------------------------
\t.section\t.text.wg,"ax",@progbits
wg:
.L_x_2:
        /*0390*/                   IGMMA.64x64x32.S8.S8 R24, gdesc[UR4], R24, gsb0 ;
        /*03c0*/                   IGMMA.64x64x32.S8.S8 R24, gdesc[UR4], R24, gsb0 ;
        /*03f0*/                   IGMMA.64x64x32.S8.S8 R24, gdesc[UR4], R24, gsb0 ;
        /*0400*/                   HGMMA.64x128x8.F32.TF32 R64, gdesc[UR8], R64, gsb0 ;
        /*0440*/               @P1 BRA `(.L_x_2) ;
        /*0450*/                   EXIT ;

//--------------------- .nv.shared.k              --------------------------
"""


def test_a_loop_of_integer_mmas_is_the_hot_loop() -> None:
    c = count(MMA_SAMPLE)["k"]
    assert c.scope == "loop" and c.ffma == 0  # no FFMA anywhere: the IMMA make the loop hot
    assert c.imma == 2 and c.lds == {32: 2}  # the IMMA before the loop is outside
    assert count(MMA_SAMPLE, scope="kernel")["k"].imma == 3


def test_integer_warpgroup_mmas_are_counted_with_their_n() -> None:
    c = count(MMA_SAMPLE)["wg"]
    assert c.scope == "loop" and c.igmma == 3 and c.igmma_n == 64
    assert c.hgmma == 1 and c.hgmma_n == 128 and c.imma == 0


# ----------------------------------------------------------------- the real compiler

def _need_nvdisasm() -> None:
    try:
        find_nvdisasm()
    except AutotuneError:
        pytest.skip("nvdisasm absent: pip install 'sgemm-autotune[sass]'")


def _analyze(family: str, **params: object):
    _need_nvdisasm()
    from autotune.explain.sass import analyze

    return analyze(make_config(FAMILIES[family], params))


@pytest.mark.parametrize("T", [8, 16, 32])
def test_tiled_unpadded_merges_as_reads_into_lds128(T: int) -> None:
    r = _analyze("tiled", T=T, bx=T, by=T, x_over="cols", pad=0)
    # one output per thread: T FFMA per phase (the compiler may unroll phases: u of them)
    u = r.loop.ffma // T
    assert r.loop.ffma == u * T and u >= 1
    assert r.loop.lds == {32: u * T, 128: u * T // 4}
    assert r.loop.lds_per_ffma == pytest.approx(1.25, abs=0.01)


@pytest.mark.parametrize("T", [8, 16, 32])
def test_tiled_padded_rows_are_not_16_byte_aligned_so_no_merge(T: int) -> None:
    r = _analyze("tiled", T=T, bx=T, by=T, x_over="cols", pad=1)
    u = r.loop.ffma // T
    assert r.loop.ffma == u * T and r.loop.lds == {32: 2 * u * T}
    assert r.loop.lds_per_ffma == pytest.approx(2.0, abs=0.01)


def test_naive_loads_from_global_two_per_ffma() -> None:
    r = _analyze("naive", x_over="cols", bx=32, by=8)
    assert r.loop.shared_loads == 0
    assert r.loop.ffma > 0 and r.loop.global_loads == 2 * r.loop.ffma


def test_resources_of_the_chapter_kernel() -> None:
    r = _analyze("tiled", T=32, bx=32, by=32, x_over="cols", pad=0)
    res = r.resources
    assert res.static_shared == 2 * 32 * 32 * 4
    assert res.shared_section == res.static_shared + 1024  # what cuobjdump prints on sm_90
    assert 0 < res.registers <= 64  # __launch_bounds__(1024) caps it at 64
    assert not res.spills


def test_resources_naming_a_missing_kernel_says_which_exist() -> None:
    from autotune.codegen.nvrtc import compile_source
    from autotune.codegen.render import render

    config = make_config(FAMILIES["naive"], {})
    cubin = compile_source(render(config), config.name).cubin
    assert resources(cubin).registers > 0  # the only kernel needs no name
    with pytest.raises(AutotuneError, match=config.name):
        resources(cubin, "nope")


def test_missing_nvdisasm_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import cuda.pathfinder

    from autotune.explain import sass

    monkeypatch.setattr(cuda.pathfinder, "find_nvidia_binary_utility", lambda name: None)
    monkeypatch.setattr(sass, "_wheel_candidates", lambda: iter(()))
    monkeypatch.setattr(sass.shutil, "which", lambda name: None)
    with pytest.raises(AutotuneError, match=r"pip install 'sgemm-autotune\[sass\]'"):
        sass.find_nvdisasm()
