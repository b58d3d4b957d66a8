"""On a GPU: autotune.load()'s matmul on torch tensors and CuPy arrays, on a stream that is not
the default one, equals torch.matmul (TF32 off) within the verification tolerance at odd shapes;
an nn.Linear forward (x @ W.T) through it; and the refusals that only a real library shows."""
import pytest

import autotune
from autotune.backends.reference import TOLERANCE
from autotune.errors import AutotuneError

pytestmark = pytest.mark.gpu
ODD = [(131, 67, 93), (1000, 999, 1001)]  # no tile divides them; the second takes the blocked default's tails


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    torch.backends.cuda.matmul.allow_tf32 = False  # the reference is plain FP32, as cuBLAS's in the search
    return torch


@pytest.fixture(scope="module")
def mm():
    return autotune.load(defaults_only=True)  # the blocked default: needs no database


def relative_error(torch, c, ref) -> float:
    return float(torch.linalg.norm((c - ref).double()) / torch.linalg.norm(ref.double()))


@pytest.mark.parametrize("shape", ODD)
def test_torch_tensors_on_a_side_stream_match_torch_matmul(torch, mm, shape):
    M, N, K = shape
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # made, multiplied and read on the side stream: no sync with the default one
        A, B = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")
        C = mm(A, B)
        out = torch.full((M, N), float("nan"), device="cuda")
        assert mm(A, B, out=out) is out
        ref = torch.matmul(A, B)
    side.synchronize()
    assert C.shape == (M, N) and C.dtype == torch.float32 and C.device == A.device
    assert relative_error(torch, C, ref) <= TOLERANCE
    assert relative_error(torch, out, ref) <= TOLERANCE


def test_cupy_arrays_on_a_side_stream_match_torch_matmul(torch, mm):
    cupy = pytest.importorskip("cupy")
    M, N, K = ODD[0]
    with cupy.cuda.Stream(non_blocking=True) as side:
        A = cupy.random.standard_normal((M, K), dtype=cupy.float32)
        B = cupy.random.standard_normal((K, N), dtype=cupy.float32)
        C = mm(A, B)
    side.synchronize()
    assert isinstance(C, cupy.ndarray)
    ref = torch.matmul(torch.from_dlpack(A), torch.from_dlpack(B))
    assert relative_error(torch, torch.from_dlpack(C), ref) <= TOLERANCE


@pytest.mark.parametrize("shape", ODD)
def test_an_nn_linear_forward_reads_the_weight_as_it_lies(torch, mm, shape):
    M, N, K = shape
    layer = torch.nn.Linear(K, N, bias=False, device="cuda")
    x = torch.randn(M, K, device="cuda")
    with torch.no_grad():
        y = mm(x, layer.weight, trans_b=True)  # x * W^T: W (N x K) read in place by a TB=1 kernel
        assert relative_error(torch, y, layer(x)) <= TOLERANCE


