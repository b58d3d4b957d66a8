/* The short way of a repeated call to autotune.load()'s matmul, in C (api.fastcall says what it does and
   holds the same steps in Python, which run where this was not built).

   A call C = mm(A, B[, trans_a=..., trans_b=...]) whose kind was planned before finds its short way in the
   instance's table under (A.shape, B.shape, trans_a, trans_b, A.get_device()). A TorchProduct runs inline:
   torch.mm of the operands (their .mT where transposed) when A is float32 and torch's TF32 is off. Any
   other short way is called with (A, B); it returns the product, or None for a call it was not made for.
   Every other call, and any of these that the short way refuses, goes to the instance's _call, the full
   path. On the H200's host a Python frame and its lookups cost a host-bound call about 1 us more than
   torch.matmul; these steps in C skip the frame and the bytecode (docs/pytorch.md, "Measured on the H200"). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#include "_aten.h"

/* The memo of the table's lookups (Python 3.11 and later, where a dict's changes can be told). Building the
   table's key and hashing it (two torch.Size tuples) is a quarter of what these steps cost above torch.mm: on a
   CPU (Python 3.12, torch 2.13, a 2x3 by 3x4 product) 0.43 us with the table's lookup, 0.33 with the memo's
   (benchmarks/data/memo-probe-cpu.txt); on an H100 lease's host the difference was within its noise. A call
   of 2-D operands finds its short way first in a few slots indexed by its sizes, its transposes and A's device,
   read as C integers. The slots hold what the table held: they are emptied whenever the table is replaced (forget())
   or changed, so the table stays the one authority on a call's short way. Python 3.12 on tells of a change through
   a dict watcher, which counts the changes to any table a memo read from; Python 3.11 through the dict's version
   tag (PEP 509), which every change to that dict renews and which 3.12 deprecates. */
#if PY_VERSION_HEX >= 0x030C0000
#define MEMO 1
#define WATCHED 1
#define MEMO_SLOTS 32
#elif PY_VERSION_HEX >= 0x030B0000
#define MEMO 1
#define WATCHED 0
#define MEMO_SLOTS 32
#else
#define MEMO 0
#define WATCHED 0
#define MEMO_SLOTS 1
#endif

typedef struct {
    Py_ssize_t sizes[4];  /* A's rows and columns, B's rows and columns */
    long device;
    int trans;            /* bit 0: trans_a, bit 1: trans_b */
} CallKind;

typedef struct {
    CallKind kind;
    PyObject *way;  /* NULL: an empty slot */
} MemoSlot;

typedef struct {
    PyObject_HEAD
    PyObject *fast;  /* dict: (A.shape, B.shape, trans_a, trans_b, device) -> short way */
    vectorcallfunc vectorcall;
    PyObject *memo_table;       /* the table the slots were read from */
    uint64_t memo_changes;      /* table_version() when they were */
    MemoSlot memo[MEMO_SLOTS];
} FastCall;

static PyObject *product_type;  /* shortcuts.TorchProduct: (mm, float32, tf32 getter, trans_a, trans_b, addmm) */
/* the steps against libtorch (_aten.h) where api.fastcall attached them (use_aten), and their capsule; else NULL */
static const AtenSteps *aten;
static PyObject *aten_capsule;
static PyObject *s_shape, *s_get_device, *s_dtype, *s_mT, *s_call, *s_trans_a, *s_trans_b, *s_bias;

static int
same_name(PyObject *name, PyObject *wanted)
{
    return name == wanted || PyUnicode_Compare(name, wanted) == 0;
}

/* the full path: self._call(*args, **kwargs) */
static PyObject *
full_path(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *method = PyObject_GetAttr(self, s_call);
    if (method == NULL)
        return NULL;
    PyObject *result = PyObject_Vectorcall(method, args, PyVectorcall_NARGS(nargsf), kwnames);
    Py_DECREF(method);
    return result;
}

#if WATCHED
static int watcher = -1;
static uint64_t table_changes;  /* changes to any table a memo read from, since the module was loaded */

static int
table_changed(PyDict_WatchEvent event, PyObject *dict, PyObject *key, PyObject *value)
{
    (void)event, (void)dict, (void)key, (void)value;
    ++table_changes;
    return 0;
}
#endif

