// load()'s pass-through steps against libtorch (the seam: _aten.h). Where cuBLAS computes a planned call,
// the C first step (_fastcall.c) ran torch.mm through Python: two torch.Size made and read for the key, A.dtype,
// the TF32 getter and torch.mm's argument parser, which put load() above torch.matmul's host cost at host-bound
// shapes (docs/host-bound.md). Here the same reads are C++ reads of the tensors and the product is at::mm, what
// torch.mm's binding calls.
#include <ATen/Context.h>
#include <ATen/PythonTorchFunctionTLS.h>
#include <ATen/ops/mm.h>
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

static PyObject *product(PyObject *A, PyObject *B, int trans_a, int trans_b) {
    // a torch function mode would see torch.mm called: leave the call to it
    if (!plain(A) || !plain(B) || at::impl::torch_function_mode_enabled())
        return nullptr;
    // owned copies, made with the GIL held, as torch's binding passes them: with references to the Python
    // objects' tensors instead, at::mm with the GIL released cost 0.25 us more a call (a CPU build, torch 2.13)
    at::Tensor a = THPVariable_Unpack(A), b = THPVariable_Unpack(B);
    // A float32 (B of another dtype: at::mm raises, and the call is declined), TF32 off
    if (a.scalar_type() != at::kFloat || at::globalContext().allowTF32CuBLAS())
        return nullptr;
    at::Tensor c;
    bool raised = false;
    PyThreadState *state = PyEval_SaveThread();
    try {
        c = at::mm(trans_a ? a.mT() : a, trans_b ? b.mT() : b);
    } catch (...) {
        raised = true;
    }
    PyEval_RestoreThread(state);
    return raised ? nullptr : THPVariable_Wrap(std::move(c));
}

static AtenSteps steps = {read, product};

// the two steps called from Python, for the tests: read(A, B) -> ((rows, cols, rows, cols), device) or None;
// product(A, B, trans_a, trans_b) -> C or None
static PyObject *read_py(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t s[4];
    long device;
    if (nargs != 2 || !read(args[0], args[1], s, &device))
        Py_RETURN_NONE;
    return Py_BuildValue("((nnnn)l)", s[0], s[1], s[2], s[3], device);
}

static PyObject *product_py(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4)
        Py_RETURN_NONE;
    PyObject *c = product(args[0], args[1], PyObject_IsTrue(args[2]) == 1, PyObject_IsTrue(args[3]) == 1);
    return c != nullptr || PyErr_Occurred() ? c : Py_NewRef(Py_None);
}

static PyMethodDef module_methods[] = {
    {"read", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(read_py)), METH_FASTCALL,
     "read(A, B): ((A's rows, cols, B's rows, cols), A's device), or None: declined"},
    {"product", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(product_py)), METH_FASTCALL,
     "product(A, B, trans_a, trans_b): torch.mm of the operands' views, or None: declined"},
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
