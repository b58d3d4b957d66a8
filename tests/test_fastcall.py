"""api.fastcall's contract, for each of its implementations (Python; C, where the extension was built; C with
api._aten's steps against libtorch, built here for the torch at hand): a planned call kind's short way runs (a
TorchProduct inline, any other called with (A, B)), and every other call reaches _call, the full path, with the
arguments it was given."""
from __future__ import annotations

import ctypes
import os
import sys
import threading
from types import SimpleNamespace

import pytest

from autotune.api import fastcall, shortcuts
from autotune.backends.cuda import fastlaunch
from autotune.space import Launch

torch = pytest.importorskip("torch")
COMPILED = fastcall.compiled()


@pytest.fixture(scope="module")
def aten_cache(tmp_path_factory):
    """A cache of its own where api.aten_build built api._aten for the torch at hand, as a first use does."""
    from autotune.api import aten_build

    if COMPILED is None:
        pytest.skip("the C extension was not built here (no compiler or headers)")
    cache = tmp_path_factory.mktemp("aten-cache")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("AUTOTUNE_CACHE", str(cache))
        why = aten_build.build(torch)
        if why:
            pytest.fail(why) if os.environ.get("CI") else pytest.skip(f"api._aten did not build here: {why}")
        return cache, aten_build.target(torch)


@pytest.fixture(scope="module")
def aten(aten_cache):
    from autotune.api import aten_build

    return aten_build.load(aten_cache[1])


@pytest.fixture
def with_aten(aten):
    before = fastcall.NATIVE.use_aten(aten.steps)
    yield aten
    fastcall.NATIVE.use_aten(before)


@pytest.fixture
def without_aten():
    """The C first step as it runs where api._aten was not built (or not for this torch)."""
    before = fastcall.NATIVE.use_aten(None) if COMPILED is not None else None
    yield
    if COMPILED is not None:
        fastcall.NATIVE.use_aten(before)


@pytest.fixture(params=[pytest.param("python", id="python"),
                        pytest.param("c", id="c", marks=pytest.mark.skipif(
                            COMPILED is None, reason="the C extension was not built here (no compiler or headers)")),
                        pytest.param("c+aten", id="c+aten", marks=pytest.mark.skipif(
                            COMPILED is None, reason="the C extension was not built here (no compiler or headers)"))])
def base(request):
    """Each implementation of the first step, as a base class."""
    if request.param == "python":
        return fastcall.PyFastCall
    request.getfixturevalue("with_aten" if request.param == "c+aten" else "without_aten")
    return COMPILED


def recording(base: type):
    """An instance of the base whose full path records the call's arguments and returns "full path"."""

    class Recording(base):  # type: ignore[misc,valid-type]
        def _call(self, A, B, out=None, *, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, stream=None, **more):
            self.calls.append((A, B, out, alpha, beta, trans_a, trans_b, stream) + ((more,) if more else ()))
            return "full path"

    mm = Recording()
    mm._fast, mm.calls = {}, []
    return mm


def key(A, B, trans_a=False, trans_b=False):
    return (A.shape, B.shape, trans_a, trans_b, A.get_device())


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
def test_a_torch_product_runs_inline_on_the_operands_views(base, trans_a, trans_b):
    mm = recording(base)
    A = torch.randn(3, 5) if trans_a else torch.randn(5, 3)
    B = torch.randn(4, 3) if trans_b else torch.randn(3, 4)
    mm._fast[key(A, B, trans_a, trans_b)] = shortcuts.to_torch(torch, trans_a, trans_b)
    C = mm(A, B, trans_a=trans_a, trans_b=trans_b)
    assert torch.equal(C, torch.mm(A.mT if trans_a else A, B.mT if trans_b else B)) and mm.calls == []


def test_a_torch_product_leaves_another_dtype_and_tf32_to_the_full_path(base):
    mm = recording(base)
    A, B = torch.randn(5, 3), torch.randn(3, 4)
    mm._fast[key(A, B)] = mm._fast[key(A.double(), B.double())] = shortcuts.to_torch(torch, False, False)
    assert mm(A.double(), B.double()) == "full path"
    was = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        assert mm(A, B) == "full path"
    finally:
        torch.backends.cuda.matmul.allow_tf32 = was
    assert len(mm.calls) == 2