#if MEMO
/* a count that differs from its last value whenever the instance's table may have changed since */
static uint64_t
table_version(FastCall *me)
{
#if WATCHED
    (void)me;
    return table_changes;
#else
    return ((PyDictObject *)me->fast)->ma_version_tag;
#endif
}

/* whether the memo's slots were read from the instance's table as it is now */
static int
memo_current(FastCall *me)
{
    return me->memo_table == me->fast && me->memo_changes == table_version(me);
}
#endif

static void
memo_empty(FastCall *me)
{
    for (int i = 0; i < MEMO_SLOTS; ++i)
        Py_CLEAR(me->memo[i].way);
    Py_CLEAR(me->memo_table);
}

/* the call kind of 2-D operands, read from their shapes and A's device; 0: not one the memo holds */
static int
kind_of(PyObject *sa, PyObject *sb, PyObject *device, int trans, CallKind *kind)
{
    if (!PyTuple_Check(sa) || !PyTuple_Check(sb) || PyTuple_GET_SIZE(sa) != 2 || PyTuple_GET_SIZE(sb) != 2)
        return 0;
    PyObject *sizes[4] = {PyTuple_GET_ITEM(sa, 0), PyTuple_GET_ITEM(sa, 1), PyTuple_GET_ITEM(sb, 0),
                          PyTuple_GET_ITEM(sb, 1)};
    memset(kind, 0, sizeof *kind);  /* no padding bytes left unset: slots are compared with memcmp */
    for (int i = 0; i < 4; ++i) {
        kind->sizes[i] = PyLong_Check(sizes[i]) ? PyLong_AsSsize_t(sizes[i]) : -1;
        if (kind->sizes[i] < 0) {
            PyErr_Clear();
            return 0;
        }
    }
    kind->device = PyLong_Check(device) ? PyLong_AsLong(device) : -2;
    if (kind->device == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    kind->trans = trans;
    return kind->device != -2;
}

/* the call kind of two plain 2-D torch tensors, read by the libtorch steps where attached; 0: not read */
static int
aten_kind(PyObject *A, PyObject *B, int trans, CallKind *kind)
{
    Py_ssize_t sizes[4];
    long device;
    if (aten == NULL || !aten->read(A, B, sizes, &device))
        return 0;
    memset(kind, 0, sizeof *kind);  /* as kind_of: no padding byte left unset for memcmp */
    memcpy(kind->sizes, sizes, sizeof sizes);
    kind->device = device;
    kind->trans = trans;
    return 1;
}

#if MEMO
static MemoSlot *
memo_slot(FastCall *me, const CallKind *kind)
{
    uint64_t h = (uint64_t)kind->device * 0x9E3779B97F4A7C15u + (uint64_t)kind->trans;
    for (int i = 0; i < 4; ++i)
        h = (h ^ (uint64_t)kind->sizes[i]) * 0x100000001B3u;
    return &me->memo[(h >> 32) % MEMO_SLOTS];
}
#endif

/* the short way the memo holds for this call kind (a new reference), else NULL */
static PyObject *
memo_find(FastCall *me, const CallKind *kind)
{
#if MEMO
    if (!memo_current(me)) {
        memo_empty(me);
        if (!PyDict_CheckExact(me->fast))
            return NULL;  /* a table of another type may change unseen */
#if WATCHED
        if (watcher < 0 || PyDict_Watch(watcher, me->fast) < 0) {
            PyErr_Clear();
            return NULL;
        }
#endif
        me->memo_table = Py_NewRef(me->fast);
        me->memo_changes = table_version(me);
        return NULL;
    }
    MemoSlot *slot = memo_slot(me, kind);
    if (slot->way != NULL && memcmp(&slot->kind, kind, sizeof *kind) == 0)
        return Py_NewRef(slot->way);
#else
    (void)me, (void)kind;
#endif
    return NULL;
}

static void
memo_keep(FastCall *me, const CallKind *kind, PyObject *way)
{
#if MEMO
    if (!memo_current(me))
        return;  /* the memo was not (or no longer is) of this table */
    MemoSlot *slot = memo_slot(me, kind);
    memcpy(&slot->kind, kind, sizeof *kind);
    Py_XSETREF(slot->way, Py_NewRef(way));
#else
    (void)me, (void)kind, (void)way;
#endif
}

/* The short way the table holds for this call (a new reference); NULL with no error set where it holds none
   or A or B is not an array with a shape and a device (the full path reads it through its protocols). */
static PyObject *
short_way(FastCall *me, PyObject *A, PyObject *B, int trans_a, int trans_b)
{
    CallKind kind;
    PyObject *way = NULL;
    int memo = 0;
    if (MEMO && aten_kind(A, B, trans_a | trans_b << 1, &kind) && (way = memo_find(me, &kind)) != NULL)
        return way;  /* a plain tensor's call kind, read by libtorch with no torch.Size made, found in the memo */
    PyObject *sa = PyObject_GetAttr(A, s_shape);
    PyObject *sb = sa ? PyObject_GetAttr(B, s_shape) : NULL;
    PyObject *device = sb ? PyObject_CallMethodNoArgs(A, s_get_device) : NULL;
    if (device == NULL) {
        PyErr_Clear();
    } else if ((memo = MEMO && kind_of(sa, sb, device, trans_a | trans_b << 1, &kind)) &&
               (way = memo_find(me, &kind)) != NULL) {
        /* found in the memo */
    } else {
        PyObject *key = PyTuple_Pack(5, sa, sb, trans_a ? Py_True : Py_False, trans_b ? Py_True : Py_False, device);
        way = key ? PyDict_GetItemWithError(me->fast, key) : NULL;
        Py_XDECREF(key);
        if (way != NULL) {
            Py_INCREF(way);  /* forget() may drop the table while the call runs */
            if (memo)
                memo_keep(me, &kind, way);
        }
    }
    Py_XDECREF(sa);
    Py_XDECREF(sb);
    Py_XDECREF(device);
    return way;
}

/* torch.mm of the operands' views (torch.addmm with a bias): 1 ran it (*result set, NULL on its error), 0 refused
   (another dtype, TF32 on, a bias the way does not take as it is) */
static int
torch_product(PyObject *way, PyObject *A, PyObject *B, PyObject *bias, int trans_a, int trans_b, PyObject **result)
{
    *result = NULL;
    /* plain float32 tensors, TF32 off: at::mm, what torch.mm calls (an error set: made, but not wrapped) */
    if (aten != NULL && ((*result = aten->product(A, B, bias, trans_a, trans_b)) != NULL || PyErr_Occurred()))
        return 1;
    if (bias != NULL) {  /* the TorchProduct itself, which declines (None) a bias it does not take */
        PyObject *operands[3] = {A, B, bias};
        *result = PyObject_Vectorcall(way, operands, 3, NULL);
        if (*result != Py_None)
            return 1;
        Py_CLEAR(*result);
        return 0;
    }
    PyObject *dtype = PyObject_GetAttr(A, s_dtype);
    if (dtype == NULL) {
        PyErr_Clear();
        return 0;
    }
    int float32 = dtype == PyTuple_GET_ITEM(way, 1);
    Py_DECREF(dtype);
    if (!float32)
        return 0;
    PyObject *tf32 = PyObject_CallNoArgs(PyTuple_GET_ITEM(way, 2));
    int on = tf32 ? PyObject_IsTrue(tf32) : -1;
    Py_XDECREF(tf32);
    if (on != 0)
        return on < 0;  /* an error in the getter is the caller's; TF32 on: the full path */
    PyObject *a = trans_a ? PyObject_GetAttr(A, s_mT) : Py_NewRef(A);
    if (a == NULL)
        return 1;
    PyObject *b = trans_b ? PyObject_GetAttr(B, s_mT) : Py_NewRef(B);
    if (b != NULL) {
        PyObject *operands[2] = {a, b};
        *result = PyObject_Vectorcall(PyTuple_GET_ITEM(way, 0), operands, 2, NULL);
        Py_DECREF(b);
    }
    Py_DECREF(a);
    return 1;
}

static PyObject *
fastcall_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    FastCall *me = (FastCall *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    int trans[2] = {0, 0};
    PyObject *bias = NULL;
    if (nargs != 2 || me->fast == NULL || !PyDict_Check(me->fast))
        return full_path(self, args, nargsf, kwnames);
    for (Py_ssize_t i = 0; i < nkw; ++i) {  /* only trans_a= and trans_b=, as True or False, and bias= */
        PyObject *name = PyTuple_GET_ITEM(kwnames, i), *value = args[nargs + i];
        if (same_name(name, s_bias)) {
            bias = value == Py_None ? NULL : value;
            continue;
        }
        int which = same_name(name, s_trans_a) ? 0 : same_name(name, s_trans_b) ? 1 : -1;
        if (which < 0 || (value != Py_True && value != Py_False))
            return full_path(self, args, nargsf, kwnames);
        trans[which] = value == Py_True;
    }
    PyObject *A = args[0], *B = args[1];
    PyObject *way = short_way(me, A, B, trans[0], trans[1]);
    if (way == NULL)
        return PyErr_Occurred() ? NULL : full_path(self, args, nargsf, kwnames);  /* an error: no memory for the key */
    PyObject *result;
    if ((PyObject *)Py_TYPE(way) == product_type && PyTuple_GET_SIZE(way) == 6) {
        int ran = torch_product(way, A, B, bias, trans[0], trans[1], &result);
        Py_DECREF(way);
        if (ran)
            return result;
        return full_path(self, args, nargsf, kwnames);
    }
    PyObject *operands[3] = {A, B, bias};
    result = PyObject_Vectorcall(way, operands, bias != NULL ? 3 : 2, NULL);
    Py_DECREF(way);
    if (result != Py_None)
        return result;  /* the product, or NULL: the short way's error */
    Py_DECREF(result);
    return full_path(self, args, nargsf, kwnames);
}

static PyObject *
fastcall_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    (void)args, (void)kwargs;  /* a subclass's __init__ takes them */
    FastCall *self = (FastCall *)type->tp_alloc(type, 0);
    if (self != NULL)
        self->vectorcall = fastcall_vectorcall;
    return (PyObject *)self;
}

