/* rlio._accel.MetricsLine: RunWriter.log_metrics's hot path in C (included by _accel.c after
 * the Lock; the reference is rlio/writer/metrics_verbs.py, see rlio/writer/metrics_fast.py).
 */


/* An int judged by bounds: lo <= v <= hi where has_lo / has_hi (taught from the schema). */
typedef struct {
    Py_ssize_t pos;
    int has_lo, has_hi;
    long long lo, hi;
} Bound;

typedef struct {
    PyObject *keys;   /* tuple of exact str, in order; NULL: slot empty */
    PyObject *types;  /* tuple: per key the exact type its value must have, or None (rest) */
    PyObject *rest;   /* callable(step, *values at rest_pos) -> True when valid, or None */
    Py_ssize_t nrest, nbound;
    Py_ssize_t rest_pos[MAX_REST];
    Bound bounds[MAX_REST];
} Layout;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    int fd;                 /* the metrics file (O_APPEND); -1: disarmed, every call falls back */
    int checked;
    LockObject *lock;       /* the writer's metrics lock */
    PyObject *dumps;        /* orjson.dumps */
    PyObject *default_;     /* the encoder's default (None when checked) */
    PyObject *option;       /* the encoder's option (an int) */
    PyObject *spans;        /* list: timer spans waiting for the next call */
    PyObject *fallback;     /* the Python log_metrics */
    PyObject *finish;       /* callable(line, written): completes or undoes a short write */
    Py_ssize_t count;       /* lines written here */
    int step_bounded;       /* the step judged here by step_bound; else by each rest */
    Bound step_bound;
    int next_slot;
    Layout layouts[MAX_LAYOUTS];
} MetricsLine;

static PyObject *str_step;  /* "step", interned */

static void
layout_clear(Layout *lay)
{
    Py_CLEAR(lay->keys);
    Py_CLEAR(lay->types);
    Py_CLEAR(lay->rest);
    lay->nrest = 0;
    lay->nbound = 0;
}

/* Whether the int ``v`` (a numpy integer: its index, as its .item()) is within ``b``: 1 yes,
 * 0 no or not shown here (past 63 bits). */
static int
within(PyObject *v, const Bound *b)
{
    int overflow = 0;
    long long x;
    if (PyLong_CheckExact(v)) {
        x = PyLong_AsLongLongAndOverflow(v, &overflow);
    }
    else {
        PyObject *i = PyNumber_Index(v);
        if (i == NULL) {
            PyErr_Clear();
            return 0;
        }
        x = PyLong_AsLongLongAndOverflow(i, &overflow);
        Py_DECREF(i);
    }
    if (overflow || (x == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    return (!b->has_lo || x >= b->lo) && (!b->has_hi || x <= b->hi);
}

/* The layout ``metrics`` matches (its values at the rest positions in ``vals``, borrowed), or
 * NULL. Only exact-str keys equal in order, and exact types where the layout names one. */
static Layout *
match(MetricsLine *self, PyObject *metrics, PyObject **vals)
{
    Py_ssize_t size = PyDict_GET_SIZE(metrics);
    for (int k = 0; k < MAX_LAYOUTS; k++) {
        Layout *lay = &self->layouts[k];
        if (lay->keys == NULL || PyTuple_GET_SIZE(lay->keys) != size) {
            continue;
        }
        PyObject **keys = &PyTuple_GET_ITEM(lay->keys, 0);
        PyObject **types = &PyTuple_GET_ITEM(lay->types, 0);
        Py_ssize_t pos = 0, i = 0, r = 0, b = 0;
        PyObject *key, *value;
        int ok = 1;
        while (PyDict_Next(metrics, &pos, &key, &value)) {
            if (key != keys[i]) {
                if (!PyUnicode_CheckExact(key) || PyUnicode_Compare(key, keys[i]) != 0) {
                    ok = 0;
                    break;
                }
            }
            if (types[i] == Py_None) {
                if (r < lay->nrest && lay->rest_pos[r] == i) {
                    vals[r++] = value;
                }
            }
            else if ((PyObject *)Py_TYPE(value) != types[i]) {
                ok = 0;
                break;
            }
            else if (b < lay->nbound && lay->bounds[b].pos == i) {
                if (!within(value, &lay->bounds[b++])) {
                    ok = 0;
                    break;
                }
            }
            i++;
        }
        if (PyErr_Occurred()) {  /* a failed compare: not shown here */
            PyErr_Clear();
            ok = 0;
        }
        if (ok && i == size && r == lay->nrest && b == lay->nbound) {
            return lay;
        }
    }
    return NULL;
}

/* 1: the call returned a verdict here (0: not shown here); -1: an exception to raise. */
static int
judge(MetricsLine *self, PyObject *metrics, PyObject *step)
{
    PyObject *vals[1 + MAX_REST];
    Layout *lay = match(self, metrics, vals + 1);
    if (lay == NULL) {
        return 0;
    }
    if (self->step_bounded && !within(step, &self->step_bound)) {
        return 0;
    }
    if (lay->rest == Py_None) {
        return 1;
    }
    vals[0] = step;
    Py_ssize_t n = 1 + lay->nrest;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_INCREF(vals[i]);
    }
    PyObject *rest = lay->rest;
    Py_INCREF(rest);  /* the layout may be replaced while it runs */
    PyObject *verdict = PyObject_Vectorcall(rest, vals, n, NULL);
    Py_DECREF(rest);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_DECREF(vals[i]);
    }
    if (verdict == NULL) {
        if (PyErr_ExceptionMatches(PyExc_Exception)) {
            PyErr_Clear();
            return 0;
        }
        return -1;
    }
    int ok = verdict == Py_True;
    Py_DECREF(verdict);
    return ok;
}

