"""Which kernel computes a call: per GPU model, shape and layout, decided once per process.

cuBLAS is a candidate at every shape (`library=True`, load()'s default): one of our kernels runs
only where the evidence says it is faster there. Evidence is a verified row that beat cuBLAS timed
beside it in the same process by WIN_MARGIN (beats_library), either
- exact: measured at this very shape (where cuBLAS took at most HOST_BOUND_MS, also a row at most
  HOST_SAVING_MS slower than it on the GPU: the call is host-bound and the short way of a torch call
  saves more than that, wins_at_its_shape); or
- covering: measured at a shape that holds this one (every one of M, N, K at least as large) in at
  most HOST_BOUND_MS, with the operands' rows aligned alike (whole 16-byte vectors or not:
  stored_rows_aligned). The same kernel does no more work at a smaller shape read the same way (no
  more blocks, no more k-steps, no more bytes), so it takes no longer there either; and a call whose
  kernel takes that little is host-bound, where the short way of a repeated torch call
  (api.shortcuts) costs the host less than torch.matmul does (benchmarks/data/host-cost-h200.json).
  Of the covering rows the one measured at the smallest shape runs (the closest fit), where its
  constraints allow this shape.
- swapped: x·Wᵀ of one row, or Aᵀ·b of one column, is float for float the NN product of its operands swapped
  (operands.swapped_shape): where cuBLAS would compute the call, a row that covers that product runs it. Covering
  rows only: their calls are host-bound, and cuBLAS's times of the two products were never compared.
Everywhere else cuBLAS runs (the `cublas` choice: torch's own matmul on torch tensors, else cuBLAS
in pedantic FP32). A nearest shape's row that does not cover the call, or a family default, is no
evidence: a tile that won at 4096 rows can lose by 5x at 400. With `library=False` (and
`defaults_only`) the kernels run anyway:

The kernel rule, in order:
1. exact: the fastest verified row of the backend on this GPU model at this very shape;
2. nearest: else the fastest row, valid at this shape, of the nearest recorded shape
   (api.export.nearest_best: the distance of space.shapes, the smaller shape on a tie);
3. default: else the default config of the first family (in FAMILIES order, `blocked` first
   among those that take any shape), fitted to the shape where the family has a fit (Family.fit),
   that a constraint does not refuse at this shape.
Only kernels of the call's layout count: a row's TA, TB and BLAS (absent: 0) must be the layout's
trans_a, trans_b and signature (BLAS=1: the cuBLAS-style one), and a default takes them as
parameters (families without them: NN, plain only). Only families of the loader's precision count
(a tensor-core family's rows only under "fp32-tc": no TF32-based product for a caller who never
asked for one). A call that needs BLAS=1 with no such row recorded takes the tiling of the plain
kernel that steps 1 and 2 find, with BLAS=1 (same tile, the general signature), before the default;
among BLAS=1 rows at the exact shape, those measured at the call's batch count come first.
The source is the one that was measured (stored with the row), today's render where the row
has none stored or its signature was changed, so the kernel that runs is the kernel that was timed.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import NamedTuple, Sequence

from autotune import store
from autotune.api.export import nearest_best
from autotune.api.operands import PLAIN, Layout, swapped_shape
from autotune.backends.outcome import OK
from autotune.codegen.render import render, sha256
from autotune.errors import AutotuneError, SpaceError
from autotune.families import DEFAULT_ORDER, FAMILIES, config_of_row, families_for
from autotune.families.layouts import PLAIN_ONLY, layout_name
from autotune.space import (
    Config,
    Limits,
    Shape,
    check_shape,
    fitted,
    make_config,
    shape_text,
    shape_violations,
    violations,
)

TILING = " tiling"  # the suffix of an origin whose row was measured with the plain signature
LIBRARY = "cublas"  # the origin of the library's choice
# A kernel must beat cuBLAS by 2% in its own row: both times are medians of one process, whose spread
# run to run is about 1%, and a tie goes to the library the caller would have called.
WIN_MARGIN = 0.02
# A kernel of at most 11 us hides behind a call's host time: on the H200's host the short way of a torch call
# costs 10.7-14.3 us, torch.matmul 13.2-23.6 (benchmarks/data/host-cost-h200.json, anyshape-h200.json).
HOST_BOUND_MS = 0.011
# Where cuBLAS took at most HOST_BOUND_MS, a kernel measured at that very shape may be this much slower than it
# on the GPU and still make the call faster. Alone a call costs its launch latency and GPU time: the short way's
# latency was 2.3-6.7 us (median 4.4) below torch.matmul's at the seven host-bound calls of two leases whose
# kernel took it (torch_alone_ms less cuBLAS's recorded time, against ours_alone_ms less the kernel's:
# anyshape-covered-h200.json, anyshape-covered-neighbours-first-h200.json). Back to back a call costs the larger
# of its host and GPU times: torch.matmul's host time, 11.8 us or more a call at the host-bound shapes of five
# H200 leases but for 9.6-9.9 at three of one or two rows or 11 columns, hides most such kernels.
HOST_SAVING_MS = 0.003
COVERING = "covering"  # the origin of a row measured at a shape that holds the call's


def timed_beside_cublas(row: dict) -> tuple[float, float] | None:
    """A result row's (time, cuBLAS's time) where cuBLAS was timed in the row's own layout: rows of a transposed
    layout recorded before cuBLAS was timed per layout (no cublas_layout) hold cuBLAS's NN time, which at
    16 x 4096 x 4096 is 1.5x its NT time: no evidence. None: no such pair."""
    layout = layout_name(row)
    if layout != "NN" and row.get("cublas_layout") != layout:
        return None
    cublas_ms, ms = row.get("cublas_ms"), row.get("time_ms")
    return (ms, cublas_ms) if cublas_ms and ms else None


def beats_library(row: dict) -> bool:
    """Whether a result row is evidence that its kernel is faster than cuBLAS at its own shape, in its own
    layout (timed_beside_cublas), by WIN_MARGIN."""
    times = timed_beside_cublas(row)
    return times is not None and times[0] <= (1 - WIN_MARGIN) * times[1]


def wins_at_its_shape(row: dict) -> bool:
    """Whether a result row is evidence that a call of its own shape and layout runs faster on its kernel than
    on cuBLAS: beats_library, or a host-bound call (cuBLAS at most HOST_BOUND_MS) that the kernel takes at most
    HOST_SAVING_MS longer on the GPU than cuBLAS, which the short way's lower host cost makes up. Only for the
    row's own shape: a covering row must beat cuBLAS outright (covers), as cuBLAS may be faster at a smaller
    shape than at the row's."""
    if beats_library(row):
        return True
    times = timed_beside_cublas(row)
    if times is None or times[1] > HOST_BOUND_MS or times[0] > times[1] + HOST_SAVING_MS:
        return False
    try:
        config = config_of_row(row)
    except SpaceError:  # a family or parameter this version does not know
        return False
    return takes_short_way(config, (row["M"], row["N"], row["K"]))