static int
fastcall_traverse(FastCall *self, visitproc visit, void *arg)
{
    Py_VISIT(self->fast);
    Py_VISIT(self->memo_table);
    for (int i = 0; i < MEMO_SLOTS; ++i)
        Py_VISIT(self->memo[i].way);
    Py_VISIT(Py_TYPE(self));
    return 0;
}

static int
fastcall_clear(FastCall *self)
{
    Py_CLEAR(self->fast);
    memo_empty(self);
    return 0;
}

static void
fastcall_dealloc(FastCall *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    fastcall_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyMemberDef fastcall_members[] = {
    {"_fast", T_OBJECT, offsetof(FastCall, fast), 0,
     "the short ways of planned call kinds: (A.shape, B.shape, trans_a, trans_b, device) -> short way"},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(FastCall, vectorcall), READONLY, NULL},
    {NULL},
};

static PyType_Slot fastcall_slots[] = {
    {Py_tp_doc, "The short way of a repeated call, in C; a subclass defines _call, the full path."},
    {Py_tp_new, fastcall_new},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_traverse, fastcall_traverse},
    {Py_tp_clear, fastcall_clear},
    {Py_tp_dealloc, fastcall_dealloc},
    {Py_tp_members, fastcall_members},
    {0, NULL},
};

static PyType_Spec fastcall_spec = {
    .name = "autotune.api._fastcall.FastCall",
    .basicsize = sizeof(FastCall),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .slots = fastcall_slots,
};

