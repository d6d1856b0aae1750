/* rlio._accel.Shape: the rollout scan's value checks in C (included by _accel.c).
 *
 * A Shape is built once from a spec tree that rlio/_schema/shape.py derives from the schema
 * document (no rule lives here): calling it on a value gives True only when every value in it
 * has an exact type the spec names (and, for ints, lies within its bounds; for floats, is
 * finite where the spec says so); False says "not shown here", and the caller's general path
 * judges the value. Spec kinds (a tuple whose first item is the kind):
 *
 *   (ANY,)                          anything
 *   (TYPES, types, finite)          an exact type in ``types``; a float finite when ``finite``
 *   (INT, types, finite, lo, hi)    an exact int within [lo, hi] (None: open), else as TYPES
 *   (SCALARS, types, finite)        a dict of exact-str keys whose values are as TYPES
 *   (LIST, item)                    a list whose items are as ``item``
 *   (OBJECTS, ((keys, specs), ...)) a dict whose keys are exactly one ``keys`` tuple in order,
 *                                   each value as the spec at its position
 *   (CONST, value)                  a value of exactly ``value``'s type, equal to it
 */
#include <math.h>

enum { K_ANY, K_TYPES, K_INT, K_SCALARS, K_LIST, K_OBJECTS, K_CONST };
#define SHAPE_TYPES_MAX 8

typedef struct ShapeNode ShapeNode;

typedef struct {
    PyObject *keys;     /* tuple of exact str */
    ShapeNode **specs;  /* one per key */
} ShapeLayout;

struct ShapeNode {
    int kind, finite, has_lo, has_hi;
    long long lo, hi;
    int ntypes;
    PyObject *types[SHAPE_TYPES_MAX];
    ShapeNode *item;
    PyObject *value;  /* CONST */
    Py_ssize_t nlayouts;
    ShapeLayout *layouts;
};

static void
node_free(ShapeNode *node)
{
    if (node == NULL) {
        return;
    }
    for (int t = 0; t < node->ntypes; t++) {
        Py_XDECREF(node->types[t]);
    }
    node_free(node->item);
    Py_XDECREF(node->value);
    for (Py_ssize_t k = 0; k < node->nlayouts; k++) {
        ShapeLayout *lay = &node->layouts[k];
        if (lay->specs != NULL) {
            for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(lay->keys); i++) {
                node_free(lay->specs[i]);
            }
            PyMem_Free(lay->specs);
        }
        Py_XDECREF(lay->keys);
    }
    PyMem_Free(node->layouts);
    PyMem_Free(node);
}

static int
node_types(ShapeNode *node, PyObject *types, PyObject *finite)
{
    if (!PyTuple_Check(types) || PyTuple_GET_SIZE(types) > SHAPE_TYPES_MAX) {
        PyErr_SetString(PyExc_ValueError, "spec types: a tuple of at most 8 types");
        return -1;
    }
    for (Py_ssize_t t = 0; t < PyTuple_GET_SIZE(types); t++) {
        PyObject *ty = PyTuple_GET_ITEM(types, t);
        if (!PyType_Check(ty)) {
            PyErr_SetString(PyExc_TypeError, "spec types must be types");
            return -1;
        }
        node->types[node->ntypes++] = Py_NewRef(ty);
    }
    node->finite = PyObject_IsTrue(finite);
    return node->finite < 0 ? -1 : 0;
}

static ShapeNode *
node_build(PyObject *spec, int depth)
{
    if (depth > 32 || !PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) < 1) {
        PyErr_SetString(PyExc_ValueError, "a spec is a tuple (kind, ...) at most 32 deep");
        return NULL;
    }
    ShapeNode *node = PyMem_Calloc(1, sizeof(ShapeNode));
    if (node == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    long kind = PyLong_AsLong(PyTuple_GET_ITEM(spec, 0));
    Py_ssize_t n = PyTuple_GET_SIZE(spec);
    node->kind = (int)kind;
    int ok = 0;
    if (kind == K_ANY && n == 1) {
        ok = 1;
    }
    else if ((kind == K_TYPES || kind == K_SCALARS) && n == 3) {
        ok = node_types(node, PyTuple_GET_ITEM(spec, 1), PyTuple_GET_ITEM(spec, 2)) == 0;
    }
    else if (kind == K_INT && n == 5) {
        Bound b;
        ok = node_types(node, PyTuple_GET_ITEM(spec, 1), PyTuple_GET_ITEM(spec, 2)) == 0
             && bound_from(&b, 0, PyTuple_GET_ITEM(spec, 3), PyTuple_GET_ITEM(spec, 4)) == 0;
        if (ok) {
            node->has_lo = b.has_lo;
            node->has_hi = b.has_hi;
            node->lo = b.lo;
            node->hi = b.hi;
        }
    }
    else if (kind == K_CONST && n == 2) {
        node->value = Py_NewRef(PyTuple_GET_ITEM(spec, 1));
        ok = 1;
    }
    else if (kind == K_LIST && n == 2) {
        node->item = node_build(PyTuple_GET_ITEM(spec, 1), depth + 1);
        ok = node->item != NULL;
    }
    else if (kind == K_OBJECTS && n == 2 && PyTuple_Check(PyTuple_GET_ITEM(spec, 1))) {
        PyObject *layouts = PyTuple_GET_ITEM(spec, 1);
        Py_ssize_t nl = PyTuple_GET_SIZE(layouts);
        node->layouts = PyMem_Calloc((size_t)(nl ? nl : 1), sizeof(ShapeLayout));
        ok = node->layouts != NULL;
        for (Py_ssize_t k = 0; ok && k < nl; k++) {
            PyObject *pair = PyTuple_GET_ITEM(layouts, k), *keys, *specs;
            if (!PyArg_ParseTuple(pair, "O!O!:layout", &PyTuple_Type, &keys, &PyTuple_Type,
                                  &specs) || PyTuple_GET_SIZE(keys) != PyTuple_GET_SIZE(specs)) {
                if (!PyErr_Occurred()) {
                    PyErr_SetString(PyExc_ValueError, "a layout's keys and specs must pair up");
                }
                ok = 0;
                break;
            }
            Py_ssize_t nk = PyTuple_GET_SIZE(keys);
            ShapeLayout *lay = &node->layouts[node->nlayouts++];
            /* the keys interned: a dict built with literal keys then matches by identity */
            lay->keys = PyTuple_New(nk);
            ok = lay->keys != NULL;
            for (Py_ssize_t i = 0; ok && i < nk; i++) {
                PyObject *key = PyTuple_GET_ITEM(keys, i);
                if (!PyUnicode_CheckExact(key)) {
                    PyErr_SetString(PyExc_TypeError, "a layout's keys must be str");
                    ok = 0;
                    break;
                }
                Py_INCREF(key);
                PyUnicode_InternInPlace(&key);
                PyTuple_SET_ITEM(lay->keys, i, key);
            }
            if (!ok) {
                break;
            }
            lay->specs = PyMem_Calloc((size_t)(nk ? nk : 1), sizeof(ShapeNode *));
            ok = lay->specs != NULL;
            for (Py_ssize_t i = 0; ok && i < nk; i++) {
                ok = (lay->specs[i] = node_build(PyTuple_GET_ITEM(specs, i), depth + 1)) != NULL;
            }
        }
    }
    if (!ok) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "an unknown spec");
        }
        node_free(node);
        return NULL;
    }
    return node;
}

