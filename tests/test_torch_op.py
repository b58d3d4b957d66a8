"""autotune.torch without a GPU: the operator's fake implementation and autograd wiring, checked with
torch's own opcheck and on the CPU stand-in (torch's product), under torch.compile(fullgraph=True)
too; Linear and swap_linear keep nn.Linear's parameters and results. CI installs a CPU build of torch
(.ci/run); elsewhere these skip when torch is missing."""
from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch; CI installs a CPU build)")

import autotune.torch as at  # noqa: E402
from autotune.errors import AutotuneError  # noqa: E402

TRANSPOSES = list(itertools.product([False, True], repeat=2))


def operands(M: int, N: int, K: int, ta: bool, tb: bool, grad: bool = False):
    g = torch.Generator().manual_seed(M * 100 + N * 10 + K + 2 * ta + tb)
    a = torch.randn(*((K, M) if ta else (M, K)), generator=g, dtype=torch.float64).requires_grad_(grad)
    b = torch.randn(*((N, K) if tb else (K, N)), generator=g, dtype=torch.float64).requires_grad_(grad)
    return a, b


def reference(a, b, ta, tb):
    return (a.mT if ta else a) @ (b.mT if tb else b)


@pytest.mark.parametrize("ta,tb", TRANSPOSES)
def test_the_operator_passes_torchs_opcheck(ta, tb):
    a, b = operands(5, 7, 3, ta, tb, grad=True)
    torch.library.opcheck(torch.ops.autotune.mm.default, (a.float(), b.float(), ta, tb))


@pytest.mark.parametrize("ta,tb", TRANSPOSES)
def test_the_operator_with_a_bias_passes_torchs_opcheck(ta, tb):
    a, b = operands(5, 7, 3, ta, tb, grad=True)
    bias = torch.randn(7, requires_grad=True)
    torch.library.opcheck(torch.ops.autotune.mm.default, (a.float(), b.float(), ta, tb, bias))


@pytest.mark.parametrize("ta,tb", TRANSPOSES)
def test_a_bias_s_gradient_is_the_sum_of_dc_s_rows(ta, tb):
    a, b = operands(6, 4, 5, ta, tb, grad=True)
    bias = torch.randn(4, dtype=torch.float64, requires_grad=True)
    torch.autograd.gradcheck(lambda x, y, v: at.mm(x, y, trans_a=ta, trans_b=tb, bias=v), (a, b, bias))
    torch.autograd.gradcheck(lambda x, y, v: torch.ops.autotune.mm(x, y, ta, tb, v), (a, b, bias))
    out = at.mm(a, b, trans_a=ta, trans_b=tb, bias=bias)
    assert torch.allclose(out, reference(a, b, ta, tb) + bias)
    assert "AddBackward0" not in backward_nodes(out)  # one node: the bias's gradient is in the product's backward
    g = torch.randn_like(out)
    out.backward(g)
    assert torch.allclose(bias.grad, g.sum(0))


@pytest.mark.parametrize("ta,tb", TRANSPOSES)
def test_gradients_of_every_layout_are_the_products_of_the_chain_rule(ta, tb):
    a, b = operands(6, 4, 5, ta, tb, grad=True)
    torch.autograd.gradcheck(lambda x, y: at.mm(x, y, trans_a=ta, trans_b=tb), (a, b))
    out = at.mm(a, b, trans_a=ta, trans_b=tb)
    out.backward(torch.ones_like(out))
    a2, b2 = (t.detach().clone().requires_grad_() for t in (a, b))
    reference(a2, b2, ta, tb).backward(torch.ones_like(out))
    assert torch.allclose(a.grad, a2.grad) and torch.allclose(b.grad, b2.grad)


def test_torch_compile_fullgraph_traces_the_operator_and_gives_the_eager_result():
    a, b = operands(8, 6, 4, False, True)
    a, b = a.float(), b.float()

    def f(x, w):
        return torch.relu(at.mm(x, w, trans_b=True)) * 2

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    assert torch.equal(compiled(a, b), f(a, b))
    x, w = a.clone().requires_grad_(), b.clone().requires_grad_()
    compiled(x, w).sum().backward()
    x2, w2 = a.clone().requires_grad_(), b.clone().requires_grad_()
    f(x2, w2).sum().backward()
    assert torch.equal(x.grad, x2.grad) and torch.equal(w.grad, w2.grad)


