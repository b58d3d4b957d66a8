"""A roofline-style prediction from SASS counts: which pipe caps a kernel, and at what.

Three ceilings, each in TFLOP/s, and the prediction is the lowest of them:

fma     every FP32 lane retires one FFMA (2 FLOP) per clock.
shared  one shared-memory wavefront per SM per clock (32 banks x 4 B) against four
        warp-wide FFMA per clock (128 lanes). A kernel whose hot loop costs W wavefronts
        for F warp FFMA runs at most F/W warp FFMA per clock: the ceiling is
        peak * min(1, F / (4 W)). 2 loads per FFMA gives peak/8, 1.25 gives peak/5.
global  every operand read from DRAM once per tile: T/4 FLOP per byte for a T x T tile
        (2 FLOP per 8/T bytes), 1/4 for the naive kernel (two floats per FMA), and
        BM*BN / (2*(BM+BN)) for a blocked BM x BN tile (BM*BK + BK*BN floats per BK step
        for 2*BM*BN*BK FLOP). All are lower bounds on intensity: tiles that neighbouring
        blocks share are often served by L2, so real DRAM traffic is lower.

What a hot loop's shared loads cost in wavefronts, per family: explain.banks.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from autotune.errors import AutotuneError
from autotune.explain.banks import BANKS, WARP, shared_wavefronts
from autotune.explain.sass import SassCounts
from autotune.space import Config, Launch


@dataclass(frozen=True)
class DeviceSpec:
    name: str
    sm_count: int
    clock_mhz: float  # the clock the FMA ceiling assumes (boost)
    dram_gbps: float  # GB/s
    fp32_lanes_per_sm: int = 128
    shared_bytes_per_clock_per_sm: int = 32 * 4  # one wavefront
    regs_per_sm: int = 65536
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    shared_per_sm: int = 228 * 1024
    shared_per_block_max: int = 227 * 1024  # usable by one block after opting in
    reserved_shared_per_block: int = 1024  # the system's share of every block (sm_80+)
    reg_alloc_unit: int = 256  # registers are handed to a warp in chunks of this size
    # Hopper's dense TF32 tensor-core rate: 494.7 TFLOP/s on 132 SMs at 1830 MHz (the H100/H200 data
    # sheets) is 2048 FLOP per SM per clock. mma.sync reaches part of it; wgmma all.
    tf32_flop_per_clock_per_sm: int = 2048
    # The dense INT8 tensor-core rate in operations (a multiply-add is two) per SM per clock; None where no
    # data sheet gives it, and the model then gives INT8 kernels (IMMA) no ceiling. Set in the presets below.
    int8_ops_per_clock_per_sm: int | None = None

    @classmethod
    def from_properties(cls, props: Any, name: str = "device", clock_mhz: float | None = None,
                        dram_gbps: float | None = None) -> DeviceSpec:
        """From cuda.core's Device().properties (or anything with the same attribute names).

        clock_rate and memory_clock_rate are in kHz; CUDA 13 deprecates them, so a caller
        can pass clock_mhz / dram_gbps instead when the driver reports 0.
        """
        clock = clock_mhz or getattr(props, "clock_rate", 0) / 1000
        if not dram_gbps:  # double data rate: two transfers per memory clock
            mem_khz = getattr(props, "memory_clock_rate", 0)
            dram_gbps = 2 * mem_khz * 1e3 * getattr(props, "global_memory_bus_width", 0) / 8 / 1e9
        if not clock or not dram_gbps:
            raise AutotuneError("the device reports no clock or memory rate: pass clock_mhz and dram_gbps")
        return cls(
            name=name, sm_count=props.multiprocessor_count, clock_mhz=clock, dram_gbps=dram_gbps,
            regs_per_sm=props.max_registers_per_multiprocessor,
            max_threads_per_sm=props.max_threads_per_multiprocessor,
            max_blocks_per_sm=props.max_blocks_per_multiprocessor,
            shared_per_sm=props.max_shared_memory_per_multiprocessor,
            shared_per_block_max=props.max_shared_memory_per_block_optin,
            reserved_shared_per_block=props.reserved_shared_memory_per_block,
        )

    @property
    def fma_tflops(self) -> float:
        return self.sm_count * self.fp32_lanes_per_sm * 2 * self.clock_mhz * 1e6 / 1e12

    @property
    def tf32_tflops(self) -> float:
        """The tensor cores' dense TF32 rate (products of TF32 parts, FP32 sums)."""
        return self.sm_count * self.tf32_flop_per_clock_per_sm * self.clock_mhz * 1e6 / 1e12

    @property
    def int8_tops(self) -> float:
        """The tensor cores' dense INT8 rate (products of int8, int32 sums) in tera-operations per second."""
        if self.int8_ops_per_clock_per_sm is None:
            raise AutotuneError(f"no INT8 tensor-core rate for {self.name} (DeviceSpec.int8_ops_per_clock_per_sm): "
                                f"no ceiling for an INT8 kernel there")
        return self.sm_count * self.int8_ops_per_clock_per_sm * self.clock_mhz * 1e6 / 1e12


