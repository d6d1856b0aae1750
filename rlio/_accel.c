/* Placeholder for the optional C accelerator (rlio._accel): one function, available() -> True.
 * The build hook (hatch_build.py) compiles it; the package works without it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *
available(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    Py_RETURN_TRUE;
}

static PyMethodDef accel_methods[] = {
    {"available", available, METH_NOARGS, "True: the C accelerator is compiled and importable."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef accel_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "rlio._accel",
    .m_doc = "Optional C speedups for rlio's hot paths.",
    .m_size = 0,
    .m_methods = accel_methods,
};

PyMODINIT_FUNC
PyInit__accel(void)
{
    return PyModuleDef_Init(&accel_module);
}
