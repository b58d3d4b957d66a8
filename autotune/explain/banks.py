"""Shared-memory bank models: the wavefronts a hot loop's shared loads cost, by the model its family
names (Family.bank_model, one of BANK_MODELS; none: a wavefront a load). explain.model makes the
shared-memory ceiling of them.

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

from autotune.errors import AutotuneError
from autotune.explain.sass import SassCounts
from autotune.space import Config

BANKS = 32
WARP = 32


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
