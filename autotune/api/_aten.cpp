// load()'s pass-through steps against libtorch (the seam: _aten.h). Where cuBLAS computes a planned call,
// the C first step (_fastcall.c) ran torch.mm through Python: two torch.Size made and read for the key, A.dtype,
// the TF32 getter and torch.mm's argument parser, which put load() above torch.matmul's host cost at host-bound
// shapes (docs/host-bound.md). Here the same reads are C++ reads of the tensors and the product is at::mm, what
// torch.mm's binding calls.
#include <ATen/Context.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <c10/core/GradMode.h>
#include <ATen/PythonTorchFunctionTLS.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mm.h>
#include <typeinfo>
#include <torch/csrc/autograd/python_variable.h>

#include "_aten.h"

static PyTypeObject *parameter_type;  // torch.nn.Parameter: torch's own __torch_function__, as a plain tensor's

static bool plain(PyObject *x) {
    return THPVariable_CheckExact(x) || (parameter_type != nullptr && Py_TYPE(x) == parameter_type);
}

static int read(PyObject *A, PyObject *B, Py_ssize_t sizes[4], long *device) {
    if (!plain(A) || !plain(B))
        return 0;
    const at::Tensor &a = THPVariable_Unpack(A), &b = THPVariable_Unpack(B);
    if (a.dim() != 2 || b.dim() != 2)
        return 0;
    sizes[0] = a.size(0), sizes[1] = a.size(1), sizes[2] = b.size(0), sizes[3] = b.size(1);
    *device = a.get_device();
    return 1;
}

// Whether autograd would record a product of these (and a bias, where defined): one of them requires grad and
// grad mode is on (under torch.no_grad() a layer's weight requires grad, yet its product is a plain one:
// api.shortcuts.recording)
static bool recording(const at::Tensor &a, const at::Tensor &b, const at::Tensor &bias = at::Tensor()) {
    return (a.requires_grad() || b.requires_grad() || (bias.defined() && bias.requires_grad())) &&
           c10::GradMode::is_enabled();
}

// An operand's transpose as a view made here, not by at::transpose through the dispatcher (0.16 us a call less
// on a CPU), where that is plainly the same view: a 2-D strided tensor of the base TensorImpl (no wrapper, as
// functionalization's, vmap's or a nested tensor's), its storage and dispatch keys kept
static at::Tensor transposed(const at::Tensor &t) {
    const c10::TensorImpl *impl = t.unsafeGetTensorImpl();
    if (t.dim() != 2 || t.layout() != at::kStrided || typeid(*impl) != typeid(c10::TensorImpl) || !impl->has_storage())
        return t.mT();
    auto view = c10::make_intrusive<c10::TensorImpl>(c10::TensorImpl::VIEW, c10::Storage(t.storage()), t.key_set(),
                                                     t.dtype());
    const int64_t sizes[2] = {t.size(1), t.size(0)}, strides[2] = {t.stride(1), t.stride(0)};
    view->set_sizes_and_strides(c10::IntArrayRef(sizes, 2), c10::IntArrayRef(strides, 2),
                                std::optional<int64_t>(t.storage_offset()));
    return at::Tensor(std::move(view));
}

// A bias taken as it is (api.bias.check's rules, so that the full path says what is wrong with any other):
// a float32 vector of C's columns, contiguous, on A's device
static bool bias_fits(const at::Tensor &bias, int64_t cols, long device) {
    return bias.scalar_type() == at::kFloat && bias.dim() == 1 && bias.size(0) == cols && bias.is_contiguous() &&
           bias.get_device() == device;
}

// x·y, plus the bias where defined (torch.addmm's: cuBLAS adds it)
static at::Tensor product_of(const at::Tensor &bias, const at::Tensor &x, const at::Tensor &y) {
    return bias.defined() ? at::addmm(bias, x, y) : at::mm(x, y);
}