/* ---- KernelProduct: the short way of a call that our kernel computes (api.shortcuts.to_kernel's steps) ----

   It checks what the table's key does not hold (both operands float32, outside autograd, contiguous, B on the
   device and that device torch's current one), allocates C with A.new_empty, and launches the prepared kernel
   on torch's current stream of the device through the driver's cuLaunchKernel, whose address it was given (so
   this file needs no CUDA header or library to build). Called with a bias (A, B, bias), it then launches the
   bias's kernel (api.bias) the same way, where it was given one and the bias is one that kernel takes as it is.
   A check that fails, or a launch the driver did not enqueue, returns None: the call takes the full path,
   which says why or succeeds. */

typedef int (*launch_kernel_fn)(void *function, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                                unsigned block_x, unsigned block_y, unsigned block_z, unsigned shared_bytes,
                                void *stream, void **params, void **extra);

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    launch_kernel_fn launch;
    void *function;
    unsigned grid[3], block[3], shared;
    int shape[3];  /* M, N, K: the kernel's int arguments after its three pointers */
    PyObject *out_shape, *device, *float32, *raw_stream, *current_device, *grad_enabled, *owner;
    Py_ssize_t rows, cols;  /* out_shape's */
    long device_index;      /* device's */
    int swapped;            /* B's pointer first: the NN product of B and A (api.operands.swapped_shape) */
    void *bias_function;    /* the bias's kernel (NULL: none) and its launch */
    unsigned bias_grid[3], bias_block[3];
    PyObject *bias_reader;  /* bias -> its data pointer or None (api.shortcuts.bias_reader), without api._aten */
} KernelProduct;

