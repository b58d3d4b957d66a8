"""The callable that `autotune.load()` returns: C = A * B on the caller's device arrays, with
the best recorded kernel for the device's GPU model and the call's shape (api.dispatch).

Launching goes through a Launcher: the GPU one (backends.cuda.launcher) compiles with NVRTC and
launches with the driver's cuLaunchKernel; tests inject one that records what it was asked, so
everything above the launch (the checks, the choice, the caches) runs without a GPU. Each kind of
call (operands' shapes, strides, dtypes, devices; transposes, alpha, beta) is checked and planned
once: a call that repeats one costs the host only its operands' reads and the launch
(docs/measuring.md, "Host time, queued and alone").
"""
from __future__ import annotations

import sys
import threading
from typing import Any, Callable, ContextManager, NamedTuple, Protocol

from autotune.api import bias as biases
from autotune.api import fastcall, library, shortcuts
from autotune.api.arrays import ArrayView, read_array, signature
from autotune.api.dispatch import Choice, Dispatcher
from autotune.api.fastcall import CallSignature, FastCall
from autotune.api.operands import PLAIN, Call, Layout, check_apart, check_flags, check_scalars, describe
from autotune.errors import AutotuneError
from autotune.space import PROLOGUE_SUFFIX, Launch, Limits, Operands, Prologue, Shape, batched, tight

MAX_PLANS = 1024


class Plan(NamedTuple):
    """A call's checked operands and launch, apart from the pointers: pre, pre_kernel are its prologue's;
    geometry None: the library (cuBLAS) computes it. swapped: the kernel computes the NN product of B and A
    (api.operands.swapped_shape), `call` says so (its shape and layout), and B's pointer goes first."""

    call: Call
    geometry: Launch | None
    kernel: Any
    pre: Prologue | None
    pre_kernel: Any
    swapped: bool = False


class Launcher(Protocol):
    """The device side of a call."""

    def device_name(self, device: int) -> str:
        """The GPU model of a device (the gpu_name its results are recorded under)."""

    def device_of(self, ptr: int) -> int | None:
        """The device a pointer's memory lives on; None for host memory."""

    def limits(self, device: int) -> Limits:
        """The device's numbers (SMs, resident blocks, shared memory): what a persistent grid (streamk's)
        and a family's fit size themselves by."""

    def load(self, device: int, source: str, kernel: str, shared_bytes: int) -> Any:
        """Compile (for the device's architecture) and load a kernel, opted in to `shared_bytes`
        of dynamic shared memory."""

    def launch(self, device: int, kernel: Any, launch: Launch, stream: int, a: int, b: int, c: int,
               shape: Shape, ops: Operands | None = None) -> None:
        """Enqueue one launch on the stream (a handle; 0: the legacy default stream); ops: a
        BLAS=1 kernel's further arguments (None: the plain signature)."""

    def gemm(self, device: int, stream: int, a: int, b: int, c: int, shape: Shape, trans_a: bool, trans_b: bool,
             ops: Operands) -> None:
        """Enqueue cuBLAS's SGEMM (pedantic FP32: no TF32) of a call's operands on the stream."""

    def prepare(self, device: int, kernel: Any, launch: Launch, shape: Shape) -> shortcuts.Launch | None:
        """The kernel's launch at the shape (plain signature) made ready for repeated calls: called with a
        stream handle and the three pointers, it enqueues and returns 0, or returns the driver's status
        without enqueuing; None where there is no such short way."""

    def workspace(self, device: int, nbytes: int, stream: int) -> ContextManager[int]:
        """Device memory of at least nbytes for a prologue's output (space.Prologue), the stream's own
        and kept for later calls: the launches enqueued on the stream inside the block are the only
        ones to use it until the block ends."""