@pytest.mark.parametrize("trans_b", [False, True])
def test_a_torch_product_with_a_bias_is_torch_addmm(base, trans_b):
    mm = recording(base)
    A, B = torch.randn(5, 3), torch.randn(4, 3) if trans_b else torch.randn(3, 4)
    bias = torch.randn(4)
    mm._fast[key(A, B, False, trans_b)] = shortcuts.to_torch(torch, False, trans_b)
    C = mm(A, B, trans_b=trans_b, bias=bias)
    assert torch.equal(C, torch.addmm(bias, A, B.mT if trans_b else B)) and mm.calls == []
    assert torch.equal(mm(A, B, trans_b=trans_b, bias=None), torch.mm(A, B.mT if trans_b else B))


@pytest.mark.parametrize("why", ["short", "float64", "2-D", "strided", "elsewhere"])
def test_a_torch_product_leaves_a_bias_it_does_not_take_as_it_is_to_the_full_path(base, why):
    # the full path says what is wrong with it in one line (api.bias.check), where torch.addmm would raise its own
    mm = recording(base)
    A, B = torch.randn(5, 3), torch.randn(3, 4)
    bias = {"short": lambda: torch.randn(3), "float64": lambda: torch.randn(4).double(),
            "2-D": lambda: torch.randn(1, 4), "strided": lambda: torch.randn(8)[::2],
            "elsewhere": lambda: SimpleNamespace(dtype=torch.float32, shape=(4,), dim=lambda: 1,
                                                 is_contiguous=lambda: True, get_device=lambda: 0)}[why]()
    mm._fast[key(A, B)] = shortcuts.to_torch(torch, False, False)
    assert mm(A, B, bias=bias) == "full path" and mm.calls[0][-1] == {"bias": bias}


def test_another_short_way_is_called_and_none_means_the_full_path(base):
    mm = recording(base)
    A, B = torch.randn(5, 3), torch.randn(3, 4)
    seen = []
    mm._fast[key(A, B)] = lambda a, b: seen.append((a, b)) or "kernel"
    assert mm(A, B) == "kernel" and seen == [(A, B)] and mm.calls == []
    mm._fast[key(A, B)] = lambda a, b: None
    assert mm(A, B) == "full path" and mm.calls == [(A, B, None, 1.0, 0.0, False, False, None)]

    def fails(a, b):
        raise RuntimeError("the short way's own error")

    mm._fast[key(A, B)] = fails
    with pytest.raises(RuntimeError, match="own error"):
        mm(A, B)


@pytest.mark.parametrize("how", ["unplanned", "not torch", "out", "alpha", "stream", "trans as 1", "three args"])
def test_every_other_call_reaches_the_full_path_with_its_arguments(base, how):
    mm = recording(base)
    A, B = torch.randn(5, 3), torch.randn(3, 4)
    mm._fast[key(A, B)] = lambda a, b: "kernel"
    args, kwargs = {
        "unplanned": ((torch.randn(6, 3), B), {}),
        "not torch": ((SimpleNamespace(shape=A.shape), B), {}),
        "out": ((A, B), {"out": "C"}),
        "alpha": ((A, B), {"alpha": 2.0}),
        "stream": ((A, B), {"stream": 7}),
        "trans as 1": ((A, B), {"trans_b": 1}),
        "three args": ((A, B, "C"), {}),
    }[how]
    assert mm(*args, **kwargs) == "full path"
    called = mm.calls[0]
    assert called[:2] == args[:2]
    named = dict(zip(("out", "alpha", "beta", "trans_a", "trans_b", "stream"), called[2:]))
    expected = {"out": None, "alpha": 1.0, "beta": 0.0, "trans_a": False, "trans_b": False, "stream": None,
                **kwargs, **({"out": args[2]} if len(args) == 3 else {})}
    assert named == expected


def test_a_table_replaced_is_the_one_read(base):
    mm = recording(base)
    A, B = torch.randn(5, 3), torch.randn(3, 4)
    mm._fast[key(A, B)] = lambda a, b: "kernel"
    assert mm(A, B) == "kernel"
    mm._fast = {}  # Matmul.forget() replaces the table
    assert mm(A, B) == "full path"