static PyObject *s_requires_grad, *s_is_contiguous, *s_new_empty, *s_data_ptr;

/* obj.<name> (called with no arguments where `call`, with `arg` where that is not NULL); a new reference or NULL */
static PyObject *
read_of(PyObject *obj, PyObject *name, int call, PyObject *arg)
{
    if (name == NULL)  /* obj itself is the callable */
        return arg ? PyObject_CallOneArg(obj, arg) : PyObject_CallNoArgs(obj);
    return call ? PyObject_CallMethodNoArgs(obj, name) : PyObject_GetAttr(obj, name);
}

/* 1: what `read_of` gives is `wanted` (by identity where `same`, else ==); 0: it is not; -1: an error */
static int
reads_as(PyObject *obj, PyObject *name, int call, PyObject *wanted, int same)
{
    PyObject *value = read_of(obj, name, call, NULL);
    if (value == NULL)
        return -1;
    int r = same ? value == wanted : PyObject_RichCompareBool(value, wanted, Py_EQ);
    Py_DECREF(value);
    return r;
}

/* the pointer (a device address or a stream handle) that `read_of` gives as an int; *failed set on an error */
static void *
pointer_of(PyObject *obj, PyObject *name, PyObject *arg, int *failed)
{
    PyObject *value = read_of(obj, name, name != NULL, arg);
    void *ptr = value ? PyLong_AsVoidPtr(value) : NULL;
    Py_XDECREF(value);
    *failed = PyErr_Occurred() != NULL;
    return ptr;
}

/* 1: autograd would not record the product: neither operand requires grad, or grad mode is off (torch.no_grad(),
   where a layer's weight still requires grad: api.shortcuts.recording); 0: it would; -1: an error */
static int
outside_autograd(KernelProduct *k, PyObject *A, PyObject *B)
{
    int r;
    if ((r = reads_as(A, s_requires_grad, 0, Py_False, 1)) == 1 &&
            (r = reads_as(B, s_requires_grad, 0, Py_False, 1)) == 1)
        return 1;
    return r < 0 ? r : reads_as(k->grad_enabled, NULL, 0, Py_False, 1);
}

/* 1: a call of the kind the launch was prepared for; 0: another (the full path); -1: an error */
static int
kernel_takes(KernelProduct *k, PyObject *A, PyObject *B)
{
    int r;
    if ((r = reads_as(A, s_dtype, 0, k->float32, 1)) != 1 || (r = reads_as(B, s_dtype, 0, k->float32, 1)) != 1)
        return r;
    if ((r = outside_autograd(k, A, B)) != 1)
        return r;
    if ((r = reads_as(A, s_is_contiguous, 1, Py_True, 1)) != 1 ||
            (r = reads_as(B, s_is_contiguous, 1, Py_True, 1)) != 1)
        return r;
    if ((r = reads_as(B, s_get_device, 1, k->device, 0)) != 1)
        return r;
    return reads_as(k->current_device, NULL, 0, k->device, 0);
}

/* C allocated and the three pointers read, through the libtorch steps where attached and they take the call, else
   through Python: 1 done, 0 not a call of this kind (the full path), -1 an error */
