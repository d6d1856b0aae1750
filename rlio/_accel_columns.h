/* block_columns and columns_clear: the block validator's column passes in C (included by
 * _accel.c; the Python reference is rlio/validate/blocks.py's _layouts and Rule.clears).
 *
 * block_columns(recs, keys): when every record is a dict with as many keys as ``keys``, each of
 * them, and ``keys[0]`` first, the values of each key as one tuple per key (in ``keys``' order,
 * a record per place); else None.
 *
 * columns_clear(columns, types, lo, lo_open, hi, hi_open): whether every value of the columns
 * (sequences) passes a rule read from the schema: its exact type in ``types`` (None: any) and,
 * when a bound is given (an int or float, else None), numbers within it; a range over values
 * other than numbers and nulls is left to the exact path (False), as Rule.clears leaves it.
 */
#include <math.h>

static PyObject *
block_columns(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyList_CheckExact(args[0]) || !PyTuple_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "block_columns(recs: list, keys: tuple)");
        return NULL;
    }
    PyObject *recs = args[0], *keys = args[1];
    Py_ssize_t n = PyList_GET_SIZE(recs), width = PyTuple_GET_SIZE(keys);
    if (width == 0) {
        Py_RETURN_NONE;
    }
    PyObject *first_key = PyTuple_GET_ITEM(keys, 0);
    PyObject *out = PyList_New(width);
    if (out == NULL) {
        return NULL;
    }
    for (Py_ssize_t k = 0; k < width; k++) {
        PyObject *col = PyTuple_New(n);
        if (col == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, k, col);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *rec = PyList_GET_ITEM(recs, i);
        if (!PyDict_CheckExact(rec) || PyDict_GET_SIZE(rec) != width) {
            goto none;
        }
        Py_ssize_t pos = 0, k = 0;
        PyObject *key, *v;
        /* In ``keys``' order (the usual case: a parser hands equal keys over as one object),
         * each value in place; from the first key out of order on, by lookup. */
        while (k < width && PyDict_Next(rec, &pos, &key, &v) && key == PyTuple_GET_ITEM(keys, k)) {
            PyTuple_SET_ITEM(PyList_GET_ITEM(out, k), i, Py_NewRef(v));
            k++;
        }
        if (k == 0) {  /* the first key: by equality (the same first key, as _layouts asks) */
            pos = 0;
            int eq = PyDict_Next(rec, &pos, &key, &v)
                     ? PyObject_RichCompareBool(key, first_key, Py_EQ) : 0;
            if (eq <= 0) {
                goto none;
            }
        }
        for (; k < width; k++) {
            v = PyDict_GetItemWithError(rec, PyTuple_GET_ITEM(keys, k));
            if (v == NULL) {
                goto none;
            }
            PyObject *col = PyList_GET_ITEM(out, k);
            Py_XSETREF(((PyTupleObject *)col)->ob_item[i], Py_NewRef(v));
        }
    }
    return out;
none:
    Py_DECREF(out);  /* the tuples' unset places are NULL: tuple dealloc skips them */
    if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_Exception)) {
            return NULL;
        }
        PyErr_Clear();
    }
    Py_RETURN_NONE;
}

/* Whether ``v`` (an exact int or float) is within the bound ``b`` (``upper``, ``open``): -1 on
 * an error. Exact: doubles where both are, else Python's comparison. */
static int
number_within(PyObject *v, PyObject *b, int upper, int open)
{
    if (PyFloat_CheckExact(v) && PyFloat_CheckExact(b)) {
        double x = PyFloat_AS_DOUBLE(v), y = PyFloat_AS_DOUBLE(b);
        return upper ? (open ? x < y : x <= y) : (open ? x > y : x >= y);
    }
    int op = upper ? (open ? Py_LT : Py_LE) : (open ? Py_GT : Py_GE);
    return PyObject_RichCompareBool(v, b, op);
}

