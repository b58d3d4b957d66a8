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
