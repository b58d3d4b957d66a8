"""autotune in PyTorch: `mm` (op(a) @ op(b) (+ bias) on 2-D tensors), the operator `torch.ops.autotune.mm`
(fake implementation and autograd registered: torch.compile and CUDA graphs take it), `Linear` (a
drop-in for torch.nn.Linear), `swap_linear(model)`, and `use(...)` to choose the database.

    import autotune.torch as at
    at.use(db="db/autotune.sqlite")        # optional: otherwise autotune.load()'s defaults
    model = at.swap_linear(model)           # every nn.Linear computes through autotune's dispatcher
    y = at.mm(x, w, trans_b=True)           # x @ w.T
"""
from autotune.torch.nn import Linear, swap_linear
from autotune.torch.ops import current, mm, mm_op, use

__all__ = ["Linear", "current", "mm", "mm_op", "swap_linear", "use"]
