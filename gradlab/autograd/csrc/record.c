/*
 * csrc/record.c -- the forward: run an op and make its graph node.
 *
 * op_apply  <- function.Op.apply (installed as a classmethod: every built-in op call)
 * record    <- function._record  (single-output ops; several outputs go to the Python)
 */
#include "speedups.h"

/* The edge for one argument (what function._record computes inline), or NULL on error. */
static PyObject *
arg_edge(PyObject *a)
{
    PyObject *vb = GET(a, s_view_base);
    if (vb == NULL)
        return NULL;
    if (vb != Py_None) {  /* a view: rebuild its node if its base changed in place since */
        Py_DECREF(vb);
        PyObject *vc = GET(a, s_vcounter), *val = NULL, *vv = NULL;
        int ne = -1;
        if (vc && (val = GET(vc, s_value)) && (vv = GET(a, s_view_version)))
            ne = PyObject_RichCompareBool(val, vv, Py_NE);
        Py_XDECREF(vc); Py_XDECREF(val); Py_XDECREF(vv);
        if (ne < 0)
            return NULL;
        if (ne) {
            PyObject *r = call_in(views_mod, "refresh_view", &a, 1);
            if (r == NULL)
                return NULL;
            Py_DECREF(r);
        }
    } else {
        Py_DECREF(vb);
    }
    PyObject *fn = GET(a, s_grad_fn);
    if (fn == NULL)
        return NULL;
    if (fn == Py_None) {
        Py_DECREF(fn);
        return call_in(function_mod, "_edge", &a, 1);  /* a leaf: its AccumulateGrad */
    }
    PyObject *nr = GET(a, s_output_nr);
    if (nr == NULL) {
        Py_DECREF(fn);
        return NULL;
    }
    PyObject *e = PyTuple_Pack(2, fn, nr);
    Py_DECREF(fn); Py_DECREF(nr);
    return e;
}

PyObject *
record(PyObject *self, PyObject *const *argv, Py_ssize_t nargs)
{
    REQUIRE_CONFIGURED();
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "record(ctx, args, out)");
        return NULL;
    }
    PyObject *ctx = argv[0], *args = argv[1], *out = argv[2];
    if (!PyTuple_CheckExact(args) || PyTuple_Check(out))  /* several outputs: the Python version */
        return PyObject_Vectorcall(record_py, argv, 3, NULL);

    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *edges = PyTuple_New(n), *metas = PyTuple_New(n), *ret = NULL;
    PyObject *dt = NULL, *shape = NULL, *om = NULL, *seq = NULL;
    if (edges == NULL || metas == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = PyTuple_GET_ITEM(args, i), *meta, *edge;
        if (PyObject_TypeCheck(a, (PyTypeObject *)Tensor_type)) {
            PyObject *d = GET(a, s_data);
            if (d == NULL)
                goto done;
            PyObject *sh = GET(d, s_shape), *ty = sh ? GET(d, s_dtype) : NULL;
            Py_DECREF(d);
            if (ty == NULL) {
                Py_XDECREF(sh);
                goto done;
            }
            meta = PyTuple_Pack(2, sh, ty);
            Py_DECREF(sh); Py_DECREF(ty);
            if (meta == NULL)
                goto done;
            PyTuple_SET_ITEM(metas, i, meta);
            int rg = get_truth(a, s_requires_grad);
            if (rg < 0)
                goto done;
            if (rg) {
                if ((edge = arg_edge(a)) == NULL)
                    goto done;
            } else {
                edge = Py_NewRef(Py_None);
            }
        } else {
            PyTuple_SET_ITEM(metas, i, Py_NewRef(Py_None));
            edge = Py_NewRef(Py_None);
        }
        PyTuple_SET_ITEM(edges, i, edge);
    }
    if (PyObject_SetAttr(ctx, s_next_functions, edges) < 0 || PyObject_SetAttr(ctx, s_input_meta, metas) < 0)
        goto done;
    if ((seq = PyIter_Next(seq_counter)) == NULL || PyObject_SetAttr(ctx, s_seq, seq) < 0)
        goto done;
    if ((dt = GET(out, s_dtype)) == NULL || (shape = GET(out, s_shape)) == NULL)
        goto done;
    {
        PyObject *m = PyTuple_Pack(2, shape, dt);
        if (m == NULL)
            goto done;
        om = PyTuple_Pack(1, m);
        Py_DECREF(m);
        if (om == NULL || PyObject_SetAttr(ctx, s_out_meta, om) < 0)
            goto done;
    }
    if ((ret = PyObject_CallOneArg(new_tensor, Tensor_type)) == NULL)
        goto done;
    if (PyObject_SetAttr(ret, s_data, out) < 0)
        goto fail;
    int diff = PySet_Contains(floating, dt);
    if (diff < 0)
        goto fail;
    if (diff) {  /* a float output gets a gradient unless forward marked it non-differentiable */
        PyObject *nd = GET(ctx, s_non_diff);
        if (nd == NULL)
            goto fail;
        int has = nd == Py_None ? 0 : PyObject_IsTrue(nd);
        if (has > 0) {
            PyObject *it = PyObject_GetIter(nd), *x;
            if (it == NULL) {
                Py_DECREF(nd);
                goto fail;
            }
            while ((x = PyIter_Next(it)) != NULL) {
                int same = x == out;
                Py_DECREF(x);
                if (same) {
                    diff = 0;
                    break;
                }
            }
            Py_DECREF(it);
        }
        Py_DECREF(nd);
        if (has < 0 || PyErr_Occurred())
            goto fail;
        if (diff && (PyObject_SetAttr(ret, s_requires_grad, Py_True) < 0 || PyObject_SetAttr(ret, s_grad_fn, ctx) < 0))
            goto fail;
    }
    if (keep_saved_one(ctx, out, ret) < 0)
        goto fail;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(node_observers); i++) {
        PyObject *f = Py_NewRef(PyList_GET_ITEM(node_observers, i));  /* (held: it may remove itself) */
        PyObject *r = PyObject_CallOneArg(f, ctx);
        Py_DECREF(f);
        if (r == NULL)
            goto fail;
        Py_DECREF(r);
    }
    goto done;
