/* rlio._accel: the optional C speedups of RunWriter.log_metrics (see rlio/writer/metrics_fast.py).
 *
 * The pure-Python writer is the reference and works without this module; this one only does
 * the same work with fewer interpreter steps, for the calls the Python hot path takes:
 *
 * - Lock: a plain non-reentrant lock (threading.Lock's acquire/release/with), which the writer
 *   uses as its metrics lock so this module can take it without a Python call.
 * - Shape: value checks read from the schema (see _accel_shape.h); step_sum and scan_records:
 *   the rollout scan's step sums and loop (_accel_scan.h).
 * - block_columns and columns_clear: the block validator's column passes, and fold_extremes:
 *   the report's chart buckets (_accel_columns.h).
 * - MetricsLine: called as ``log_metrics(metrics, step)``. For a plain dict and an int step it
 *   matches the dict against the key layouts the Python path taught it (keys in order, the exact
 *   type of each value the layout's type-only rules accept), runs the layout's compiled
 *   ``rest`` check (step and every value whose rule is more than its type), encodes the dict
 *   with orjson, splices the step in front and writes the line with one write(2) under the
 *   metrics lock. Anything else, and any call this cannot finish exactly as the Python path
 *   would, goes to the Python method (``fallback``), which judges and writes it and names what
 *   is wrong. No rule lives here: the types and ``rest`` come from the schema's compiler.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#include <pythread.h>
#include <stddef.h>

#define MAX_LAYOUTS 4  /* layouts kept; a training loop logs one or two */
#define MAX_REST 32    /* values a layout's rest check may take (more: not accelerated) */

/* ------------------------------------------------------------------------------ Lock */

typedef struct {
    PyObject_HEAD
    PyThread_type_lock lock;
    int held;
} LockObject;

/* Take the lock: at once when free, else waiting with the GIL released. */
static void
lock_take(LockObject *self)
{
    if (!PyThread_acquire_lock(self->lock, NOWAIT_LOCK)) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(self->lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS
    }
    self->held = 1;
}

static void
lock_give(LockObject *self)
{
    self->held = 0;
    PyThread_release_lock(self->lock);
}

static PyObject *
Lock_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    if (PyTuple_GET_SIZE(args) != 0 || (kwds != NULL && PyDict_GET_SIZE(kwds) != 0)) {
        PyErr_SetString(PyExc_TypeError, "Lock() takes no arguments");
        return NULL;
    }
    LockObject *self = (LockObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->lock = PyThread_allocate_lock();
    if (self->lock == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    return (PyObject *)self;
}

static void
Lock_dealloc(LockObject *self)
{
    if (self->lock != NULL) {
        if (self->held) {
            PyThread_release_lock(self->lock);
        }
        PyThread_free_lock(self->lock);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
Lock_acquire(LockObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs > 1) {
        PyErr_SetString(PyExc_TypeError, "acquire() takes at most one argument (blocking)");
        return NULL;
    }
    if (nargs == 1) {
        int blocking = PyObject_IsTrue(args[0]);
        if (blocking < 0) {
            return NULL;
        }
        if (!blocking) {
            if (!PyThread_acquire_lock(self->lock, NOWAIT_LOCK)) {
                Py_RETURN_FALSE;
            }
            self->held = 1;
            Py_RETURN_TRUE;
        }
    }
    lock_take(self);
    Py_RETURN_TRUE;
}

static PyObject *
Lock_release(LockObject *self, PyObject *Py_UNUSED(ignored))
{
    if (!self->held) {
        PyErr_SetString(PyExc_RuntimeError, "release unlocked lock");
        return NULL;
    }
    lock_give(self);
    Py_RETURN_NONE;
}

static PyObject *
Lock_exit(LockObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return Lock_release(self, NULL);
}

static PyObject *
Lock_locked(LockObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(self->held);
}

static PyMethodDef Lock_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))Lock_acquire, METH_FASTCALL,
     "acquire(blocking=True) -> bool: take the lock (waiting unless blocking is false)."},
    {"release", (PyCFunction)Lock_release, METH_NOARGS, "Give the lock back."},
    {"locked", (PyCFunction)Lock_locked, METH_NOARGS, "Whether the lock is held."},
    {"__enter__", (PyCFunction)(void (*)(void))Lock_acquire, METH_FASTCALL, "Take the lock."},
    {"__exit__", (PyCFunction)(void (*)(void))Lock_exit, METH_FASTCALL, "Give the lock back."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject LockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rlio._accel.Lock",
    .tp_basicsize = sizeof(LockObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A non-reentrant lock with threading.Lock's acquire, release and with-block.",
    .tp_new = Lock_new,
    .tp_dealloc = (destructor)Lock_dealloc,
    .tp_methods = Lock_methods,
};

/* ------------------------------------------------------------------------ MetricsLine */

#include "_accel_metrics.h"

/* -------------------------------------------------- Shape, step_sum and scan_records */

#include "_accel_shape.h"
#include "_accel_scan.h"

/* -------------------------------------------------- block_columns and columns_clear */

#include "_accel_columns.h"

/* ----------------------------------------------------------------------------- module */

static PyMethodDef accel_functions[] = {
    {"block_columns", (PyCFunction)(void (*)(void))block_columns, METH_FASTCALL,
     "block_columns(recs, keys): each key's values, or None (see _accel_columns.h)."},
    {"finite_numbers", (PyCFunction)finite_numbers, METH_O,
     "finite_numbers(values) -> bool: small finite ints and floats only (_accel_columns.h)."},
    {"all_ints", (PyCFunction)all_ints, METH_O, "all_ints(values) -> bool: exact ints only."},
    {"fold_extremes", (PyCFunction)(void (*)(void))fold_extremes, METH_FASTCALL,
     "fold_extremes(px, py, start, end, width): each run's extremes (see _accel_columns.h)."},
    {"columns_clear", (PyCFunction)(void (*)(void))columns_clear, METH_FASTCALL,
     "columns_clear(columns, types, lo, lo_open, hi, hi_open) -> bool (see _accel_columns.h)."},
    {"scan_records", (PyCFunction)(void (*)(void))scan_records, METH_FASTCALL,
     "scan_records(recs, i, it, split, seen, buf, limit, plan): the rollout scan's loop."},
    {"step_sum", (PyCFunction)(void (*)(void))step_sum, METH_FASTCALL,
     "step_sum(steps, start, idx_key, reward_key): the rewards summed (see _accel_shape.h)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef accel_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "rlio._accel",
    .m_doc = "Optional C speedups of RunWriter.log_metrics; rlio works the same without them.",
    .m_size = -1,
    .m_methods = accel_functions,
};

PyMODINIT_FUNC
PyInit__accel(void)
{
    if (PyType_Ready(&LockType) < 0 || PyType_Ready(&MetricsLineType) < 0
            || PyType_Ready(&ShapeType) < 0) {
        return NULL;
    }
    str_step = PyUnicode_InternFromString("step");
    if (str_step == NULL) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&accel_module);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "Lock", (PyObject *)&LockType) < 0
            || PyModule_AddObjectRef(m, "MetricsLine", (PyObject *)&MetricsLineType) < 0
            || PyModule_AddObjectRef(m, "Shape", (PyObject *)&ShapeType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
