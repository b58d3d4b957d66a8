"""The INT8 tensor-core MMA of templates/_imma.cu.j2 (mma_s8, pack_s8x4): on the CPU emulator one warp's
product is exactly numpy's int64 product, wrong fragments are caught, and a sum past 2^31 wraps as int32
two's complement (the GPU's behaviour without .satfinite); NVRTC compiles it offline to IMMA for sm_80 to
sm_90."""
from __future__ import annotations

import numpy as np
import pytest

from autotune.backends.sim.runner import run_flat
from autotune.codegen.render import render_template
from autotune.space import Launch
from tests.emulated import edit

NAME = "imma_probe"
K = 64  # two MMAs of k 32
# One warp: D (16x8 int32) += A (16x64 int8, row-major) * B (64x8 int8, row-major), k-steps of 32. The
# buffer A holds A's bytes then D's initial words, B holds B's bytes, and D comes back in C: bit patterns
# in float buffers, read and written through int pointers. A's fragments are 4-byte loads (a word is four
# consecutive int8 of a row); B's are packed from a column, 8 bytes apart.
KERNEL = r"""
extern "C" __global__ void imma_probe(const float* A, const float* B, float* C, int M, int N, int K)
{
    const signed char* a8 = reinterpret_cast<const signed char*>(A);
    const signed char* b8 = reinterpret_cast<const signed char*>(B);
    const int* d0 = reinterpret_cast<const int*>(A) + 16 * 64 / 4;
    int* out = reinterpret_cast<int*>(C);
    const int g = threadIdx.x / 4, t = threadIdx.x % 4;
    const int lane_a = threadIdx.x;  // the lane whose A fragment this lane loads: its own
    const int ga = lane_a / 4, ta = lane_a % 4;
    int d[4];
    for (int i = 0; i < 4; ++i) d[i] = d0[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2];
    for (int k0 = 0; k0 < 64; k0 += 32) {
        unsigned a[4], b[2];
        for (int r = 0; r < 4; ++r)
            a[r] = *reinterpret_cast<const unsigned*>(a8 + (ga + 8 * (r % 2)) * 64 + k0 + 16 * (r / 2) + 4 * ta);
        for (int r = 0; r < 2; ++r) {
            const signed char* p = b8 + (k0 + 16 * r + 4 * t) * 8 + g;
            b[r] = pack_s8x4(p[0], p[8], p[16], p[24]);
        }
        mma_s8(d, a, b);
    }
    for (int i = 0; i < 4; ++i) out[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = d[i];
}
"""


def source() -> str:
    return render_template("_imma.cu.j2") + KERNEL


def product(src: str, A: np.ndarray, B: np.ndarray, D: np.ndarray) -> np.ndarray:
    """The probe's D + A @ B on the emulator, int32 (16, 8)."""
    a = np.frombuffer(A.astype(np.int8).tobytes() + D.astype(np.int32).tobytes(), dtype=np.float32)
    b = np.frombuffer(B.astype(np.int8).tobytes(), dtype=np.float32)
    C = run_flat(src, NAME, Launch(grid=(1, 1, 1), block=(32, 1, 1)), 16, 8, K, a, b, 16 * 8)
    return C.view(np.int32).reshape(16, 8)


def operands(seed: int, d_bound: int = 2**20) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random int8 A (16x64) and B (64x8) with the extremes in whole rows and columns (products of
    (-128)^2, -128 * 127, 127^2), and a random int32 D."""
    rng = np.random.default_rng(seed)
    A = rng.integers(-128, 128, (16, K))
    B = rng.integers(-128, 128, (K, 8))
    A[0], A[1], B[:, 0], B[:, 1] = -128, 127, -128, 127
    A[2, ::2], B[::3, 2] = -128, 127
    D = rng.integers(-d_bound, d_bound, (16, 8))
    return A, B, D


def exact(A: np.ndarray, B: np.ndarray, D: np.ndarray) -> np.ndarray:
    return D.astype(np.int64) + A.astype(np.int64) @ B.astype(np.int64)


def wrapped(x: np.ndarray) -> np.ndarray:
    """int64 to int32 two's complement: x modulo 2^32 into [-2^31, 2^31)."""
    return ((x + 2**31) % 2**32 - 2**31).astype(np.int32)


