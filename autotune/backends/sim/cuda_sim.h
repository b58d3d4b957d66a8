// cuda_sim.h: the CUDA built-ins our templates use, for compiling a rendered kernel
// UNCHANGED with the host g++ (it is force-included with -include).
//
// Execution model (see sim_main.cpp): the blocks of a grid run one after another; the
// threads of a block are cooperative fibers, and a fiber gives up the CPU only at
// __syncthreads(), a warp shuffle or __syncwarp(), or a failed mbarrier try (below). So a missing
// barrier is a wrong answer every time, not sometimes.
#pragma once

// Templates call the emulator's models (__sim_*) under this name, not under "no __CUDA_ARCH__": nvcc's
// host pass also parses device code without __CUDA_ARCH__, and knows none of them.
#define AUTOTUNE_SIM 1

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

// Built-in index types: CUDA's uint3 has unsigned members, so mixed int/unsigned
// arithmetic in a kernel behaves exactly as it does under nvcc.
struct uint3 {
    unsigned int x, y, z;
};
struct dim3 {
    unsigned int x = 1, y = 1, z = 1;
};
struct float2 {
    float x, y;
};
struct alignas(16) float4 {
    float x, y, z, w;
};
struct int2 {
    int x, y;
};
struct alignas(16) int4 {
    int x, y, z, w;
};

inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline int2 make_int2(int x, int y) { return {x, y}; }
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }

// The scheduler writes these before it resumes a fiber. The barrier below is an opaque
// call, so the compiler reloads them after every __syncthreads().
extern uint3 threadIdx;
extern uint3 blockIdx;
extern dim3 blockDim;
extern dim3 gridDim;
constexpr int warpSize = 32;

// Qualifiers. __shared__ becomes `static`: one array per kernel, shared by every fiber
// of the running block (blocks never overlap). Plain statics stay visible to
// AddressSanitizer, which puts redzones around them and so catches a walk off the end.
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __shared__ static
#define __constant__ static const
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
// Dynamic shared memory: no macro can make both `__shared__ float a[N];` and
// `extern __shared__ float s[];` valid, so build.py rewrites each one-line
// `extern __shared__ T name[];` into `T* const name = (T*)__sim_dynamic_shared;` (same
// line, so line numbers hold). The buffer holds launch.shared_bytes bytes, 16-aligned.
extern float* __sim_dynamic_shared;
extern size_t __sim_dynamic_bytes;  // its length: the launch's shared_bytes
// __restrict__ is a g++ keyword already; `#pragma unroll` is ignored by g++ (no -Wall).

// __LINE__ names the barrier, so that threads waiting at different __syncthreads()
// calls are reported as an error rather than silently released together.
extern "C" void __sim_syncthreads(int line);
#define __syncthreads() __sim_syncthreads(__LINE__)
// __syncwarp is a meeting of the warp's lanes, as a shuffle is: what a lane wrote to shared memory
// before it is seen by the warp's other lanes after it (and without it, lane 0 reads first).
extern "C" void __sim_syncwarp();
inline void __syncwarp(unsigned = 0xffffffffu) { __sim_syncwarp(); }
// A warp shuffle is a meeting of the warp's lanes: each publishes its value and waits until
// every lane of its warp has reached a shuffle (sim_main.cpp), then reads its source lane's.
extern "C" float __sim_shfl_xor(float v, int lane_mask, int width);
inline float __shfl_xor_sync(unsigned, float v, int lane_mask, int width = warpSize) {
    return __sim_shfl_xor(v, lane_mask, width);
}
// A 64-bit shuffle, as CUDA's overload for unsigned long long: the two halves' bits, each through a float
// slot (copied, never computed on, so any bit pattern comes back as it went).
inline unsigned long long __shfl_xor_sync(unsigned mask, unsigned long long v, int lane_mask, int width = warpSize);
// A warp's lanes meet the same way to pool `count` floats each (at most 16): every lane gets all
// 32 lanes' values, lane-major, in `all`. The tensor-core MMA below is built on it.
extern "C" void __sim_warp_gather(const float* mine, int count, float* all);
// A kernel asked the emulator for something it does not model (a wgmma layout, a shared address of a
// static __shared__ array): "SIM-ERROR kind: kernel NAME: block ... thread ...: what" on stderr, and exit.
extern "C" [[noreturn]] void __sim_fail(const char* kind, const char* what);
inline void __threadfence() {}
inline void __threadfence_block() {}