static int
kernel_operands(KernelProduct *k, PyObject *A, PyObject *B, void *ptrs[3], PyObject **C)
{
    int got = aten != NULL ? aten->operands(A, B, k->device_index, k->rows, k->cols, ptrs, C) : 0;
    if (got != 0) {
        int current = got < 0 ? -1 : reads_as(k->current_device, NULL, 0, k->device, 0);
        if (current != 1)
            Py_CLEAR(*C);
        return current;
    }
    int takes = kernel_takes(k, A, B);
    if (takes <= 0)
        return takes;
    if ((*C = PyObject_CallMethodOneArg(A, s_new_empty, k->out_shape)) == NULL)
        return -1;
    int failed = 0;
    ptrs[0] = pointer_of(A, s_data_ptr, NULL, &failed);
    ptrs[1] = failed ? NULL : pointer_of(B, s_data_ptr, NULL, &failed);
    ptrs[2] = failed ? NULL : pointer_of(*C, s_data_ptr, NULL, &failed);
    if (failed)
        Py_CLEAR(*C);
    return failed ? -1 : 1;
}

/* the bias's data pointer where the call's bias is one the bias's kernel takes as it is, read by api._aten's
   steps, else by the Python reader: 1 read, 0 not (the full path), -1 an error */
static int
bias_operand(KernelProduct *k, PyObject *bias, void **ptr)
{
    if (k->bias_function == NULL)
        return 0;
    if (aten != NULL && aten->bias(bias, k->device_index, k->cols, ptr))
        return 1;
    PyObject *read = PyObject_CallOneArg(k->bias_reader, bias);
    if (read == NULL)
        return -1;
    int got = read != Py_None;
    *ptr = got ? PyLong_AsVoidPtr(read) : NULL;
    Py_DECREF(read);
    return PyErr_Occurred() ? -1 : got;
}

/* C = A @ B (+ bias) on our kernel: the product, Py_None (not a call of this kind, or not enqueued), or NULL (an
   error) */
static PyObject *
kernel_product(KernelProduct *k, PyObject *A, PyObject *B, PyObject *bias)
{
    void *ptrs[3], *bias_ptr = NULL;
    PyObject *C = NULL;
    int got = bias != NULL ? bias_operand(k, bias, &bias_ptr) : 1;
    if (got > 0)
        got = kernel_operands(k, A, B, ptrs, &C);
    if (got <= 0)
        return got < 0 ? NULL : Py_NewRef(Py_None);
    int failed = 0;
    void *stream = pointer_of(k->raw_stream, NULL, k->device, &failed);
    void *a = ptrs[k->swapped], *b = ptrs[!k->swapped], *c = ptrs[2];
    if (failed) {
        Py_DECREF(C);
        return NULL;
    }
    int m = k->shape[0], n = k->shape[1], kk = k->shape[2];
    void *params[6] = {&a, &b, &c, &m, &n, &kk};
    int status = k->launch(k->function, k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1], k->block[2],
                           k->shared, stream, params, NULL);
    if (status == 0 && bias != NULL) {  /* C += bias, row by row: (bias, bias, C, rows, cols, ldc = cols) */
        int rows = (int)k->rows, cols = (int)k->cols;
        void *bias_params[6] = {&bias_ptr, &bias_ptr, &c, &rows, &cols, &cols};
        status = k->launch(k->bias_function, k->bias_grid[0], k->bias_grid[1], k->bias_grid[2], k->bias_block[0],
                           k->bias_block[1], k->bias_block[2], 0, stream, bias_params, NULL);
    }
    if (status != 0) {  /* not enqueued (another context current): the full path, into a C of its own */
        Py_DECREF(C);
        return Py_NewRef(Py_None);
    }
    return C;
}

static PyObject *
kernel_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs < 2 || nargs > 3 || (kwnames && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "a KernelProduct takes the two operands and a bias or None (A, B[, bias])");
        return NULL;
    }
    PyObject *bias = nargs == 3 && args[2] != Py_None ? args[2] : NULL;
    return kernel_product((KernelProduct *)self, args[0], args[1], bias);
}

