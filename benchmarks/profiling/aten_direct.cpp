// The probe benchmarks/profiling/aten_direct.py builds (torch.utils.cpp_extension): load()'s pass-through done
// in C++ against libtorch, to see what calling at::mm without torch.mm's Python binding would save.
//   mm(A, B): at::mm of the two tensors, the GIL released around it as torch's binding does, wrapped back.
//   keyed(A, B): the short way's key built from the tensors' sizes (no torch.Size), looked up in the table
//   given to set_table, then what mm does; None where A or B is not exactly a torch.Tensor or a torch
//   function mode is on (the Python path's job), or no entry.
#include <Python.h>
#include <ATen/PythonTorchFunctionTLS.h>
#include <torch/extension.h>
#include <torch/csrc/autograd/python_variable.h>

static PyObject *table = nullptr;

static PyObject *product(const at::Tensor &a, const at::Tensor &b) {
    at::Tensor c;
    PyThreadState *state = PyEval_SaveThread();
    c = at::mm(a, b);
    PyEval_RestoreThread(state);
    return THPVariable_Wrap(std::move(c));
}

static PyObject *sizes_of(const at::Tensor &t) {
    auto sizes = t.sizes();
    PyObject *tuple = PyTuple_New(static_cast<Py_ssize_t>(sizes.size()));
    for (size_t i = 0; tuple != nullptr && i < sizes.size(); ++i)
        PyTuple_SET_ITEM(tuple, i, PyLong_FromLongLong(sizes[i]));
    return tuple;
}

static PyObject *mm(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !THPVariable_Check(args[0]) || !THPVariable_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "mm(A, B): two tensors");
        return nullptr;
    }
    return product(THPVariable_Unpack(args[0]), THPVariable_Unpack(args[1]));
}

static PyObject *keyed(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || table == nullptr || !THPVariable_CheckExact(args[0]) || !THPVariable_CheckExact(args[1])
            || at::impl::torch_function_mode_enabled())
        Py_RETURN_NONE;
    const at::Tensor &a = THPVariable_Unpack(args[0]), &b = THPVariable_Unpack(args[1]);
    PyObject *sa = sizes_of(a), *sb = sizes_of(b), *device = PyLong_FromLong(a.is_cuda() ? a.get_device() : -1);
    PyObject *key = sa && sb && device ? PyTuple_Pack(5, sa, sb, Py_False, Py_False, device) : nullptr;
    Py_XDECREF(sa), Py_XDECREF(sb), Py_XDECREF(device);
    if (key == nullptr)
        return nullptr;
    PyObject *way = PyDict_GetItemWithError(table, key);
    Py_DECREF(key);
    if (way == nullptr)
        return PyErr_Occurred() ? nullptr : Py_NewRef(Py_None);
    if (a.scalar_type() != at::kFloat || at::globalContext().allowTF32CuBLAS())
        Py_RETURN_NONE;
    return product(a, b);
}

static PyObject *set_table(PyObject *, PyObject *t) {
    Py_XSETREF(table, Py_NewRef(t));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"mm", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(mm)), METH_FASTCALL, nullptr},
    {"keyed", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(keyed)), METH_FASTCALL, nullptr},
    {"set_table", set_table, METH_O, nullptr},
    {nullptr, nullptr, 0, nullptr}};
static PyModuleDef module = {PyModuleDef_HEAD_INIT, "aten_direct", nullptr, -1, methods};
PyMODINIT_FUNC PyInit_aten_direct(void) { return PyModule_Create(&module); }