def takes_short_way(config: Config, shape: Shape) -> bool:
    """Whether a plain torch call at the shape can run the config's kernel by the short way (api.shortcuts),
    which is what makes a host-bound call cheaper than torch.matmul: the plain signature, and no prologue there
    (a kernel with one takes the full path, its workspace and two launches: 16.9 us a call at 15782x11x12 with
    streamk's, against torch.matmul's 15.4, benchmarks/data/anyshape-covered-neighbours-first-h200.json)."""
    return not config.values.get("BLAS") and config.prologue(*shape) is None


def covers(row: dict, shape: Shape) -> bool:
    """Whether a row is evidence at a shape it holds (the module's docstring says why): measured in at most
    HOST_BOUND_MS at a shape that holds the call's, read alike (holds_alike)."""
    return row["time_ms"] <= HOST_BOUND_MS and holds_alike((row["M"], row["N"], row["K"]), shape, *_transposes(row))


def holds_alike(outer: Shape, shape: Shape, trans_a: bool = False, trans_b: bool = False) -> bool:
    """Whether a shape holds another (every one of M, N, K at least as large) with the operands' rows aligned
    alike in that layout (stored_rows_aligned)."""
    return (all(o >= s for o, s in zip(outer, shape))
            and stored_rows_aligned(shape, trans_a, trans_b) == stored_rows_aligned(outer, trans_a, trans_b))