def test_a_table_emptied_or_changed_is_the_one_read(base):
    """The C steps keep a memo of the table's lookups (Python 3.12 on): it must never answer for a table changed."""
    mm = recording(base)
    A, B = torch.randn(5, 3), torch.randn(3, 4)
    mm._fast[key(A, B)] = lambda a, b: "kernel"
    assert mm(A, B) == mm(A, B) == "kernel"
    mm._fast.clear()  # Matmul._remember empties a full table
    assert mm(A, B) == "full path"
    mm._fast[key(A, B)] = lambda a, b: "again"
    assert mm(A, B) == "again"
    del mm._fast[key(A, B)]
    assert mm(A, B) == "full path"


def test_each_call_kind_finds_its_own_way_among_many(base):
    """More kinds than the memo's slots, told apart by every part of the key: the sizes, transposes, device."""
    mm = recording(base)
    calls = []
    for n in range(1, 41):
        A, B = torch.randn(1 + n % 3, 3), torch.randn(3, n)
        for trans_b in (False, True):
            Bt = B.mT.contiguous() if trans_b else B
            mm._fast[key(A, Bt, False, trans_b)] = lambda a, b, tag=(n, trans_b): tag
            calls.append((A, Bt, trans_b, (n, trans_b)))
    for _ in range(2):
        for A, B, trans_b, tag in reversed(calls):
            assert mm(A, B, trans_b=trans_b) == tag
    S = torch.randn(3, 3)  # the same shapes, four ways: the transposes alone tell them apart
    for trans_a in (False, True):
        for trans_b in (False, True):
            mm._fast[key(S, S, trans_a, trans_b)] = lambda a, b, tag=(trans_a, trans_b): tag
    for _ in range(2):
        for trans_a in (False, True):
            for trans_b in (False, True):
                assert mm(S, S, trans_a=trans_a, trans_b=trans_b) == (trans_a, trans_b)
    # stand-ins of one shape on more devices than the memo has slots, so that some share one; the last unplanned
    on = [SimpleNamespace(shape=S.shape, get_device=lambda d=d: d) for d in range(41)]
    for d in range(40):
        mm._fast[key(on[d], S)] = lambda a, b, d=d: f"device {d}"
    for _ in range(2):
        assert [mm(a, S) for a in on] == [f"device {d}" for d in range(40)] + ["full path"]

# ---- api._aten: the steps against libtorch, each declining what is not theirs ----

class Sub(torch.Tensor):
    """A subclass whose __torch_function__ must see the products of its tensors."""

    seen: list = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.seen.append(func.__name__)
        return super().__torch_function__(func, types, args, kwargs or {})


def test_the_aten_read_gives_the_sizes_and_device_of_plain_2d_tensors(aten):
    A, B = torch.randn(5, 3), torch.randn(3, 4)
    assert aten.read(A, B) == ((5, 3, 3, 4), -1)
    assert aten.read(torch.nn.Parameter(A), B.mT) == ((5, 3, 4, 3), -1)
    for a, b in [(A, torch.randn(2, 3, 4)), (A.as_subclass(Sub), B), (A, SimpleNamespace(shape=B.shape)), (A, 1)]:
        assert aten.read(a, b) is None


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
def test_the_aten_product_is_torch_mm_of_the_operands_views(aten, trans_a, trans_b):
    A = torch.randn(3, 5) if trans_a else torch.randn(5, 3)
    B = torch.randn(4, 3) if trans_b else torch.randn(3, 4)
    assert torch.equal(aten.product(A, B, trans_a, trans_b), torch.mm(A.mT if trans_a else A, B.mT if trans_b else B))


def test_the_aten_product_of_transposes_is_torch_mm_s_for_strided_offset_and_flagged_operands(aten):
    # the transposes it makes itself keep the operand's strides, storage offset and dispatch keys
    big = torch.randn(9, 11)
    A, W = big[1:6, 2:5], big[2:6, 5:8]  # 5x3 and 4x3 views: rows of 11, offsets 13 and 27
    assert torch.equal(aten.product(A, W, False, True), torch.mm(A, W.mT))
    assert torch.equal(aten.product(A.mT, W, True, True), torch.mm(A, W.mT))
    negated = torch._neg_view(W)
    assert torch.equal(aten.product(A, negated, False, True), torch.mm(A, negated.mT))
    assert aten.product(A, torch.randn(4, 3, 2), False, True) is None  # at::mm raised: 3-D, as torch.mm from Python
    assert torch.equal(big[1:6, 2:5], A) and torch.equal(big[2:6, 5:8], W)