static PyObject *
kernel_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"launch", "function", "grid", "block", "shared", "shape", "out_shape", "device",
                            "float32", "raw_stream", "current_device", "grad_enabled", "owner", "swapped", "bias",
                            NULL};
    unsigned long long launch, function, bias_function = 0;
    unsigned grid[3], block[3], shared, bias_grid[3] = {0, 0, 0}, bias_block[3] = {0, 0, 0};
    int shape[3];
    PyObject *out_shape, *device, *float32, *raw_stream, *current_device, *grad_enabled, *owner, *bias = Py_None;
    PyObject *bias_reader = NULL;
    int swapped = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "KK(III)(III)I(iii)O!O!OOOOO|pO:KernelProduct", names, &launch,
                                     &function, &grid[0], &grid[1], &grid[2], &block[0], &block[1], &block[2],
                                     &shared, &shape[0], &shape[1], &shape[2], &PyTuple_Type, &out_shape,
                                     &PyLong_Type, &device, &float32, &raw_stream, &current_device, &grad_enabled,
                                     &owner, &swapped, &bias))
        return NULL;
    /* bias: None, or the bias's kernel as (function, grid, block, reader) */
    if (bias != Py_None &&
            !PyArg_ParseTuple(bias, "K(III)(III)O;KernelProduct: bias is None or (function, grid, block, reader)",
                              &bias_function, &bias_grid[0], &bias_grid[1], &bias_grid[2], &bias_block[0],
                              &bias_block[1], &bias_block[2], &bias_reader))
        return NULL;
    if (launch == 0) {
        PyErr_SetString(PyExc_ValueError, "KernelProduct: the launch function's address is 0");
        return NULL;
    }
    KernelProduct *self = (KernelProduct *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = kernel_vectorcall;
    self->launch = (launch_kernel_fn)(uintptr_t)launch;
    self->function = (void *)(uintptr_t)function;
    for (int i = 0; i < 3; ++i) {
        self->grid[i] = grid[i];
        self->block[i] = block[i];
        self->shape[i] = shape[i];
    }
    self->shared = shared;
    self->swapped = swapped != 0;
    self->bias_function = (void *)(uintptr_t)bias_function;
    self->bias_reader = Py_XNewRef(bias_reader);
    for (int i = 0; i < 3; ++i) {
        self->bias_grid[i] = bias_grid[i];
        self->bias_block[i] = bias_block[i];
    }
    self->out_shape = Py_NewRef(out_shape);
    self->device = Py_NewRef(device);
    self->device_index = PyLong_AsLong(device);
    self->rows = PyTuple_GET_SIZE(out_shape) == 2 ? PyLong_AsSsize_t(PyTuple_GET_ITEM(out_shape, 0)) : -1;
    self->cols = PyTuple_GET_SIZE(out_shape) == 2 ? PyLong_AsSsize_t(PyTuple_GET_ITEM(out_shape, 1)) : -1;
    if (PyErr_Occurred() || self->rows < 0 || self->cols < 0 || self->rows > INT32_MAX || self->cols > INT32_MAX) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError,
                        "KernelProduct: out_shape is (rows, cols), two ints from 0 to 2**31 - 1 (the kernels' ints)");
        Py_DECREF(self);
        return NULL;
    }
    self->float32 = Py_NewRef(float32);
    self->raw_stream = Py_NewRef(raw_stream);
    self->current_device = Py_NewRef(current_device);
    self->grad_enabled = Py_NewRef(grad_enabled);
    self->owner = Py_NewRef(owner);
    return (PyObject *)self;
}

static int
kernel_traverse(KernelProduct *self, visitproc visit, void *arg)
{
    Py_VISIT(self->out_shape);
    Py_VISIT(self->device);
    Py_VISIT(self->float32);
    Py_VISIT(self->raw_stream);
    Py_VISIT(self->current_device);
    Py_VISIT(self->grad_enabled);
    Py_VISIT(self->owner);
    Py_VISIT(self->bias_reader);
    Py_VISIT(Py_TYPE(self));
    return 0;
}

static int
kernel_clear(KernelProduct *self)
{
    Py_CLEAR(self->out_shape);
    Py_CLEAR(self->device);
    Py_CLEAR(self->float32);
    Py_CLEAR(self->raw_stream);
    Py_CLEAR(self->current_device);
    Py_CLEAR(self->grad_enabled);
    Py_CLEAR(self->owner);
    Py_CLEAR(self->bias_reader);
    return 0;
}

