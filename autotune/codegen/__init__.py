"""Code generation: a validated config in, readable CUDA source out (codegen.render, Jinja2
templates), and that source compiled to a cubin for the device's own architecture (codegen.nvrtc)."""
