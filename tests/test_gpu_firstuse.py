"""On a GPU: load(tune="background") at a shape no database holds. The first call runs cuBLAS at once
(its host time does not include the tuning), a job in a process of its own records verified rows with
cuBLAS timed beside them, and the call after it runs what the rows say (the winner where it beat cuBLAS)
and still equals torch.matmul within the verification tolerance."""
import time

import pytest

import autotune
from autotune import store
from autotune.api.dispatch import wins_at_its_shape
from autotune.api.firstuse.background import background_of
from autotune.backends.reference import TOLERANCE

pytestmark = pytest.mark.gpu
SHAPE = (4099, 1537, 256)  # odd, above the host floor (api.dispatch); in no shipped database


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    torch.backends.cuda.matmul.allow_tf32 = False  # the reference is plain FP32, as cuBLAS's in the search
    return torch


def relative_error(torch, c, ref) -> float:
    return float(torch.linalg.norm((c - ref).double()) / torch.linalg.norm(ref.double()))


def test_a_shape_tuned_on_first_use_runs_what_its_rows_say_and_stays_correct(torch, tmp_path):
    path = str(tmp_path / "mine.sqlite")
    mm = autotune.load(db=path, tune="background", tune_trials=3, tune_seconds=120)
    M, N, K = SHAPE
    A, B = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")
    ref = torch.matmul(A, B)
    torch.cuda.synchronize()
    start = time.perf_counter()
    C = mm(A, B)
    first_call_s = time.perf_counter() - start
    torch.cuda.synchronize()
    assert first_call_s < 2.0, first_call_s  # cuBLAS at once: the job's tens of seconds are not on the caller's clock
    assert relative_error(torch, C, ref) <= TOLERANCE
    background = background_of(mm)
    assert background is not None
    assert background.wait(400), "the first-use job did not end within 400 s"
    assert background.failures == 0
    gpu = torch.cuda.get_device_name(0)
    rows = [r for r in store.results(store.open_readonly(path), SHAPE, "cuda", gpu) if r["status"] == "ok"]
    assert rows and all(r["cublas_ms"] for r in rows), "no verified row with cuBLAS timed beside it"
    C = mm(A, B)
    torch.cuda.synchronize()
    assert relative_error(torch, C, ref) <= TOLERANCE
    choice = mm.choose(*SHAPE)
    fastest = min(rows, key=lambda r: r["time_ms"])
    assert choice.library == (not wins_at_its_shape(fastest)), choice.describe()  # api.dispatch's rule
    assert choice.library or choice.row_id == fastest["id"]
    print(f"first-use at {SHAPE}: {len(rows)} rows; the call now runs {choice.describe()}")