def test_torch_compile_fullgraph_takes_a_bias_into_the_operator():
    a, b = operands(8, 6, 4, False, True)
    a, b, bias = a.float(), b.float(), torch.randn(6)

    def f(x, w, v):
        return at.mm(x, w, trans_b=True, bias=v) * 2

    graphs = []

    def keep(gm, example_inputs):  # a backend that keeps Dynamo's graph and runs it as it is
        graphs.append(gm)
        return gm.forward

    assert torch.equal(torch.compile(f, fullgraph=True, backend=keep)(a, b, bias), f(a, b, bias))
    calls = [str(n.target) for n in graphs[0].graph.nodes if n.op == "call_function"]
    assert calls == ["autotune.mm", "<built-in function mul>"], calls  # the bias is the operator's, no add beside it
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    assert torch.equal(compiled(a, b, bias), f(a, b, bias))
    v, v2 = bias.clone().requires_grad_(), bias.clone().requires_grad_()
    compiled(a, b, v).sum().backward()
    f(a, b, v2).sum().backward()
    assert torch.equal(v.grad, v2.grad) and torch.equal(v.grad, torch.full((6,), 16.0))


def test_the_fake_implementation_gives_the_products_shape_without_computing():
    with torch._subclasses.fake_tensor.FakeTensorMode():
        a, b = torch.empty(3, 9), torch.empty(5, 9)
        out = torch.ops.autotune.mm(a, b, False, True)
        assert tuple(out.shape) == (3, 5) and out.dtype == torch.float32


def test_the_fake_implementation_checks_the_bias_s_length():
    with torch._subclasses.fake_tensor.FakeTensorMode():
        a, b = torch.empty(3, 9), torch.empty(5, 9)
        assert tuple(torch.ops.autotune.mm(a, b, False, True, torch.empty(5)).shape) == (3, 5)
        with pytest.raises(RuntimeError, match="bias is \\(4,\\); pass a vector of C's 5 columns"):
            torch.ops.autotune.mm(a, b, False, True, torch.empty(4))


@pytest.mark.parametrize("bias,said", [
    (torch.ones(5), "bias is \\(5,\\) torch.float32 on cpu; pass a vector of C's 4 columns, torch.float32 on cpu"),
    (torch.ones(1, 4), "bias is \\(1, 4\\) torch.float32"),
    (torch.ones(4, dtype=torch.float64), "bias is \\(4,\\) torch.float64"),
    ([1.0] * 4, "bias is a list; pass a torch tensor of C's 4 columns, or None"),
])
def test_mm_refuses_a_bias_that_is_not_a_vector_of_c_s_columns_in_one_line(bias, said):
    for grad in (False, True):  # the stand-in's check, and the recorded product's
        with pytest.raises(AutotuneError, match=said):
            at.mm(torch.ones(3, 2, requires_grad=grad), torch.ones(2, 4), bias=bias)


def test_mm_refuses_what_is_not_a_matrix_in_one_line():
    with pytest.raises(AutotuneError, match="takes 2-D tensors; got \\(2, 3, 4\\)"):
        at.mm(torch.ones(2, 3, 4), torch.ones(4, 5))


def test_swap_linear_keeps_the_parameters_and_the_results():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4, bias=False))
    x = torch.randn(3, 5, 8)
    before, weights, keys = model(x), [p for p in model.parameters()], list(model.state_dict())
    swapped = at.swap_linear(model)
    assert all(type(m) is at.Linear for m in (swapped[0], swapped[2]))
    assert [p for p in swapped.parameters()] == weights and list(swapped.state_dict()) == keys
    assert torch.equal(swapped(x), before)
    assert type(at.swap_linear(torch.nn.Linear(2, 2))) is at.Linear


