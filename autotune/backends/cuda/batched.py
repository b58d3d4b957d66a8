"""The GPU backend at a strided batch (`autotune search --batch B`): each BLAS=1 kernel verified
at the search shape as B products of tight operands (space.blas.tight) against
cublasSgemmStridedBatched on the same buffers and against float64 (cuda.strided.StridedProblem),
at the odd check shape as one plain product (its tails), and timed over the whole batch in one
launch; the baseline is cuBLAS's strided-batched time for the same B products (NN).
"""
from __future__ import annotations

from autotune.backends.cuda.backend import CudaBackend
from autotune.backends.cuda.launch import Kernels, launch_kernel
from autotune.backends.cuda.problem import Problem
from autotune.backends.cuda.strided import StridedProblem
from autotune.backends.cuda.timing import time_ms
from autotune.backends.outcome import Timing
from autotune.backends.reference import FP32, judge, transposes
from autotune.space import Config, batched, tight


class BatchedCudaBackend(CudaBackend):
    def __init__(self, M: int, N: int, K: int, device: int = 0, seed: int = 0, batch: int = 2):
        self.seed, self.batch = seed, batch  # before the base class times the baseline (_time_baseline)
        self._problems: dict[tuple[bool, bool], StridedProblem] = {}  # per layout, made at its first kernel
        super().__init__(M, N, K, device=device, seed=seed)

    def _time_layouts(self, nn: Timing) -> dict[str, Timing]:
        return {"NN": nn}  # the other layouts' strided batches are not timed: no evidence there

    def _time_baseline(self) -> Timing:
        """cuBLAS's strided-batched time for the same B products (NN)."""
        nn, (M, N, K) = self._problem((False, False)), self.shape
        return time_ms(lambda: self.blas.sgemm_strided(int(nn.a.handle), int(nn.b.handle), int(nn.c.handle),
                                                       M, N, K, False, False, nn.ops), self.stream, min_reps=20,
                       head_start=self.head_start, meter=self.meter)

    def _problem(self, layout: tuple[bool, bool]) -> StridedProblem:
        if layout not in self._problems:
            M, N, K = self.shape
            self._problems[layout] = StridedProblem(self.dev, self.stream, self.blas, M, N, K, *layout,
                                                    tight(M, N, K, *layout, batch=self.batch), self.seed)
        return self._problems[layout]

    # BLAS=1 kernels have no prologue (blocked's PB needs BLAS=0): their kernels are each one launch
    def _verify(self, kernels: Kernels, config: Config, p: Problem) -> tuple[float, float | None, str | None]:
        if p is not self.main:
            return super()._verify(kernels, config, p)
        problem = self._problem(transposes(config.values))
        by_cublas, _ = problem.errors(problem.run(kernels.main, config))
        why = judge(FP32, by_cublas)  # the families with BLAS=1 kernels are FP32 ones
        return by_cublas, None, why and f"{why} at {'x'.join(map(str, self.shape))}, {self.batch} batches"

    def _launch(self, kernels: Kernels, config: Config, p: Problem, poison: bool = False) -> None:
        if p is not self.main:
            return super()._launch(kernels, config, p, poison)
        problem, (M, N, K) = self._problem(transposes(config.values)), self.shape
        launch_kernel(self.stream, kernels.main, batched(config.geometry(M, N), self.batch), problem.a, problem.b,
                      problem.c, M, N, K, problem.ops)
