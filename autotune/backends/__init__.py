"""Where kernels are verified and timed: the GPU (cuda), the CPU emulator (sim), a recorded
dataset (replay), each behind the Backend contract (backends.base), each hosted in a worker
process with a watchdog (backends.worker)."""