fail:
    Py_CLEAR(ret);
done:
    Py_XDECREF(edges); Py_XDECREF(metas); Py_XDECREF(dt); Py_XDECREF(shape); Py_XDECREF(om); Py_XDECREF(seq);
    return ret;
}

/* a forward's result as a tensor that records nothing (Op.apply's no-grad tail) */
static PyObject *
plain_result(PyObject *out)
{
    if ((PyObject *)Py_TYPE(out) == ndarray_type) {
        PyObject *t = PyObject_CallOneArg(new_tensor, Tensor_type);
        if (t != NULL && PyObject_SetAttr(t, s_data, out) < 0)
            Py_CLEAR(t);
        return t;
    }
    if (PyTuple_CheckExact(out)) {
        Py_ssize_t n = PyTuple_GET_SIZE(out);
        PyObject *res = PyTuple_New(n);
        for (Py_ssize_t i = 0; res != NULL && i < n; i++) {
            PyObject *t = PyObject_CallMethodOneArg(Tensor_type, s_make, PyTuple_GET_ITEM(out, i));
            if (t == NULL)
                Py_CLEAR(res);
            else
                PyTuple_SET_ITEM(res, i, t);
        }
        return res;
    }
    return PyObject_CallMethodOneArg(Tensor_type, s_make, out);
}

/* Op.apply(cls, *args, **kwargs): function.Op.apply, compiled (bound as a classmethod) */
PyObject *
op_apply(PyObject *self, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames)
{
    REQUIRE_CONFIGURED();
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "apply: missing the op class");
        return NULL;
    }
    PyObject *cls = argv[0];
    if (PyList_GET_SIZE(op_observers) > 0 || PyList_GET_SIZE(forward_ad_hook) != 1
        || PyList_GET_ITEM(forward_ad_hook, 0) != Py_None)
        return PyObject_Vectorcall(apply_py, argv, nargs, kwnames);  /* the general path */
    PyObject *ctx = ((PyTypeObject *)&PyBaseObject_Type)->tp_new((PyTypeObject *)cls, empty_tuple, NULL);
    if (ctx == NULL)
        return NULL;
    int recording = 0;
    PyObject *en = GET(grad_state, s_enabled);
    if (en == NULL)
        goto fail;
    int enabled = PyObject_IsTrue(en);
    Py_DECREF(en);
    if (enabled < 0)
        goto fail;
    if (enabled) {
        for (Py_ssize_t i = 1; i < nargs; i++) {
            PyObject *a = argv[i];
            if (PyObject_TypeCheck(a, (PyTypeObject *)Tensor_type)) {
                int rg = get_truth(a, s_requires_grad);
                if (rg < 0)
                    goto fail;
                if (rg) {
                    recording = 1;
                    break;
                }
            }
        }
    }
    if (recording && PyObject_SetAttr(ctx, s_recording, Py_True) < 0)
        goto fail;
    /* cls.forward(ctx, *args, **kwargs): ctx takes the place of cls in argv */
    PyObject *fwd = GET(cls, s_forward), *out;
    if (fwd == NULL)
        goto fail;
    {
        PyObject *small[9], **buf = small;
        Py_ssize_t total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
        if (total > 9 && (buf = PyMem_Malloc(total * sizeof(PyObject *))) == NULL) {
            Py_DECREF(fwd);
            PyErr_NoMemory();
            goto fail;
        }
        buf[0] = ctx;
        for (Py_ssize_t i = 1; i < total; i++)
            buf[i] = argv[i];
        out = PyObject_Vectorcall(fwd, buf, nargs, kwnames);
        if (buf != small)
            PyMem_Free(buf);
    }
    Py_DECREF(fwd);
    if (out == NULL)
        goto fail;
    if ((PyObject *)Py_TYPE(out) != ndarray_type && PyObject_TypeCheck(out, (PyTypeObject *)np_generic)) {
        PyObject *arr = PyObject_CallOneArg(np_asarray, out);  /* NumPy turns 0-d results into scalars */
        Py_DECREF(out);
        if ((out = arr) == NULL)
            goto fail;
    }
    PyObject *res;
    if (recording) {
        PyObject *args = PyTuple_New(nargs - 1);
        if (args == NULL) {
            Py_DECREF(out);
            goto fail;
        }
        for (Py_ssize_t i = 1; i < nargs; i++)
            PyTuple_SET_ITEM(args, i - 1, Py_NewRef(argv[i]));
        PyObject *rargs[3] = {ctx, args, out};
        res = record(NULL, rargs, 3);
        Py_DECREF(args);
    } else {
        res = plain_result(out);
    }
    Py_DECREF(out);
    Py_DECREF(ctx);
    return res;
fail:
    Py_DECREF(ctx);
    return NULL;
}