def test_the_aten_product_is_an_ordinary_tensor_and_records_gradients_where_wanted(aten):
    # without gradients at::mm runs below autograd (the transposed view's bookkeeping skipped): its C must still
    # be a plain tensor that later autograd may use; with an operand that wants one it goes through autograd
    A, B = torch.randn(5, 3), torch.randn(4, 3)
    C = aten.product(A, B, False, True)
    assert not C.requires_grad and not C.is_inference() and C._base is None and C.grad_fn is None
    w = torch.randn(5, 4, requires_grad=True)
    (C * w).sum().backward()
    assert torch.equal(w.grad, C)
    wanted = B.clone().requires_grad_()
    aten.product(A, wanted, False, True).square().sum().backward()
    theirs = B.clone().requires_grad_()
    torch.mm(A, theirs.mT).square().sum().backward()
    assert torch.equal(wanted.grad, theirs.grad)


def test_the_aten_steps_under_no_grad_take_a_parameter_and_make_a_plain_tensor(aten):
    A, W = torch.randn(5, 3), torch.nn.Parameter(torch.randn(4, 3))
    assert aten.operands(A, W.mT, -1, (5, 4)) is None  # not contiguous; and W itself, with grad mode on:
    assert aten.operands(W, A.mT.contiguous(), -1, (4, 5)) is None
    with torch.no_grad():
        C = aten.product(A, W, False, True)
        D, pointers = aten.operands(W, A.mT.contiguous(), -1, (4, 5))
    assert torch.equal(C, torch.mm(A, W.detach().mT)) and not C.requires_grad and C.grad_fn is None
    assert not D.requires_grad and pointers[0] == W.data_ptr() and pointers[2] == D.data_ptr()


def test_the_aten_product_declines_what_torch_mm_from_python_must_do(aten):
    A, B = torch.randn(5, 3), torch.randn(3, 4)
    assert aten.product(A.double(), B, False, False) is None and aten.product(A, B.double(), False, False) is None
    assert aten.product(A, torch.randn(4, 4), False, False) is None  # at::mm raised: torch.mm raises it from Python
    assert aten.product(A.as_subclass(Sub), B, False, False) is None
    was = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        assert aten.product(A, B, False, False) is None
    finally:
        torch.backends.cuda.matmul.allow_tf32 = was
    from torch.overrides import TorchFunctionMode

    with TorchFunctionMode():
        assert aten.product(A, B, False, False) is None


def test_the_aten_product_with_a_bias_is_torch_addmm_and_records_its_gradient_where_wanted(aten):
    A, W, bias = torch.randn(5, 3), torch.randn(4, 3), torch.randn(4)
    assert torch.equal(aten.product(A, W, False, True, bias), torch.addmm(bias, A, W.mT))
    for other in (torch.randn(3), torch.randn(4).double(), torch.randn(1, 4), torch.randn(8)[::2], 4.0,
                  bias.as_subclass(Sub)):
        assert aten.product(A, W, False, True, other) is None  # the full path says what is wrong with it
    wanted = bias.clone().requires_grad_()
    aten.product(A, W, False, True, wanted).square().sum().backward()
    theirs = bias.clone().requires_grad_()
    torch.addmm(theirs, A, W.mT).square().sum().backward()
    assert torch.equal(wanted.grad, theirs.grad)


def test_the_aten_bias_step_gives_the_pointer_of_a_bias_our_kernel_takes_or_declines(aten):
    bias = torch.randn(4)
    assert aten.bias(bias, -1, 4) == bias.data_ptr()
    for other, device, cols in [(bias, -1, 5), (bias, 0, 4), (bias.double(), -1, 4), (torch.randn(1, 4), -1, 4),
                                (torch.randn(8)[::2], -1, 4), (bias.as_subclass(Sub), -1, 4), (4.0, -1, 4),
                                (torch.randn(4, requires_grad=True), -1, 4)]:
        assert aten.bias(other, device, cols) is None
    with torch.no_grad():  # a layer's bias requires grad; under no_grad no gradient is recorded
        assert aten.bias(torch.nn.Parameter(bias), -1, 4) == bias.data_ptr()