/* Write ``line`` under the lock: 1 written; 0 not written (fall back); -1 raised. */
static int
write_line(MetricsLine *self, PyObject *line)
{
    const char *buf = PyBytes_AS_STRING(line);
    Py_ssize_t len = PyBytes_GET_SIZE(line);
    for (;;) {
        lock_take(self->lock);
        int fd = self->fd;
        if (fd < 0) {
            lock_give(self->lock);
            return 0;
        }
        Py_ssize_t n;
        int err;
        Py_BEGIN_ALLOW_THREADS
        n = write(fd, buf, (size_t)len);
        err = errno;
        Py_END_ALLOW_THREADS
        if (n == len) {
            self->count++;
            lock_give(self->lock);
            return 1;
        }
        if (n < 0 && err == EINTR) {  /* nothing written: run the signal handlers, then retry */
            lock_give(self->lock);
            if (PyErr_CheckSignals() < 0) {
                return -1;
            }
            continue;
        }
        self->fd = -1;  /* after any failure the Python path does every append */
        if (n < 0) {    /* nothing written: the Python path retries and names the error */
            lock_give(self->lock);
            return 0;
        }
        /* A short write: the appender completes the line or cuts its fragment off. */
        PyObject *res = PyObject_CallFunction(self->finish, "On", line, n);
        if (res != NULL) {
            self->count++;
        }
        lock_give(self->lock);
        if (res == NULL) {
            return -1;
        }
        Py_DECREF(res);
        return 1;
    }
}