class Matmul(FastCall):  # type: ignore[misc,valid-type]  # C or Python: api.fastcall
    """mm(A, B, out=None, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, stream=None, bias=None) -> out.

    A, B (and out) are device arrays with __dlpack__ or __cuda_array_interface__: 2-D matrices
    whose rows may be slices of wider ones (a leading dimension), or 3-D (batch, rows, cols)
    strided batches, a 2-D operand beside them shared by every batch. beta != 0 reads out, so it
    needs out=. Such calls run BLAS=1 kernels (api.operands says which). The kernel runs
    on `stream` (an int handle, or an object with __cuda_stream__, .cuda_stream or .ptr); by
    default on the current stream of A's library (torch, CuPy), else the legacy default stream.
    Without out, C is allocated by A's library (torch and CuPy arrays only). bias, a float32 vector
    of C's N columns on A's device, is added to every row of C (nn.Linear's y = x·Wᵀ + b; 2-D calls;
    api.bias). The call returns when the launch is enqueued, as the libraries' own products do."""

    __signature__ = CallSignature()

    def __init__(self, dispatcher: Dispatcher, launcher: Launcher):
        self.dispatcher, self.launcher = dispatcher, launcher
        self._kernels: dict[tuple[int, str, str, int], Any] = {}  # (device, source hash, name, opted-in shared bytes)
        self._names: dict[int, str] = {}
        # the plan of each kind of call (operands' shapes, strides, dtypes, devices; transposes, alpha,
        # beta): a repeated call skips the checks and the choice, whose Python cost a small product's kernel
        self._plans: dict[tuple, Plan] = {}
        # (A's shape, B's shape, transposes, device) of 2-D torch calls planned before: the short way of
        # such a call (api.shortcuts), its cost above the product's own a lookup and a few reads
        self._fast: dict[tuple, shortcuts.Shortcut] = {}
        self._lock = threading.Lock()
        # told (device, shape, layout) of each call kind planned onto cuBLAS (autotune.api.firstuse enqueues it)
        self.on_library: Callable[[int, Shape, Layout], None] | None = None

    def _call(self, A: Any, B: Any, out: Any = None, *, alpha: float = 1.0, beta: float = 0.0,
              trans_a: bool = False, trans_b: bool = False, stream: Any = None, bias: Any = None) -> Any:
        """The full path: a call that took no short way (api.fastcall)."""
        check_scalars(alpha, beta, trans_a, trans_b)
        handle = stream_handle(stream) if stream is not None else current_stream(A)
        current = stream is None and _on_device_of(A, B, out, bias)  # A's library's current stream is theirs too
        if a_other_float := library.other_float(A, B, out):  # a bias of another dtype: api.bias.check says so
            return library.torch_unchanged(A, B, out, alpha, beta, trans_a, trans_b, a_other_float, bias)

        def read(x: Any, name: str) -> ArrayView:
            return read_array(x, name, handle, self.launcher.device_of, current)

        a, b = read(A, "A"), read(B, "B")
        c = read(out, "out") if out is not None else None
        v = read(bias, "bias") if bias is not None else None
        table = self._fast  # taken before the plan, as the plans are (_planned)
        plan = self._planned(a, b, c, trans_a, trans_b, alpha, beta)
        if v is not None:
            biases.check(v, plan.call, c)
        if c is not None:  # per call, not per plan: the pointers change from call to call
            check_apart(c, a, b, *([v] if v is not None else []))
        if plan.geometry is None:
            return self._library(plan, A, B, out, (a, b, c, v), handle, current, (alpha, beta, trans_a, trans_b), bias)
        if out is None:
            if stream is None and current and alpha == 1.0 and beta == 0.0:
                self._shortcut_kernel(table, plan, A, B, trans_a, trans_b, v is not None)
            out = new_output(A, a, plan.call.out_shape)
        first, second = (b.ptr, a.ptr) if plan.swapped else (a.ptr, b.ptr)
        c_ptr = c.ptr if c is not None else read(out, "out").ptr
        self._launch(plan, handle, first, second, c_ptr)
        if v is not None:
            self._add_bias(plan.call, handle, v.ptr, c_ptr, c)
        return out

    def _shortcut_kernel(self, table: dict, plan: Plan, A: Any, B: Any, trans_a: bool, trans_b: bool,
                         biased: bool = False) -> None:
        """Remember the short way of a plain 2-D torch call that our kernel computes (api.shortcuts), with the
        prepared launch of the bias's kernel where a call of the kind had a bias (here, or before)."""
        torch = sys.modules.get("torch")
        call = plan.call
        if torch is None or plan.pre is not None or call.ops is not None or plan.geometry is None \
                or not shortcuts.kernel_eligible(torch, A, B):
            return
        launch = self.launcher.prepare(call.device, plan.kernel, plan.geometry, call.shape)
        fastcall.attach_aten(torch)  # the tensors' sizes read in C++ when a later call looks its way up
        if launch is None:
            return
        rows, cols = call.out_shape
        bias_launch = None
        if biased or self._bias_key(call.device) in self._kernels:  # loaded by a call with a bias
            bias_launch = self.launcher.prepare(call.device, self._bias_kernel(call.device),
                                                biases.geometry(rows, cols, self.launcher.limits(call.device)),
                                                (rows, cols, cols))
        self._remember(table, (A.shape, B.shape, trans_a, trans_b, call.device),
                       fastcall.kernel_way(torch, launch, call.device, call.out_shape, fastcall.NATIVE,
                                           plan.swapped, bias_launch))

    def _add_bias(self, call: Call, stream: int, bias: int, c: int, out: ArrayView | None) -> None:
        """C += bias, row by row, on the stream (the product's kernel enqueued before it); C's rows are out's
        (api.bias.check took its stride), or, allocated here, contiguous."""
        rows, cols = call.out_shape
        geometry = biases.geometry(rows, cols, self.launcher.limits(call.device))
        ldc = out.strides[0] if out is not None else cols
        self.launcher.launch(call.device, self._bias_kernel(call.device), geometry, stream, bias, bias, c,
                             (rows, cols, ldc))

    @staticmethod
    def _bias_key(device: int) -> tuple[int, str, str, int]:
        """The bias's kernel's key among the loaded kernels (_loaded)."""
        return device, biases.source_hash(), biases.KERNEL, 0

    def _bias_kernel(self, device: int) -> Any:
        """The bias's kernel (api.bias), loaded once per device."""
        return self._loaded(device, biases.source(), biases.source_hash(), biases.KERNEL, 0)

    @staticmethod
    def _remember(table: dict, key: tuple, value: Any) -> None:
        """A plan or a short way kept; a process that calls ever new shapes keeps a bounded cache."""
        if len(table) >= MAX_PLANS:
            table.clear()
        table[key] = value

    def _planned(self, a: ArrayView, b: ArrayView, c: ArrayView | None, trans_a: bool, trans_b: bool, alpha: float,
                 beta: float) -> Plan:
        key = (signature(a), signature(b), signature(c) if c is not None else None, trans_a, trans_b, alpha, beta)
        plans = self._plans  # taken first: a plan made across a forget() lands in the table it dropped
        plan = plans.get(key)
        if plan is None:
            plan = self._plan(a, b, c, trans_a, trans_b, alpha, beta)
            self._remember(plans, key, plan)
        return plan

    def _library(self, plan: Plan, A: Any, B: Any, out: Any,
                 views: tuple[ArrayView, ArrayView, ArrayView | None, ArrayView | None], stream: int, current: bool,
                 how: tuple[float, float, bool, bool], bias: Any) -> Any:
        """cuBLAS computes the call: torch's own matmul for torch tensors on torch's current stream (the
        library the caller would have called, under FP32), else cuBLAS on the call's stream."""
        alpha, beta, trans_a, trans_b = how
        a, b, c, v = views
        call = plan.call
        torch = library.torch_of(A, current)
        if torch is not None:
            table = self._fast  # taken first, as the plans are (_planned)
            if out is None and alpha == 1.0 and beta == 0.0 and len(a.shape) == 2 == len(B.shape) and \
                    self.dispatcher.runs_library(self.gpu_name(call.device), call.shape, trans_a, trans_b):
                self._remember(table, (A.shape, B.shape, trans_a, trans_b, call.device),
                               shortcuts.to_torch(torch, trans_a, trans_b))
                fastcall.attach_aten(torch)  # its later calls: the tensors read and at::mm called from C++
            return library.torch_product(torch, A, B, out, alpha, beta, trans_a, trans_b, bias)
        if out is None:
            out = new_output(A, a, call.out_shape)
        ptr = c.ptr if c is not None else read_array(out, "out", stream, self.launcher.device_of).ptr
        ops = call.ops or tight(*call.shape, trans_a, trans_b)
        self.launcher.gemm(call.device, stream, a.ptr, b.ptr, ptr, call.shape, trans_a, trans_b, ops)
        if v is not None:
            self._add_bias(call, stream, v.ptr, ptr, c)
        return out

    def _launch(self, plan: Plan, stream: int, a: int, b: int, c: int) -> None:
        """The plan's launches on the stream: with a prologue, first its kernel into the stream's workspace."""
        call = plan.call
        assert plan.geometry is not None
        if plan.pre is None:
            self.launcher.launch(call.device, plan.kernel, plan.geometry, stream, a, b, c, call.shape, call.ops)
            return
        with self.launcher.workspace(call.device, plan.pre.floats * 4, stream) as work:
            self.launcher.launch(call.device, plan.pre_kernel, plan.pre.launch, stream, a, b, work, call.shape)
            self.launcher.launch(call.device, plan.kernel, plan.geometry, stream, a, work, c, call.shape, call.ops)

    def _plan(self, a: ArrayView, b: ArrayView, c: ArrayView | None, trans_a: bool, trans_b: bool, alpha: float,
              beta: float) -> Plan:
        """Everything about a call but its pointers: checked operands, the kernel chosen and loaded, its launch."""
        call = describe(a, b, c, trans_a, trans_b, alpha, beta)
        device, shape = call.device, call.shape
        limits = self.launcher.limits(device)
        choice = self.dispatcher.choose(self.gpu_name(device), shape, call.layout, limits)
        if choice.config is None:
            if self.on_library is not None:
                self.on_library(device, shape, call.layout)
            return Plan(call, None, None, None, None)
        if choice.swapped is not None:  # the same floats as the NN product of B and A: computed as that
            call = Call(choice.swapped, PLAIN, None, device, call.out_shape)
            shape = choice.swapped
        geometry = choice.config.geometry(shape[0], shape[1], limits)
        if call.ops is not None:
            geometry = batched(geometry, call.ops.batch)
        kernel = self._kernel(device, choice, choice.kernel, geometry.shared_bytes)
        pre = choice.config.prologue(*shape)
        pre_kernel = self._kernel(device, choice, choice.kernel + PROLOGUE_SUFFIX, 0) if pre is not None else None
        return Plan(call, geometry, kernel, pre, pre_kernel, choice.swapped is not None)

    def choose(self, M: int, N: int, K: int, device: int = 0, *, trans_a: bool = False,
               trans_b: bool = False, blas: bool = False, batch: int = 1) -> Choice:
        """The kernel a call of this shape and these transposes on this device runs, and why it
        was chosen; blas: a call that needs the cuBLAS-style signature (of `batch` batches)."""
        if type(trans_a) is not bool or type(trans_b) is not bool:  # bools (every call of Linear's) need no check
            check_flags(trans_a, trans_b)
        if type(batch) is not int or batch < 1:
            raise AutotuneError(f"batch={batch!r}: pass a whole number of products, at least 1")
        if type(device) is not int or device < 0:
            raise AutotuneError(f"device={device!r}: pass a CUDA device's index, a whole number from 0")
        layout = Layout(trans_a, trans_b, blas or batch > 1, batch)
        return self.dispatcher.choose(self.gpu_name(device), (M, N, K), layout)

    def runs_library(self, M: int, N: int, K: int, device: int = 0, *, trans_a: bool = False,
                     trans_b: bool = False) -> bool:
        """Whether a plain call of this shape and these transposes runs cuBLAS (no kernel measured there beat it)."""
        return self.choose(M, N, K, device, trans_a=trans_a, trans_b=trans_b).library

    def forget(self, shape: Shape) -> None:
        """Choose again for this shape at its next call (new rows were recorded there: autotune.api.firstuse).
        Every plan and torch shortcut is dropped (each call kind plans once more), as the dispatcher's
        choices at the shape are, in that order: the tables are replaced, not emptied, so a plan being made
        meanwhile goes into the table dropped (_planned takes the table before it asks the dispatcher)."""
        self.dispatcher.forget(shape)
        self._plans, self._fast = {}, {}

    def gpu_name(self, device: int) -> str:
        name = self._names.get(device)
        if name is None:
            name = self._names[device] = self.launcher.device_name(device)
        return name

    def _kernel(self, device: int, choice: Choice, name: str, shared_bytes: int) -> Any:
        """A kernel of the choice's module (its own, or its prologue's), loaded once per process."""
        return self._loaded(device, choice.source, choice.source_hash, name, shared_bytes)

    def _loaded(self, device: int, source: str, source_hash: str, name: str, shared_bytes: int) -> Any:
        key = (device, source_hash, name, shared_bytes)
        kernel = self._kernels.get(key)
        if kernel is None:
            with self._lock:  # two threads asking at once compile once
                kernel = self._kernels.get(key)
                if kernel is None:
                    kernel = self._kernels[key] = self.launcher.load(device, source, name, shared_bytes)
        return kernel


