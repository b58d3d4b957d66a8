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

Wavefronts per shared load (documented rule, applied to the tiled family). The hot loop's
wide loads (LDS.64/.128) are As reads: only those run along k within one thread, which is
what the compiler merges; Bs reads are the T*RN narrow loads a thread needs per phase;
any narrow loads left over are unmerged As reads. Each kind costs what a bank simulation
of warp 0's addresses says: per bank the number of distinct words, or distinct bytes/128
if larger. A broadcast costs 1 whatever its width; 32 consecutive words cost 1; a column
of an unpadded 32-wide tile costs 32.

The blocked family (register blocking, blocked.py) follows the same rules with its own
address pattern. Inside a warp sub-tile the lanes form (32/LANES_N) x LANES_N with
LANES_N = WN/WNITER/TN: a lane's A fragment starts at tRow*TM (tRow = lane / LANES_N) and
its B fragment at tCol*TN (tCol = lane % LANES_N), so an A load is a broadcast within each
row of lanes and touches 32/LANES_N distinct chunks, a B load LANES_N. Per k step a thread
reads WMITER*TM + WNITER*TN floats for WMITER*TM * WNITER*TN FFMA; the hot loop's loads of
each width are split between A and B by what the template asks for at that width (see
blocked_load_wavefronts), each costed by the bank simulation above. The tile stores of a BK
step (A transposed: 4 scalar STS per float4, so a column write; B as STS.128) are costed from
the template's store pattern and spread over the loop's k steps: the kernels table keeps only
the STS total, not the widths (the SASS checked has exactly 4*LA STS and LB STS.128 per step).

Caveat: the bank rule counts one pass for a broadcast of any width. NVIDIA's forum notes
that shared memory returns 128 bytes per clock, so an LDS.128 to 32 lanes needs 4 return
cycles (2 when lane pairs share an address) whatever the banks say; the model does not
include that floor, which makes the blocked family's shared ceiling an optimistic one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from autotune.errors import AutotuneError
from autotune.explain.sass import SassCounts
from autotune.space import Config, Launch

BANKS = 32
WARP = 32


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


PRESETS: dict[str, DeviceSpec] = {
    "h200": DeviceSpec("NVIDIA H200", sm_count=132, clock_mhz=1980, dram_gbps=4800),
    "h100": DeviceSpec("NVIDIA H100 SXM", sm_count=132, clock_mhz=1980, dram_gbps=3350),
}


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


# --------------------------------------------------------------------------- shared memory

def wavefronts(word_addresses: list[int], words: int) -> int:
    """Passes through the banks for one warp-wide load of `words` 4-byte words per lane."""
    touched = {a + w for a in word_addresses for w in range(words)}
    per_bank: dict[int, int] = {}
    for word in touched:
        per_bank[word % BANKS] = per_bank.get(word % BANKS, 0) + 1
    return max(max(per_bank.values()), math.ceil(len(touched) * 4 / (BANKS * 4)))


def _warp0(config: Config) -> list[tuple[int, int, int, int]]:
    """(row0, col0, row step, col step) of each lane of the block's first warp."""
    p = config.values
    bx, by = p["bx"], p["by"]
    out = []
    for lane in range(min(WARP, bx * by)):
        tx, ty = lane % bx, lane // bx
        out.append((ty, tx, by, bx) if p["x_over"] == "cols" else (tx, ty, bx, by))
    return out


def tiled_costs(config: Config, a_words: int) -> tuple[float, float]:
    """Mean wavefronts of one As read of a_words per lane and of one Bs read, warp 0."""
    p = config.values
    T, stride = p["T"], p["T"] + p["pad"]
    lanes = _warp0(config)
    rm, rn = config.derived["RM"], config.derived["RN"]
    a = [wavefronts([(r + i * rs) * stride + k for r, _, rs, _ in lanes], a_words)
         for i in range(rm) for k in range(0, T, a_words)]
    b = [wavefronts([k * stride + c + j * cs for _, c, _, cs in lanes], 1)
         for j in range(rn) for k in range(T)]
    return sum(a) / len(a), sum(b) / len(b)