/* The hot path: 1 done, 0 the Python path must take the call, -1 raised. */
static int
fast(MetricsLine *self, PyObject *metrics, PyObject *step)
{
    if (self->fd < 0 || PyList_GET_SIZE(self->spans) != 0 || !PyDict_CheckExact(metrics)
            || !PyLong_CheckExact(step)) {
        return 0;
    }
    int overflow = 0;
    long long s = PyLong_AsLongLongAndOverflow(step, &overflow);
    if (overflow || (s == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;  /* past 63 bits: the Python path */
    }
    PyObject *args[3] = {metrics, self->default_, self->option};
    if (self->checked) {
        int ok = judge(self, metrics, step);
        if (ok <= 0) {
            return ok;
        }
    }
    else {
        int has = PyDict_Contains(metrics, str_step);
        if (has != 0) {
            if (has < 0) {
                PyErr_Clear();
            }
            return 0;
        }
    }
    PyObject *body = PyObject_Vectorcall(self->dumps, args, 3, NULL);
    if (body == NULL) {
        if (PyErr_ExceptionMatches(PyExc_Exception)) {  /* as the Python path: fall back */
            PyErr_Clear();
            return 0;
        }
        return -1;
    }
    if (!PyBytes_CheckExact(body) || PyBytes_GET_SIZE(body) < 3
            || PyBytes_AS_STRING(body)[0] != '{') {
        Py_DECREF(body);
        return 0;
    }
    char head[32];
    int hl = snprintf(head, sizeof head, "{\"step\":%lld", s);
    Py_ssize_t bl = PyBytes_GET_SIZE(body);
    int empty = bl <= 3;  /* "{}\n" */
    Py_ssize_t total = empty ? hl + 2 : hl + bl;
    PyObject *line = PyBytes_FromStringAndSize(NULL, total);
    if (line == NULL) {
        Py_DECREF(body);
        return -1;
    }
    char *out = PyBytes_AS_STRING(line);
    memcpy(out, head, (size_t)hl);
    if (empty) {
        memcpy(out + hl, "}\n", 2);
    }
    else {
        out[hl] = ',';
        memcpy(out + hl + 1, PyBytes_AS_STRING(body) + 1, (size_t)(bl - 1));
    }
    Py_DECREF(body);
    int done = write_line(self, line);
    Py_DECREF(line);
    return done;
}

static PyObject *
MetricsLine_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                       PyObject *kwnames)
{
    MetricsLine *self = (MetricsLine *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    int plain = (nargs == 2 && nkw == 0);
    if (!plain && nargs == 1 && nkw == 1) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, 0);
        plain = name == str_step
                || (PyUnicode_CheckExact(name) && PyUnicode_Compare(name, str_step) == 0);
    }
    if (plain) {
        int done = fast(self, args[0], args[1]);
        if (done > 0) {
            Py_RETURN_NONE;
        }
        if (done < 0) {
            return NULL;
        }
    }
    if (self->fallback == NULL) {  /* cleared by the collector: the writer is gone */
        PyErr_SetString(PyExc_ReferenceError, "log_metrics of a writer already collected");
        return NULL;
    }
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

static int
MetricsLine_traverse(MetricsLine *self, visitproc visit, void *arg)
{
    Py_VISIT(self->lock);
    Py_VISIT(self->dumps);
    Py_VISIT(self->default_);
    Py_VISIT(self->option);
    Py_VISIT(self->spans);
    Py_VISIT(self->fallback);
    Py_VISIT(self->finish);
    for (int k = 0; k < MAX_LAYOUTS; k++) {
        Py_VISIT(self->layouts[k].keys);
        Py_VISIT(self->layouts[k].types);
        Py_VISIT(self->layouts[k].rest);
    }
    return 0;
}

static int
MetricsLine_clear(MetricsLine *self)
{
    self->fd = -1;
    Py_CLEAR(self->lock);
    Py_CLEAR(self->dumps);
    Py_CLEAR(self->default_);
    Py_CLEAR(self->option);
    Py_CLEAR(self->spans);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->finish);
    for (int k = 0; k < MAX_LAYOUTS; k++) {
        layout_clear(&self->layouts[k]);
    }
    return 0;
}