def stored_rows_aligned(shape: Shape, trans_a: bool, trans_b: bool) -> tuple[bool, bool, bool]:
    """Whether the rows of A, B and C as stored are whole 16-byte vectors (4 floats). The kernels read such
    rows with vector loads and others a float at a time, so a covering row says nothing of a call whose
    rows differ: the 256x16384x16 row's kernel took 10.6 us there and 22.3 us at 144x10131x4, whose B
    rows are 10131 floats (benchmarks/covering_probe.py, docs/pytorch.md)."""
    M, N, K = shape
    return (M if trans_a else K) % 4 == 0, (K if trans_b else N) % 4 == 0, N % 4 == 0


@dataclass(frozen=True)
class Choice:
    """The kernel chosen for one (GPU model, shape, layout): what to load and how it was chosen."""

    config: Config | None  # None: the library (cuBLAS) computes it
    kernel: str  # its name in `source`
    source: str
    source_hash: str
    origin: str  # "exact", "covering", "nearest", "exact tiling", "nearest tiling", "default" or "cublas"
    measured_at: Shape | None  # the shape its recorded time is from (None: the default, never timed here)
    row_id: int | None
    why: str = ""  # the library's choice: what the evidence was
    swapped: Shape | None = None  # the kernel computes this NN product of B and A (operands.swapped_shape)

    @property
    def library(self) -> bool:
        return self.config is None

    def describe(self) -> str:
        if self.config is None:
            return f"cuBLAS ({self.why})"
        if self.origin == "default":
            return f"{self.kernel} (the {self.config.family.name} family's default: nothing recorded for this GPU)"
        assert self.measured_at is not None
        how = self.origin.removesuffix(TILING)
        if self.origin.endswith(TILING):
            return (f"{self.kernel} (the tiling of result {self.row_id} with BLAS=1, {how}: measured at "
                    f"{shape_text(self.measured_at)} with the plain signature)")
        swapped = f"; as {shape_text(self.swapped)}, A and B swapped" if self.swapped else ""
        return f"{self.kernel} ({how}: result {self.row_id}, measured at {shape_text(self.measured_at)}{swapped})"


class Winners(NamedTuple):
    """A GPU's rows that beat cuBLAS at their shape: those shapes with the rows' transposes (M, N, K, TA, TB),
    and the rows short enough to cover smaller shapes (covers), the smallest shape's first."""

    shapes: frozenset[tuple[int, int, int, int, int]]
    covering: list[dict]


def library_choice(why: str) -> Choice:
    return Choice(None, LIBRARY, "", "", LIBRARY, None, None, why)


