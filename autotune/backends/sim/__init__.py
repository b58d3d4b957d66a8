"""CPU emulator for generated kernels: compile with g++, run blocks one at a time and the
threads of a block as fibers that switch only at __syncthreads().

Importing this package loads no GPU stack.
"""
from autotune.backends.sim.errors import KINDS, SimError
from autotune.backends.sim.runner import run, run_kernel, run_strided

__all__ = ["KINDS", "SimError", "run", "run_kernel", "run_strided"]