static void
MetricsLine_dealloc(MetricsLine *self)
{
    PyObject_GC_UnTrack(self);
    MetricsLine_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* ``b`` from Python bounds (ints or None): 0 done, -1 raised. A bound past 63 bits: a lower
 * one below every long long is none, an upper one above them is none; any other is refused. */
static int
bound_from(Bound *b, Py_ssize_t pos, PyObject *lo, PyObject *hi)
{
    b->pos = pos;
    b->has_lo = b->has_hi = 0;
    PyObject *edge[2] = {lo, hi};
    for (int k = 0; k < 2; k++) {
        if (edge[k] == Py_None) {
            continue;
        }
        if (!PyLong_CheckExact(edge[k])) {
            PyErr_SetString(PyExc_TypeError, "bounds must be ints or None");
            return -1;
        }
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(edge[k], &overflow);
        if (x == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (overflow == 0) {
            if (k == 0) {
                b->has_lo = 1;
                b->lo = x;
            }
            else {
                b->has_hi = 1;
                b->hi = x;
            }
        }
        else if ((k == 0) != (overflow < 0)) {  /* a lower bound above, an upper below: all */
            PyErr_SetString(PyExc_ValueError, "a bound past 63 bits that excludes them all");
            return -1;
        }
    }
    return 0;
}

static PyObject *
MetricsLine_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"fd", "lock", "dumps", "default", "option", "checked", "spans",
                             "fallback", "finish", "step_bounds", NULL};
    int fd, checked;
    PyObject *lock, *dumps, *default_, *option, *spans, *fallback, *finish;
    PyObject *step_bounds = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "iO!OOOpO!OO|O:MetricsLine", kwlist, &fd,
                                     &LockType, &lock, &dumps, &default_, &option, &checked,
                                     &PyList_Type, &spans, &fallback, &finish, &step_bounds)) {
        return NULL;
    }
    Bound step_bound = {0, 0, 0, 0, 0};
    int step_bounded = step_bounds != Py_None;
    if (step_bounded) {
        PyObject *lo, *hi;
        if (!PyArg_ParseTuple(step_bounds, "OO:step_bounds", &lo, &hi)
                || bound_from(&step_bound, 0, lo, hi) < 0) {
            return NULL;
        }
    }
    if (!PyCallable_Check(dumps) || !PyCallable_Check(fallback) || !PyCallable_Check(finish)) {
        PyErr_SetString(PyExc_TypeError, "dumps, fallback and finish must be callable");
        return NULL;
    }
    MetricsLine *self = (MetricsLine *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->vectorcall = MetricsLine_vectorcall;
    self->fd = fd;
    self->checked = checked;
    self->lock = (LockObject *)Py_NewRef(lock);
    self->dumps = Py_NewRef(dumps);
    self->default_ = Py_NewRef(default_);
    self->option = Py_NewRef(option);
    self->spans = Py_NewRef(spans);
    self->fallback = Py_NewRef(fallback);
    self->finish = Py_NewRef(finish);
    self->step_bounded = step_bounded;
    self->step_bound = step_bound;
    return (PyObject *)self;
}