def test_the_package_reaches_its_torch_module_without_an_import_of_its_own():
    """`import autotune` then `autotune.torch.Linear`, as a user of the package's other names writes it."""
    import subprocess
    import sys

    code = "import autotune; print(type(autotune.torch.Linear(3, 2)).__name__, 'torch' in dir(autotune))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["Linear", "True"]


class Recording:
    """load()'s matmul played on the CPU: torch's product, each call's operand shapes, trans_b and whether it had
    a bias recorded."""

    def __init__(self):
        self.calls: list[tuple] = []

    def __call__(self, A, B, *, trans_b=False, bias=None):
        self.calls.append((tuple(A.shape), tuple(B.shape), trans_b, bias is not None))
        product = A @ (B.mT if trans_b else B)
        return product if bias is None else product + bias


@pytest.fixture
def eager(monkeypatch):
    """A Linear's eager steps over a recording matmul, with _library_at's answer set by the test and each question
    recorded."""
    from autotune.torch import nn

    matmul, asked, answer = Recording(), [], [False]
    monkeypatch.setattr(nn, "current", lambda: matmul)
    monkeypatch.setattr(nn, "_library_at", lambda *shape: asked.append(shape) or answer[0])
    monkeypatch.setattr(nn, "_memo_for", [None])
    return matmul, asked, answer


def test_without_autograd_a_layer_without_a_bias_calls_the_matmul_itself(eager):
    matmul, asked, _ = eager
    layer, x = at.Linear(3, 4, bias=False), torch.randn(2, 5, 3)
    with torch.no_grad():
        y = layer._eager(x)
    assert torch.allclose(y, torch.nn.functional.linear(x, layer.weight)) and y.shape == (2, 5, 4)
    assert matmul.calls == [((10, 3), (4, 3), True, False)] and asked == []  # the matmul decides: nothing asked


def test_without_autograd_a_layer_with_a_bias_hands_it_to_the_matmul(eager):
    matmul, asked, _ = eager
    layer, x = at.Linear(3, 4), torch.randn(2, 5, 3)
    with torch.no_grad():
        y = layer._eager(x)
    assert torch.allclose(y, torch.nn.functional.linear(x, layer.weight, layer.bias)) and y.shape == (2, 5, 4)
    assert matmul.calls == [((10, 3), (4, 3), True, True)] and asked == []  # cuBLAS's addmm or our two kernels


def test_the_answers_kept_for_one_matmul_are_not_another_s(eager, monkeypatch):
    from autotune.torch import nn

    _, asked, answer = eager
    answer[0] = True
    layer, x = at.Linear(3, 4), torch.randn(5, 3)
    layer._eager(x)
    layer._eager(x)
    monkeypatch.setattr(nn, "current", lambda: Recording())  # use() set another
    layer._eager(x)
    assert asked == [(5, 4, 3, -1, True)] * 2  # a CPU tensor's get_device() is -1


def test_a_layer_takes_the_operator_where_autograd_records_its_call():
    from autotune.torch.ops import recorded

    x, layer = torch.randn(2, 3), at.Linear(3, 4)
    assert recorded(x, layer.weight, layer.bias)  # a weight requires grad: training, or inference without no_grad
    with torch.no_grad():
        assert not recorded(x, layer.weight, layer.bias)
    frozen = at.Linear(3, 4, bias=False).requires_grad_(False)
    assert not recorded(x, frozen.weight, None) and recorded(x.requires_grad_(), frozen.weight, None)
    layer.weight.requires_grad_(False)
    assert recorded(torch.randn(2, 3), layer.weight, layer.bias)  # the bias still does


def backward_nodes(y) -> list[str]:
    """The names of the autograd graph's nodes behind y."""
    names, stack = [], [y.grad_fn]
    while stack:
        node = stack.pop()
        if node is not None:
            names.append(type(node).__name__)
            stack.extend(n for n, _ in node.next_functions)
    return names