@pytest.mark.parametrize("seed", [0, 1])
def test_the_product_is_exactly_numpys(seed):
    A, B, D = operands(seed)
    ref = exact(A, B, D)
    assert np.abs(ref).max() < 2**31
    assert np.array_equal(product(source(), A, B, D), ref)


def test_wrong_fragments_are_wrong():
    src = source()
    A, B, D = operands(2)
    ref = exact(A, B, D)
    assert np.array_equal(product(src, A, B, D), ref)
    # lanes 1 and 6 (other rows g and columns t) hold each other's A words
    swapped_a = edit(src, "const int lane_a = threadIdx.x;",
                     "const int lane_a = threadIdx.x == 1 ? 6 : threadIdx.x == 6 ? 1 : threadIdx.x;")
    # B's memory read as if it held B column-major (8 columns of 64 k), where a col fragment's words lie whole
    transposed_b = edit(src, "b8 + (k0 + 16 * r + 4 * t) * 8 + g;\n            b[r] = pack_s8x4(p[0], p[8], p[16], p[24]);",
                        "b8 + g * 64 + k0 + 16 * r + 4 * t;\n            b[r] = pack_s8x4(p[0], p[1], p[2], p[3]);")
    # each word's bytes high first: the fragments' k order reversed within each group of four
    reversed_bytes = edit(src, "pack_s8x4(p[0], p[8], p[16], p[24])", "pack_s8x4(p[24], p[16], p[8], p[0])")
    for broken in (swapped_a, transposed_b, reversed_bytes):
        assert not np.array_equal(product(broken, A, B, D), ref)


def test_a_sum_past_int32_wraps_as_twos_complement():
    A, B, D = operands(3)
    # D starts within 2^10 of INT32_MAX (odd columns) or INT32_MIN (even), and the products (|A @ B| up to
    # 64 * 2^14 = 2^20) push outputs past both ends
    D = np.where(np.arange(16 * 8).reshape(16, 8) % 2, 2**31 - 1 - D % 2**10, -(2**31) + D % 2**10)
    ref = exact(A, B, D)
    assert (ref >= 2**31).any() and (ref < -(2**31)).any()
    assert np.array_equal(product(source(), A, B, D), wrapped(ref))


# --------------------------------------------------------------------------- offline compile (NVRTC)

ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90")
PTX_MMA = "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"


def ptx(src: str, arch: str) -> str:
    """NVRTC's PTX for the source (cuda.bindings directly: cuda.core's PTX target asks the driver). NVRTC
    writes into bytearrays: written into bytes (b" " * size), a 1-byte log would overwrite the interpreter's
    shared b" " and break every later compile of the process."""
    from cuda.bindings import nvrtc

    _, prog = nvrtc.nvrtcCreateProgram(src.encode(), f"{NAME}.cu".encode(), 0, [], [])
    try:
        options = [f"--gpu-architecture=compute_{arch[3:]}".encode(), b"-std=c++17"]
        (status,) = nvrtc.nvrtcCompileProgram(prog, len(options), options)
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = bytearray(size)
        nvrtc.nvrtcGetProgramLog(prog, log)
        assert status == nvrtc.nvrtcResult.NVRTC_SUCCESS, log.decode(errors="replace")
        _, size = nvrtc.nvrtcGetPTXSize(prog)
        text = bytearray(size)
        nvrtc.nvrtcGetPTX(prog, text)
        return text.rstrip(b"\0").decode()
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


@pytest.mark.parametrize("arch", ARCHS)
def test_the_ptx_holds_the_int8_mma(arch):
    assert ptx(source(), arch).count(PTX_MMA) == 2  # the probe's two k-steps
    assert bytes([32])[0] == 32  # the interpreter's shared 1-byte bytes are intact (see ptx)


@pytest.mark.parametrize("arch", ARCHS)
def test_the_cubin_runs_it_on_the_integer_tensor_cores(arch):
    from autotune.codegen.nvrtc import compile_source
    from autotune.errors import AutotuneError
    from autotune.explain.sass import Instr, disassemble, split_kernels

    built = compile_source(source(), NAME, arch)
    assert built.ok and built.arch == arch, built.log[:2000]
    try:
        code = split_kernels(disassemble(built.cubin))[NAME]
    except AutotuneError:
        pytest.skip("nvdisasm absent: pip install 'sgemm-autotune[sass]'")
    opcodes = [x.opcode for x in code if isinstance(x, Instr)]
    assert opcodes.count("IMMA.16832.S8.S8") == 2  # one tensor-core instruction per mma_s8