@dataclass(frozen=True)
class BlockedShape:
    """The sizes of a blocked config the model needs (from the family's derive, as the template gets them)."""

    BM: int
    BN: int
    BK: int
    LDA: int  # row length of the transposed A tile As[k][m]: BM + pad
    TM: int
    TN: int
    lanes_n: int  # LANES_N: lanes of a warp sub-tile along N
    WMITER: int
    WNITER: int
    threads: int

    @property
    def lanes_m(self) -> int:
        return WARP // self.lanes_n

    @property
    def a_floats(self) -> int:  # A floats a thread reads per k step
        return self.WMITER * self.TM

    @property
    def b_floats(self) -> int:
        return self.WNITER * self.TN

    @property
    def loads_a(self) -> int:  # LA: float4 global loads (and stores) of the A tile per thread
        return self.BM * self.BK // 4 // self.threads

    @property
    def loads_b(self) -> int:
        return self.BK * self.BN // 4 // self.threads

    @property
    def ffma_per_k(self) -> int:  # per thread, so also warp-wide FFMA per warp
        return self.a_floats * self.b_floats

    def a_run(self) -> int:
        """Contiguous A floats per lane per k: the sub-tiles abut only when a row of lanes is the warp."""
        return self.a_floats if self.lanes_m == 1 else self.TM

    def b_run(self) -> int:
        return self.b_floats if self.lanes_n == 1 else self.TN


def blocked_shape(config: Config) -> BlockedShape:
    p, d = config.values, config.derived
    return BlockedShape(BM=p["BM"], BN=p["BN"], BK=p["BK"], LDA=p["BM"] + p["pad"], TM=p["TM"], TN=p["TN"],
                        lanes_n=d["LANES_N"], WMITER=d["WMITER"], WNITER=p["WNITER"], threads=d["THREADS"])


def widest_load(run: int) -> int:
    """Words per lane of the widest LDS a run of `run` aligned floats allows (what the compiler merges to)."""
    return 4 if run % 4 == 0 else 2 if run % 2 == 0 else 1


