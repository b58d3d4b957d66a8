"""Lab (issue 15): can 3xTF32 on Hopper's warpgroup MMA (wgmma, sm_90a) reach 2x cuBLAS SGEMM?

A standalone experiment, not a family yet: if it gets there, it becomes one (template, emulator
model of wgmma, constraints). The mma.sync family tf32x3 tops out at cuBLAS's speed (its plain
TF32 kernel reached 103 TFLOP/s, so three MMAs per product cannot double cuBLAS's 51 on mma.sync).

Two kernels, both timed (the split is part of the product):
- split: A (M x K) and B (K x N) written once as big + small TF32 parts (round to nearest; the
  small part is x - big rounded again), both K-major as TF32 wgmma needs, into a workspace padded
  with zeros to whole tiles (Mp x Kp, Np x Kp), so the product loads whole tiles without checks;
- product: a block of two warpgroups computes a 128 x BN tile of C. Per k-tile of 32: cp.async
  brings the four operand tiles (A big/small, B big/small; 128-byte rows, 128-byte swizzle) into a
  STAGES-deep ring; each warpgroup issues, per k-step of 8, wgmma m64nBNk8 for big*big, and with
  TERMS=3 big*small and small*big, into tensor-core accumulators started afresh each k-tile; after
  the k-tile they are added into FP32 sums with ordinary adds (the promotion tf32x3's PROMOTE=1
  showed the accuracy contract needs). Blocks are ordered in groups of GROUP row-tiles for L2.
  PIPE=1: two accumulator sets, so a k-tile's promotion (and the loads into the stage the k-tile
  before left) overlaps the next k-tile's MMAs (wgmma.wait_group 1, not 0); the sums are added in
  the same order, so its C must equal PIPE=0's bit for bit (checked when both run, same BN/TERMS).
The split reads and writes float4s when K % 4 == 0 and A is 16-byte aligned (split_a4), else one
element per thread (split_a).

Run on an H200 (needs cupy and torch there; compiles with autotune's NVRTC for sm_90a):
    python3 benchmarks/profiling/wgmma_lab.py [--shapes 4096,2048,8192,4000,4097x4095x4093] [--out f.json]
Prints one line per (shape, variant): times (split, product, total), TFLOP/s, x cuBLAS SGEMM (torch.matmul,
TF32 off, same process), the relative error against float64 beside cuBLAS's own, and for PIPE=1
whether C is bitwise PIPE=0's.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cuda_events import time_ms  # noqa: E402  (benchmarks/cuda_events.py)

BM, BK, THREADS, GROUP = 128, 32, 256, 8
VARIANTS = [  # (BN, STAGES, TERMS, PIPE): 3 terms is 3xTF32; 1 is plain TF32, the tensor cores' speed for
    # reference; PIPE 1 promotes a k-tile's accumulators while the next k-tile's MMAs run (two accumulator sets)
    (128, 3, 3, 0), (192, 2, 3, 0), (128, 2, 3, 0), (128, 3, 1, 0), (128, 3, 3, 1), (128, 2, 3, 1),
]

SOURCE = r"""
#define BN @BN@
#define STAGES @STAGES@
#define TERMS @TERMS@
#define PIPE @PIPE@
constexpr int BM = @BM@, BK = @BK@, THREADS = @THREADS@, GROUP = @GROUP@;
constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128;  // a tile of rows of 32 floats (128 bytes)
constexpr int STAGE_BYTES = 2 * A_BYTES + 2 * B_BYTES;  // A big, A small, B big, B small

__device__ __forceinline__ float tf32(float x)  // round to nearest TF32; the low 13 bits cleared
{
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
    return __uint_as_float(r & 0xffffe000u);
}

// A (M x K) -> big, small (Mp x Kp), zeros outside A: one element per thread, a grid row per row of A.
extern "C" __global__ void split_a(const float* __restrict__ A, float* __restrict__ W, int M, int K, int Mp, int Kp)
{
    const int k = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y;
    if (k >= Kp) return;
    const size_t i = (size_t)m * Kp + k;
    const float x = m < M && k < K ? A[(size_t)m * K + k] : 0.0f, hi = tf32(x);
    W[i] = hi;
    W[(size_t)Mp * Kp + i] = tf32(x - hi);
}

