"""Tuning where the calls are: `autotune.load(tune="background")`.

A call whose kind (device, shape, layout) the dispatcher puts on cuBLAS is offered to a background
tuner (background.py): the call itself runs cuBLAS at once, its only extra cost an enqueue. One
daemon thread of the caller's process takes the shapes one at a time and hands each to a Tuner
(tuner.py): by default a process of its own (job.py) that measures a few ranked candidates at the
shape (candidates.py), each verified there before it is timed, with cuBLAS timed beside them, and
records the rows in the user's database. When it ends, the matmul forgets its choices at the shape,
so the next call runs the winner where it beat cuBLAS (api.dispatch's rule) and cuBLAS elsewhere.

No kernel ever runs in the caller's process or CUDA context before it was verified at the very shape
it runs on: the caller's kernels come only from verified rows at the exact shape, and the
measurements run in the job's own worker process, which a faulting kernel can take down alone.
"""
