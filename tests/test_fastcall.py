"""api.fastcall's contract, for each of its two implementations (C, where the extension was built, and
Python): a planned call kind's short way runs (a TorchProduct inline, any other called with (A, B)), and
every other call reaches _call, the full path, with the arguments it was given."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from autotune.api import fastcall, shortcuts

torch = pytest.importorskip("torch")
COMPILED = fastcall.compiled()
BASES = [pytest.param(fastcall.PyFastCall, id="python"),
         pytest.param(COMPILED, id="c", marks=pytest.mark.skipif(COMPILED is None, reason="the C extension was not "
                                                                "built here (no compiler or headers)"))]


def recording(base: type):
    """An instance of the base whose full path records the call's arguments and returns "full path"."""

    class Recording(base):  # type: ignore[misc,valid-type]
        def _call(self, A, B, out=None, *, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, stream=None):
            self.calls.append((A, B, out, alpha, beta, trans_a, trans_b, stream))
            return "full path"

    mm = Recording()
    mm._fast, mm.calls = {}, []
    return mm


def key(A, B, trans_a=False, trans_b=False):
    return (A.shape, B.shape, trans_a, trans_b, A.get_device())


@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
def test_a_torch_product_runs_inline_on_the_operands_views(base, trans_a, trans_b):
    mm = recording(base)
    A = torch.randn(3, 5) if trans_a else torch.randn(5, 3)
    B = torch.randn(4, 3) if trans_b else torch.randn(3, 4)
    mm._fast[key(A, B, trans_a, trans_b)] = shortcuts.to_torch(torch, trans_a, trans_b)
    C = mm(A, B, trans_a=trans_a, trans_b=trans_b)
    assert torch.equal(C, torch.mm(A.mT if trans_a else A, B.mT if trans_b else B)) and mm.calls == []


@pytest.mark.parametrize("base", BASES)
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


@pytest.mark.parametrize("base", BASES)
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


@pytest.mark.parametrize("base", BASES)
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


@pytest.mark.parametrize("base", BASES)
def test_a_table_replaced_is_the_one_read(base):
    mm = recording(base)
    A, B = torch.randn(5, 3), torch.randn(3, 4)
    mm._fast[key(A, B)] = lambda a, b: "kernel"
    assert mm(A, B) == "kernel"
    mm._fast = {}  # Matmul.forget() replaces the table
    assert mm(A, B) == "full path"


def test_a_matmul_shows_its_calls_parameters_and_its_class_its_constructors():
    import inspect

    from autotune.api.matmul import Matmul

    mm = Matmul.__new__(Matmul)
    assert list(inspect.signature(mm).parameters) == ["A", "B", "out", "alpha", "beta", "trans_a", "trans_b", "stream"]
    assert list(inspect.signature(Matmul).parameters) == ["dispatcher", "launcher"]
