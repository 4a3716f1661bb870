/*
 * csrc/saved.c -- what a node keeps for backward.
 *
 * keep_saved_one   <- function._keep_saved, with SavedTensor.__init__ and Tensor._version
 *                     inline, for one output and no saved-tensor hooks (else the Python)
 * saved_arrays     <- Function.saved_arrays (installed as the property's getter)
 */
#include "speedups.h"

/* t._version: the tensor's version counter, made on first use (Tensor._version, inline) */
static PyObject *
version_of(PyObject *t)
{
    PyObject *vc = GET(t, s_vcounter);
    if (vc == NULL || vc != Py_None)
        return vc;
    Py_DECREF(vc);
    vc = ((PyTypeObject *)Version_type)->tp_alloc((PyTypeObject *)Version_type, 0);
    if (vc == NULL)
        return NULL;
    SLOT(vc, vc_value_off) = PyLong_FromLong(0);  /* (small ints are immortal-ish: cached) */
    if (PyObject_SetAttr(t, s_vcounter, vc) < 0)
        Py_CLEAR(vc);
    return vc;
}

/* SavedTensor(t, output_nr), with no saved-tensor hooks active (SavedTensor.__init__, inline) */
static PyObject *
new_saved(PyObject *t, PyObject *output_nr)
{
    PyObject *data = GET(t, s_data), *name = data ? GET(t, s_name_attr) : NULL, *vc = name ? version_of(t) : NULL;
    if (vc == NULL) {
        Py_XDECREF(data); Py_XDECREF(name);
        return NULL;
    }
    PyObject *value = (PyObject *)Py_TYPE(vc) == Version_type ? Py_XNewRef(SLOT(vc, vc_value_off)) : GET(vc, s_value);
    PyObject *st = value ? ((PyTypeObject *)Saved_type)->tp_alloc((PyTypeObject *)Saved_type, 0) : NULL;
    if (st == NULL) {
        if (value == NULL && !PyErr_Occurred())
            PyErr_SetString(PyExc_AttributeError, "a version counter without a value");
        Py_DECREF(data); Py_DECREF(name); Py_DECREF(vc); Py_XDECREF(value);
        return NULL;
    }
    SLOT(st, st_off[ST_OUTPUT_NR]) = Py_NewRef(output_nr);
    SLOT(st, st_off[ST_DATA]) = data;
    SLOT(st, st_off[ST_VERSION_OBJ]) = vc;
    SLOT(st, st_off[ST_VERSION]) = value;
    SLOT(st, st_off[ST_NAME]) = name;
    SLOT(st, st_off[ST_TENSOR]) = Py_NewRef(output_nr == Py_None ? t : Py_None);
    SLOT(st, st_off[ST_PACKED]) = Py_NewRef(Py_None);
    SLOT(st, st_off[ST_UNPACK]) = Py_NewRef(Py_None);
    return st;
}

/* function._keep_saved(ctx, (out,), (ret,)) for one output and no saved-tensor hooks */
int
keep_saved_one(PyObject *ctx, PyObject *out, PyObject *ret)
{
    PyObject *ts = GET(ctx, s_to_save), *tso = ts ? GET(ctx, s_to_save_out) : NULL, *saved = NULL;
    int r = -1;
    if (tso == NULL)
        goto done;
    if (ts == Py_None && tso == Py_None) {
        r = 0;
        goto done;
    }
    if (PyList_GET_SIZE(saved_hooks) > 0 || (ts != Py_None && !PyTuple_Check(ts))
        || (tso != Py_None && !PyTuple_Check(tso))) {  /* the Python version */
        PyObject *o1 = PyTuple_Pack(1, out), *r1 = o1 ? PyTuple_Pack(1, ret) : NULL, *res = NULL;
        if (r1 != NULL) {
            PyObject *kargs[3] = {ctx, o1, r1};
            res = call_in(function_mod, "_keep_saved", kargs, 3);
        }
        Py_XDECREF(o1); Py_XDECREF(r1);
        r = res == NULL ? -1 : 0;
        Py_XDECREF(res);
        goto done;
    }
    if ((saved = PyList_New(0)) == NULL)
        goto done;
    if (ts != Py_None)
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(ts); i++) {
            PyObject *x = PyTuple_GET_ITEM(ts, i), *item;
            item = PyObject_TypeCheck(x, (PyTypeObject *)Tensor_type) ? new_saved(x, Py_None) : Py_NewRef(x);
            if (item == NULL || PyList_Append(saved, item) < 0) {
                Py_XDECREF(item);
                goto done;
            }
            Py_DECREF(item);
        }
    if (tso != Py_None) {
        PyObject *zero = PyLong_FromLong(0);
        for (Py_ssize_t i = 0; zero != NULL && i < PyTuple_GET_SIZE(tso); i++) {
            PyObject *item = new_saved(ret, zero);
            if (item == NULL || PyList_Append(saved, item) < 0) {
                Py_XDECREF(item);
                Py_CLEAR(zero);
                break;
            }
            Py_DECREF(item);
        }
        if (zero == NULL)
            goto done;
        Py_DECREF(zero);
    }
    if (PyObject_SetAttr(ctx, s_saved, saved) < 0 || PyObject_SetAttr(ctx, s_to_save, Py_None) < 0
        || PyObject_SetAttr(ctx, s_to_save_out, Py_None) < 0)
        goto done;
    r = 0;
done:
    Py_XDECREF(ts); Py_XDECREF(tso); Py_XDECREF(saved);
    return r;
}

/* Function.saved_arrays (the property's getter), compiled */
PyObject *
saved_arrays(PyObject *self, PyObject *node)
{
    REQUIRE_CONFIGURED();
    int rel = get_truth(node, s_released);
    if (rel != 0)
        return rel < 0 ? NULL : PyObject_CallOneArg(saved_arrays_py, node);  /* raises the freed error */
    PyObject *saved = GET(node, s_saved);
    if (saved == NULL)
        return NULL;
    PyObject *seq = PySequence_Fast(saved, "_saved must be a sequence"), *out = NULL;
    Py_DECREF(saved);
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if ((out = PyList_New(n)) == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PySequence_Fast_GET_ITEM(seq, i), *a = NULL;
        if ((PyObject *)Py_TYPE(x) == Saved_type) {
            PyObject *vc = SLOT(x, st_off[ST_VERSION_OBJ]), *ver = SLOT(x, st_off[ST_VERSION]);
            PyObject *unpack = SLOT(x, st_off[ST_UNPACK]), *data = SLOT(x, st_off[ST_DATA]);
            int same = 0;
            if (vc != NULL && ver != NULL && unpack == Py_None && data != NULL
                && (PyObject *)Py_TYPE(vc) == Version_type && SLOT(vc, vc_value_off) != NULL) {
                same = PyObject_RichCompareBool(SLOT(vc, vc_value_off), ver, Py_EQ);
                if (same < 0)
                    goto fail;
            }
            a = same ? Py_NewRef(data) : PyObject_CallMethodOneArg(x, s_array, node);  /* checks, unpacks */
            if (a == NULL)
                goto fail;
        } else if (PyObject_TypeCheck(x, (PyTypeObject *)Saved_type)) {  /* a subclass (forward AD's) */
            if ((a = PyObject_CallMethodOneArg(x, s_array, node)) == NULL)
                goto fail;
        } else {
            a = Py_NewRef(x);
        }
        PyList_SET_ITEM(out, i, a);
    }
    goto done;
fail:
    Py_CLEAR(out);
done:
    Py_DECREF(seq);
    return out;
}