static PyObject *product(PyObject *A, PyObject *B, PyObject *Bias, int trans_a, int trans_b) {
    // a torch function mode would see torch.mm called: leave the call to it
    if (!plain(A) || !plain(B) || (Bias != nullptr && !plain(Bias)) || at::impl::torch_function_mode_enabled())
        return nullptr;
    // owned copies, made with the GIL held, as torch's binding passes them: with references to the Python
    // objects' tensors instead, at::mm with the GIL released cost 0.25 us more a call (a CPU build, torch 2.13)
    at::Tensor a = THPVariable_Unpack(A), b = THPVariable_Unpack(B);
    // A float32 (B of another dtype: at::mm raises, and the call is declined), TF32 off
    if (a.scalar_type() != at::kFloat || at::globalContext().allowTF32CuBLAS())
        return nullptr;
    at::Tensor bias = Bias != nullptr ? THPVariable_Unpack(Bias) : at::Tensor();
    if (bias.defined() && !bias_fits(bias, trans_b ? b.size(0) : b.size(1), a.get_device()))
        return nullptr;
    at::Tensor c;
    bool raised = false;
    PyThreadState *state = PyEval_SaveThread();
    try {
        // With no gradient to record, below autograd, the transposes made here: with at::mm of .mT() views an
        // x·Wᵀ pass-through took 3-4% longer than torch.matmul at host-bound thin calls on an H100 (anyshape.py
        // --thin, docs/pytorch.md), and on a CPU 1.21 us a call against 0.89 this way, torch.matmul 0.98-0.99
        // (benchmarks/data/aten-steps-nt-before-transposes-cpu.txt, aten-steps-nt-cpu.txt)
        if (recording(a, b, bias)) {
            c = product_of(bias, trans_a ? a.mT() : a, trans_b ? b.mT() : b);
        } else {
            at::AutoDispatchBelowADInplaceOrView below;
            c = product_of(bias, trans_a ? transposed(a) : a, trans_b ? transposed(b) : b);
        }
    } catch (...) {
        raised = true;
    }
    PyEval_RestoreThread(state);
    return raised ? nullptr : THPVariable_Wrap(std::move(c));
}

static int operands(PyObject *A, PyObject *B, long device, Py_ssize_t rows, Py_ssize_t cols, void *ptrs[3],
                    PyObject **C) {
    if (!plain(A) || !plain(B) || at::impl::torch_function_mode_enabled())
        return 0;
    const at::Tensor &a = THPVariable_Unpack(A), &b = THPVariable_Unpack(B);
    if (a.scalar_type() != at::kFloat || b.scalar_type() != at::kFloat || recording(a, b) ||
            !a.is_contiguous() || !b.is_contiguous() || b.get_device() != device)
        return 0;
    at::TensorOptions options = a.options();
    at::Tensor c;
    bool raised = false;
    PyThreadState *state = PyEval_SaveThread();  // as new_empty's binding: the allocator may wait on another thread
    try {
        c = at::empty({rows, cols}, options);
    } catch (...) {
        raised = true;
    }
    PyEval_RestoreThread(state);
    if (raised)
        return 0;
    ptrs[0] = a.data_ptr(), ptrs[1] = b.data_ptr(), ptrs[2] = c.data_ptr();
    *C = THPVariable_Wrap(std::move(c));
    return *C != nullptr ? 1 : -1;
}

static int bias_step(PyObject *Bias, long device, Py_ssize_t cols, void **ptr) {
    if (!plain(Bias) || at::impl::torch_function_mode_enabled())
        return 0;
    const at::Tensor &bias = THPVariable_Unpack(Bias);
    if (!bias_fits(bias, cols, device) || recording(bias, bias))  // a bias autograd would record: the full path
        return 0;
    *ptr = bias.data_ptr();
    return 1;
}

static AtenSteps steps = {read, product, operands, bias_step};