def _on_device_of(A: Any, *others: Any) -> bool:
    """Whether every torch tensor among the others is on A's device (then the stream that is current for
    A is current for them); other arrays are read through their protocols whatever this says."""
    device = getattr(A, "device", None)
    return all(getattr(x, "device", device) == device for x in others if x is not None)


def stream_handle(stream: Any) -> int:
    """An int handle from what callers pass for a stream."""
    if isinstance(stream, int) and not isinstance(stream, bool):
        return stream
    if hasattr(stream, "__cuda_stream__"):  # cuda.core's protocol: (version, handle)
        return int(stream.__cuda_stream__()[1])
    for attr in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
        if isinstance(getattr(stream, attr, None), int):
            return int(getattr(stream, attr))
    raise AutotuneError(f"stream={stream!r} is not a CUDA stream: pass an int handle, a torch.cuda.Stream, a "
                        f"cupy.cuda.Stream or an object with __cuda_stream__")


def current_stream(x: Any) -> int:
    """The stream A's library runs on now (torch: on A's device; CuPy: its current device's);
    for other libraries, the legacy default stream (0). Only a library already imported by the
    caller is asked: an array of it exists."""
    module = type(x).__module__.partition(".")[0]
    if module == "torch" and getattr(x, "is_cuda", False):
        return int(sys.modules["torch"].cuda.current_stream(x.device).cuda_stream)
    if module == "cupy":
        return int(sys.modules["cupy"].cuda.get_current_stream().ptr)
    return 0


def new_output(A: Any, a: ArrayView, shape: tuple[int, ...]) -> Any:
    """C, M x N (or batch x M x N) float32 on A's device, allocated by A's library."""
    if a.library == "torch":
        return A.new_empty(shape)  # A's dtype (float32, checked) and device; torch's current stream
    if a.library == "cupy":
        cupy = sys.modules["cupy"]
        with cupy.cuda.Device(a.device):
            return cupy.empty(shape, dtype=cupy.float32)
    raise AutotuneError(f"pass out= (an M x N float32 device array): a new output is allocated for torch and CuPy "
                        f"arrays only, and A is a {a.library} array")