class Dispatcher:
    """Decides per (GPU model, shape, layout) from a results database (None: family defaults
    only) and remembers each decision. gpu: the GPU name or UUID whose rows count (None: the
    model of the device each call runs on); precision: the contract whose families may run;
    library: cuBLAS is a candidate (the module's docstring says when it runs)."""

    def __init__(self, db_path: str | Sequence[str] | None, backend: str = "cuda", gpu: str | None = None,
                 precision: str = "fp32",
                 library: bool = True):
        self.db_path, self.backend, self.gpu, self.library = db_path, backend, gpu, library
        self.families = frozenset(families_for(precision))  # an unknown precision: one line
        self._paths = [db_path] if isinstance(db_path, str) else list(db_path or [])
        # several databases (the user's, then the one the package ships): their rows count alike
        self._dbs = [store.open_readonly(p) for p in self._paths]
        self._chosen: dict[tuple[str, Shape, Layout], Choice] = {}
        self._winners: dict[str, Winners] = {}  # per GPU: the rows that beat cuBLAS
        self._lock = threading.Lock()  # one reader of the database at a time

    def choose(self, gpu_name: str, shape: Shape, layout: Layout, limits: Limits | None = None) -> Choice:
        """limits: the device's, which a family default is fitted by (None: the H200's, Limits())."""
        key = (self.gpu or gpu_name, shape, layout)
        choice = self._chosen.get(key)
        if choice is None:
            check_shape(*shape)  # once per shape: a caller of Matmul.choose may pass anything
            with self._lock:
                choice = self._chosen[key] = self._decide(key[0], shape, layout, limits or Limits())
        return choice

    def forget(self, shape: Shape) -> None:
        """Decide this shape again at its next call, on every GPU and layout, from the databases as they are
        now (rows another process wrote since: autotune.api.firstuse). The connections are opened again: a
        database that nobody was writing when it was opened is read as immutable (store.open_readonly)."""
        with self._lock:
            for key in [k for k in self._chosen if k[1] == shape]:
                del self._chosen[key]
            self._winners.clear()
            old, self._dbs = self._dbs, [store.open_readonly(p) for p in self._paths]
            for db in old:
                db.close()

    def _decide(self, gpu: str, shape: Shape, layout: Layout, limits: Limits) -> Choice:
        if self.library:
            choice = self._against_library(gpu, shape, layout)
            alike = swapped_shape(shape, layout)
            if choice.library and alike is not None:
                other = self._against_library(gpu, alike, PLAIN)
                if other.origin == COVERING:
                    return replace(other, swapped=alike)
            return choice
        if self._dbs:
            wanted = kernel_params(layout)
            found = self._best(gpu, shape, wanted, layout.batch)
            if found is not None:
                return self._of_row(*found)
            if layout.blas:
                found = self._best(gpu, shape, {**wanted, "BLAS": 0}, 1, blas_able=True)
                if found is not None:
                    return self._of_tiling(*found)
        return default_choice(shape, layout, limits)

    def runs_library(self, gpu_name: str, shape: Shape, trans_a: bool = False, trans_b: bool = False) -> bool:
        """Whether cuBLAS computes this shape with these transposes whatever the operands' strides and batch
        (no row of them measured at it or covering it beat cuBLAS): a caller that runs the library itself
        then needs to know nothing else of the call."""
        if not self.library:
            return False
        gpu = self.gpu or gpu_name
        winners = self._winners.get(gpu)
        if winners is None:
            with self._lock:
                winners = self._winners_of(gpu)
        if (*shape, trans_a, trans_b) in winners.shapes:
            return False  # a row of these transposes won here (of either signature)
        # else what a plain call runs: a row measured here that lost outweighs one that covers the shape
        return self.choose(gpu_name, shape, Layout(trans_a, trans_b, False, 1)).library

    def _winners_of(self, gpu: str) -> Winners:
        """The rows of this GPU and contract that beat cuBLAS at their shape, each with its database's index,
        read once; the caller holds the lock (one reader of the databases at a time)."""
        winners = self._winners.get(gpu)
        if winners is None:
            # only rows that name a kernel this version runs (_keeps), as the choice itself reads them
            rows = [{**r, "_db": i} for i, db in enumerate(self._dbs)
                    for r in store.faster_than_library(db, self.backend, gpu, HOST_SAVING_MS)
                    if r["family"] in self.families and wins_at_its_shape(r) and _keeps(r, lambda _: True)]
            covering = sorted((r for r in rows if r["time_ms"] <= HOST_BOUND_MS and beats_library(r)),
                              key=lambda r: (r["M"] * r["N"] * r["K"], r["time_ms"]))
            shapes = frozenset((r["M"], r["N"], r["K"], *_transposes(r)) for r in rows)
            winners = self._winners[gpu] = Winners(shapes, covering)
        return winners

    def _covering_choice(self, gpu: str, shape: Shape, layout: Layout) -> Choice | None:
        """The kernel of the smallest-shape row that covers this plain call and launches at it."""
        if layout.blas:
            return None  # rows of the plain signature only: a strided or batched call has its own evidence
        wanted = kernel_params(layout)
        for row in self._winners_of(gpu).covering:
            if not covers(row, shape) or any((row.get(k) or 0) != v for k, v in wanted.items()):
                continue
            try:
                config = config_of_row(row)
            except SpaceError:  # a family or parameter this version does not know
                continue
            if not violations(config) and not shape_violations(config, shape[0], shape[1]) \
                    and takes_short_way(config, shape):
                return self._of_row(row, COVERING)
        return None

    def _against_library(self, gpu: str, shape: Shape, layout: Layout) -> Choice:
        """A kernel measured at this shape that beat cuBLAS there (its plain tiling for a BLAS=1 call);
        else the library."""
        if not self._dbs:
            return library_choice("no results database (pass load(db=...) or set AUTOTUNE_DB to a database "
                                  "that a search wrote)")
        wanted = kernel_params(layout)
        found = self._best(gpu, shape, wanted, layout.batch, exact_only=True)
        if found is None and layout.blas:
            found = self._best(gpu, shape, {**wanted, "BLAS": 0}, 1, blas_able=True, exact_only=True)
            if found is not None and wins_at_its_shape(found[0]):
                return self._of_tiling(*found)
        if found is not None and wins_at_its_shape(found[0]):
            return self._of_row(*found)
        if found is None:
            covering = self._covering_choice(gpu, shape, layout)
            if covering is not None:
                return covering
            return library_choice(f"nothing of this layout measured at {shape_text(shape)} or at a shape that holds "
                                  f"it in {HOST_BOUND_MS * 1e3:g} us on {gpu}")
        row = found[0]
        cublas = f"cuBLAS's {row['cublas_ms']:.4g}" if row.get("cublas_ms") else "no cuBLAS time recorded beside it"
        return library_choice(f"the fastest kernel measured at {shape_text(shape)}, {row['kernel']}, took "
                              f"{row['time_ms']:.4g} ms against {cublas}")

    def _best(self, gpu: str, shape: Shape, wanted: dict[str, int], batch: int,
              blas_able: bool = False, exact_only: bool = False) -> tuple[dict, str] | None:
        """The exact shape's fastest row of these kernel parameters (those measured at `batch`
        first), else the nearest shape's; blas_able: of families that have BLAS=1 kernels."""
        def keep(config: Config) -> bool:
            return (config.family.name in self.families and all(config.values.get(k, 0) == v for k, v in wanted.items())
                    and (not blas_able or any(p.name == "BLAS" for p in config.family.params)))

        rows = [{**r, "_db": i} for i, db in enumerate(self._dbs)
                for r in store.results(db, shape, self.backend, gpu, OK) if _keeps(r, keep)]
        if rows:
            return min(rows, key=lambda r: ((r.get("batch") or 1) != batch, r["time_ms"])), "exact"
        if exact_only:
            return None
        row = next((dict(r, _db=i) for i, db in enumerate(self._dbs)
                    if (r := nearest_best(db, shape, self.backend, gpu, None, keep)) is not None), None)
        return (row, "nearest") if row is not None else None

    def _of_row(self, row: dict, origin: str) -> Choice:
        config = config_of_row(row)
        source = store.source(self._dbs[row["_db"]], row["source_hash"])
        kernel = row["kernel"]
        if source is None:  # a dataset recorded without sources: today's render, under today's name
            source, kernel = render(config), config.name
        return Choice(config, kernel, source, sha256(source), origin, (row["M"], row["N"], row["K"]), row["id"])

    def _of_tiling(self, row: dict, origin: str) -> Choice:
        measured = config_of_row(row)
        # without a prologue (blocked's PB=1 transposes a tight B only, AL=1 copies tight A and B): the general
        # signature reads the operands as stored, and stores C directly (CS=1 stages the plain signature's)
        dropped = {name: 0 for name in PLAIN_ONLY if measured.values.get(name)}
        config = make_config(measured.family, {**measured.values, "BLAS": 1, **dropped})
        source = render(config)
        return Choice(config, config.name, source, sha256(source), origin + TILING, (row["M"], row["N"], row["K"]),
                      row["id"])


