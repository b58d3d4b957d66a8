"""The Python API without a GPU: autotune.load()'s matmul refuses bad operands with one line,
chooses the exact / nearest / default kernel, caches its choices and loaded kernels, and hands
the launch layer the caller's pointers and stream. The launch layer is a fake injected through
load(launcher=...); arrays are NumPy (a real DLPack producer, host memory) or fakes that export
device memory through DLPack or __cuda_array_interface__."""
from __future__ import annotations

import ctypes
import subprocess
import sys

import numpy as np
import pytest

import autotune
from autotune.api.arrays import DL_CUDA, _DLTensor
from autotune.errors import AutotuneError
from tests.fakes import GPU, FakeLauncher
from tests.names import tags
from tests.test_starts import record

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class DeviceArray:
    """Device memory exported through DLPack: a DLTensor at a made-up device address."""

    def __init__(self, shape, ptr, strides=None, bits=32, device=0):
        self.shape, self.ptr, self.streams = shape, ptr, []
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self._strides = (ctypes.c_int64 * len(shape))(*strides) if strides else None
        self._tensor = _DLTensor(data=ptr, ndim=len(shape), shape=self._shape, strides=self._strides, byte_offset=0)
        self._tensor.device.device_type, self._tensor.device.device_id = DL_CUDA, device
        self._tensor.dtype.code, self._tensor.dtype.bits, self._tensor.dtype.lanes = 2, bits, 1

    def __dlpack_device__(self):
        return DL_CUDA, self._tensor.device.device_id

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        return _capsule_new(ctypes.addressof(self._tensor), b"dltensor", None)


class CaiArray:
    """Device memory exported through __cuda_array_interface__ (strides in bytes)."""

    def __init__(self, shape, ptr, strides=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": "<f4", "data": (ptr, False), "version": 3,
                                         "strides": strides}


class FakeTorch:
    """Just enough of a `torch` module for read_array: its Tensor type and the current stream."""

    float32 = "torch.float32"

    class Tensor(DeviceArray):
        is_cuda, requires_grad, dtype = True, False, "torch.float32"

        def is_floating_point(self):
            return True
        device = type("device", (), {"index": 0})()

        def data_ptr(self):
            return self.ptr

        def stride(self):
            return tuple(self._tensor.strides[i] for i in range(len(self.shape))) if self._tensor.strides else None

        def is_neg(self):
            return False

        def is_conj(self):
            return False

    Tensor.__module__ = "torch"

    class cuda:
        @staticmethod
        def current_stream(device):
            return type("Stream", (), {"cuda_stream": 5})()