static PyObject *
columns_clear(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError,
                        "columns_clear(columns, types, lo, lo_open, hi, hi_open)");
        return NULL;
    }
    PyObject *columns = PySequence_Fast(args[0], "columns must be a sequence");
    if (columns == NULL) {
        return NULL;
    }
    PyObject *types = args[1], *lo = args[2], *hi = args[4];
    int lo_open = PyObject_IsTrue(args[3]), hi_open = PyObject_IsTrue(args[5]);
    if (lo_open < 0 || hi_open < 0 || (types != Py_None && !PyAnySet_Check(types))) {
        Py_DECREF(columns);
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "types must be a set of types or None");
        }
        return NULL;
    }
    /* The bounds as doubles when they are floats, so most compares are of two doubles. */
    PyObject *lo_f = NULL, *hi_f = NULL;
    if (lo != Py_None) {
        lo_f = PyLong_CheckExact(lo) ? PyNumber_Float(lo) : Py_NewRef(lo);
    }
    if (hi != Py_None) {
        hi_f = PyLong_CheckExact(hi) ? PyNumber_Float(hi) : Py_NewRef(hi);
    }
    if ((lo != Py_None && lo_f == NULL) || (hi != Py_None && hi_f == NULL)) {
        Py_XDECREF(lo_f);
        Py_XDECREF(hi_f);
        Py_DECREF(columns);
        return NULL;
    }
    /* An int bound as a float must be exact, else Python compares (the slow, exact way). */
    int lo_exact = lo_f != NULL && (!PyLong_CheckExact(lo)
                                    || PyObject_RichCompareBool(lo, lo_f, Py_EQ) == 1);
    int hi_exact = hi_f != NULL && (!PyLong_CheckExact(hi)
                                    || PyObject_RichCompareBool(hi, hi_f, Py_EQ) == 1);
    PyObject *lo_use = lo_exact ? lo_f : lo, *hi_use = hi_exact ? hi_f : hi;
    int ranged = lo != Py_None || hi != Py_None;
    PyObject *last_type = NULL;  /* the type last found in ``types`` (most columns have one) */
    int verdict = 1;
    Py_ssize_t ncol = PySequence_Fast_GET_SIZE(columns);
    for (Py_ssize_t c = 0; c < ncol && verdict == 1; c++) {
        PyObject *col = PySequence_Fast(PySequence_Fast_GET_ITEM(columns, c),
                                        "a column must be a sequence");
        if (col == NULL) {
            verdict = -1;
            break;
        }
        Py_ssize_t n = PySequence_Fast_GET_SIZE(col);
        PyObject **items = PySequence_Fast_ITEMS(col);
        for (Py_ssize_t i = 0; i < n && verdict == 1; i++) {
            PyObject *v = items[i];
            PyObject *t = (PyObject *)Py_TYPE(v);
            if (types != Py_None && t != last_type) {
                int has = PySet_Contains(types, t);
                if (has <= 0) {
                    verdict = has;
                    break;
                }
                last_type = t;
            }
            if (!ranged || v == Py_None) {
                continue;
            }
            if (!PyFloat_CheckExact(v) && !PyLong_CheckExact(v)) {
                verdict = 0;  /* a range over strings or booleans: the exact path judges */
                break;
            }
            if (lo != Py_None) {
                verdict = number_within(v, lo_use, 0, lo_open);
            }
            if (verdict == 1 && hi != Py_None) {
                verdict = number_within(v, hi_use, 1, hi_open);
            }
        }
        Py_DECREF(col);
    }
    Py_XDECREF(lo_f);
    Py_XDECREF(hi_f);
    Py_DECREF(columns);
    if (verdict < 0) {  /* a value that cannot be compared: the exact path judges (and names) it */
        if (!PyErr_ExceptionMatches(PyExc_Exception)) {
            return NULL;
        }
        PyErr_Clear();
        verdict = 0;
    }
    return PyBool_FromLong(verdict);
}

/* Whether a < b (``gt``: a > b) for two numbers: doubles when both are floats, else Python's
 * comparison; -1 on an error. */
static int
number_order(PyObject *a, PyObject *b, int gt)
{
    if (PyFloat_CheckExact(a) && PyFloat_CheckExact(b)) {
        double x = PyFloat_AS_DOUBLE(a), y = PyFloat_AS_DOUBLE(b);
        return gt ? x > y : x < y;
    }
    return PyObject_RichCompareBool(a, b, gt ? Py_GT : Py_LT);
}

