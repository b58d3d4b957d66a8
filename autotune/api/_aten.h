/* The seam between load()'s first step in C (api/_fastcall.c) and its steps against libtorch (api/_aten.cpp,
   built on first use for the torch at hand and used only with that very torch: api.aten_build).

   _aten.cpp hands _fastcall.c a capsule named ATEN_CAPSULE holding an AtenSteps. The steps take any two
   objects and answer only for plain torch tensors (torch.Tensor or nn.Parameter, whose __torch_function__ is
   torch's own); for anything else they decline, and the C first step takes its Python-attribute way, which
   reads every array the same way it always did. No step leaves a Python error set when it declines. */
#ifndef AUTOTUNE_ATEN_H
#define AUTOTUNE_ATEN_H
#include <Python.h>

#define ATEN_CAPSULE "autotune.api._aten.steps"

typedef struct {
    /* A's and B's sizes (rows and columns of each) and A's device (Tensor.get_device(): -1 on the CPU), read
       from the tensors with no torch.Size made; 1: read, 0: declined (not two plain 2-D tensors) */
    int (*read)(PyObject *A, PyObject *B, Py_ssize_t sizes[4], long *device);
    /* torch.mm of the operands (their .mT where transposed) as a new reference, the GIL released around it as
       torch's binding does, and with a bias (not NULL) torch.addmm(bias, ...); NULL: declined (not plain float32
       tensors, TF32 on, a torch function mode on, a bias that is not a plain contiguous float32 vector of C's
       columns on A's device, or at::mm raised, so that torch.mm from Python raises its own error) */
    PyObject *(*product)(PyObject *A, PyObject *B, PyObject *bias, int trans_a, int trans_b);
    /* our kernel's operands (api.shortcuts.to_kernel's checks): A and B plain float32 tensors outside autograd,
       contiguous, B on `device`, no torch function mode; C allocated as A.new_empty((rows, cols)) would, the GIL
       released around the allocation. 1: *C a new reference, ptrs A's, B's and C's data; 0: declined; -1: an
       error set (C made but not wrapped) */
    int (*operands)(PyObject *A, PyObject *B, long device, Py_ssize_t rows, Py_ssize_t cols, void *ptrs[3],
                    PyObject **C);
    /* the bias of a call our kernel computes (api.bias): a plain contiguous float32 vector of `cols` on `device`,
       outside autograd, no torch function mode. 1: *ptr its data; 0: declined (never an error) */
    int (*bias)(PyObject *bias, long device, Py_ssize_t cols, void **ptr);
} AtenSteps;

#endif
