/* step_sum and scan_records: the rollout scan's step sums and its whole loop in C (included
 * by _accel.c after _accel_shape.h; the reference is the scan rlio/_schema/rollout_scan.py
 * generates in Python).
 */

/* step_sum(steps, start, idx_key, reward_key): for steps already shaped (dicts holding both
 * keys), ``start`` plus the rewards in order (None once a reward is None; None from a None
 * start), or Ellipsis when a step's ``idx_key`` is not its position as an exact int. */
static PyObject *
step_sum(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyList_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "step_sum(steps: list, start, idx_key, reward_key)");
        return NULL;
    }
    PyObject *steps = args[0], *idx_key = args[2], *reward_key = args[3];
    PyObject *exp = Py_NewRef(args[1]);
    for (Py_ssize_t j = 0; j < PyList_GET_SIZE(steps); j++) {
        PyObject *s = PyList_GET_ITEM(steps, j);
        if (!PyDict_CheckExact(s)) {
            goto odd;
        }
        PyObject *idx = PyDict_GetItemWithError(s, idx_key);
        if (idx == NULL || !PyLong_CheckExact(idx) || PyLong_AsSsize_t(idx) != j) {
            goto odd;
        }
        PyObject *reward = PyDict_GetItemWithError(s, reward_key);
        if (reward == NULL) {
            goto odd;
        }
        if (exp != Py_None) {
            PyObject *next = reward == Py_None ? Py_NewRef(Py_None) : PyNumber_Add(exp, reward);
            if (next == NULL) {
                goto odd;
            }
            Py_SETREF(exp, next);
        }
    }
    return exp;
odd:
    Py_DECREF(exp);
    if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_Exception)) {
            return NULL;
        }
        PyErr_Clear();
    }
    return Py_NewRef(Py_Ellipsis);
}

/* scan_records(recs, i, it, split, seen, buf, limit, plan): the rollout scan's loop (the
 * generated ``_scan`` of rlio/_schema/rollout_scan.py, which is its reference) in C, for a
 * schema whose every record key has a spec: from ``recs[i]`` on, each record the record Shape
 * accepts, with the file's split and iteration, steps the steps Shape accepts whose step_idx
 * run 0.. and whose rewards plus final_reward are within ``tolerance`` of total_reward, that
 * the encoder writes and whose (group_idx, traj_idx) is unseen, is appended to ``buf``; the
 * index of the first record that is not (or where ``buf`` holds ``limit`` bytes) is returned.
 * ``plan``: (record Shape, steps Shape, positions of split, iteration, group_idx, traj_idx,
 * total_reward, final_reward and steps, tolerance, dumps, default, option). */