// split_a four elements per thread, when K % 4 == 0 and A starts on 16 bytes (so every row of A does;
// Kp is a multiple of 32, so every row of W does): a k < K is then one of a whole float4 of A.
extern "C" __global__ void split_a4(const float* __restrict__ A, float* __restrict__ W, int M, int K, int Mp, int Kp)
{
    const int k = 4 * (blockIdx.x * blockDim.x + threadIdx.x), m = blockIdx.y;
    if (k >= Kp) return;
    const size_t i = (size_t)m * Kp + k;
    const float4 x = m < M && k < K ? *reinterpret_cast<const float4*>(A + (size_t)m * K + k)
                                    : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const float4 hi = make_float4(tf32(x.x), tf32(x.y), tf32(x.z), tf32(x.w));
    *reinterpret_cast<float4*>(W + i) = hi;
    *reinterpret_cast<float4*>(W + (size_t)Mp * Kp + i) =
        make_float4(tf32(x.x - hi.x), tf32(x.y - hi.y), tf32(x.z - hi.z), tf32(x.w - hi.w));
}

// B (K x N) -> big, small transposed (Np x Kp: K-major), zeros outside B: 32 x 32 tiles through
// shared memory (the padding column keeps a tile column's floats in different banks).
extern "C" __global__ void split_bt(const float* __restrict__ B, float* __restrict__ Whi, float* __restrict__ Wlo,
                                    int K, int N, int Kp)
{
    __shared__ float t[32][33];
    const int n0 = blockIdx.x * 32, k0 = blockIdx.y * 32, tx = threadIdx.x, ty = threadIdx.y;
    for (int j = ty; j < 32; j += 8) {
        const int k = k0 + j, n = n0 + tx;
        t[j][tx] = k < K && n < N ? B[(size_t)k * N + n] : 0.0f;
    }
    __syncthreads();
    for (int j = ty; j < 32; j += 8) {
        const size_t at = (size_t)(n0 + j) * Kp + k0 + tx;
        const float x = t[tx][j], hi = tf32(x);
        Whi[at] = hi;
        Wlo[at] = tf32(x - hi);
    }
}

__device__ __forceinline__ void cp_async16(unsigned dst, const float* src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(dst), "l"(src) : "memory");
}

// Rows row0 .. row0+ROWS of X (ld floats apart), columns k0 .. k0+32, into a tile at shared address
// dst: row r at dst + 128 r, its 16-byte chunk c at chunk c ^ (r % 8) (the 128-byte swizzle the
// descriptor names; the tile starts on 1024 bytes).
template <int ROWS>
__device__ __forceinline__ void load_tile(unsigned dst, const float* X, int ld, int row0, int k0, int tid)
{
    #pragma unroll
    for (int i = 0; i < ROWS * 8 / THREADS; ++i) {
        const int idx = tid + i * THREADS, r = idx >> 3, c = idx & 7;
        cp_async16(dst + r * 128 + ((c ^ (r & 7)) << 4), X + (size_t)(row0 + r) * ld + k0 + c * 4);
    }
}