# Hopper's dense INT8 tensor-core rate: 1979 TOPS (3958 with sparsity, the H100 SXM and H200 data sheets) on 132
# SMs at 1830 MHz is 8192 operations per SM per clock, four times TF32's. That is wgmma's rate (IGMMA);
# mma.sync (IMMA) reaches only part of it, how much is not measured here.
HOPPER_INT8_OPS = 8192


PRESETS: dict[str, DeviceSpec] = {
    "h200": DeviceSpec("NVIDIA H200", sm_count=132, clock_mhz=1980, dram_gbps=4800,
                       int8_ops_per_clock_per_sm=HOPPER_INT8_OPS),
    "h100-sxm": DeviceSpec("NVIDIA H100 SXM", sm_count=132, clock_mhz=1980, dram_gbps=3350,
                       int8_ops_per_clock_per_sm=HOPPER_INT8_OPS),
}
DEFAULT_PRESET = "h200"  # where no preset names the GPU (or none is known): the board the project measures on

# The presets' boards by the names their drivers report. An H100 of HBM3 memory is the SXM board (the PCIe one
# has HBM2e, another clock and bandwidth, and no preset here).
GPU_NAMES: dict[str, tuple[str, ...]] = {"h200": ("NVIDIA H200",), "h100-sxm": ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM")}


def preset_for(gpu: str | None) -> str:
    """The preset of the GPU model named as the driver reports it, else DEFAULT_PRESET: a roofline drawn for the
    board the rows were measured on (an H100's DRAM floor is an H200's times 4800/3350)."""
    found = [name for name, prefixes in GPU_NAMES.items() if gpu and gpu.startswith(prefixes)]
    return found[0] if found else DEFAULT_PRESET


def spec_for(gpu: str | None) -> DeviceSpec:
    """The DeviceSpec of preset_for(gpu): what a row measured on that GPU is modelled with."""
    return PRESETS[preset_for(gpu)]


@dataclass(frozen=True)
class Occupancy:
    blocks_per_sm: int
    warps_per_sm: int
    limited_by: str  # "registers" | "shared" | "threads" | "blocks"


@dataclass(frozen=True)
class Prediction:
    fma_ceiling: float  # TFLOP/s
    shared_ceiling: float  # TFLOP/s; inf for a kernel with no shared loads
    global_ceiling: float  # TFLOP/s
    wavefronts_per_ffma: float
    intensity: float  # FLOP per DRAM byte
    occupancy: Occupancy
    predicted: float  # the lowest ceiling
    binding: str  # "fma" | "shared" | "global"


# --------------------------------------------------------------------------- occupancy

def occupancy(spec: DeviceSpec, launch: Launch, regs: int, static_shared: int) -> Occupancy:
    """Resident blocks per SM: the tightest of registers, shared memory, threads, blocks."""
    warps = math.ceil(launch.threads / WARP)
    reg_chunk = spec.reg_alloc_unit
    regs_per_warp = math.ceil(max(regs, 1) * WARP / reg_chunk) * reg_chunk
    block_shared = static_shared + launch.shared_bytes + spec.reserved_shared_per_block
    limits = {  # the hardware caps first, so a resource is named only when strictly tighter
        "threads": spec.max_threads_per_sm // (warps * WARP),
        "blocks": spec.max_blocks_per_sm,
        "registers": (spec.regs_per_sm // regs_per_warp) // warps,
        "shared": spec.shared_per_sm // block_shared,
    }
    limited_by = min(limits, key=lambda k: limits[k])  # min keeps the first on a tie
    blocks = limits[limited_by]
    return Occupancy(blocks, blocks * warps, limited_by)


# --------------------------------------------------------------------------- ceilings

def intensity(config: Config) -> float:
    """FLOP per DRAM byte if every operand load went to DRAM once per tile (the family's Family.intensity)."""
    if config.family.intensity is None:
        raise AutotuneError(f"no traffic model for family {config.family.name}: it declares no Family.intensity")
    return config.family.intensity(config.values)


def predict(spec: DeviceSpec, counts: SassCounts, launch: Launch, regs: int,
            static_shared: int, config: Config) -> Prediction:
    """The three ceilings, occupancy, and the lowest ceiling with the pipe that sets it."""
    if counts.igmma:
        return _predict_integer_warpgroup_mma(spec, counts, launch, regs, static_shared, config)
    if counts.imma:
        return _predict_integer_mma(spec, counts, launch, regs, static_shared, config)
    if counts.hgmma:
        return _predict_warpgroup_mma(spec, counts, launch, regs, static_shared, config)
    if counts.hmma:
        return _predict_tensor_cores(spec, counts, launch, regs, static_shared, config)
    fma = spec.fma_tflops
    waves = shared_wavefronts(config, counts)
    per_ffma = waves / counts.ffma if counts.ffma else 0.0
    ffma_per_clock = spec.fp32_lanes_per_sm / WARP  # 4 warp FFMA per SM per clock
    waves_per_clock = spec.shared_bytes_per_clock_per_sm / (BANKS * 4)
    shared = fma * min(1.0, waves_per_clock / (per_ffma * ffma_per_clock)) if per_ffma else math.inf
    return _bound(spec, config, fma, shared, per_ffma, occupancy(spec, launch, regs, static_shared))


def _bound(spec: DeviceSpec, config: Config, fma: float, shared: float, per_op: float, occ: Occupancy) -> Prediction:
    """The prediction from the compute and shared-memory ceilings, with the DRAM one (intensity) beside
    them; per_op: shared wavefronts per FFMA (per HMMA, per HGMMA in the tensor-core kernels)."""
    flop_per_byte = intensity(config)
    ceilings = {"fma": fma, "shared": shared, "global": flop_per_byte * spec.dram_gbps / 1000}
    binding = min(ceilings, key=lambda k: ceilings[k])
    return Prediction(fma_ceiling=fma, shared_ceiling=shared, global_ceiling=ceilings["global"],
                      wavefronts_per_ffma=per_op, intensity=flop_per_byte, occupancy=occ,
                      predicted=ceilings[binding], binding=binding)


HMMA_FLOP = 2 * 16 * 8 * 8  # one warp's mma.m16n8k8


def _predict_warpgroup_mma(spec: DeviceSpec, counts: SassCounts, launch: Launch, regs: int,
                           static_shared: int, config: Config) -> Prediction:
    """A wgmma kernel (HGMMA in its hot loop): "fma" is the TF32 rate over TERMS, in FP32 FLOP; "shared"
    is shared memory's 128 bytes per clock against what each HGMMA reads there, its A (64 x 8) and B
    (N x 8, read by both warpgroups of a block), four bytes each, for 2*64*N*8 FLOP."""
    terms = config.values.get("TERMS", 1)
    return _warpgroup_bound(spec, config, spec.tf32_tflops / terms, counts.hgmma, counts.hgmma_n, 8, 4, terms,
                            occupancy(spec, launch, regs, static_shared))


def _predict_integer_warpgroup_mma(spec: DeviceSpec, counts: SassCounts, launch: Launch, regs: int,
                                   static_shared: int, config: Config) -> Prediction:
    """An INT8 wgmma kernel (IGMMA in its hot loop: the ozakiwg family): "fma" is the INT8 rate over MODULI, in
    FP32 FLOP (each FP32 product costs MODULI INT8 products); "shared" is shared memory's 128 bytes per clock
    against what each IGMMA reads there, its A (64 x 32) and B (N x 32), a byte each."""
    moduli = config.values.get("MODULI", 1)
    return _warpgroup_bound(spec, config, spec.int8_tops / moduli, counts.igmma, counts.igmma_n, 32, 1, moduli,
                            occupancy(spec, launch, regs, static_shared))


def _warpgroup_bound(spec: DeviceSpec, config: Config, fma: float, mmas: int, n: int, k: int, element_bytes: int,
                     per_product: int, occupied: Occupancy) -> Prediction:
    """The bound of `mmas` wgmma m64nNk per pass of the hot loop, each counting 1/per_product of its FLOP toward
    the FP32 product, each reading (64 + N) * k operands of element_bytes from shared memory."""
    flop, bytes_read = mmas * 2 * 64 * n * k / per_product, mmas * (64 + n) * k * element_bytes
    shared = spec.sm_count * spec.clock_mhz * 1e6 * spec.shared_bytes_per_clock_per_sm * flop / bytes_read / 1e12
    return _bound(spec, config, fma, shared, bytes_read / 128 / mmas, occupied)


def _predict_tensor_cores(spec: DeviceSpec, counts: SassCounts, launch: Launch, regs: int,
                          static_shared: int, config: Config) -> Prediction:
    """A tensor-core kernel (HMMA in its hot loop): the "fma" ceiling is the TF32 rate over TERMS
    (each FP32 product costs TERMS MMAs), in FP32 FLOP; shared memory serves the hot loop's loads,
    one wavefront each (the fragment reads are conflict-free by layout), per TERMS-th of its MMAs."""
    terms = config.values.get("TERMS", 1)
    useful = counts.hmma * HMMA_FLOP / terms  # FP32 FLOP per pass of the hot loop
    return _mma_bound(spec, config, counts, spec.tf32_tflops / terms, useful, counts.hmma,
                      occupancy(spec, launch, regs, static_shared))


def _mma_bound(spec: DeviceSpec, config: Config, counts: SassCounts, fma: float, useful: float, mmas: int,
               occupied: Occupancy) -> Prediction:
    """A register-fragment MMA kernel's bound: the tensor cores' ceiling `fma`, and shared memory's for the
    hot loop's loads, one wavefront each, per `useful` FP32 FLOP of its `mmas` MMAs."""
    waves = shared_wavefronts(config, counts)
    per_clock = spec.shared_bytes_per_clock_per_sm / (BANKS * 4)
    shared = spec.sm_count * spec.clock_mhz * 1e6 * per_clock * useful / waves / 1e12 if waves else math.inf
    return _bound(spec, config, fma, shared, waves / mmas, occupied)


IMMA_OPS = 2 * 16 * 8 * 32  # one warp's mma.m16n8k32 s8: 4096 multiply-adds, two operations each


def _predict_integer_mma(spec: DeviceSpec, counts: SassCounts, launch: Launch, regs: int,
                         static_shared: int, config: Config) -> Prediction:
    """An INT8 tensor-core kernel (IMMA in its hot loop: the ozaki family): each FP32 product costs MODULI INT8
    products, so the "fma" ceiling is the INT8 rate over MODULI, in FP32 FLOP (2*M*N*K a product), and a pass
    of the hot loop does imma * IMMA_OPS / MODULI of them; shared memory serves its loads, one wavefront each
    (rows padded to 4 (mod 8) words: conflict-free fragment reads). The INT8 rate is wgmma's: mma.sync's own
    is lower by a fraction not measured, so the "fma" ceiling is optimistic."""
    moduli = config.values.get("MODULI", 1)
    useful = counts.imma * IMMA_OPS / moduli  # FP32 FLOP per pass of the hot loop
    return _mma_bound(spec, config, counts, spec.int8_tops / moduli, useful, counts.imma,
                      occupancy(spec, launch, regs, static_shared))