def test_the_aten_operands_are_a_new_c_and_the_three_pointers_or_declined(aten):
    A, B = torch.randn(5, 3), torch.randn(3, 4)
    C, pointers = aten.operands(A, B, -1, (5, 4))
    assert C.shape == (5, 4) and C.dtype == torch.float32 and pointers == (A.data_ptr(), B.data_ptr(), C.data_ptr())
    for a, b, device in [(A.double(), B, -1), (A, B.double(), -1), (torch.randn(3, 5).mT, B, -1),
                         (A, torch.randn(4, 3).mT, -1), (A.clone().requires_grad_(), B, -1),
                         (A, B.clone().requires_grad_(), -1), (A, B, 0), (A.as_subclass(Sub), B, -1)]:
        assert aten.operands(a, b, device, (5, 4)) is None


def test_with_aten_a_torch_function_mode_and_a_subclass_see_the_pass_through(with_aten):
    from torch.overrides import TorchFunctionMode

    class Seeing(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func.__name__)
            return func(*args, **(kwargs or {}))

    mm = recording(COMPILED)
    A, B = torch.randn(5, 3), torch.randn(3, 4)
    mm._fast[key(A, B)] = shortcuts.to_torch(torch, False, False)
    seen: list[str] = []
    with Seeing():
        mm(A, B)
    assert seen[-1:] == ["mm"]  # after the reads of .shape and .dtype that it also sees
    Sub.seen.clear()
    assert torch.equal(mm(A.as_subclass(Sub), B).as_subclass(torch.Tensor), A @ B) and "mm" in Sub.seen


def test_with_aten_a_parameter_s_product_has_torch_mm_s_gradients(with_aten):
    mm = recording(COMPILED)
    W, x = torch.nn.Parameter(torch.randn(5, 3)), torch.randn(3, 4, requires_grad=True)
    mm._fast[key(W, x)] = shortcuts.to_torch(torch, False, False)
    mm(W, x).square().sum().backward()
    got = (W.grad, x.grad)
    W.grad = x.grad = None
    torch.mm(W, x).square().sum().backward()
    assert torch.equal(got[0], W.grad) and torch.equal(got[1], x.grad) and mm.calls == []


def test_aten_steps_are_taken_only_for_the_torch_they_were_built_for(aten_cache, monkeypatch, without_aten):
    from autotune.api import aten_build

    monkeypatch.setenv("AUTOTUNE_CACHE", str(aten_cache[0]))
    monkeypatch.delenv("AUTOTUNE_ATEN", raising=False)
    assert aten_build.steps(torch) is not None and aten_build.steps(SimpleNamespace(__version__="0.0")) is None
    monkeypatch.setattr(fastcall, "ATEN_ASKED", False)
    monkeypatch.setattr(fastcall, "ATEN", False)
    fastcall.attach_aten(torch)  # cached: taken at once
    assert fastcall.ATEN and fastcall.NATIVE.use_aten(None) is not None
    monkeypatch.setenv("AUTOTUNE_ATEN", "0")
    assert aten_build.steps(torch) is None


