"""CPU emulator for generated kernels (see issue 3)."""