static int
types_ok(const ShapeNode *node, PyObject *v)
{
    PyObject *t = (PyObject *)Py_TYPE(v);
    for (int k = 0; k < node->ntypes; k++) {
        if (node->types[k] == t) {
            return t != (PyObject *)&PyFloat_Type || !node->finite
                   || isfinite(PyFloat_AS_DOUBLE(v));
        }
    }
    return 0;
}

static int
node_check(const ShapeNode *node, PyObject *v)
{
    switch (node->kind) {
    case K_ANY:
        return 1;
    case K_TYPES:
        return types_ok(node, v);
    case K_INT:
        if (PyLong_CheckExact(v)) {
            Bound b = {0, node->has_lo, node->has_hi, node->lo, node->hi};
            return within(v, &b);
        }
        return types_ok(node, v);
    case K_SCALARS: {
        if (!PyDict_CheckExact(v)) {
            return 0;
        }
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (PyDict_Next(v, &pos, &key, &value)) {
            if (!PyUnicode_CheckExact(key) || !types_ok(node, value)) {
                return 0;
            }
        }
        return 1;
    }
    case K_CONST: {
        if (Py_TYPE(v) != Py_TYPE(node->value)) {
            return 0;
        }
        int eq = PyObject_RichCompareBool(v, node->value, Py_EQ);
        if (eq < 0) {
            PyErr_Clear();
        }
        return eq == 1;
    }
    case K_LIST: {
        if (!PyList_CheckExact(v)) {
            return 0;
        }
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++) {
            if (!node_check(node->item, PyList_GET_ITEM(v, i))) {
                return 0;
            }
        }
        return 1;
    }
    case K_OBJECTS: {
        if (!PyDict_CheckExact(v)) {
            return 0;
        }
        Py_ssize_t size = PyDict_GET_SIZE(v);
        for (Py_ssize_t k = 0; k < node->nlayouts; k++) {
            const ShapeLayout *lay = &node->layouts[k];
            if (PyTuple_GET_SIZE(lay->keys) != size) {
                continue;
            }
            PyObject **keys = &PyTuple_GET_ITEM(lay->keys, 0);
            Py_ssize_t pos = 0, i = 0;
            PyObject *key, *value;
            int ok = 1, keys_ok = 1;
            while (PyDict_Next(v, &pos, &key, &value)) {
                if (key != keys[i] && (!PyUnicode_CheckExact(key)
                                       || PyUnicode_Compare(key, keys[i]) != 0)) {
                    keys_ok = ok = 0;
                    break;
                }
                if (!node_check(lay->specs[i], value)) {
                    ok = 0;  /* the keys may still be this layout's: then no other is */
                }
                i++;
            }
            if (PyErr_Occurred()) {
                PyErr_Clear();
                return 0;
            }
            if (keys_ok) {
                return ok;
            }
        }
        return 0;
    }
    default:
        return 0;
    }
}

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    ShapeNode *root;
} ShapeObject;

static PyObject *Shape_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                  PyObject *kwnames);

static PyObject *
Shape_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *spec;
    if (!PyArg_ParseTuple(args, "O:Shape", &spec)) {
        return NULL;
    }
    ShapeNode *root = node_build(spec, 0);
    if (root == NULL) {
        return NULL;
    }
    ShapeObject *self = (ShapeObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        node_free(root);
        return NULL;
    }
    self->root = root;
    self->vectorcall = Shape_vectorcall;
    return (PyObject *)self;
}

static void
Shape_dealloc(ShapeObject *self)
{
    node_free(self->root);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
Shape_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "a Shape takes one value");
        return NULL;
    }
    return PyBool_FromLong(node_check(((ShapeObject *)callable)->root, args[0]));
}

static PyTypeObject ShapeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rlio._accel.Shape",
    .tp_basicsize = sizeof(ShapeObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "Shape(spec)(value) -> bool: the value has every type and bound of the spec.",
    .tp_new = Shape_new,
    .tp_dealloc = (destructor)Shape_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(ShapeObject, vectorcall),
};