def blocked_fragment_costs(shape: BlockedShape, words: int) -> tuple[int, int]:
    """Wavefronts of one warp-wide A and one B fragment load of `words` per lane.

    Only the lane's offset inside the sub-tile matters: k, the sub-tile and the warp add
    the same offset to every lane, which rotates the banks but changes no count.
    """
    lanes = range(WARP)
    a = wavefronts([(lane // shape.lanes_n) * shape.TM for lane in lanes], words)  # by tRow
    b = wavefronts([(lane % shape.lanes_n) * shape.TN for lane in lanes], words)  # by tCol
    return a, b


def blocked_load_wavefronts(shape: BlockedShape, lds: dict[int, int]) -> float:
    """Wavefronts of the hot loop's shared loads, by width as the SASS has them.

    The template asks, per BK step, for BK*a_floats/wA loads of A at width wA (the widest
    its runs allow) and likewise for B. The loads of a width are split between A and B in
    that proportion; a width neither asks for (the compiler reloading a stray word) is
    split by the floats each reads per k.
    """
    wa, wb = widest_load(shape.a_run()), widest_load(shape.b_run())
    total = 0.0
    for bits, n in lds.items():
        words = max(bits, 32) // 32
        want_a = shape.a_floats // wa if wa == words else 0
        want_b = shape.b_floats // wb if wb == words else 0
        if not want_a and not want_b:
            want_a, want_b = shape.a_floats, shape.b_floats
        a_cost, b_cost = blocked_fragment_costs(shape, words)
        total += n * (want_a * a_cost + want_b * b_cost) / (want_a + want_b)
    return total


def blocked_store_wavefronts(shape: BlockedShape) -> float:
    """Wavefronts one warp spends storing its share of one BK step's tiles.

    Each thread stores LA float4s of A transposed (4 STS.32 each, at As[c+q][r]) and LB
    float4s of B (one STS.128 each, at Bs[r][c]), indexed as the template's store_shared
    does. Warp 0's addresses stand for all: a tile row holds BK/4 or BN/4 float4s, a divisor
    or a multiple of 32, so another warp or iteration adds the same offset to every lane,
    which rotates the banks and changes no count.
    """
    per_row_a, per_row_b = shape.BK // 4, shape.BN // 4  # float4s per row of the A and B tiles
    lanes = range(WARP)
    a = sum(wavefronts([(lane % per_row_a * 4 + q) * shape.LDA + lane // per_row_a for lane in lanes], 1)
            for q in range(4))
    b = wavefronts([(lane // per_row_b) * shape.BN + lane % per_row_b * 4 for lane in lanes], 4)
    return shape.loads_a * a + shape.loads_b * b


def blocked_wavefronts(config: Config, counts: SassCounts) -> float:
    """Loads from the SASS plus the modelled tile stores of every BK step the loop holds."""
    shape = blocked_shape(config)
    steps = counts.ffma / (shape.BK * shape.ffma_per_k)  # BK steps in the hot loop (1 when not unrolled)
    return blocked_load_wavefronts(shape, counts.lds) + steps * blocked_store_wavefronts(shape)


def shared_wavefronts(config: Config, counts: SassCounts) -> float:
    """Wavefronts the hot loop spends in shared memory (the rule in the module doc), by the bank model
    the family names (Family.bank_model)."""
    name = config.family.bank_model
    if name is None:
        return float(counts.shared_loads)  # lower bound: conflict-free, one pass each
    if name not in BANK_MODELS:
        raise AutotuneError(f"family {config.family.name} names bank model {name!r}; known: {', '.join(BANK_MODELS)}")
    return BANK_MODELS[name](config, counts)


def tiled_wavefronts(config: Config, counts: SassCounts) -> float:
    """The tiled family's T x T tiles: up to T*RN narrow loads are B's, the rest and every wide one A's."""
    p = config.values
    rn = p["T"] // (p["bx"] if p["x_over"] == "cols" else p["by"])
    narrow = sum(n for bits, n in counts.lds.items() if bits <= 32)
    b_loads = min(narrow, p["T"] * rn)
    a_cost1, b_cost = tiled_costs(config, 1)
    total = (narrow - b_loads) * a_cost1 + b_loads * b_cost
    for bits, n in counts.lds.items():
        if bits > 32:
            total += n * tiled_costs(config, bits // 32)[0]
    return total


BANK_MODELS = {"warp-tiles": blocked_wavefronts, "tiles": tiled_wavefronts}

# --------------------------------------------------------------------------- ceilings

def intensity(config: Config) -> float:
    """FLOP per DRAM byte if every operand load went to DRAM once per tile (the family's Family.intensity)."""
    if config.family.intensity is None:
        raise AutotuneError(f"no traffic model for family {config.family.name}: it declares no Family.intensity")
    return config.family.intensity(config.values)


def predict(spec: DeviceSpec, counts: SassCounts, launch: Launch, regs: int,
            static_shared: int, config: Config) -> Prediction:
    """The three ceilings, occupancy, and the lowest ceiling with the pipe that sets it."""
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
    terms, n = config.values.get("TERMS", 1), counts.hgmma_n
    fma = spec.tf32_tflops / terms
    flop, bytes_read = counts.hgmma * 2 * 64 * n * 8 / terms, counts.hgmma * (64 + n) * 8 * 4
    shared = spec.sm_count * spec.clock_mhz * 1e6 * spec.shared_bytes_per_clock_per_sm * flop / bytes_read / 1e12
    return _bound(spec, config, fma, shared, bytes_read / 128 / counts.hgmma, occupancy(spec, launch, regs, static_shared))


def _predict_tensor_cores(spec: DeviceSpec, counts: SassCounts, launch: Launch, regs: int,
                          static_shared: int, config: Config) -> Prediction:
    """A tensor-core kernel (HMMA in its hot loop): the "fma" ceiling is the TF32 rate over TERMS
    (each FP32 product costs TERMS MMAs), in FP32 FLOP; shared memory serves the hot loop's loads,
    one wavefront each (the fragment reads are conflict-free by layout), per TERMS-th of its MMAs."""
    terms = config.values.get("TERMS", 1)
    fma = spec.tf32_tflops / terms
    useful = counts.hmma * HMMA_FLOP / terms  # FP32 FLOP per pass of the hot loop
    waves = shared_wavefronts(config, counts)
    per_clock = spec.shared_bytes_per_clock_per_sm / (BANKS * 4)
    shared = spec.sm_count * spec.clock_mhz * 1e6 * per_clock * useful / waves / 1e12 if waves else math.inf
    return _bound(spec, config, fma, shared, waves / counts.hmma, occupancy(spec, launch, regs, static_shared))