def _transposes(row: dict) -> tuple[bool, bool]:
    """A row's TA and TB (absent: 0, an NN kernel)."""
    return bool(row.get("TA")), bool(row.get("TB"))


def _keeps(row: dict, keep) -> bool:
    try:
        return keep(config_of_row(row))
    except SpaceError:  # a family or parameter this version does not know
        return False


def kernel_params(layout: Layout) -> dict[str, int]:
    """The kernel parameters of a layout: its transposes and its signature (BLAS=1: cuBLAS-style
    arguments; BLAS=0: the plain (A, B, C, M, N, K))."""
    return {"TA": int(layout.trans_a), "TB": int(layout.trans_b), "BLAS": int(layout.blas)}


def default_choice(shape: Shape, layout: Layout | None = None, limits: Limits | None = None) -> Choice:
    M, N, _ = shape
    given = {k: v for k, v in kernel_params(layout).items() if v} if layout is not None else {}
    for name in DEFAULT_ORDER:
        family = FAMILIES[name]
        if any(p not in {q.name for q in family.params} for p in given):
            continue  # a family without these transposes or this signature
        default = make_config(family, given)
        # the default fitted to the shape first, as a search's first trial is (blocked: PB by M)
        for config in (fitted(default, shape, limits or Limits(), given), default):
            if not violations(config) and not shape_violations(config, M, N):
                source = render(config)
                return Choice(config, config.name, source, sha256(source), "default", None, None)
    raise AutotuneError(f"no family's default config launches at {shape_text(shape)}; tune it first: "
                        f"`autotune search --M {shape[0]} --N {shape[1]} --K {shape[2]}`")