static void
kernel_dealloc(KernelProduct *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    kernel_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyMemberDef kernel_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(KernelProduct, vectorcall), READONLY, NULL},
    {NULL},
};

static PyType_Slot kernel_slots[] = {
    {Py_tp_doc, "KernelProduct(launch, function, grid, block, shared, shape, out_shape, device, float32, "
                "raw_stream, current_device, grad_enabled, owner, swapped=False, bias=None): the short way of a call "
                "our kernel computes, called with (A, B[, bias]); it returns C, or None for a call it was not made "
                "for (api.shortcuts.to_kernel's steps). launch: cuLaunchKernel's address; grad_enabled: "
                "torch.is_grad_enabled; owner: kept alive while this is (what holds launch); swapped: the kernel "
                "takes B's pointer first; bias: the bias's kernel (api.bias) as (function, grid, block, reader), or None "
                "(reader: api.shortcuts.bias_reader, where api._aten's steps are not at hand)."},
    {Py_tp_new, kernel_new},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_traverse, kernel_traverse},
    {Py_tp_clear, kernel_clear},
    {Py_tp_dealloc, kernel_dealloc},
    {Py_tp_members, kernel_members},
    {0, NULL},
};

static PyType_Spec kernel_spec = {
    .name = "autotune.api._fastcall.KernelProduct",
    .basicsize = sizeof(KernelProduct),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .slots = kernel_slots,
};

/* inline(TorchProduct): the type whose short ways run inline */
static PyObject *
set_inline(PyObject *module, PyObject *type)
{
    (void)module;
    Py_XSETREF(product_type, Py_NewRef(type));
    Py_RETURN_NONE;
}

/* use_aten(capsule or None): the libtorch steps (_aten.h) that every FastCall takes first from now on; returns
   the capsule of those it took before (None: none) */
static PyObject *
use_aten(PyObject *module, PyObject *capsule)
{
    (void)module;
    const AtenSteps *steps = NULL;
    if (capsule != Py_None && (steps = PyCapsule_GetPointer(capsule, ATEN_CAPSULE)) == NULL)
        return NULL;
    PyObject *before = aten_capsule != NULL ? aten_capsule : Py_NewRef(Py_None);
    aten = steps;
    aten_capsule = capsule == Py_None ? NULL : Py_NewRef(capsule);
    return before;
}

static PyMethodDef module_methods[] = {
    {"inline", set_inline, METH_O, "inline(TorchProduct): the type of the short ways that run inline"},
    {"use_aten", use_aten, METH_O, "use_aten(capsule or None): the steps against libtorch (api._aten) to take first; the previous capsule"},
    {NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_fastcall",
    .m_doc = "The short way of a repeated matmul call, in C (api.fastcall).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__fastcall(void)
{
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    s_shape = PyUnicode_InternFromString("shape");
    s_get_device = PyUnicode_InternFromString("get_device");
    s_dtype = PyUnicode_InternFromString("dtype");
    s_mT = PyUnicode_InternFromString("mT");
    s_call = PyUnicode_InternFromString("_call");
    s_trans_a = PyUnicode_InternFromString("trans_a");
    s_trans_b = PyUnicode_InternFromString("trans_b");
    s_bias = PyUnicode_InternFromString("bias");
    s_requires_grad = PyUnicode_InternFromString("requires_grad");
    s_is_contiguous = PyUnicode_InternFromString("is_contiguous");
    s_new_empty = PyUnicode_InternFromString("new_empty");
    s_data_ptr = PyUnicode_InternFromString("data_ptr");
#if WATCHED
    if (watcher < 0 && (watcher = PyDict_AddWatcher(table_changed)) < 0)
        PyErr_Clear();  /* no watcher free: no memo, the table is read at every call */
#endif
    PyObject *type = PyType_FromSpec(&fastcall_spec);
    if (type == NULL || PyModule_AddObject(module, "FastCall", type) < 0) {
        Py_XDECREF(type);
        Py_DECREF(module);
        return NULL;
    }
    PyObject *kernel = PyType_FromSpec(&kernel_spec);
    if (kernel == NULL || PyModule_AddObject(module, "KernelProduct", kernel) < 0) {
        Py_XDECREF(kernel);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