def test_b_transposed_first_runs_from_a_thread_that_never_used_cuda_core(torch, mm):
    """From PB_MIN_ROWS rows on an NT call runs a PB=1 kernel: B transposed into its stream's workspace
    first. A fresh thread has no cuda.core device set current (a workspace taken through cuda.core
    failed there); two calls on one stream reuse one workspace, which the second call's prologue
    overwrites only after the first call's product has read it."""
    import threading

    from autotune.families.blocked import PB_MIN_ROWS

    M, N, K = PB_MIN_ROWS + 1, 999, 1001
    assert "_PB1" in mm.choose(M, N, K, trans_b=True).kernel
    x, w1, w2 = torch.randn(M, K, device="cuda"), torch.randn(N, K, device="cuda"), torch.randn(N, K, device="cuda")
    got: dict = {}

    def run() -> None:
        try:
            got["y1"], got["y2"] = mm(x, w1, trans_b=True), mm(x, w2, trans_b=True)
        except Exception as exc:  # re-raised in the test's thread
            got["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in got:
        raise got["error"]
    torch.cuda.synchronize()
    assert relative_error(torch, got["y1"], x @ w1.T) <= TOLERANCE
    assert relative_error(torch, got["y2"], x @ w2.T) <= TOLERANCE


def test_workspaces_are_kept_per_stream_and_grown_on_demand(torch):
    from cuda.bindings import driver

    from autotune.backends.cuda.launcher import CudaLauncher

    launcher, side = CudaLauncher(), torch.cuda.Stream()
    with launcher.workspace(0, 1 << 20, 0) as first:
        pass
    with launcher.workspace(0, 1 << 10, 0) as again:
        assert again == first  # smaller: the same memory
    with launcher.workspace(0, 1 << 20, side.cuda_stream) as other:
        assert other != first  # another stream: its own
    src = torch.arange(1 << 20, dtype=torch.float32, device="cuda")  # 4 MiB
    dst = torch.empty_like(src)
    torch.cuda.synchronize()
    with launcher.workspace(0, 4 << 20, 0) as grown:  # grown: all 4 MiB hold data
        for to, frm in ((grown, src.data_ptr()), (dst.data_ptr(), grown)):
            assert driver.cuMemcpyDtoDAsync(to, frm, 4 << 20, driver.CUstream(0))[0] == driver.CUresult.CUDA_SUCCESS
        assert driver.cuStreamSynchronize(driver.CUstream(0))[0] == driver.CUresult.CUDA_SUCCESS
    assert torch.equal(dst, src)


def test_what_torch_cannot_export_is_refused_in_one_line(torch, mm):
    layer = torch.nn.Linear(8, 8, device="cuda")
    x = torch.randn(8, 8, device="cuda")
    with pytest.raises(AutotuneError, match="cannot be read as a device array: .*detach"):
        mm(x, layer.weight)  # requires grad
    with pytest.raises(AutotuneError, match="B is column-major"):
        mm(x, torch.empty(16, 8, device="cuda").t())  # the transpose of a row-major matrix
    with pytest.raises(AutotuneError, match="A \\(torch\\) is in host memory"):
        mm(x.cpu(), x)


def test_alpha_beta_leading_dimensions_and_batches_match_torch(torch, mm):
    # cuBLAS-style operands (BLAS=1 kernels): every operand a slice of a wider one, a strided batch
    # beside a shared 2-D matrix, alpha and beta, against torch.baddbmm / addmm in plain FP32
    M, N, K, batch = ODD[0] + (3,)
    A = torch.randn(batch, M, K + 5, device="cuda")[:, :, :K]  # lda = K + 5
    W = torch.randn(N, K + 3, device="cuda")[:, :K]  # shared by every batch, read transposed
    C = torch.randn(batch, M, N + 7, device="cuda")[:, :, :N]  # ldc = N + 7
    ref = torch.baddbmm(C, A, W.t().expand(batch, K, N), beta=0.5, alpha=2.0)
    assert mm(A, W, out=C, alpha=2.0, beta=0.5, trans_b=True) is C
    assert relative_error(torch, C, ref) <= TOLERANCE
    A2, B2 = A[0], torch.randn(K, N + 2, device="cuda")[:, :N]
    assert relative_error(torch, mm(A2, B2, alpha=-1.5), -1.5 * torch.matmul(A2, B2)) <= TOLERANCE
    C3 = mm(A, B2)  # allocated: batch x M x N
    assert C3.shape == (batch, M, N)
    assert relative_error(torch, C3, torch.matmul(A, B2)) <= TOLERANCE


def test_a_tensor_core_winner_runs_through_load_under_fp32_tc(torch, tmp_path):
    """A recorded tf32x3wg row (two trials of its search: the default first) is what load() runs under
    fp32-tc, prologue (the split into the stream's workspace) and product, at the tuned shape and at
    odd ones; under the default contract the same database runs an FP32 family instead. At K = 93
    cuBLAS FP32's error (1.0e-7) is below 3xTF32's floor (2.4e-7 measured on the H200): the contract
    holds where the kernel was verified and at long K, FP32-class accuracy everywhere."""
    from click.testing import CliRunner

    from autotune.backends.reference import TC_FACTOR
    from autotune.cli import cli

    db = str(tmp_path / "tc.sqlite")
    result = CliRunner().invoke(cli, ["search", "--M", "512", "--precision", "fp32-tc", "--family", "tf32x3wg",
                                      "--trials", "2", "--db", db])
    assert result.exit_code == 0, result.output
    mm = autotune.load(db=db, precision="fp32-tc", library=False)  # its kernels, whether or not they beat cuBLAS
    assert mm.choose(512, 512, 512).config.family.name == "tf32x3wg"
    assert autotune.load(db=db, library=False).choose(512, 512, 512).config.family.name not in ("tf32x3", "tf32x3wg")
    for M, N, K in ((512, 512, 512), *ODD):
        A, B = torch.rand(M, K, device="cuda") * 2 - 1, torch.rand(K, N, device="cuda") * 2 - 1
        C = mm(A, B)
        exact = A.double() @ B.double()
        err = float(torch.linalg.norm(C.double() - exact) / torch.linalg.norm(exact))
        cublas = float(torch.linalg.norm(torch.matmul(A, B).double() - exact) / torch.linalg.norm(exact))
        assert err <= (TC_FACTOR * cublas if K >= 512 else 1e-6), (M, N, K, err, cublas)


def test_a_torch_tensor_read_from_its_attributes_is_what_dlpack_exports(torch):
    from autotune.api.arrays import _from_dlpack, _from_torch

    base = torch.randn(4, 9, 11, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    for x in (base[0], base[1, 2:, 3:], base[1:], base[2].t(), base.to(torch.bfloat16)[3, 1:], base[0, 0]):
        assert _from_torch(x, "A") == _from_dlpack(x, "A", stream), tuple(x.shape)