template <class T>
inline T __ldg(const T* p) { return *p; }
template <class T>
inline T __ldcg(const T* p) { return *p; }

// Atomics: the threads of a block never run concurrently here, and blocks run one after
// another, so a plain read-modify-write is atomic. A split-K block that waits on a turnstile
// finds its predecessor (lower z) finished, as blocks run in order with z slowest.
inline unsigned atomicAdd(unsigned* p, unsigned v) { const unsigned old = *p; *p = old + v; return old; }
inline int atomicAdd(int* p, int v) { const int old = *p; *p = old + v; return old; }
inline float atomicAdd(float* p, float v) { const float old = *p; *p = old + v; return old; }
inline unsigned atomicExch(unsigned* p, unsigned v) { const unsigned old = *p; *p = v; return old; }
inline unsigned atomicCAS(unsigned* p, unsigned expected, unsigned v) {
    const unsigned old = *p;
    if (old == expected) *p = v;
    return old;
}

using std::max;
using std::min;
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __frcp_rn(float a) { return 1.0f / a; }

inline unsigned __float_as_uint(float x) { unsigned u; std::memcpy(&u, &x, sizeof u); return u; }
inline float __uint_as_float(unsigned u) { float x; std::memcpy(&x, &u, sizeof x); return x; }
inline double __longlong_as_double(long long u) { double x; std::memcpy(&x, &u, sizeof x); return x; }
inline unsigned long long __shfl_xor_sync(unsigned, unsigned long long v, int lane_mask, int width) {
    const unsigned lo = __float_as_uint(__sim_shfl_xor(__uint_as_float(static_cast<unsigned>(v)), lane_mask, width));
    const unsigned hi = __float_as_uint(__sim_shfl_xor(__uint_as_float(static_cast<unsigned>(v >> 32)), lane_mask, width));
    return (static_cast<unsigned long long>(hi) << 32) | lo;
}
// leading zero bits of a 64-bit integer (64 for 0), as CUDA's __clzll
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }

// cvt.rna.tf32.f32: to nearest with ties away from zero, by the bit arithmetic the GPU runs for
// it (sm_80+ SASS: add half a TF32 unit, 0x1000, to the bits unless |x| is infinite or NaN,
// then clear the low 13 bits). A carry into the exponent rounds up to the next binade or to inf.
inline float __sim_to_tf32_bits(float x) { return __uint_as_float(__float_as_uint(x) & 0xffffe000u); }

inline float __sim_to_tf32(float x) {
    unsigned u = __float_as_uint(x);
    if (std::fabs(x) < INFINITY) u += 0x1000u;
    return __uint_as_float(u & 0xffffe000u);
}

// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 for one warp: D = A*B + D with A 16x8, B
// 8x8, D 16x8, in the PTX ISA's per-lane fragments (g = lane / 4, t = lane % 4):
// a = A[g][t], A[g+8][t], A[g][t+4], A[g+8][t+4]; b = B[t][g], B[t+4][g];
// d = D[g][2t], D[g][2t+1], D[g+8][2t], D[g+8][2t+1]. The lanes meet (every lane of the warp
// must call it, as on the GPU) and each computes its own four outputs from the pooled fragments.
// The tensor core reads only the TF32 bits of A and B (the low 13 are ignored), so products are
// exact in FP32; each output adds its 8 products to D in k order in FP32. The GPU's order and
// internal precision of that sum are not documented: results may differ from the GPU's in the
// last bits of the accumulation, never in which values are multiplied.
inline void __sim_mma_m16n8k8_tf32(float (&d)[4], const float (&a)[4], const float (&b)[2]) {
    const float mine[6] = {a[0], a[1], a[2], a[3], b[0], b[1]};
    float all[32 * 6];
    __sim_warp_gather(mine, 6, all);
    const auto A = [&](int row, int k) {  // the lane and register that hold A[row][k]
        return __sim_to_tf32_bits(all[((row % 8) * 4 + k % 4) * 6 + (row >= 8) + 2 * (k >= 4)]);
    };
    const auto B = [&](int k, int col) { return __sim_to_tf32_bits(all[(col * 4 + k % 4) * 6 + 4 + (k >= 4)]); };
    const int lane = static_cast<int>(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % warpSize;
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; ++i) {
        const int row = g + 8 * (i >= 2), col = 2 * t + i % 2;
        float sum = d[i];
        for (int k = 0; k < 8; ++k) sum += A(row, k) * B(k, col);
        d[i] = sum;
    }
}

// mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 for one warp: D = A*B + D with A 16x32, B 32x8
// int8 and D 16x8 int32, in the PTX ISA's per-lane fragments ("Matrix Fragments for mma.m16n8k32",
// .s8; g = lane / 4, t = lane % 4, byte j = 0..3 of a word, low first): a[r] byte j =
// A[g + 8 (r % 2)][4t + 16 (r / 2) + j]; b[r] byte j = B[4t + 16 r + j][g]; d = D[g][2t], D[g][2t+1],
// D[g+8][2t], D[g+8][2t+1] (as the TF32 MMA's above).
// The lanes meet (every lane of the warp must call it) and pool their 6 words, their bits moved
// unchanged (memcpy: the gather carries floats, and a value conversion would change them); each lane
// computes its own four outputs. The GPU's sum is exact integer arithmetic and, without .satfinite,
// "the accumulated value is wrapped" on overflow (PTX ISA, mma, "Precision and rounding", "Integer
// operations"; .satfinite would clamp to MIN_INT32..MAX_INT32 instead): modulo 2^32, which is the same
// whatever the order of the sum. So the model sums exactly in 64 bits (32 products of at most 2^14 and
// one int32 cannot overflow that) and keeps the low 32 bits as two's complement: bit-exact with the GPU.
// Not modelled: .satfinite, .u8 operands, other shapes.
inline int __sim_s8(const float* all, int lane, int word, int byte) {  // byte `byte` of a pooled word, sign-extended
    unsigned w;
    std::memcpy(&w, all + lane * 6 + word, sizeof w);
    const int v = int((w >> (8 * byte)) & 0xffu);
    return v - ((v & 0x80) << 1);
}

inline int __sim_wrap_s32(long long x) {  // the low 32 bits as two's complement, without implementation-defined casts
    const unsigned low = static_cast<unsigned>(static_cast<unsigned long long>(x));
    int r;
    std::memcpy(&r, &low, sizeof r);
    return r;
}