// the steps called from Python, for the tests: read(A, B) -> ((rows, cols, rows, cols), device) or None;
// product(A, B, trans_a, trans_b[, bias]) -> C or None; operands(A, B, device, (rows, cols)) -> (C, pointers) or
// None; bias(bias, device, cols) -> its data pointer or None
static PyObject *read_py(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t s[4];
    long device;
    if (nargs != 2 || !read(args[0], args[1], s, &device))
        Py_RETURN_NONE;
    return Py_BuildValue("((nnnn)l)", s[0], s[1], s[2], s[3], device);
}

static PyObject *product_py(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 && nargs != 5)
        Py_RETURN_NONE;
    PyObject *bias = nargs == 5 && args[4] != Py_None ? args[4] : nullptr;
    PyObject *c = product(args[0], args[1], bias, PyObject_IsTrue(args[2]) == 1, PyObject_IsTrue(args[3]) == 1);
    return c != nullptr || PyErr_Occurred() ? c : Py_NewRef(Py_None);
}

static PyObject *bias_py(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
    void *ptr = nullptr;
    if (nargs != 3 || !bias_step(args[0], PyLong_AsLong(args[1]), PyLong_AsSsize_t(args[2]), &ptr)) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    return PyLong_FromVoidPtr(ptr);
}

static PyObject *operands_py(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
    void *ptrs[3];
    PyObject *C = nullptr;
    if (nargs != 4 || !PyTuple_Check(args[3]) || PyTuple_GET_SIZE(args[3]) != 2)
        Py_RETURN_NONE;
    int got = operands(args[0], args[1], PyLong_AsLong(args[2]), PyLong_AsSsize_t(PyTuple_GET_ITEM(args[3], 0)),
                       PyLong_AsSsize_t(PyTuple_GET_ITEM(args[3], 1)), ptrs, &C);
    if (got <= 0)
        return got < 0 ? nullptr : Py_NewRef(Py_None);
    PyObject *result = Py_BuildValue("(N(KKK))", C, (unsigned long long)(uintptr_t)ptrs[0],
                                     (unsigned long long)(uintptr_t)ptrs[1], (unsigned long long)(uintptr_t)ptrs[2]);
    return result;
}

static PyMethodDef module_methods[] = {
    {"operands", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(operands_py)), METH_FASTCALL,
     "operands(A, B, device, (rows, cols)): (C, (A's, B's, C's data pointers)), or None: declined"},
    {"read", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(read_py)), METH_FASTCALL,
     "read(A, B): ((A's rows, cols, B's rows, cols), A's device), or None: declined"},
    {"product", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(product_py)), METH_FASTCALL,
     "product(A, B, trans_a, trans_b[, bias]): torch.mm of the operands' views (torch.addmm with a bias), or None: "
     "declined"},
    {"bias", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(bias_py)), METH_FASTCALL,
     "bias(bias, device, cols): the bias's data pointer, or None: declined"},
    {nullptr, nullptr, 0, nullptr}};

static PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_aten",
                                 "load()'s pass-through steps against libtorch (api.fastcall.attach_aten).", -1,
                                 module_methods};

PyMODINIT_FUNC PyInit__aten(void) {
    PyObject *module = PyModule_Create(&module_def);
    if (module == nullptr)
        return nullptr;
    PyObject *nn = PyImport_ImportModule("torch.nn.parameter");
    PyObject *parameter = nn ? PyObject_GetAttrString(nn, "Parameter") : nullptr;
    Py_XDECREF(nn);
    if (parameter != nullptr && PyType_Check(parameter))
        parameter_type = reinterpret_cast<PyTypeObject *>(parameter);  // kept: the module lives as long as torch
    else
        Py_XDECREF(parameter), PyErr_Clear();
    if (PyModule_AddObject(module, "steps", PyCapsule_New(&steps, ATEN_CAPSULE, nullptr)) < 0 ||
            PyModule_AddStringConstant(module, "TORCH_VERSION", AUTOTUNE_TORCH_VERSION) < 0) {
        Py_DECREF(module);
        return nullptr;
    }
    return module;
}