static PyObject *
scan_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8 || !PyList_CheckExact(args[0]) || !PyAnySet_CheckExact(args[4])
            || !PyByteArray_CheckExact(args[5]) || !PyTuple_CheckExact(args[7])
            || PyTuple_GET_SIZE(args[7]) != 7) {
        PyErr_SetString(PyExc_TypeError, "scan_records(recs, i, it, split, seen, buf, limit, "
                        "plan)");
        return NULL;
    }
    PyObject *recs = args[0], *it = args[2], *split = args[3], *seen = args[4], *buf = args[5];
    Py_ssize_t i = PyLong_AsSsize_t(args[1]), limit = PyLong_AsSsize_t(args[6]);
    PyObject *plan = args[7];
    PyObject *rec_shape = PyTuple_GET_ITEM(plan, 0), *steps_shape = PyTuple_GET_ITEM(plan, 1);
    PyObject *positions = PyTuple_GET_ITEM(plan, 2), *tolerance = PyTuple_GET_ITEM(plan, 3);
    PyObject *encode[3] = {NULL, PyTuple_GET_ITEM(plan, 5), PyTuple_GET_ITEM(plan, 6)};
    PyObject *dumps = PyTuple_GET_ITEM(plan, 4);
    if (PyErr_Occurred() || Py_TYPE(rec_shape) != &ShapeType || Py_TYPE(steps_shape) != &ShapeType
            || !PyTuple_CheckExact(positions) || PyTuple_GET_SIZE(positions) != 7) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "scan_records: a plan of two Shapes and 7 places");
        }
        return NULL;
    }
    Py_ssize_t at[7];
    for (int k = 0; k < 7; k++) {
        at[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(positions, k));
        if (at[k] < 0 || at[k] >= 64) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_ValueError, "scan_records: places 0..63");
            }
            return NULL;
        }
    }
    static PyObject *idx_key, *reward_key;
    if (idx_key == NULL && ((idx_key = PyUnicode_InternFromString("step_idx")) == NULL
                            || (reward_key = PyUnicode_InternFromString("reward")) == NULL)) {
        return NULL;
    }
    const ShapeNode *rec_root = ((ShapeObject *)rec_shape)->root;
    const ShapeNode *steps_root = ((ShapeObject *)steps_shape)->root;
    Py_ssize_t n = PyList_GET_SIZE(recs);
    for (; i < n; i++) {
        if (PyByteArray_GET_SIZE(buf) >= limit) {
            break;
        }
        PyObject *x = PyList_GET_ITEM(recs, i);
        if (!node_check(rec_root, x)) {  /* an exact dict, its keys in order, its values */
            break;
        }
        PyObject *vals[64];
        Py_ssize_t pos = 0, k = 0;
        PyObject *key, *value;
        while (k < 64 && PyDict_Next(x, &pos, &key, &value)) {
            vals[k++] = value;
        }
        PyObject *v_split = vals[at[0]], *v_it = vals[at[1]], *v_steps = vals[at[6]];
        PyObject *v_total = vals[at[4]];
        int ne = PyObject_RichCompareBool(v_split, split, Py_NE);
        if (ne != 0 || !PyLong_CheckExact(v_it)
                || PyObject_RichCompareBool(v_it, it, Py_EQ) != 1) {
            break;
        }
        if (!node_check(steps_root, v_steps)) {
            break;
        }
        PyObject *sum_args[4] = {v_steps, vals[at[5]], idx_key, reward_key};
        PyObject *exp = step_sum(module, sum_args, 4);
        if (exp == NULL || exp == Py_Ellipsis) {
            Py_XDECREF(exp);
            break;
        }
        int ok = 1;
        if (v_total != Py_None && exp != Py_None) {
            PyObject *diff = PyNumber_Subtract(v_total, exp);
            PyObject *mag = diff == NULL ? NULL : PyNumber_Absolute(diff);
            ok = mag == NULL ? -1 : PyObject_RichCompareBool(mag, tolerance, Py_LE);
            Py_XDECREF(diff);
            Py_XDECREF(mag);
        }
        Py_DECREF(exp);
        if (ok != 1) {
            break;
        }
        encode[0] = x;
        PyObject *line = PyObject_Vectorcall(dumps, encode, 3, NULL);
        if (line == NULL || !PyBytes_CheckExact(line)) {
            Py_XDECREF(line);
            break;
        }
        PyObject *pair = PyTuple_Pack(2, vals[at[2]], vals[at[3]]);
        Py_ssize_t before = PySet_GET_SIZE(seen);
        if (pair == NULL || PySet_Add(seen, pair) < 0 || PySet_GET_SIZE(seen) == before) {
            Py_XDECREF(pair);
            Py_DECREF(line);
            break;  /* seen before (or it could not be hashed): the general path names it */
        }
        Py_DECREF(pair);
        Py_ssize_t old = PyByteArray_GET_SIZE(buf), add = PyBytes_GET_SIZE(line);
        if (PyByteArray_Resize(buf, old + add) < 0) {
            Py_DECREF(line);
            return NULL;
        }
        memcpy(PyByteArray_AS_STRING(buf) + old, PyBytes_AS_STRING(line), (size_t)add);
        Py_DECREF(line);
    }
    if (PyErr_Occurred()) {  /* anything raised sends the record to the general path */
        if (!PyErr_ExceptionMatches(PyExc_Exception)) {
            return NULL;
        }
        PyErr_Clear();
    }
    return PyLong_FromSsize_t(i);
}
