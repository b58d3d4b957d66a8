"""A model of a kernel's time at shapes never measured, learned from every recorded row, to rank
candidate configs before any of them is compiled.

The features of a (config, shape) pair are what the ceiling model (explain.model) reasons with,
worked out from the config's launch at the shape: the FLOPs; the output tiles and the blocks that
compute them; the waves those blocks take on the device and how full the last one is; the share of
each tile that lies inside the matrix (padding at the edges is work thrown away); how many blocks
split the K of a tile; the operand traffic when each tile reads its row of A and column of B, and
the DRAM and FMA floors it implies. Beside them, an indicator per family and per (family, parameter,
value), so that what a parameter value costs at the recorded shapes carries over to new ones.

The model is a ridge regression (numpy least squares) on log2 of the time: ratios, not
differences, carry over between shapes (a 2x slower kernel at 1024^3 is likely 2x slower at
2048^3). Then small regression trees (explain.boost) are fitted to what the ridge leaves, on the
numeric features, the family and the parameters several families share: where a cost depends on
two things at once (a family slow only at few tiles), a sum of slopes cannot say it. Nothing is
saved: a fit on the H200 suite database takes about a second (docs/time-model.md has the figure,
tests/test_timemodel.py a bound), so a caller fits when it needs one.

Its validation (leave one shape out, against ranking by the nearest recorded shape's times) is
benchmarks/timemodel_eval.py, its figures docs/time-model.md.
"""
from __future__ import annotations

import math
import sqlite3
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from autotune.backends.outcome import OK
from autotune.errors import AutotuneError, SpaceError
from autotune.explain.boost import Trees, fit_trees
from autotune.explain.model import PRESETS, DeviceSpec
from autotune.families import FAMILIES, config_of_row
from autotune.packed import unpacked
from autotune.space import Config, Limits, Shape, ceil_div

LAUNCH_MS = 0.004  # a launch's few microseconds: near the shortest times the H200 rows record at all
TENSOR_TERMS_DEFAULT = 1  # a tensor-core family without TERMS does one MMA per product
WARP = 32
# The ridge penalty on the standardised features. Leave-one-shape-out on the H200 suite (benchmarks/
# timemodel_eval.py) over 0.1, 1, 3, 10, 30 and 100: 30 and 100 gave the lowest top-1 regret, the
# smaller ones let the indicators of a family few rows hold pick it at a shape unlike theirs.
RIDGE = 30.0

# Numeric features, in the order of the vector (family and parameter indicators follow them).
NUMERIC = ("log_flops", "log_fma_floor", "log_dram_floor", "log_tile_traffic", "log_roofline", "log_waves",
           "wave_efficiency", "tile_efficiency", "lane_efficiency", "log_tiles", "log_blocks", "log_splits", "log_k_per_block",
           "log_threads", "log_tile_rows", "log_tile_cols", "log_outputs_per_thread", "log_resident",
           "log_M", "log_N", "log_K", "log_serial", "log_floor_plus_launch")
# Numeric features that get a slope of their own in each family (a split-K kernel's time grows with
# the waves unlike a GEMV-like one's); the rest share one slope across families.
PER_FAMILY = ("log_roofline", "log_serial", "log_splits", "log_blocks", "log_waves", "log_k_per_block", "tile_efficiency", "wave_efficiency")
# The trees fitted to the ridge's residual (explain.boost), chosen leaving one shape of the H200 suite out and
# fitting the suite to rank the 116 shapes of three other H200 databases (benchmarks/timemodel_eval.py): 100 trees
# of depth 2, or 100 at a rate of 0.2, ranked worse than 200 of depth 4 at 0.1; depth 5 about the same. At least
# 30 rows a leaf keep a tree from following one shape's rows.
TREES, TREE_DEPTH, TREE_RATE, TREE_MIN_LEAF = 200, 4, 0.1, 30


# --------------------------------------------------------------------------- what a config does at a shape

def block_tile(config: Config) -> tuple[int, int]:
    """(rows, columns) of C one block computes: what sets the tiles, their padding and the operand reuse."""
    tile = config.family.block_tile
    if tile is None:
        raise AutotuneError(f"the time model has no tile for family {config.family.name}: it declares no block_tile")
    return tile(config.values)


