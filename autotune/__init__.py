"""autotune: a code-generating autotuner for FP32 SGEMM on NVIDIA GPUs.

Importing the package pulls in no GPU stack: cuda.core, cuBLAS and the driver are
loaded only by the modules that launch kernels, when they are first used.
"""
__version__ = "0.1.0"