def test_a_build_runs_once_in_a_thread_and_a_failed_one_is_not_tried_again(aten_cache, tmp_path, monkeypatch):
    """The compiler a stand-in: one that copies the module built before, then one that fails."""
    from autotune.api import aten_build

    monkeypatch.setenv("AUTOTUNE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("AUTOTUNE_ATEN", raising=False)
    copies = tmp_path / "copies"
    copies.write_text(f'#!/bin/sh\necho >> {tmp_path}/ran\nwhile [ "$1" != -o ]; do shift; done\n'
                      f'cp {aten_cache[1]} "$2"\n')
    copies.chmod(0o755)
    monkeypatch.setenv("CXX", str(copies))
    got = []
    for _ in range(2):  # the second while the first builds, or after: no second build either way
        aten_build.when_built(torch, got.append)
    for thread in [t for t in threading.enumerate() if t.name == "autotune-aten-build"]:
        thread.join(60)
    assert len(got) == 1 and (tmp_path / "ran").read_text().count("\n") == 1
    aten_build.when_built(torch, got.append)  # cached now: at once, no build
    assert len(got) == 2 and (tmp_path / "ran").read_text().count("\n") == 1
    fails = tmp_path / "fails"
    fails.write_text(f"#!/bin/sh\necho >> {tmp_path}/failed\necho no such header >&2\nexit 1\n")
    fails.chmod(0o755)
    monkeypatch.setenv("CXX", str(fails))
    for _ in range(2):  # as two processes would, one after the other
        monkeypatch.setattr(aten_build, "_started", set())
        aten_build.when_built(torch, got.append, wait=True)
    why = (aten_build.folder(torch) / "failed.txt").read_text()
    assert why == f"{fails} exited 1: no such header\n" and (tmp_path / "failed").read_text().count("\n") == 1
    assert len(got) == 2 and not aten_build.target(torch).exists()


def test_a_matmul_shows_its_calls_parameters_and_its_class_its_constructors():
    import inspect

    from autotune.api.matmul import Matmul

    mm = Matmul.__new__(Matmul)
    assert list(inspect.signature(mm).parameters) == ["A", "B", "out", "alpha", "beta", "trans_a", "trans_b", "stream",
                                                    "bias"]
    assert list(inspect.signature(Matmul).parameters) == ["dispatcher", "launcher"]


# ---- the short way of a call our kernel computes: to_kernel's closure and the extension's KernelProduct ----

LAUNCH_C = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p,
                            ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)  # cuLaunchKernel's signature
@pytest.fixture(params=[pytest.param("python", id="python"),
                        pytest.param("c", id="c", marks=pytest.mark.skipif(
                            fastcall.NATIVE is None, reason="the C extension was not built here (no compiler or headers)")),
                        pytest.param("c+aten", id="c+aten", marks=pytest.mark.skipif(
                            fastcall.NATIVE is None, reason="the C extension was not built here (no compiler or headers)"))])
def c(request):
    """The extension whose KernelProduct kernel_way makes (None: to_kernel's closure), with api._aten's steps or not."""
    if request.param == "python":
        return None
    request.getfixturevalue("with_aten" if request.param == "c+aten" else "without_aten")
    return fastcall.NATIVE


class StandInTorch:
    """torch with its CUDA getters played: CPU tensors are on "device" -1 (get_device()), made current here."""

    float32 = torch.float32
    is_grad_enabled = staticmethod(torch.is_grad_enabled)

    def __init__(self, current: int = -1):
        self.current = current
        self._C = SimpleNamespace(_cuda_getCurrentRawStream=lambda device: 1000 + device,
                                  _cuda_getDevice=lambda: self.current)


