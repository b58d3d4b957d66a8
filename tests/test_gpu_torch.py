"""On a GPU: autotune.torch with autotune's kernels forced (defaults_only) and with cuBLAS chosen:
products and gradients equal torch's within FP32 error, torch.compile(fullgraph=True) and a CUDA
graph replay give the eager result, other dtypes go to torch unchanged (said once), and torch's TF32
switch does not make the library path TF32."""
from __future__ import annotations

import itertools
import warnings

import pytest

import autotune

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

import autotune.torch as at  # noqa: E402


def rel(x, ref) -> float:
    return float(torch.linalg.norm(x.detach().double() - ref.double()) / torch.linalg.norm(ref.double()))


@pytest.fixture
def kernels():
    """autotune's own kernels at every shape (the blocked default), not cuBLAS."""
    mm = at.use(autotune.load(defaults_only=True))
    yield mm
    at.use(autotune.load())


@pytest.mark.parametrize("ta,tb", list(itertools.product([False, True], repeat=2)))
def test_products_and_gradients_equal_torchs(kernels, ta, tb):
    torch.manual_seed(0)
    M, N, K = 200, 136, 72
    a = torch.randn(*((K, M) if ta else (M, K)), device="cuda", requires_grad=True)
    b = torch.randn(*((N, K) if tb else (K, N)), device="cuda", requires_grad=True)
    out = at.mm(a, b, trans_a=ta, trans_b=tb)
    assert not kernels.choose(M, N, K, trans_a=ta, trans_b=tb).library
    a64, b64 = (t.detach().double().requires_grad_() for t in (a, b))
    ref = (a64.mT if ta else a64) @ (b64.mT if tb else b64)
    assert rel(out, ref) < 1e-5
    g = torch.randn_like(out)
    out.backward(g)
    ref.backward(g.double())
    assert rel(a.grad, a64.grad) < 1e-5 and rel(b.grad, b64.grad) < 1e-5


def test_a_bias_and_its_gradient_through_the_operator_and_the_eager_product(kernels):
    torch.manual_seed(0)
    M, N, K = 200, 136, 72
    a, b = torch.randn(M, K, device="cuda"), torch.randn(N, K, device="cuda")
    bias = torch.randn(N, device="cuda", requires_grad=True)
    ref = torch.addmm(bias.detach().double(), a.double(), b.double().mT)
    torch.library.opcheck(torch.ops.autotune.mm.default, (a, b, False, True, bias))
    products = (lambda v: at.mm(a, b, trans_b=True, bias=v), lambda v: torch.ops.autotune.mm(a, b, False, True, v))
    for product in products:
        bias.grad = None
        out = product(bias)
        g = torch.randn_like(out)
        out.backward(g)
        assert rel(out, ref) < 1e-5 and rel(bias.grad, g.double().sum(0)) < 1e-6
    assert not kernels.choose(M, N, K, trans_b=True).library  # our kernels, then the bias's


def mlp(seed: int = 0):
    torch.manual_seed(seed)
    layers = [torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128)]
    return at.swap_linear(torch.nn.Sequential(*layers).cuda())


@pytest.mark.parametrize("bias", [False, True])
def test_without_autograd_a_layers_later_calls_take_the_short_way(kernels, bias, monkeypatch):
    # under no_grad the weight still requires grad: the short way must take it (a full path at every call cost a
    # one-row layer 68 us on the H200), and the product must not record a gradient
    torch.manual_seed(0)
    layer, x = at.Linear(72, 136, bias=bias, device="cuda"), torch.randn(200, 72, device="cuda")
    with torch.no_grad():
        layer(x)  # planned through the full path, once
        monkeypatch.setattr(kernels, "_call", lambda *args, **kwargs: pytest.fail("a later call took the full path"))
        y = layer(x)
    assert not y.requires_grad and not kernels.choose(200, 136, 72, trans_b=True).library
    assert rel(y, torch.nn.functional.linear(x.double(), layer.weight.double(),
                                             layer.bias.double() if bias else None)) < 1e-5


def test_torch_compile_fullgraph_gives_the_eager_result(kernels):
    model, x = mlp(), torch.randn(300, 256, device="cuda")
    with torch.no_grad():
        eager = model(x)
        compiled = torch.compile(model, fullgraph=True)(x)
    assert rel(compiled, eager) < 1e-6


def test_a_cuda_graph_replay_gives_the_eager_result(kernels):
    model, x = mlp(), torch.randn(300, 256, device="cuda")
    with torch.no_grad():
        eager = model(x).clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            model(x)  # compiled and loaded before the capture
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            captured = model(x)
        x.copy_(torch.randn_like(x))
        graph.replay()
        torch.cuda.synchronize()
        assert rel(captured, model(x)) < 1e-6 and rel(captured, eager) > 1e-3  # the replay read the new x