/* fold_extremes(px, py, start, end, width): for each run of ``width`` points from ``start`` to
 * ``end`` (a multiple of it), the lowest and highest y (the first of equals, as min and max keep
 * them) and the x of each: four lists (lows, highs, x of lows, x of highs). The Python reference
 * is rlio/report/columns.py's Column._fold. */
static PyObject *
fold_extremes(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyList_CheckExact(args[0]) || !PyList_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "fold_extremes(px: list, py: list, start, end, width)");
        return NULL;
    }
    PyObject *px = args[0], *py = args[1];
    Py_ssize_t start = PyLong_AsSsize_t(args[2]), end = PyLong_AsSsize_t(args[3]);
    Py_ssize_t w = PyLong_AsSsize_t(args[4]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (w <= 0 || start < 0 || end < start || (end - start) % w != 0
            || end > PyList_GET_SIZE(py) || PyList_GET_SIZE(px) != PyList_GET_SIZE(py)) {
        PyErr_SetString(PyExc_ValueError, "fold_extremes: runs of width from start to end");
        return NULL;
    }
    Py_ssize_t groups = (end - start) / w;
    PyObject *out[4] = {PyList_New(groups), PyList_New(groups), PyList_New(groups),
                        PyList_New(groups)};
    if (!out[0] || !out[1] || !out[2] || !out[3]) {
        goto fail;
    }
    for (Py_ssize_t g = 0; g < groups; g++) {
        Py_ssize_t first = start + g * w, lo_i = first, hi_i = first;
        PyObject *lo = PyList_GET_ITEM(py, first), *hi = lo;
        for (Py_ssize_t j = first + 1; j < first + w; j++) {
            PyObject *v = PyList_GET_ITEM(py, j);
            int less = number_order(v, lo, 0), more = number_order(v, hi, 1);
            if (less < 0 || more < 0) {
                goto fail;
            }
            if (less) {
                lo = v;
                lo_i = j;
            }
            if (more) {
                hi = v;
                hi_i = j;
            }
        }
        PyList_SET_ITEM(out[0], g, Py_NewRef(lo));
        PyList_SET_ITEM(out[1], g, Py_NewRef(hi));
        PyList_SET_ITEM(out[2], g, Py_NewRef(PyList_GET_ITEM(px, lo_i)));
        PyList_SET_ITEM(out[3], g, Py_NewRef(PyList_GET_ITEM(px, hi_i)));
    }
    return Py_BuildValue("(NNNN)", out[0], out[1], out[2], out[3]);
fail:
    for (int k = 0; k < 4; k++) {
        Py_XDECREF(out[k]);
    }
    return NULL;
}

/* finite_numbers(values): True when every value is an exact int within 2**53 or an exact float
 * within 1e300 (so any sum of up to a million of them is finite), else False: the caller's
 * exact test (rlio/report/columns.py's types and _finite_sum) then judges them. */
static PyObject *
finite_numbers(PyObject *module, PyObject *values)
{
    PyObject *seq = PySequence_Fast(values, "values must be a sequence");
    if (seq == NULL) {
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    int ok = n < (1 << 20);
    for (Py_ssize_t i = 0; i < n && ok; i++) {
        PyObject *v = items[i];
        if (PyFloat_CheckExact(v)) {
            ok = fabs(PyFloat_AS_DOUBLE(v)) <= 1e300;
        }
        else if (PyLong_CheckExact(v)) {
            int overflow = 0;
            long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
            ok = !overflow && x > -(1LL << 53) && x < (1LL << 53);
        }
        else {
            ok = 0;
        }
    }
    Py_DECREF(seq);
    return PyBool_FromLong(ok);
}

/* all_ints(values): whether every value is an exact int. */
static PyObject *
all_ints(PyObject *module, PyObject *values)
{
    PyObject *seq = PySequence_Fast(values, "values must be a sequence");
    if (seq == NULL) {
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    int ok = 1;
    for (Py_ssize_t i = 0; i < n && ok; i++) {
        ok = PyLong_CheckExact(items[i]);
    }
    Py_DECREF(seq);
    return PyBool_FromLong(ok);
}