inline void __sim_mma_m16n8k32_s8(int (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    float mine[6], all[32 * 6];
    std::memcpy(mine, a, sizeof a);
    std::memcpy(mine + 4, b, sizeof b);
    __sim_warp_gather(mine, 6, all);
    const auto A = [&](int row, int k) {  // the lane, word and byte that hold A[row][k]
        return __sim_s8(all, (row % 8) * 4 + k % 16 / 4, (row >= 8) + 2 * (k >= 16), k % 4);
    };
    const auto B = [&](int k, int col) { return __sim_s8(all, col * 4 + k % 16 / 4, 4 + (k >= 16), k % 4); };
    const int lane = static_cast<int>(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % warpSize;
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; ++i) {
        const int row = g + 8 * (i >= 2), col = 2 * t + i % 2;
        long long sum = d[i];
        for (int k = 0; k < 32; ++k) sum += static_cast<long long>(A(row, k)) * B(k, col);
        d[i] = __sim_wrap_s32(sum);
    }
}

// ---- Shared-memory addresses: cvta.to.shared and back ----
// Kernels that name shared memory by its 32-bit address (cp.async's destination, wgmma's descriptors)
// use only dynamic shared memory here (the extern __shared__ buffer). In the emulator byte i of that
// buffer has the shared address __SIM_SHARED_BASE + i. The base is 16: aligned as CUDA aligns dynamic
// shared memory (16 bytes), and as far past a 1024-byte boundary as that allows, so a kernel that
// rounds its base up to 1024 bytes (the 128-byte swizzle's period) spends 1008 bytes of its buffer on
// it, the most a GPU could make it spend: a buffer without that slack is overrun here (tf32x3wg's is
// launch.shared_bytes = its stages + 1024).
constexpr unsigned __SIM_SHARED_BASE = 16;

inline size_t __cvta_generic_to_shared(const void* p) {
    const auto at = reinterpret_cast<unsigned long long>(p), base = reinterpret_cast<unsigned long long>(__sim_dynamic_shared);
    if (!__sim_dynamic_shared || at < base || at > base + __sim_dynamic_bytes)
        __sim_fail("shared", "__cvta_generic_to_shared of a pointer outside the dynamic shared memory (the emulator "
                             "gives shared addresses to extern __shared__ memory only)");
    return __SIM_SHARED_BASE + size_t(at - base);
}

// The bytes at shared address addr (as __cvta_generic_to_shared gives them), `bytes` of them inside the
// dynamic shared memory, else a SIM-ERROR.
inline void* __sim_shared_at(unsigned addr, unsigned bytes) {
    if (addr < __SIM_SHARED_BASE || size_t(addr - __SIM_SHARED_BASE) + bytes > __sim_dynamic_bytes) {
        char what[200];
        std::snprintf(what, sizeof what, "shared address %u (+%u bytes) lies outside the dynamic shared memory "
                      "(addresses %u .. %zu)", addr, bytes, __SIM_SHARED_BASE, __SIM_SHARED_BASE + __sim_dynamic_bytes);
        __sim_fail("shared", what);
    }
    return reinterpret_cast<unsigned char*>(__sim_dynamic_shared) + (addr - __SIM_SHARED_BASE);
}

// ---- wgmma.mma_async.sync.aligned.m64nNk8.f32.tf32.tf32 d, desc-a, desc-b, scale-d, 1, 1 ----
// PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions" (wgmma, sm_90a):
// a warpgroup (4 warps, 128 threads) computes D (64 x N) = A (64 x 8) * B (8 x N) + (scale-d ? D : 0),
// N a multiple of 8 up to 256, with A and B in shared memory, each named by a 64-bit matrix descriptor
// (section "Matrix Descriptor", #asynchronous-warpgroup-level-matrix-shared-memory-layout-matrix-descriptor):
//   bits  0-13  start address >> 4        bits 16-29  leading dimension byte offset (LBO) >> 4
//   bits 32-45  stride dimension byte offset (SBO) >> 4
//   bits 49-51  matrix base offset        bits 62-63  swizzle mode: 0 none, 1 128-byte, 2 64-byte, 3 32-byte
// TF32 operands are K-major only (no transpose), so B is stored as N rows of K, like A's 64 rows of K.
// Modelled: the one layout tf32x3wg uses, K-major with the 128-byte swizzle, SBO 1024 (eight 128-byte rows
// apart, "Shared Memory Matrix Layout": core matrices of 8 rows), base offset 0; the LBO is not used by
// a K-major swizzled layout whose K (8 TF32, 32 bytes) lies within one swizzle row, so any is taken. Any
// other descriptor is a SIM-ERROR, so that a template that changes the layout fails loudly here rather
// than being computed by a model of a layout it does not use. Element (r, k) of an operand (row r of A,
// or column r of B) is at
//   logical  = start + (r / 8) * SBO + (r % 8) * 128 + 4 k
//   physical = logical ^ (((logical >> 7) & 7) << 4)
// (the 128-byte swizzle: address bits 4-6, the 16-byte chunk in a 128-byte row, XORed with bits 7-9,
// the row in the 1024-byte period; absolute shared addresses, so the tiles start on 1024 bytes, and a
// k-step of 8 within the row is start + 32 bytes). The accumulators ("Register Fragments", the wgmma
// D fragment of .m64nNk8 with .f32): thread t = tid % 128 of the warpgroup, warp w = t / 32, lane
// l = t % 32, g = l / 4, q = l % 4, holds N/2 floats d[4j + 2h + c] = D(16w + g + 8h, 8j + 2q + c) for
// j < N/8 and h, c in {0, 1}.
// The model: every thread computes its own N/2 outputs from shared memory, so the warpgroup need not
// meet; the tensor core reads only the TF32 bits of A and B (__sim_to_tf32_bits), so every product is
// exact in FP32, and each output adds its 8 products to D (or to 0) in k order in FP32. The GPU's order
// and internal precision of that sum are not documented: results may differ from the GPU's in the last
// bits of the accumulation, never in which values are multiplied. A limit of the model: the MMA
// happens at issue (wgmma.fence, commit_group and wait_group do nothing here), so the emulator cannot
// catch a missing wait_group, a missing fence.proxy.async, or shared memory overwritten while an MMA
// still reads it; only the GPU (and the wait counts' reasoning in the template) can.
inline unsigned __sim_wgmma_start(unsigned long long desc, const char* operand) {
    constexpr unsigned long long kLayout = (64ull << 32) | (1ull << 62);  // SBO 1024 >> 4, 128-byte swizzle
    const unsigned long long layout = desc & ~0x3FFFull & ~(0x3FFFull << 16);  // all but start and LBO
    if (layout != kLayout) {
        char what[300];
        std::snprintf(what, sizeof what, "wgmma descriptor of %s 0x%016llx: SBO %llu bytes, base offset %llu, swizzle "
                      "mode %llu; the emulator models only K-major tiles with the 128-byte swizzle (mode 1), SBO 1024 "
                      "and base offset 0", operand, desc, ((desc >> 32) & 0x3FFF) << 4, (desc >> 49) & 7, desc >> 62);
        __sim_fail("wgmma", what);
    }
    return unsigned(desc & 0x3FFF) << 4;
}

// Row r's 8 TF32 values of K (k = 0..7) of an operand starting at shared address `start`.
inline void __sim_wgmma_row(unsigned start, int r, float (&out)[8]) {
    for (int k = 0; k < 8; ++k) {
        const unsigned logical = start + unsigned(r / 8) * 1024u + unsigned(r % 8) * 128u + 4u * unsigned(k);
        const unsigned physical = logical ^ (((logical >> 7) & 7u) << 4);
        out[k] = __sim_to_tf32_bits(*static_cast<const float*>(__sim_shared_at(physical, 4)));
    }
}

// One warpgroup MMA's part for this thread, from operand rows read by Row (row(start, r, out): row r's K values),
// summed in k order in Sum (float for TF32; unsigned for s8, whose wrap modulo 2^32 is the ISA's).
template <typename Sum, typename Elem, int K, typename Out, typename Row>
inline void __sim_wgmma_part(Out* d, int n, unsigned long long desc_a, unsigned long long desc_b, bool accumulate,
                             const char* shape, Row row) {
    if (n < 8 || n > 256 || n % 8) __sim_fail("wgmma", shape);
    const unsigned a = __sim_wgmma_start(desc_a, "A"), b = __sim_wgmma_start(desc_b, "B");
    const int t = static_cast<int>(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % 128;
    const int w = t / 32, g = t % 32 / 4, q = t % 4;
    Elem rows[2][K], col[K];
    for (int h = 0; h < 2; ++h) row(a, 16 * w + g + 8 * h, rows[h]);
    for (int j = 0; j < n / 8; ++j)
        for (int c = 0; c < 2; ++c) {
            row(b, 8 * j + 2 * q + c, col);
            for (int h = 0; h < 2; ++h) {
                Sum sum = accumulate ? Sum(d[4 * j + 2 * h + c]) : Sum(0);
                for (int k = 0; k < K; ++k) sum += Sum(rows[h][k] * col[k]);
                d[4 * j + 2 * h + c] = Out(sum);
            }
        }
}

inline void __sim_wgmma_tf32(float* d, int n, unsigned long long desc_a, unsigned long long desc_b, bool accumulate) {
    __sim_wgmma_part<float, float, 8>(d, n, desc_a, desc_b, accumulate,
                                      "wgmma m64nNk8: N must be a multiple of 8 from 8 to 256", __sim_wgmma_row);
}

// ---- wgmma.mma_async.sync.aligned.m64nNk32.s32.s8.s8 d, desc-a, desc-b, scale-d (the ozakiwg family) ----
// The integer form takes the same descriptors as the TF32 one above (K-major only, modelled with the
// 128-byte swizzle and SBO 1024 alone) and has the same D fragment, N/2 int32 a thread; a k-step is 32
// int8, again 32 bytes of a row, so element (r, k) is the byte at logical start + (r / 8) * 1024 +
// (r % 8) * 128 + k, swizzled as above. Integer products and sums are exact; without .satfinite the ISA
// says an overflowing accumulation wraps modulo 2^32, which the model does with unsigned sums.
inline void __sim_wgmma_row_s8(unsigned start, int r, int (&out)[32]) {
    for (int k = 0; k < 32; ++k) {
        const unsigned logical = start + unsigned(r / 8) * 1024u + unsigned(r % 8) * 128u + unsigned(k);
        const unsigned physical = logical ^ (((logical >> 7) & 7u) << 4);
        out[k] = *static_cast<const signed char*>(__sim_shared_at(physical, 1));
    }
}

inline void __sim_wgmma_s8(int* d, int n, unsigned long long desc_a, unsigned long long desc_b, bool accumulate) {
    __sim_wgmma_part<unsigned, int, 32>(d, n, desc_a, desc_b, accumulate,
                                        "wgmma m64nNk32: N must be a multiple of 8 from 8 to 256", __sim_wgmma_row_s8);
}

// ---- mbarrier (sm_80+) and cp.async.bulk (sm_90): a producer that hands shared memory to consumers ----
// PTX ISA, "Parallel Synchronization and Communication Instructions: mbarrier": an mbarrier is 8 bytes
// of shared memory with a current phase, a count of arrivals pending in it and a count of transaction
// bytes pending; the phase completes when both reach zero, and the next one starts with the count
// given to mbarrier.init. try_wait.parity P is true once the phase of parity P has completed, i.e. while
// the current phase's parity is not P. cp.async.bulk copies bytes into shared memory and then counts
// them off its mbarrier's pending transaction bytes (complete_tx); mbarrier.arrive.expect_tx adds to
// them first. The model keeps that state in the barrier's own 8 bytes (a layout of its own: the GPU's
// is opaque), checks a mark that init wrote there (shared memory starts as 0xFF bytes), and copies
// at issue, a legal schedule: a copy can complete at any time after it is issued. A failed try yields
// (sim_main.cpp), so a thread spinning on a phase that never completes is reported as a deadlock.
extern "C" void __sim_yield();
extern "C" void __sim_mbarrier_event();

struct __SimMbarrier {  // 8 bytes, as on the GPU
    int tx;  // transaction bytes pending: below zero when a copy completes before its expect_tx
    unsigned pending : 11, expected : 11, phase : 1, mark : 9;  // arrivals still pending, and per phase
    static constexpr unsigned kMark = 0x15b, kMaxCount = 2047;
};
static_assert(sizeof(__SimMbarrier) == 8, "an mbarrier is 8 bytes");

inline __SimMbarrier& __sim_mbarrier_at(unsigned addr, bool initialized = true) {
    if (addr % 8) __sim_fail("mbarrier", "an mbarrier must be 8-byte aligned");
    auto& b = *static_cast<__SimMbarrier*>(__sim_shared_at(addr, sizeof(__SimMbarrier)));
    if (initialized && b.mark != __SimMbarrier::kMark) __sim_fail("mbarrier", "an mbarrier used before mbarrier.init");
    return b;
}

inline void __sim_mbarrier_settle(__SimMbarrier& b) {
    if (b.pending == 0 && b.tx == 0) {
        b.phase ^= 1u;
        b.pending = b.expected;
    }
    __sim_mbarrier_event();
}

inline void __sim_mbarrier_init(unsigned addr, unsigned count) {
    if (count < 1 || count > __SimMbarrier::kMaxCount) __sim_fail("mbarrier", "mbarrier.init: the model counts 1 .. 2047 arrivals");
    __SimMbarrier& b = __sim_mbarrier_at(addr, false);
    b.tx = 0;
    b.pending = b.expected = count;
    b.phase = 0;
    b.mark = __SimMbarrier::kMark;
    __sim_mbarrier_event();
}

// mbarrier.arrive (tx = 0) or mbarrier.arrive.expect_tx (tx bytes expected first).
inline void __sim_mbarrier_arrive(unsigned addr, unsigned tx) {
    __SimMbarrier& b = __sim_mbarrier_at(addr);
    if (b.pending == 0) __sim_fail("mbarrier", "more arrivals on an mbarrier than its phase expects");
    b.tx += static_cast<int>(tx);
    --b.pending;
    __sim_mbarrier_settle(b);
}

inline bool __sim_mbarrier_try_wait(unsigned addr, unsigned parity) {
    if (__sim_mbarrier_at(addr).phase != (parity & 1u)) return true;
    __sim_yield();
    return false;
}

inline void __sim_bulk_copy(unsigned dst, const void* src, unsigned bytes, unsigned mbar) {
    if (bytes % 16 || dst % 16 || reinterpret_cast<unsigned long long>(src) % 16)
        __sim_fail("bulk copy", "cp.async.bulk needs a size, source and destination that are multiples of 16 bytes");
    std::memcpy(__sim_shared_at(dst, bytes), src, bytes);
    __SimMbarrier& b = __sim_mbarrier_at(mbar);
    b.tx -= static_cast<int>(bytes);
    __sim_mbarrier_settle(b);
}