// A wgmma shared-memory descriptor: start address / 16, leading byte offset (unused by K-major
// swizzled tiles: 1), stride byte offset 1024 / 16 (eight 128-byte rows), 128-byte swizzle.
__device__ __forceinline__ unsigned long long descriptor(unsigned addr)
{
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

// d (+)= A (64 x 8, K-major) * B (8 x BN, K-major as BN x 8) for the warpgroup; scale 0: d = A*B.
__device__ __forceinline__ void wgmma(float (&d)[BN / 2], unsigned long long a, unsigned long long b, int scale)
{
    asm volatile(@WGMMA@);
}

#if PIPE
// The same with scale 0 and d only written, never read: a k-tile's first k-step. The accumulators
// then need no initial value (zeros there get copied about by the compiler, and ptxas serializes
// every wgmma when a copy reads an accumulator register inside a wgmma pipeline stage: C7514).
__device__ __forceinline__ void wgmma_first(float (&d)[BN / 2], unsigned long long a, unsigned long long b)
{
    const int scale = 0;
    asm volatile(@WGMMA_FIRST@);
}
#endif

extern "C" __global__ void __launch_bounds__(THREADS, 1)
product(const float* __restrict__ W, float* __restrict__ C, int M, int N, int Mp, int Np, int Kp)
{
    extern __shared__ unsigned char smem[];
    const unsigned base = (static_cast<unsigned>(__cvta_generic_to_shared(smem)) + 1023u) & ~1023u;
    const float* Ahi = W;
    const float* Alo = W + (size_t)Mp * Kp;
    const float* Bhi = W + 2 * (size_t)Mp * Kp;
    const float* Blo = Bhi + (size_t)Np * Kp;
    const int tid = threadIdx.x, wg = tid / 128;
    // grouped order: GROUP row-tiles share the B tiles they read while those are in L2
    const int tilesM = Mp / BM, tilesN = Np / BN, pid = blockIdx.x;
    const int first = pid / (GROUP * tilesN) * GROUP, rows = min(tilesM - first, GROUP), in = pid % (GROUP * tilesN);
    const int m0 = (first + in % rows) * BM, n0 = in / rows * BN;
    const int ktiles = Kp / BK;
    auto load_stage = [&](int s, int kt) {
        const unsigned at = base + s * STAGE_BYTES;
        load_tile<BM>(at, Ahi, Kp, m0, kt * BK, tid);
        load_tile<BM>(at + A_BYTES, Alo, Kp, m0, kt * BK, tid);
        load_tile<BN>(at + 2 * A_BYTES, Bhi, Kp, n0, kt * BK, tid);
        load_tile<BN>(at + 2 * A_BYTES + B_BYTES, Blo, Kp, n0, kt * BK, tid);
    };
#if !PIPE
    float acc[BN / 2], sum[BN / 2];
    #pragma unroll
    for (int i = 0; i < BN / 2; ++i) sum[i] = acc[i] = 0.0f;
    #pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ktiles) load_stage(s, s);
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    }
    for (int kt = 0; kt < ktiles; ++kt) {
        asm volatile("cp.async.wait_group %0;\n" :: "n"(STAGES - 2) : "memory");  // k-tile kt has landed
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // cp.async's writes, seen by wgmma
        __syncthreads();  // ... every thread's; and every warpgroup is done reading k-tile kt-1's stage
        if (kt + STAGES - 1 < ktiles) load_stage((kt + STAGES - 1) % STAGES, kt + STAGES - 1);
        asm volatile("cp.async.commit_group;\n" ::: "memory");
        const unsigned at = base + kt % STAGES * STAGE_BYTES;
        const unsigned ahi = at + wg * 64 * 128, alo = ahi + A_BYTES, bhi = at + 2 * A_BYTES, blo = bhi + B_BYTES;
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        #pragma unroll
        for (int kk = 0; kk < BK / 8; ++kk) {
            wgmma(acc, descriptor(ahi + 32 * kk), descriptor(bhi + 32 * kk), kk > 0);
#if TERMS == 3
            wgmma(acc, descriptor(ahi + 32 * kk), descriptor(blo + 32 * kk), 1);
            wgmma(acc, descriptor(alo + 32 * kk), descriptor(bhi + 32 * kk), 1);
#endif
        }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        // The wait names no accumulator, so tie each to a volatile statement after it: the adds
        // below cannot be scheduled before the MMAs have written them.
        #pragma unroll
        for (int i = 0; i < BN / 2; ++i) asm volatile("" : "+f"(acc[i]) :: "memory");
        #pragma unroll
        for (int i = 0; i < BN / 2; ++i) sum[i] += acc[i];  // the k-tile's sum, promoted to FP32 adds
    }
#else
    // Two accumulator sets: k-tile kt's MMAs go into acc[kt & 1] while k-tile kt-1's, in the other
    // set, are promoted. The k-tile loop is unrolled by two (step takes the sets by reference and is
    // inlined), so every accumulator index is a compile-time one and the sets stay in registers.
    float acc0[BN / 2], acc1[BN / 2], sum[BN / 2];
    #pragma unroll
    for (int i = 0; i < BN / 2; ++i) sum[i] = 0.0f;  // acc0, acc1: written by wgmma_first
    // cp.async group t holds k-tile t (an empty group past the last k-tile): the prologue fills all
    // STAGES stages (groups 0 .. STAGES-1) and iteration kt >= 1 commits group kt-1+STAGES (into the
    // stage k-tile kt-1 leaves), iteration 0 none. So at the top of iteration kt >= 1 the committed
    // groups are 0 .. kt+STAGES-2, and k-tile kt has landed once at most the STAGES-2 newer groups
    // kt+1 .. kt+STAGES-2 are pending: wait_group STAGES-2 (0 at STAGES = 2). At kt = 0 groups
    // 0 .. STAGES-1 are committed: wait_group STAGES-1.
    #pragma unroll
    for (int s = 0; s < STAGES; ++s) {
        if (s < ktiles) load_stage(s, s);
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    }
    auto promote = [&](float (&a)[BN / 2]) {
        // the wait names no accumulator: tie each to a volatile statement after it (as above)
        #pragma unroll
        for (int i = 0; i < BN / 2; ++i) asm volatile("" : "+f"(a[i]) :: "memory");
        #pragma unroll
        for (int i = 0; i < BN / 2; ++i) sum[i] += a[i];
    };
    // k-tile kt into cur, k-tile kt-1's (in prev) promoted; first (kt = 0) is a literal wherever
    // step is inlined, so the branches on it are decided at compile time
    auto step = [&](float (&cur)[BN / 2], float (&prev)[BN / 2], int kt, bool first) {
        if (first) asm volatile("cp.async.wait_group %0;\n" :: "n"(STAGES - 1) : "memory");
        else asm volatile("cp.async.wait_group %0;\n" :: "n"(STAGES - 2) : "memory");  // k-tile kt has landed
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // cp.async's writes, seen by wgmma
        __syncthreads();  // ... every thread's
        const unsigned at = base + kt % STAGES * STAGE_BYTES;
        const unsigned ahi = at + wg * 64 * 128, alo = ahi + A_BYTES, bhi = at + 2 * A_BYTES, blo = bhi + B_BYTES;
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        #pragma unroll
        for (int kk = 0; kk < BK / 8; ++kk) {
            if (kk == 0) wgmma_first(cur, descriptor(ahi), descriptor(bhi));
            else wgmma(cur, descriptor(ahi + 32 * kk), descriptor(bhi + 32 * kk), 1);
#if TERMS == 3
            wgmma(cur, descriptor(ahi + 32 * kk), descriptor(blo + 32 * kk), 1);
            wgmma(cur, descriptor(alo + 32 * kk), descriptor(bhi + 32 * kk), 1);
#endif
        }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        // one wgmma group per k-tile: all but the newest (k-tile kt's) done, so k-tile kt-1's are
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
        if (!first) {
            promote(prev);  // k-tile kt-1's sum, while k-tile kt's MMAs run
            __syncthreads();  // both warpgroups' k-tile kt-1 MMAs are done: its stage is free
            if (kt - 1 + STAGES < ktiles) load_stage((kt - 1) % STAGES, kt - 1 + STAGES);
            asm volatile("cp.async.commit_group;\n" ::: "memory");  // even empty: group t is k-tile t
        }
    };
    // No branch inside the loop chooses whether a step runs: a join where an accumulator set may or
    // may not be in flight makes the compiler copy it, and ptxas then serializes the MMAs (C7514).
    if (ktiles > 0) {
        step(acc0, acc1, 0, true);
        int kt = 1;
        for (; kt + 1 < ktiles; kt += 2) {  // odd k-tiles into acc1, even ones into acc0
            step(acc1, acc0, kt, false);
            step(acc0, acc1, kt + 1, false);
        }
        // k-tile kt-1 (even) is in flight in acc0; kt is the last k-tile or past it
        if (kt < ktiles) {
            step(acc1, acc0, kt, false);
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
            promote(acc1);
        } else {
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
            promote(acc0);
        }
    }
#endif
    // accumulator layout of m64nNk8: warp w of the warpgroup has rows 16w .. 16w+15; lane (g = lane/4,
    // q = lane%4) holds, per 8 columns j, (g, 8j+2q), (g, 8j+2q+1), (g+8, 8j+2q), (g+8, 8j+2q+1)
    const int lane = tid % 32, row = m0 + wg * 64 + (tid % 128) / 32 * 16 + lane / 4, col0 = n0 + 2 * (lane % 4);
    #pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
        const int col = col0 + 8 * j;
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int r = row + 8 * h;
            if (r >= M) continue;
            if (col < N) C[(size_t)r * N + col] = sum[4 * j + 2 * h];
            if (col + 1 < N) C[(size_t)r * N + col + 1] = sum[4 * j + 2 * h + 1];
        }
    }
}
"""


def wgmma_asm(bn: int, accumulator: str = "+f") -> str:
    """The inline-PTX string and operands of one wgmma m64n{bn}k8 .tf32 with bn/2 accumulators
    (accumulator "=f": written only, for scale 0)."""
    n = bn // 2
    regs = ", ".join(f"%{i}" for i in range(n))
    text = (f'"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{n + 2}, 0;\\n"\n'
            f'        "wgmma.mma_async.sync.aligned.m64n{bn}k8.f32.tf32.tf32 {{{regs}}}, %{n}, %{n + 1}, p, 1, 1;\\n}}\\n"')
    outs = ", ".join(f'"{accumulator}"(d[{i}])' for i in range(n))
    return f'{text}\n        : {outs}\n        : "l"(a), "l"(b), "r"(scale)'


def source(bn: int, stages: int, terms: int, pipe: int = 0) -> str:
    values = {"BN": bn, "STAGES": stages, "TERMS": terms, "PIPE": pipe, "BM": BM, "BK": BK, "THREADS": THREADS, "GROUP": GROUP,
              "WGMMA": wgmma_asm(bn), "WGMMA_FIRST": wgmma_asm(bn, "=f")}
    text = SOURCE
    for key, value in values.items():
        text = text.replace(f"@{key}@", str(value))
    return text


def shared_bytes(bn: int, stages: int) -> int:
    return stages * (2 * BM * 128 + 2 * bn * 128) + 1024  # + the round-up to a 1024-byte boundary


def compile_cubin(bn: int, stages: int, terms: int, pipe: int = 0) -> bytes:
    from autotune.codegen.nvrtc import compile_source

    built = compile_source(source(bn, stages, terms, pipe), f"wgmma_lab_{bn}_{stages}_{terms}_{pipe}", "sm_90a")
    if not built.ok:
        raise SystemExit(f"NVRTC: {built.log}")
    return built.cubin


def round_up(x: int, to: int) -> int:
    return -(-x // to) * to


class Variant:
    def __init__(self, cp, bn: int, stages: int, terms: int, pipe: int, folder: Path):
        self.bn, self.stages, self.terms, self.pipe = bn, stages, terms, pipe
        path = folder / f"lab_{bn}_{stages}_{terms}_{pipe}.cubin"
        path.write_bytes(compile_cubin(bn, stages, terms, pipe))
        module = cp.RawModule(path=str(path))
        self.split_a, self.split_bt = module.get_function("split_a"), module.get_function("split_bt")
        self.split_a4 = module.get_function("split_a4")
        self.product = module.get_function("product")
        self.product.max_dynamic_shared_size_bytes = shared_bytes(bn, stages)
        self.cp = cp

    @property
    def name(self) -> str:
        return f"BN{self.bn}_S{self.stages}_T{self.terms}_P{self.pipe}"

    def plan(self, M: int, N: int, K: int):
        cp, np = self.cp, __import__("numpy")
        Mp, Np, Kp = round_up(M, BM), round_up(N, self.bn), round_up(K, BK)
        W = cp.empty(2 * Mp * Kp + 2 * Np * Kp, dtype=cp.float32)
        i32 = np.int32

        def split(A, B):
            if K % 4 == 0 and A.data.ptr % 16 == 0:  # float4 loads of A (and stores of W: Kp % 32 == 0)
                self.split_a4((-(-Kp // 1024), Mp), (256,), (A, W, i32(M), i32(K), i32(Mp), i32(Kp)))
            else:
                self.split_a((-(-Kp // 256), Mp), (256,), (A, W, i32(M), i32(K), i32(Mp), i32(Kp)))
            self.split_bt((Np // 32, Kp // 32), (32, 8), (B, W[2 * Mp * Kp:], W[2 * Mp * Kp + Np * Kp:], i32(K), i32(N),
                                                          i32(Kp)))

        def product(C):
            grid = ((Mp // BM) * (Np // self.bn),)
            self.product(grid, (THREADS,), (W, C, i32(M), i32(N), i32(Mp), i32(Np), i32(Kp)),
                         shared_mem=shared_bytes(self.bn, self.stages))

        return split, product


def shapes_of(text: str) -> list[tuple[int, int, int]]:
    out = []
    for item in text.split(","):
        dims = [int(v) for v in item.split("x")]
        out.append(tuple(dims * 3 if len(dims) == 1 else dims))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="131x67x93,4096,2048,8192,4000,4097x4095x4093")
    parser.add_argument("--out", help="JSON lines of the results")
    args = parser.parse_args()
    import cupy as cp
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    folder = Path(tempfile.mkdtemp())
    variants = [Variant(cp, *v, folder) for v in VARIANTS]
    rows = []
    for M, N, K in shapes_of(args.shapes):
        g = torch.Generator(device="cuda").manual_seed(0)
        A = torch.rand(M, K, device="cuda", generator=g) * 2 - 1
        B = torch.rand(K, N, device="cuda", generator=g) * 2 - 1
        ref = A.double() @ B.double()
        C = torch.empty(M, N, device="cuda")

        def error(x) -> float:
            return float(torch.linalg.norm(x.double() - ref) / torch.linalg.norm(ref))

        cublas_ms = time_ms(torch, lambda: torch.matmul(A, B, out=C))
        err_cublas = error(torch.matmul(A, B))
        a, b, c = cp.from_dlpack(A), cp.from_dlpack(B), cp.from_dlpack(C)
        twins = {}  # (BN, TERMS) -> C of the PIPE=0 variant: PIPE=1 adds the same numbers in the same order
        for v in variants:
            split, product = v.plan(M, N, K)
            C.fill_(float("nan"))
            split(a, b)
            product(c)
            torch.cuda.synchronize()
            err = error(C)
            if not v.pipe:
                twins.setdefault((v.bn, v.terms), C.clone())
            twin = twins.get((v.bn, v.terms)) if v.pipe else None
            same = None if twin is None else bool(torch.equal(C, twin))
            split_ms = time_ms(torch, lambda: split(a, b))
            product_ms = time_ms(torch, lambda: product(c))
            total_ms = time_ms(torch, lambda: (split(a, b), product(c)))
            verdict = ("WRONG" if not err <= 1e-3 else "within 2x cuBLAS's error" if err <= 2 * err_cublas
                       else "over 2x cuBLAS's error")  # not err <= ...: NaN is wrong
            row = {"M": M, "N": N, "K": K, "variant": v.name, "split_ms": split_ms, "product_ms": product_ms,
                   "ours_ms": total_ms, "cublas_ms": cublas_ms, "err_ours": err, "err_cublas": err_cublas,
                   "tflops": 2 * M * N * K / total_ms / 1e9, "x_cublas": cublas_ms / total_ms, "verdict": verdict,
                   "bitwise_pipe0": same}
            rows.append(row)
            print(f"{M}x{N}x{K} {v.name}: split {split_ms:.3f} + product {product_ms:.3f} = {total_ms:.3f} ms "
                  f"({row['tflops']:.1f} TFLOP/s, {row['x_cublas']:.2f}x cuBLAS {cublas_ms:.3f} ms); "
                  f"error {err:.2e} (cuBLAS {err_cublas:.2e}): {verdict}"
                  + ("" if same is None else "; bitwise PIPE=0's" if same else "; DIFFERS from PIPE=0's"), flush=True)
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