def kernel_way(c, monkeypatch, status: int = 0, current: int = -1, swapped: bool = False, bias: bool = False,
               bias_status: int = 0):
    """A kernel way (api.fastcall.kernel_way) over a driver whose cuLaunchKernel records each launch; with the
    bias's kernel (0xB1A5) prepared where `bias`."""
    launches: list[tuple] = []

    def driver(function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        pointers = [ctypes.c_uint64.from_address(params[i]).value for i in range(3)]
        ints = [ctypes.c_int32.from_address(params[i]).value for i in range(3, 6)]
        launches.append((function, (gx, gy, gz), (bx, by, bz), shared, stream, *pointers, *ints, extra))
        return bias_status if function == 0xB1A5 else status

    plain = LAUNCH_C(driver)
    monkeypatch.setattr(fastlaunch, "_lib", (None, plain))
    prepared = fastlaunch.PreparedLaunch(0xF00, Launch((7, 3, 2), (256, 1, 1), 4096), 5, 4, 3)
    bias_launch = fastlaunch.PreparedLaunch(0xB1A5, Launch((9, 1, 1), (256, 1, 1), 0), 5, 4, 4) if bias else None
    way = fastcall.kernel_way(StandInTorch(current), prepared, -1, (5, 4), c, swapped, bias_launch)
    assert (type(way).__name__ == "KernelProduct") == (c is not None)
    return way, launches


def test_a_kernel_way_launches_on_the_current_stream_with_the_operands_pointers(c, monkeypatch):
    way, launches = kernel_way(c, monkeypatch)
    A, B = torch.randn(5, 3), torch.randn(3, 4)
    C = way(A, B)
    assert C.shape == (5, 4) and C.dtype == torch.float32
    assert launches == [(0xF00, (7, 3, 2), (256, 1, 1), 4096, 999, A.data_ptr(), B.data_ptr(), C.data_ptr(),
                         5, 4, 3, None)]


def test_a_swapped_kernel_way_hands_the_kernel_b_first(c, monkeypatch):
    # the NN product of B and A computes the call (api.operands.swapped_shape): the same checks, C as the call's
    way, launches = kernel_way(c, monkeypatch, swapped=True)
    A, B = torch.randn(5, 3), torch.randn(3, 4)
    C = way(A, B)
    assert C.shape == (5, 4) and launches[0][5:8] == (B.data_ptr(), A.data_ptr(), C.data_ptr())
    assert way(A.double(), B) is None and len(launches) == 1


@pytest.mark.parametrize("why", ["a float64", "b float64", "a strided", "b strided", "a grad", "b grad", "b elsewhere"])
def test_a_kernel_way_leaves_other_calls_to_the_full_path(c, why, monkeypatch):
    way, launches = kernel_way(c, monkeypatch)
    A, B = torch.randn(5, 3), torch.randn(3, 4)
    A, B = {"a float64": lambda: (A.double(), B), "b float64": lambda: (A, B.double()),
            "a strided": lambda: (torch.randn(3, 5).mT, B), "b strided": lambda: (A, torch.randn(4, 3).mT),
            "a grad": lambda: (A.requires_grad_(), B), "b grad": lambda: (A, B.requires_grad_()),
            "b elsewhere": lambda: (A, SimpleNamespace(dtype=torch.float32, requires_grad=False,
                                                       is_contiguous=lambda: True, get_device=lambda: 0))}[why]()
    assert way(A, B) is None and launches == []


@pytest.mark.parametrize("which", ["a", "b"])
def test_a_kernel_way_takes_an_operand_that_requires_grad_under_no_grad(c, which, monkeypatch):
    # a layer's weight under torch.no_grad(): no gradient is recorded, so the product is a plain one
    way, launches = kernel_way(c, monkeypatch)
    A, B = torch.randn(5, 3), torch.randn(3, 4)
    (A if which == "a" else B).requires_grad_()
    with torch.no_grad():
        C = way(A, B)
    assert not C.requires_grad and launches[0][5:8] == (A.data_ptr(), B.data_ptr(), C.data_ptr())
    assert way(A, B) is None and len(launches) == 1  # grad mode on: autograd would record it, the full path's


def test_a_kernel_way_needs_the_device_current_and_the_launch_enqueued(c, monkeypatch):
    way, launches = kernel_way(c, monkeypatch, current=0)
    assert way(torch.randn(5, 3), torch.randn(3, 4)) is None and launches == []
    way, launches = kernel_way(c, monkeypatch, status=201)  # CUDA_ERROR_INVALID_CONTEXT: not enqueued
    assert way(torch.randn(5, 3), torch.randn(3, 4)) is None and len(launches) == 1


@pytest.mark.parametrize("status", [0, 201])
def test_a_kernel_way_keeps_no_reference_to_what_it_was_given(c, status, monkeypatch):
    way, launches = kernel_way(c, monkeypatch, status=status)
    A, B = torch.randn(5, 3), torch.randn(3, 4)
    before = sys.getrefcount(A), sys.getrefcount(B)
    for _ in range(200):
        way(A, B)
    launches.clear()
    assert (sys.getrefcount(A), sys.getrefcount(B)) == before


def test_a_planned_kernel_call_takes_its_kernel_way(base, c, monkeypatch):
    mm = recording(base)
    way, launches = kernel_way(c, monkeypatch)
    A, B = torch.randn(5, 3), torch.randn(3, 4)
    mm._fast[key(A, B)] = way
    C = mm(A, B)
    assert mm.calls == [] and launches[0][5:8] == (A.data_ptr(), B.data_ptr(), C.data_ptr())
    assert mm(A.double(), B) == "full path"


def test_building_aten_without_torch_is_one_line_and_exit_2(monkeypatch, capsys):
    from autotune.api import aten_build

    monkeypatch.setitem(sys.modules, "torch", None)
    assert aten_build.main() == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install torch" in err


# ---- a kernel way with a bias: the product's kernel, then the bias's (api.bias); the bias read by api._aten's steps
# where they are attached, else by api.shortcuts.bias_reader ----

@pytest.mark.parametrize("swapped", [False, True])
def test_a_kernel_way_with_a_bias_launches_the_bias_s_kernel_on_c_after_the_product(c, monkeypatch, swapped):
    way, launches = kernel_way(c, monkeypatch, bias=True, swapped=swapped)
    A, B, bias = torch.randn(5, 3), torch.randn(3, 4), torch.randn(4)
    C = way(A, B, bias)
    first, second = (B, A) if swapped else (A, B)
    assert launches == [(0xF00, (7, 3, 2), (256, 1, 1), 4096, 999, first.data_ptr(), second.data_ptr(), C.data_ptr(),
                         5, 4, 3, None),
                        (0xB1A5, (9, 1, 1), (256, 1, 1), 0, 999, bias.data_ptr(), bias.data_ptr(), C.data_ptr(),
                         5, 4, 4, None)]  # (bias, bias, C, rows, cols, ldc)
    assert way(A, B, None).shape == (5, 4) and len(launches) == 3  # None: no bias, the product alone


@pytest.mark.parametrize("why", ["short", "float64", "2-D", "strided", "grad"])
def test_a_kernel_way_leaves_a_bias_it_does_not_take_as_it_is_to_the_full_path(c, monkeypatch, why):
    way, launches = kernel_way(c, monkeypatch, bias=True)
    bias = {"short": lambda: torch.randn(3), "float64": lambda: torch.randn(4).double(),
            "2-D": lambda: torch.randn(1, 4), "strided": lambda: torch.randn(8)[::2],
            "grad": lambda: torch.randn(4, requires_grad=True)}[why]()
    assert way(torch.randn(5, 3), torch.randn(3, 4), bias) is None and launches == []


def test_a_kernel_way_without_the_bias_s_kernel_leaves_a_call_with_a_bias_to_the_full_path(c, monkeypatch):
    way, launches = kernel_way(c, monkeypatch)
    assert way(torch.randn(5, 3), torch.randn(3, 4), torch.randn(4)) is None and launches == []


def test_a_kernel_way_takes_a_bias_that_requires_grad_under_no_grad(c, monkeypatch):
    way, launches = kernel_way(c, monkeypatch, bias=True)
    bias = torch.randn(4, requires_grad=True)
    with torch.no_grad():
        C = way(torch.randn(5, 3), torch.randn(3, 4), bias)
    assert not C.requires_grad and launches[1][5] == bias.data_ptr()


def test_a_bias_s_kernel_not_enqueued_sends_the_call_to_the_full_path(c, monkeypatch):
    way, launches = kernel_way(c, monkeypatch, bias=True, bias_status=201)
    assert way(torch.randn(5, 3), torch.randn(3, 4), torch.randn(4)) is None and len(launches) == 2


@pytest.mark.parametrize("bias", [False, True])
def test_a_kernel_way_keeps_no_reference_to_a_bias(c, monkeypatch, bias):
    way, launches = kernel_way(c, monkeypatch, bias=bias)
    A, B, b = torch.randn(5, 3), torch.randn(3, 4), torch.randn(4)
    before = sys.getrefcount(b)
    for _ in range(200):
        way(A, B, b)
    launches.clear()
    assert sys.getrefcount(b) == before


def test_a_planned_kernel_call_with_a_bias_takes_its_kernel_way(base, c, monkeypatch):
    mm = recording(base)
    way, launches = kernel_way(c, monkeypatch, bias=True)
    A, B, bias = torch.randn(5, 3), torch.randn(3, 4), torch.randn(4)
    mm._fast[key(A, B)] = way
    C = mm(A, B, bias=bias)
    assert mm.calls == [] and [launch[0] for launch in launches] == [0xF00, 0xB1A5]
    assert launches[1][5:8] == (bias.data_ptr(), bias.data_ptr(), C.data_ptr())
