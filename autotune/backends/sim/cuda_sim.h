// cuda_sim.h: the CUDA built-ins our templates use, for compiling a rendered kernel
// UNCHANGED with the host g++ (it is force-included with -include).
//
// Execution model (see sim_main.cpp): the blocks of a grid run one after another; the
// threads of a block are cooperative fibers, and a fiber gives up the CPU only at
// __syncthreads(). So a missing barrier is a wrong answer every time, not sometimes.
#pragma once

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
// __restrict__ is a g++ keyword already; `#pragma unroll` is ignored by g++ (no -Wall).

// __LINE__ names the barrier, so that threads waiting at different __syncthreads()
// calls are reported as an error rather than silently released together.
extern "C" void __sim_syncthreads(int line);
#define __syncthreads() __sim_syncthreads(__LINE__)
inline void __syncwarp(unsigned = 0xffffffffu) {}  // lanes never run concurrently here
// A warp shuffle is a meeting of the warp's lanes: each publishes its value and waits until
// every lane of its warp has reached a shuffle (sim_main.cpp), then reads its source lane's.
extern "C" float __sim_shfl_xor(float v, int lane_mask, int width);
inline float __shfl_xor_sync(unsigned, float v, int lane_mask, int width = warpSize) {
    return __sim_shfl_xor(v, lane_mask, width);
}
// A warp's lanes meet the same way to pool `count` floats each (at most 16): every lane gets all
// 32 lanes' values, lane-major, in `all`. The tensor-core MMA below is built on it.
extern "C" void __sim_warp_gather(const float* mine, int count, float* all);
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