def test_cublas_runs_where_nothing_was_measured_and_stays_fp32_under_torchs_tf32_switch(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no database: cuBLAS everywhere
    monkeypatch.delenv("AUTOTUNE_DB", raising=False)
    mm = autotune.load()
    a, b = torch.randn(1024, 1024, device="cuda"), torch.randn(1024, 1024, device="cuda")
    ref = a.double() @ b.double()
    assert mm.choose(1024, 1024, 1024).library and rel(mm(a, b), ref) < 1e-5
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", True)
    assert rel(torch.matmul(a, b), ref) > 1e-4  # torch now computes in TF32
    assert rel(mm(a, b), ref) < 1e-5  # the library path does not: cuBLAS through the launcher
    c = torch.empty(1024, 1024, device="cuda")
    assert mm(a, b, out=c) is c and rel(c, ref) < 1e-5


def biased_operands(M: int, N: int, K: int, trans_b: bool):
    A, bias = torch.randn(M, K, device="cuda"), torch.randn(N, device="cuda")
    B = torch.randn(N, K, device="cuda") if trans_b else torch.randn(K, N, device="cuda")
    ref = torch.addmm(bias.double(), A.double(), (B.mT if trans_b else B).double())
    return A, B, bias, ref


@pytest.mark.parametrize("trans_b", [False, True])
def test_a_bias_is_added_to_every_row_by_our_kernels(kernels, trans_b, monkeypatch):
    torch.manual_seed(0)
    for M, N, K in [(1, 540, 47), (200, 136, 72), (37, 1000, 129)]:
        A, B, bias, ref = biased_operands(M, N, K, trans_b)
        assert rel(kernels(A, B, trans_b=trans_b, bias=bias), ref) < 1e-5  # the full path: its bias kernel loaded
        with monkeypatch.context() as later:
            later.setattr(kernels, "_call", lambda *args, **kwargs: pytest.fail("a later call took the full path"))
            assert rel(kernels(A, B, trans_b=trans_b, bias=bias), ref) < 1e-5  # the short way, from C
        wide = torch.full((M, N + 3), float("nan"), device="cuda")
        out = wide[:, :N]  # rows N + 3 floats apart: the bias's kernel steps over them
        assert kernels(A, B, out=out, trans_b=trans_b, bias=bias) is out and rel(out, ref) < 1e-5
        assert torch.isnan(wide[:, N:]).all()  # nothing written past C's columns
    assert not kernels.choose(200, 136, 72, trans_b=trans_b).library


def test_a_bias_is_cublas_s_own_where_cublas_computes_the_product(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no database: cuBLAS everywhere
    monkeypatch.delenv("AUTOTUNE_DB", raising=False)
    mm = autotune.load()
    A, B, bias, ref = biased_operands(300, 200, 100, True)
    for _ in range(2):  # the full path, then the short way (torch.addmm)
        C = mm(A, B, trans_b=True, bias=bias)
        assert rel(C, ref) < 1e-5 and torch.equal(C, torch.addmm(bias, A, B.mT))
    out = torch.empty(300, 200, device="cuda")
    assert mm(A, B, out=out, trans_b=True, bias=bias) is out and rel(out, ref) < 1e-5


def test_a_bias_of_another_dtype_beside_float32_operands_is_one_line(kernels):
    A, B, bias, _ = biased_operands(8, 16, 4, False)
    with pytest.raises(autotune.AutotuneError, match="bias is bfloat16; pass float32"):
        kernels(A, B, bias=bias.bfloat16())  # not handed to torch unchanged: only the operands' dtype does that


def test_under_autocast_a_layer_and_mm_are_torch_s_own_in_autocast_s_dtype(kernels):
    torch.manual_seed(0)
    model, x = mlp(), torch.randn(300, 256, device="cuda")
    theirs = torch.nn.Sequential(*(torch.nn.Linear(m.in_features, m.out_features) if isinstance(m, at.Linear) else m
                                   for m in model)).cuda()
    theirs.load_state_dict(model.state_dict())
    w = model[0].weight.detach()
    with torch.autocast("cuda", dtype=torch.bfloat16), torch.no_grad():
        ours, ref = model(x), theirs(x)
        product = at.mm(x, w, trans_b=True)
        assert torch.equal(product, torch.matmul(x, w.mT))
    assert ours.dtype == product.dtype == torch.bfloat16 and torch.equal(ours, ref)
    with torch.no_grad():
        assert model(x).dtype == torch.float32  # autocast off: our kernels again


def test_other_dtypes_go_to_torch_unchanged_and_say_so_once():
    mm = autotune.load(defaults_only=True)
    a, b = torch.randn(64, 32, device="cuda", dtype=torch.bfloat16), torch.randn(32, 16, device="cuda",
                                                                                 dtype=torch.bfloat16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = mm(a, b)
        mm(a, b)
    assert out.dtype == torch.bfloat16 and torch.equal(out, a @ b)
    said = [w for w in caught if "bfloat16 operands run torch.matmul unchanged" in str(w.message)]
    assert len(said) <= 1  # once per process (an earlier test may have said it already)


def test_a_transposed_layouts_row_records_cublas_timed_in_that_layout(tmp_path):
    from click.testing import CliRunner

    from autotune import store
    from autotune.cli import cli

    db = str(tmp_path / "nt.sqlite")
    result = CliRunner().invoke(cli, ["search", "--M", "16", "--N", "4096", "--K", "4096", "--family", "blocked",
                                      "--layout", "NT", "--trials", "2", "--db", db])
    assert result.exit_code == 0, result.output
    rows = [r for r in store.open_readonly(db).query("SELECT * FROM results WHERE status = 'ok'")]
    assert rows and all(r["TB"] == 1 and r["cublas_layout"] == "NT" and r["cublas_ms"] > 0 for r in rows)
