"""The correctness check on the GPU: a kernel's output against the cuBLAS reference, both in
device memory, reduced in double precision to three sums, so that verifying a 4096 x 4096
output copies 32 KiB to the host instead of 64 MiB and sums 16 M squares on the GPU instead
of in numpy (together about 0.15 s per trial on the H200 before).

The answer means exactly what reference.relative_error computes on the host (which the CPU
emulator and `autotune verify` keep using): ||C - ref||_F / ||ref||_F in float64; inf when any
value of C is NaN or infinite (a NaN-poisoned output never written); the absolute error when
the reference is all zeros. This module holds the kernel and the host's last step; the
launch is in cuda_backend.py (GpuCompare).

The reference now lives in device memory beside the output, where a kernel that writes past its
output can overwrite it. So each comparison also sums the reference itself (its squares and its
values, in a fixed order: bit for bit the same while it is untouched); the backend compares those
with the sums taken when the reference was made, and restores it from the host copy if they
differ (that kernel is wrong: it wrote outside its output).

SOURCE64 is the same kernel reading a float64 reference (the fp32-tc contract's DGEMM product).

ELEMENTS_SOURCE checks the FP32 contract's elementwise bound (reference.element_bound): each
output against factor * (|A| . |B|), the scale cuBLAS made beside the reference; it returns the
output furthest beyond its bound (what reference.element_violation names) and the scale's own sum,
which guards the scale as ref_sums guards the reference.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

NAME = "autotune_compare_sums"
THREADS = 256  # per block; a power of two, for the tree reduction
MAX_BLOCKS = 1024  # enough to fill any GPU; each thread loops over its grid-stride share
SUMS = 4  # per block: sum (C - ref)^2, sum ref^2, count of non-finite C, sum ref

# Each block reduces its grid-stride share of the n elements to SUMS partial sums, written to
# partials[SUMS * block + 0..3]; the host adds the blocks' partials in a fixed order, so the
# result does not depend on the order blocks ran in (no atomics). The count is kept in a double:
# exact up to 2**53 elements. A non-finite C value is counted and left out of the squares, which
# then stay finite (the count alone decides that the error is inf).
_SOURCE = r"""
#define THREADS %(threads)d

extern "C" __global__ void __launch_bounds__(THREADS)
%(name)s(const float* __restrict__ c, const %(ref_type)s* __restrict__ ref, long long n, double* __restrict__ partials)
{
    __shared__ double diff2[THREADS], ref2[THREADS], bad[THREADS], ref1[THREADS];
    double d = 0.0, r = 0.0, b = 0.0, s = 0.0;
    for (long long i = (long long)blockIdx.x * THREADS + threadIdx.x; i < n; i += (long long)gridDim.x * THREADS) {
        double ci = c[i], ri = ref[i];
        if (isfinite(ci)) {
            d += (ci - ri) * (ci - ri);
        } else {
            b += 1.0;
        }
        r += ri * ri;
        s += ri;
    }
    diff2[threadIdx.x] = d;
    ref2[threadIdx.x] = r;
    bad[threadIdx.x] = b;
    ref1[threadIdx.x] = s;
    __syncthreads();
    for (int half = THREADS / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) {
            diff2[threadIdx.x] += diff2[threadIdx.x + half];
            ref2[threadIdx.x] += ref2[threadIdx.x + half];
            bad[threadIdx.x] += bad[threadIdx.x + half];
            ref1[threadIdx.x] += ref1[threadIdx.x + half];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        partials[4 * blockIdx.x + 0] = diff2[0];
        partials[4 * blockIdx.x + 1] = ref2[0];
        partials[4 * blockIdx.x + 2] = bad[0];
        partials[4 * blockIdx.x + 3] = ref1[0];
    }
}
"""
SOURCE = _SOURCE % {"threads": THREADS, "name": NAME, "ref_type": "float"}
# the same against a float64 reference (the fp32-tc contract: cuBLAS DGEMM's product)
NAME64 = "autotune_compare_sums_f64"
SOURCE64 = _SOURCE % {"threads": THREADS, "name": NAME64, "ref_type": "double"}


# Each block finds, over its grid-stride share, the output with the largest ratio of its error to
# its bound (a zero bound: infinite where the error is not zero), keeping that ratio, its index (a
# double: exact up to 2**53), error and bound, and sums the scale in a fixed order; the host picks
# the largest ratio among the blocks. A NaN output compares false and is skipped: the Frobenius
# check, which comes first, already fails it.
ELEMENTS_NAME = "autotune_compare_elements"
ELEMENT_SLOTS = 5  # per block: ratio, index, error, bound, sum of the scale
ELEMENTS_SOURCE = r"""
#define THREADS %(threads)d