def peak_tflops(config: Config, spec: DeviceSpec) -> float:
    """The rate the family's products run at: FP32 FMA, or the TF32 tensor cores over TERMS MMAs per product."""
    if config.family.precision == "fp32-tc":
        return spec.tf32_tflops / config.values.get("TERMS", TENSOR_TERMS_DEFAULT)
    return spec.fma_tflops


def resident_blocks(threads: int, shared: int, outputs_per_thread: float, spec: DeviceSpec) -> int:
    """Blocks one SM holds at once, estimated without compiling: the registers are guessed as one per
    accumulator plus a fixed 32 for addresses and operands (the compiled count is not known for a
    candidate yet), the rest as explain.model.occupancy counts them."""
    warp_threads = math.ceil(threads / WARP) * WARP  # a block of 8 threads still takes a warp's slot
    regs = min(255.0, outputs_per_thread + 32)
    by_regs = spec.regs_per_sm // max(1, int(regs * warp_threads))
    by_shared = spec.shared_per_sm // (shared + spec.reserved_shared_per_block)
    return max(1, min(spec.max_threads_per_sm // warp_threads, spec.max_blocks_per_sm, by_regs, by_shared))


def _log2(x: float) -> float:
    return math.log2(max(x, 1e-12))


def numeric_features(config: Config, shape: Shape, limits: Limits, spec: DeviceSpec) -> dict[str, float]:
    """The numeric features (NUMERIC) of a config at a shape on the device of `limits` and `spec`."""
    M, N, K = shape
    launch = config.geometry(M, N, limits)
    rows, cols = block_tile(config)
    tiles_m, tiles_n = ceil_div(M, rows), ceil_div(N, cols)
    tiles = tiles_m * tiles_n
    blocks = launch.grid[0] * launch.grid[1] * launch.grid[2]
    splits = max(1.0, blocks / tiles)  # blocks sharing a tile's K: SPLITK, the tail's pieces, stream-K's share
    threads = launch.threads
    static = config.family.static_shared
    shared = launch.shared_bytes + (static(config.values) if static is not None else 0)
    outputs = rows * cols / threads
    resident = resident_blocks(threads, shared, outputs, spec)
    slots = limits.sms * resident
    waves = blocks / slots
    wave_eff = blocks / (math.ceil(waves) * slots)
    tile_eff = M * N / (tiles * rows * cols)
    lane_eff = threads / (math.ceil(threads / WARP) * WARP)  # the lanes of its warps a block uses
    flops = 2.0 * M * N * K
    fma_floor = flops / (peak_tflops(config, spec) * 1e9 * tile_eff * wave_eff * lane_eff)  # ms
    # every tile reads its rows of A and columns of B; each split adds its partial tile of C once
    traffic = 4.0 * (M * K * tiles_n + K * N * tiles_m + M * N * splits)
    dram_floor = 4.0 * (M * K + K * N + M * N) / (spec.dram_gbps * 1e6)  # ms: each operand once
    return {"log_flops": _log2(flops), "log_fma_floor": _log2(fma_floor), "log_dram_floor": _log2(dram_floor),
            "log_tile_traffic": _log2(traffic), "log_roofline": _log2(max(fma_floor, dram_floor)),
            "log_waves": _log2(waves), "wave_efficiency": wave_eff, "tile_efficiency": tile_eff,
            "lane_efficiency": lane_eff,
            "log_tiles": _log2(tiles), "log_blocks": _log2(blocks), "log_splits": _log2(splits),
            "log_k_per_block": _log2(K / splits), "log_threads": _log2(threads), "log_tile_rows": _log2(rows),
            "log_tile_cols": _log2(cols), "log_outputs_per_thread": _log2(outputs), "log_resident": _log2(resident),
            "log_M": _log2(M), "log_N": _log2(N), "log_K": _log2(K),
            # one thread's chain of FMAs times the waves: the critical path when the device is not full
            "log_serial": _log2(math.ceil(waves) * outputs * K / splits),
            # a launch costs some microseconds whatever the work: the floor of the smallest shapes
            "log_floor_plus_launch": _log2(max(fma_floor, dram_floor) + LAUNCH_MS)}


def indicator_names() -> list[str]:
    """One indicator per family, per (family, numeric feature) slope, and per (family, parameter, value)."""
    names = []
    for family in FAMILIES.values():
        names.append(f"family={family.name}")
        names += [f"{family.name}:{f}" for f in PER_FAMILY]
        names += [f"{family.name}.{p.name}={v}" for p in family.params for v in p.values]
    return names


# --------------------------------------------------------------------------- the model

@lru_cache(maxsize=1)
def feature_index() -> dict[str, int]:
    """Each feature's place in the vector: NUMERIC, then the indicators (the families are fixed at import)."""
    return {name: i for i, name in enumerate((*NUMERIC, *indicator_names()))}


@lru_cache(maxsize=1)
def shared_params() -> tuple[str, ...]:
    """Parameter names that two or more families declare (BM, STAGES, ...): the trees read their values
    across families; one family's own parameters are left to the ridge's indicators."""
    counts = Counter(p.name for family in FAMILIES.values() for p in family.params)
    return tuple(sorted(name for name, n in counts.items() if n >= 2))


def tree_features(config: Config, numeric: Mapping[str, float]) -> np.ndarray:
    """What the trees split on: NUMERIC, an indicator per family, and each shared parameter's value as its
    place among the values the family declares (-1: the family has no such parameter)."""
    declared = {p.name: p.values for p in config.family.params}
    places = [float(declared[n].index(config.values[n])) if n in declared and config.values.get(n) in declared[n]
              else -1.0 for n in shared_params()]
    families = [float(config.family.name == name) for name in FAMILIES]
    return np.array([numeric[name] for name in NUMERIC] + families + places)


def feature_vector(config: Config, shape: Shape, limits: Limits, spec: DeviceSpec,
                   numeric: Mapping[str, float] | None = None) -> np.ndarray:
    index = feature_index()
    if numeric is None:
        numeric = numeric_features(config, shape, limits, spec)
    x = np.zeros(len(index))
    for name in NUMERIC:
        x[index[name]] = numeric[name]
    family = config.family.name
    x[index[f"family={family}"]] = 1.0
    for name in PER_FAMILY:
        x[index[f"{family}:{name}"]] = numeric[name]
    for key, value in config.params:
        slot = index.get(f"{family}.{key}={value}")
        if slot is not None:  # a value outside today's declared ones (an old row) adds nothing
            x[slot] = 1.0
    return x


@dataclass(frozen=True)
class TimeModel:
    """A ridge regression of log2(time_ms) on the features and trees on its residual: predict_ms and rank for
    any config at any shape."""

    limits: Limits
    spec: DeviceSpec
    mean: np.ndarray  # per feature, of the training rows (the columns are centred and scaled before the fit)
    scale: np.ndarray
    weights: np.ndarray
    intercept: float
    rows: int  # (kernel, shape) pairs it was fitted on
    shapes: int  # distinct shapes among them
    trees: Trees | None = None  # fitted to the ridge's residual in log2(ms); None: the ridge alone

    @classmethod
    def fit(cls, rows: Iterable[Mapping[str, Any]], limits: Limits = Limits(), spec: DeviceSpec = PRESETS["h200"],
            ridge: float = RIDGE, trees_too: bool = True) -> TimeModel:
        """Fit on the verified rows (status ok, a time, a family this version knows); others are skipped.
        The same (kernel, shape) measured twice counts once, at its lowest time. trees_too=False: the
        ridge alone (what the validation compares the trees with)."""
        samples = measured(rows)
        if not samples:
            raise AutotuneError("no verified rows with a time to fit the time model on")
        numeric = [numeric_features(c, s, limits, spec) for c, s, _ in samples]
        X = np.array([feature_vector(c, s, limits, spec, n) for (c, s, _), n in zip(samples, numeric)])
        y = np.log2([t for _, _, t in samples])
        mean, scale = X.mean(axis=0), X.std(axis=0)
        scale[scale == 0] = 1.0  # a feature no row varies (a family without rows) stays at weight 0
        Z = (X - mean) / scale
        # ridge: (Z'Z + a I) w = Z'(y - mean y); the penalty keeps the many indicators from fitting noise
        w = np.linalg.solve(Z.T @ Z + ridge * np.eye(Z.shape[1]), Z.T @ (y - y.mean()))
        trees = None
        if trees_too:
            residual = y - (y.mean() + Z @ w)
            T = np.array([tree_features(c, n) for (c, _, _), n in zip(samples, numeric)])
            trees = fit_trees(T, residual, TREES, TREE_RATE, TREE_DEPTH, TREE_MIN_LEAF)
        return cls(limits, spec, mean, scale, w, float(y.mean()), len(samples), len({s for _, s, _ in samples}), trees)

    def predict_ms(self, config: Config, shape: Shape) -> float:
        return float(self.predict_many([config], shape)[0])

    def predict_many(self, configs: Sequence[Config], shape: Shape) -> np.ndarray:
        """The configs' predicted times (ms) at the shape, in one pass of the trees."""
        if not configs:
            return np.zeros(0)
        numeric = [numeric_features(c, shape, self.limits, self.spec) for c in configs]
        X = np.array([feature_vector(c, shape, self.limits, self.spec, n) for c, n in zip(configs, numeric)])
        log_ms = self.intercept + ((X - self.mean) / self.scale) @ self.weights
        if self.trees is not None:
            log_ms = log_ms + self.trees.predict(np.array([tree_features(c, n) for c, n in zip(configs, numeric)]))
        return 2.0 ** log_ms

    def rank(self, configs: Iterable[Config], shape: Shape) -> list[tuple[Config, float]]:
        """The configs with their predicted times at the shape, fastest first."""
        configs = list(configs)
        times = self.predict_many(configs, shape)
        return sorted(zip(configs, (float(t) for t in times)), key=lambda pair: pair[1])


def measured(rows: Iterable[Mapping[str, Any]]) -> list[tuple[Config, Shape, float]]:
    """(config, shape, time_ms) of each verified, timed row of one batch, the lowest time per (kernel, shape)."""
    best: dict[tuple[str, Shape], tuple[Config, float]] = {}
    for row in rows:
        if row.get("status") != OK or not row.get("time_ms") or (row.get("batch") or 1) != 1:
            continue
        try:
            config = config_of_row(row)
        except SpaceError:  # a family or parameter this version does not know
            continue
        shape = (int(row["M"]), int(row["N"]), int(row["K"]))
        key = (config.name, shape)
        if key not in best or row["time_ms"] < best[key][1]:
            best[key] = (config, float(row["time_ms"]))
    return [(config, shape, time) for (_, shape), (config, time) in best.items()]


# --------------------------------------------------------------------------- from databases

def read_rows(path: str | Path, gpu: str | None = None, backend: str = "cuda") -> list[dict[str, Any]]:
    """The verified rows of one backend (and GPU name or UUID, when given) in a results database,
    gzip'd (benchmarks/data's *.sqlite.gz: autotune.packed) or not."""
    return _query(unpacked(path), gpu, backend)


def _query(path: Path, gpu: str | None, backend: str) -> list[dict[str, Any]]:
    # immutable: no lock, no -wal or -shm file written beside a committed database
    conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    conn.row_factory = sqlite3.Row
    where, args = "status = ? AND backend = ?", [OK, backend]
    if gpu:
        where += " AND (gpu_uuid = ? OR gpu_name = ?)"
        args += [gpu, gpu]
    try:
        return [dict(r) for r in conn.execute(f"SELECT * FROM results WHERE {where}", args)]
    finally:
        conn.close()


def fit_from_databases(paths: Sequence[str | Path], gpu: str | None = None, limits: Limits = Limits(),
                       spec: DeviceSpec = PRESETS["h200"]) -> TimeModel:
    """A model fitted on the verified CUDA rows of every database (of one GPU, when `gpu` names it)."""
    rows = [row for path in paths for row in read_rows(path, gpu)]
    return TimeModel.fit(rows, limits, spec)