@pytest.mark.parametrize("library", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_with_autograd_a_layer_asks_once_a_shape_and_its_gradients_are_nn_linears(eager, library, bias):
    _, asked, answer = eager
    answer[0] = library
    torch.manual_seed(0)
    layer, theirs = at.Linear(3, 4, bias=bias), torch.nn.Linear(3, 4, bias=bias)
    theirs.load_state_dict(layer.state_dict())
    x = torch.randn(2, 5, 3, requires_grad=True)
    x2 = x.detach().clone().requires_grad_()
    for _ in range(2):
        y = layer._eager(x)
        y.square().sum().backward()
        theirs(x2).square().sum().backward()
    assert asked == [(10, 4, 3, -1, True)]  # with autograd a covering row's call is F.linear's too
    assert ("_RecordedBackward" in backward_nodes(y)) == (not library)  # autotune.torch.mm's Function, or F.linear
    assert "AddBackward0" not in backward_nodes(y)  # a bias is the product's, or F.linear's, argument
    assert torch.allclose(x.grad, x2.grad) and torch.allclose(layer.weight.grad, theirs.weight.grad)
    assert not bias or torch.allclose(layer.bias.grad, theirs.bias.grad)


@pytest.mark.parametrize("ta,tb", TRANSPOSES)
def test_the_eager_products_second_derivatives_are_torchs(ta, tb):
    a, b = operands(4, 3, 5, ta, tb, grad=True)
    assert type(at.mm(a, b, trans_a=ta, trans_b=tb).grad_fn).__name__ == "_RecordedBackward"
    torch.autograd.gradgradcheck(lambda x, y: at.mm(x, y, trans_a=ta, trans_b=tb), (a, b))
    bias = torch.randn(3, dtype=torch.float64, requires_grad=True)
    torch.autograd.gradgradcheck(lambda x, y, v: at.mm(x, y, trans_a=ta, trans_b=tb, bias=v), (a, b, bias))


@pytest.fixture
def unsaid(monkeypatch):
    from autotune.torch import ops

    monkeypatch.setattr(ops, "_said_autocast", [False])


@pytest.mark.parametrize("ta,tb", TRANSPOSES)
def test_under_autocast_the_product_is_torch_s_in_autocast_s_dtype_said_once(ta, tb, unsaid):
    a, b = (t.float() for t in operands(6, 4, 5, ta, tb))
    bias = torch.randn(4)
    with pytest.warns(UserWarning, match="under torch.autocast, autotune.torch runs torch's own products") as said:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out, biased = at.mm(a, b, trans_a=ta, trans_b=tb), at.mm(a, b, trans_a=ta, trans_b=tb, bias=bias)
            theirs = reference(a, b, ta, tb)
            theirs_biased = torch.addmm(bias, a.mT if ta else a, b.mT if tb else b)
    assert len(said) == 1  # once for the process, not per call
    assert out.dtype == biased.dtype == torch.bfloat16
    assert torch.equal(out, theirs) and torch.equal(biased, theirs_biased)
    assert at.mm(a, b, trans_a=ta, trans_b=tb).dtype == torch.float32  # autocast off: ours again


def test_under_autocast_torch_compile_fullgraph_traces_torch_s_product(unsaid):
    a, b = (t.float() for t in operands(8, 6, 4, False, True))
    bias = torch.randn(6)

    def f(x, w, v):
        return at.mm(x, w, trans_b=True, bias=v) * 2

    with torch.autocast("cpu", dtype=torch.bfloat16), pytest.warns(UserWarning, match="under torch.autocast"):
        compiled = torch.compile(f, fullgraph=True, backend="aot_eager")(a, b, bias)  # first: traced, nothing said
        eager = f(a, b, bias)  # said here
    assert compiled.dtype == eager.dtype == torch.bfloat16 and torch.equal(compiled, eager)


def test_under_autocast_mm_takes_the_mixed_dtypes_autocast_makes(unsaid):
    x, w, w2 = torch.randn(6, 5), torch.randn(5, 4), torch.randn(4, 3)
    half_bias = torch.randn(3, dtype=torch.bfloat16)
    with torch.autocast("cpu", dtype=torch.bfloat16), pytest.warns(UserWarning, match="under torch.autocast"):
        chained = at.mm(at.mm(x, w), w2, bias=half_bias)  # a bfloat16 product times a float32 matrix
        theirs = torch.addmm(half_bias, torch.matmul(x, w), w2)
    assert chained.dtype == torch.bfloat16 and torch.equal(chained, theirs)