extern "C" __global__ void __launch_bounds__(THREADS)
%(name)s(const float* __restrict__ c, const float* __restrict__ ref, const float* __restrict__ scale, double factor,
         long long n, double* __restrict__ partials)
{
    __shared__ double ratio[THREADS], at[THREADS], err[THREADS], bound[THREADS], total[THREADS];
    double r = -1.0, i0 = -1.0, e = 0.0, b = 0.0, s = 0.0;
    for (long long i = (long long)blockIdx.x * THREADS + threadIdx.x; i < n; i += (long long)gridDim.x * THREADS) {
        const double d = fabs((double)c[i] - (double)ref[i]), lim = factor * (double)scale[i];
        const double q = lim > 0.0 ? d / lim : (d > 0.0 ? __longlong_as_double(0x7ff0000000000000LL) : 0.0);  // inf
        if (q > r) {
            r = q, i0 = (double)i, e = d, b = lim;
        }
        s += scale[i];
    }
    ratio[threadIdx.x] = r, at[threadIdx.x] = i0, err[threadIdx.x] = e, bound[threadIdx.x] = b, total[threadIdx.x] = s;
    __syncthreads();
    for (int half = THREADS / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) {
            const int o = threadIdx.x + half;
            if (ratio[o] > ratio[threadIdx.x]) {
                const int t = threadIdx.x;
                ratio[t] = ratio[o], at[t] = at[o], err[t] = err[o], bound[t] = bound[o];
            }
            total[threadIdx.x] += total[o];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        double* out = partials + 5 * blockIdx.x;
        out[0] = ratio[0], out[1] = at[0], out[2] = err[0], out[3] = bound[0], out[4] = total[0];
    }
}
""" % {"threads": THREADS, "name": ELEMENTS_NAME}


@dataclass(frozen=True)
class Worst:
    ratio: float  # the largest error / bound of any output (above 1: the bound is broken)
    index: int  # that output's, row-major
    error: float
    bound: float
    scale_sum: float  # the scale's sum: unchanged, bit for bit, while the scale is


def worst_of(partials: np.ndarray) -> Worst:
    """The output furthest beyond its bound, from the blocks' partials (shape (blocks, ELEMENT_SLOTS))."""
    rows = np.asarray(partials, dtype=np.float64).reshape(-1, ELEMENT_SLOTS)
    ratio, index, error, bound, _ = rows[int(np.argmax(rows[:, 0]))]
    return Worst(float(ratio), int(index), float(error), float(bound), float(rows[:, 4].sum()))


def blocks_for(n: int) -> int:
    """Blocks to launch for n elements: one per THREADS elements, at most MAX_BLOCKS."""
    return max(1, min(MAX_BLOCKS, math.ceil(n / THREADS)))


@dataclass(frozen=True)
class Comparison:
    error: float  # what reference.relative_error would say
    ref_sums: tuple[float, float]  # sum ref^2 and sum ref: unchanged, bit for bit, while the reference is


def from_partials(partials: np.ndarray) -> Comparison:
    """The comparison from the blocks' partial sums (shape (blocks, SUMS)), added in a fixed order."""
    diff2, ref2, bad, ref1 = np.asarray(partials, dtype=np.float64).reshape(-1, SUMS).sum(axis=0)
    return Comparison(relative(float(diff2), float(ref2), float(bad)), (float(ref2), float(ref1)))


def relative(diff2: float, ref2: float, bad: float) -> float:
    """||C - ref||_F / ||ref||_F from the sums, as reference.relative_error defines it."""
    if bad > 0:
        return float("inf")
    diff, scale = math.sqrt(diff2), math.sqrt(ref2)
    return diff / scale if scale > 0 else diff  # all-zero reference: the absolute error