static PyObject *
MetricsLine_learn(MetricsLine *self, PyObject *args)
{
    PyObject *keys, *types, *rest, *positions, *bounded;
    if (!PyArg_ParseTuple(args, "O!O!OO!O!:learn", &PyTuple_Type, &keys, &PyTuple_Type, &types,
                          &rest, &PyTuple_Type, &positions, &PyTuple_Type, &bounded)) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(keys), nrest = PyTuple_GET_SIZE(positions);
    Py_ssize_t nbound = PyTuple_GET_SIZE(bounded);
    if (!self->checked) {
        PyErr_SetString(PyExc_ValueError, "an unchecked MetricsLine takes no layouts");
        return NULL;
    }
    if (PyTuple_GET_SIZE(types) != n || (rest != Py_None && !PyCallable_Check(rest))
            || (rest == Py_None && (nrest != 0 || !self->step_bounded))) {
        PyErr_SetString(PyExc_ValueError, "learn(keys, types, rest, positions): types must match "
                        "keys and rest be callable");
        return NULL;
    }
    if (nrest > MAX_REST || nbound > MAX_REST) {
        Py_RETURN_FALSE;  /* not accelerated: the Python path keeps this layout */
    }
    Py_ssize_t rest_pos[MAX_REST];
    Py_ssize_t last = -1, r = 0, untyped = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *key = PyTuple_GET_ITEM(keys, i), *ty = PyTuple_GET_ITEM(types, i);
        if (!PyUnicode_CheckExact(key) || (ty != Py_None && !PyType_Check(ty))) {
            PyErr_SetString(PyExc_TypeError, "keys must be str and types types or None");
            return NULL;
        }
        untyped += ty == Py_None;
    }
    if (untyped != nrest) {  /* every value is judged: by its type or by rest */
        PyErr_SetString(PyExc_ValueError, "positions must name every None type");
        return NULL;
    }
    for (Py_ssize_t j = 0; j < nrest; j++) {
        Py_ssize_t p = PyLong_AsSsize_t(PyTuple_GET_ITEM(positions, j));
        if (p == -1 && PyErr_Occurred()) {
            return NULL;
        }
        if (p <= last || p >= n || PyTuple_GET_ITEM(types, p) != Py_None) {
            PyErr_SetString(PyExc_ValueError, "positions must rise and name None types");
            return NULL;
        }
        rest_pos[r++] = last = p;
    }
    Bound bounds[MAX_REST];
    last = -1;
    for (Py_ssize_t j = 0; j < nbound; j++) {
        Py_ssize_t p;
        PyObject *lo, *hi;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(bounded, j), "nOO:bound", &p, &lo, &hi)
                || bound_from(&bounds[j], p, lo, hi) < 0) {
            return NULL;
        }
        if (p <= last || p >= n || PyTuple_GET_ITEM(types, p) == Py_None) {
            PyErr_SetString(PyExc_ValueError, "bounds must rise and name typed keys");
            return NULL;
        }
        last = p;
    }
    Layout *slot = NULL;  /* the same layout again replaces itself, else the oldest goes */
    for (int k = 0; k < MAX_LAYOUTS && slot == NULL; k++) {
        Layout *lay = &self->layouts[k];
        if (lay->keys != NULL) {
            int same = PyObject_RichCompareBool(lay->keys, keys, Py_EQ);
            if (same < 0) {
                return NULL;
            }
            if (same) {
                same = PyObject_RichCompareBool(lay->types, types, Py_EQ);
                if (same < 0) {
                    return NULL;
                }
            }
            if (same) {
                slot = lay;
            }
        }
    }
    if (slot == NULL) {
        slot = &self->layouts[self->next_slot];
        self->next_slot = (self->next_slot + 1) % MAX_LAYOUTS;
    }
    layout_clear(slot);
    slot->keys = Py_NewRef(keys);
    slot->types = Py_NewRef(types);
    slot->rest = Py_NewRef(rest);
    slot->nrest = nrest;
    memcpy(slot->rest_pos, rest_pos, sizeof(Py_ssize_t) * (size_t)nrest);
    slot->nbound = nbound;
    memcpy(slot->bounds, bounds, sizeof(Bound) * (size_t)nbound);
    Py_RETURN_TRUE;
}

static PyObject *
MetricsLine_disarm(MetricsLine *self, PyObject *Py_UNUSED(ignored))
{
    self->fd = -1;  /* the caller holds the metrics lock: no write is under way */
    Py_RETURN_NONE;
}

static PyObject *
MetricsLine_get_count(MetricsLine *self, void *closure)
{
    return PyLong_FromSsize_t(self->count);
}

static PyObject *
MetricsLine_get_armed(MetricsLine *self, void *closure)
{
    return PyBool_FromLong(self->fd >= 0);
}

static PyMethodDef MetricsLine_methods[] = {
    {"learn", (PyCFunction)MetricsLine_learn, METH_VARARGS,
     "learn(keys, types, rest, positions, bounds) -> bool: take a key layout (see the module)."},
    {"disarm", (PyCFunction)MetricsLine_disarm, METH_NOARGS,
     "Send every later call to the Python path (call with the metrics lock held)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef MetricsLine_getset[] = {
    {"count", (getter)MetricsLine_get_count, NULL, "Lines written here.", NULL},
    {"armed", (getter)MetricsLine_get_armed, NULL, "Whether calls may be written here.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject MetricsLineType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rlio._accel.MetricsLine",
    .tp_basicsize = sizeof(MetricsLine),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "log_metrics(metrics, step): RunWriter.log_metrics with its hot path in C.",
    .tp_new = MetricsLine_new,
    .tp_dealloc = (destructor)MetricsLine_dealloc,
    .tp_traverse = (traverseproc)MetricsLine_traverse,
    .tp_clear = (inquiry)MetricsLine_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(MetricsLine, vectorcall),
    .tp_methods = MetricsLine_methods,
    .tp_getset = MetricsLine_getset,
};