def test_torch_tensors_on_their_current_stream_are_read_without_dlpack(mm, launcher, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", FakeTorch)
    a, b, c = (FakeTorch.Tensor(s, p, st) for s, p, st in (((8, 3), 0x100000, (4, 1)), ((3, 5), 0x200000, (5, 1)),
                                                          ((8, 5), 0x300000, (5, 1))))
    mm(a, b, out=c)  # the tensors' current stream: their attributes are read
    assert launcher.launches[-1]["stream"] == 5 and launcher.launches[-1]["ops"].lda == 4
    assert a.streams == b.streams == c.streams == []
    mm(a, b, out=c, stream=9)  # another stream: DLPack, told the stream, makes them ready on it
    assert a.streams == b.streams == c.streams == [9] and launcher.launches[-1]["stream"] == 9


def refused(mm, *args, **kwargs) -> str:
    with pytest.raises(AutotuneError) as exc:
        mm(*args, **kwargs)
    message = str(exc.value)
    assert "\n" not in message
    return message


def test_host_memory_is_refused(mm):
    a, b = np.ones((4, 3), np.float32), np.ones((3, 5), np.float32)
    assert refused(mm, a, b, out=np.empty((4, 5), np.float32)).startswith("A (numpy) is in host memory")


def test_wrong_dtype_dimensions_and_shapes_are_refused_before_anything_runs(mm, launcher):
    a = np.ones((4, 3), np.float32)
    assert "A is float64; the kernels are FP32 only" in refused(mm, a.astype(np.float64), a.T)
    assert "B must be a 2-D matrix or a 3-D batch of them (batch, rows, cols); it has shape (3,)" in refused(mm, a, np.ones(3, np.float32))
    message = refused(mm, DeviceArray((4, 3), 0x100000), DeviceArray((4, 5), 0x200000))
    assert message.startswith("shapes do not match: A is 4x3 and B is 4x5")
    assert "out is 5x4 but the product is 4x5" in refused(mm, DeviceArray((4, 3), 0x100000), DeviceArray((3, 5), 0x200000),
                                                          out=DeviceArray((5, 4), 0x300000))
    assert launcher.launches == [] and launcher.loads == []


def test_non_contiguous_operands_are_refused_with_what_to_pass(mm):
    a = np.ones((4, 6), np.float32)
    assert "A has strides (6, 2) (elements): not a matrix with a leading dimension" in refused(mm, a[:, ::2], a.T)
    assert "B is column-major (strides (1, 4))" in refused(mm, a[:, :4], np.asfortranarray(np.ones((4, 6), np.float32)))


def test_a_call_launches_on_the_callers_pointers_and_stream(mm, launcher):
    a, b, c = DeviceArray((33, 17), 0x100000), DeviceArray((17, 9), 0x200000), DeviceArray((33, 9), 0x300000)
    assert mm(a, b, out=c, stream=7) is c
    [call] = launcher.launches
    assert call["ptrs"] == (0x100000, 0x200000, 0x300000) and call["shape"] == (33, 9, 17) and call["stream"] == 7
    assert a.streams == [7]  # the producer is told which stream reads it
    mm(a, b, out=c)  # no stream, no library that has one: the legacy default stream
    assert launcher.launches[-1]["stream"] == 0 and a.streams[-1] == 1  # DLPack's name for it
    choice = mm.choose(33, 9, 17)
    assert call["kernel"] == f"loaded {choice.kernel}" and call["launch"] == choice.config.geometry(33, 9)


def test_cuda_array_interface_operands_and_their_byte_strides(mm, launcher):
    a = CaiArray((16, 8), 0x100000, strides=(32, 4))  # bytes: contiguous rows of 8 floats
    mm(a, CaiArray((8, 4), 0x200000), out=CaiArray((16, 4), 0x300000))
    assert launcher.launches[-1]["ptrs"] == (0x100000, 0x200000, 0x300000) and launcher.launches[-1]["ops"] is None
    mm(CaiArray((16, 8), 0x100000, strides=(64, 4)), CaiArray((8, 4), 0x200000), out=CaiArray((16, 4), 0x300000))
    assert launcher.launches[-1]["ops"].lda == 16  # 64 bytes: a slice of a 16-column matrix


def test_an_output_is_allocated_only_by_a_known_library(mm):
    assert "pass out=" in refused(mm, DeviceArray((4, 3), 0x100000), DeviceArray((3, 5), 0x200000))


def test_the_choice_and_the_loaded_kernel_are_cached(mm, launcher):
    a, b, c = DeviceArray((64, 64), 0x100000), DeviceArray((64, 64), 0x200000), DeviceArray((64, 64), 0x300000)
    for _ in range(3):
        mm(a, b, out=c)
    assert len(launcher.launches) == 3 and len(launcher.loads) == 1
    assert mm.choose(64, 64, 64) is mm.choose(64, 64, 64)


def test_a_repeated_call_reuses_its_plan_but_never_its_pointers(mm, launcher):
    b, c = DeviceArray((64, 64), 0x200000), DeviceArray((64, 64), 0x300000)
    mm(DeviceArray((64, 64), 0x100000), b, out=c)
    mm(DeviceArray((64, 64), 0x500000), DeviceArray((64, 64), 0x600000), out=DeviceArray((64, 64), 0x700000))
    assert launcher.launches[-1]["ptrs"] == (0x500000, 0x600000, 0x700000) and len(mm._plans) == 1
    # the same shapes with what the plan did not check: checked and planned afresh
    assert "A is float64" in refused(mm, DeviceArray((64, 64), 0x100000, bits=64), b, out=c)
    mm(DeviceArray((64, 64), 0x100000), b, out=c, alpha=2.0)
    assert launcher.launches[-1]["ops"].alpha == 2.0 and len(mm._plans) == 2


def test_dispatch_picks_the_exact_then_the_nearest_shape_then_the_default(tmp_path, launcher):
    from autotune import store

    path = tmp_path / "r.sqlite"
    db = store.open_db(path)
    fast = record(db, (256, 256, 256), "tiled", 1.0, backend="cuda", gpu=GPU, T=16)
    record(db, (256, 256, 256), "tiled", 2.0, backend="cuda", gpu=GPU, T=32)
    near = record(db, (512, 512, 512), "tiled", 1.0, backend="cuda", gpu=GPU, T=8)
    record(db, (300, 300, 300), "tiled", 0.1, backend="cuda", gpu="Other GPU", T=32)  # not this GPU model
    mm = autotune.load(db=str(path), launcher=launcher, library=False)
    exact = mm.choose(256, 256, 256)
    assert (exact.origin, exact.kernel, exact.measured_at) == ("exact", fast, (256, 256, 256))
    nearest = mm.choose(300, 300, 300)  # 256^3 is nearer on the log scale than 512^3
    assert (nearest.origin, nearest.kernel) == ("nearest", fast)
    assert mm.choose(480, 512, 512).kernel == near
    on_other = autotune.load(db=str(path), gpu="Other GPU", launcher=launcher, library=False).choose(256, 256, 256)
    assert on_other.measured_at == (300, 300, 300)  # gpu=: that model's results, whatever the device
    default = autotune.load(db=str(path), launcher=launcher, backend="sim", library=False).choose(256, 256, 256)
    assert (default.origin, default.config.family.name) == ("default", "blocked")


def test_transposed_operands_run_kernels_of_their_layout(tmp_path, launcher):
    from autotune import store

    path = tmp_path / "r.sqlite"
    db = store.open_db(path)
    small = {"BM": 32, "BN": 32, "BK": 8, "WM": 16, "WN": 32, "WNITER": 1, "TM": 2, "TN": 4}
    nn = record(db, (64, 64, 32), "blocked", 1.0, backend="cuda", gpu=GPU, **small)
    nt = record(db, (64, 64, 32), "blocked", 2.0, backend="cuda", gpu=GPU, TB=1, PB=0, **small)  # no prologue
    record(db, (64, 64, 32), "tiled", 0.5, backend="cuda", gpu=GPU, T=16)  # fastest, but NN only
    mm = autotune.load(db=str(path), launcher=launcher, library=False)
    x, w, y = DeviceArray((64, 32), 0x100000), DeviceArray((64, 32), 0x200000), DeviceArray((64, 64), 0x300000)
    mm(x, w, out=y, trans_b=True)  # nn.Linear: x * W^T, W stored N x K
    assert launcher.launches[-1]["kernel"] == f"loaded {nt}" and launcher.launches[-1]["shape"] == (64, 64, 32)
    assert launcher.launches[-1]["ptrs"] == (0x100000, 0x200000, 0x300000)  # W as it is, no copy
    mm(x, DeviceArray((32, 64), 0x200000), out=y)
    assert launcher.launches[-1]["kernel"] != f"loaded {nt}" and nn != nt
    nearest = mm(DeviceArray((60, 32), 0x100000), w, out=DeviceArray((60, 64), 0x300000), trans_b=True)
    assert nearest is not None and launcher.launches[-1]["kernel"] == f"loaded {nt}"
    tn = autotune.load(launcher=launcher, defaults_only=True)
    tn(DeviceArray((32, 64), 0x100000), DeviceArray((32, 64), 0x200000), out=y, trans_a=True)  # nothing recorded
    assert "TA1" in tags(launcher.launches[-1]["kernel"])  # blocked's default, transposed A


def test_the_api_loads_lazily_and_the_package_import_stays_light():
    check = ("import sys, autotune; assert 'autotune.api.python' not in sys.modules; f = autotune.load; "
             "print(f.__module__, 'autotune.api.python' in sys.modules, "
             "sorted(m for m in sys.modules if m.startswith(('cuda', 'torch', 'cupy'))))")
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["autotune.api.python", "True", "[]"]
    assert {autotune.tune.__name__, autotune.best.__name__} == {"tune", "best"}


def test_an_unknown_keyword_names_the_function_the_caller_called():
    with pytest.raises(TypeError, match=r"^tune\(\) got an unexpected keyword argument 'families'"):
        autotune.tune(64, families=["tiled"])


def test_the_command_line_calls_the_same_functions(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from autotune import store
    from autotune.api import python
    from autotune.api.result import TuneResult
    from autotune.cli import cli

    path = tmp_path / "r.sqlite"
    fast = record(store.open_db(path), (64, 64, 64), "tiled", 1.0, backend="cuda", gpu=GPU, T=16)
    asked = []
    monkeypatch.setattr(python, "tune",
                        lambda *shape, **options: asked.append((shape, options)) or TuneResult(status=0, study=""))
    runner = CliRunner()
    assert runner.invoke(cli, ["search", "--M", "64", "--family", "tiled", "--db", str(path)]).exit_code == 0
    [(shape, options)] = asked
    assert shape == (64, 64, 64) and [f.name for f in options["family"]] == ["tiled"] and options["db"] == str(path)
    shown = runner.invoke(cli, ["best", "--M", "64", "--json", "--db", str(path)])
    assert autotune.best(64, db=str(path))["kernel"] == fast and f'"kernel": "{fast}"' in shown.output


@pytest.mark.parametrize("db", [123, b"db.sqlite", ["db.sqlite"]])
def test_load_refuses_a_db_that_is_no_path_in_one_line(db):
    with pytest.raises(AutotuneError, match=r"load\(db=.*\): pass the path of a results database"):
        autotune.load(db=db, launcher=FakeLauncher())


def test_load_takes_a_pathlib_path(tmp_path):
    import pathlib
    import shutil

    from autotune.store import shipped_databases

    copy = tmp_path / "mine.sqlite"
    shutil.copy(shipped_databases()[0], copy)
    mm = autotune.load(db=pathlib.Path(copy), launcher=FakeLauncher())
    assert mm.dispatcher.db_path == [str(copy)]
