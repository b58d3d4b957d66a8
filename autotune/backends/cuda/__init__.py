"""The GPU backend: NVRTC cubins launched through cuda.core, verified and timed against cuBLAS."""
