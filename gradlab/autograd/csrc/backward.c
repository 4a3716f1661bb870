/*
 * csrc/backward.c -- the everyday backward loop.
 *
 * run_plain <- engine._run_plain (a hook-free node with an array twin runs here; every other
 *              node goes to engine._run_node, in Python)
 */
#include "speedups.h"

static int
call_run_node(PyObject *node, PyObject *grads, PyObject *buffers, PyObject *st)
{
    PyObject *a[4] = {node, grads, buffers, st};
    PyObject *r = call_in(engine_mod, "_run_node", a, 4);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* send gradient g (a new reference, consumed) along edge e into buffers */
static int
send(PyObject *buffers, PyObject *e, PyObject *g)
{
    int r = -1;
    PyObject *nxt = PyTuple_GET_ITEM(e, 0), *buf = PyDict_GetItemWithError(buffers, nxt), *cur = NULL;
    if (buf != NULL) {
        Py_INCREF(buf);  /* (held: _sum runs Python) */
    } else {
        if (PyErr_Occurred())
            goto done;
        PyObject *om = GET(nxt, s_out_meta);
        Py_ssize_t k = om ? PyObject_Length(om) : -1;
        Py_XDECREF(om);
        if (k < 0 || (buf = PyList_New(k)) == NULL)
            goto done;
        for (Py_ssize_t i = 0; i < k; i++)
            PyList_SET_ITEM(buf, i, Py_NewRef(Py_None));
        if (k == 1) {  /* the usual: one output, one gradient */
            PyList_SET_ITEM(buf, 0, g);  /* (the list takes g and drops the None it held) */
            Py_DECREF(Py_None);
            g = NULL;
        }
        if (PyDict_SetItem(buffers, nxt, buf) < 0)
            goto done;
        if (g == NULL) {
            r = 0;
            goto done;
        }
    }
    PyObject *nr = PyTuple_GET_ITEM(e, 1);
    if ((cur = PyObject_GetItem(buf, nr)) == NULL)
        goto done;
    if (cur == Py_None) {
        r = PyObject_SetItem(buf, nr, g);
    } else {
        PyObject *a[2] = {cur, g}, *s = call_in(engine_mod, "_sum", a, 2);
        r = s == NULL ? -1 : PyObject_SetItem(buf, nr, s);
        Py_XDECREF(s);
    }
done:
    Py_XDECREF(cur);
    Py_XDECREF(buf);
    Py_XDECREF(g);
    return r;
}

/* one node through its array twin; 1 = the general runner must take it instead */
static int
run_twin(PyObject *node, PyObject *grads, PyObject *buffers)
{
    PyObject *fast = GET(node, s_vjp_arrays);
    if (fast == NULL)
        return -1;
    int rel = fast == Py_None ? 1 : get_truth(node, s_released);
    if (rel != 0 || !PyList_CheckExact(grads)) {
        Py_DECREF(fast);
        return rel < 0 ? -1 : 1;
    }
    Py_ssize_t ng = PyList_GET_SIZE(grads);
    if (ng > 1)
        for (Py_ssize_t i = 0; i < ng; i++)
            if (PyList_GET_ITEM(grads, i) == Py_None) {
                Py_DECREF(fast);
                return 1;
            }
    PyObject *outs = PyObject_Vectorcall(fast, ((PyListObject *)grads)->ob_item, ng, NULL);
    Py_DECREF(fast);
    if (outs == NULL)
        return -1;
    PyObject *seq = PySequence_Fast(outs, "vjp_arrays must return a sequence"), *nf = NULL, *im = NULL;
    Py_DECREF(outs);
    int ret = -1;
    if (seq == NULL || (nf = GET(node, s_next_functions)) == NULL || (im = GET(node, s_input_meta)) == NULL)
        goto done;
    if (!PyTuple_Check(nf) || !PyTuple_Check(im)) {
        PyErr_SetString(PyExc_TypeError, "next_functions and input_meta must be tuples");
        goto done;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (PyTuple_GET_SIZE(nf) < n)
        n = PyTuple_GET_SIZE(nf);
    if (PyTuple_GET_SIZE(im) < n)
        n = PyTuple_GET_SIZE(im);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *e = PyTuple_GET_ITEM(nf, i), *g = PySequence_Fast_GET_ITEM(seq, i);
        if (e == Py_None || g == Py_None)
            continue;
        PyObject *meta = PyTuple_GET_ITEM(im, i);
        int ok = (PyObject *)Py_TYPE(g) == ndarray_type && PyTuple_Check(meta) && PyTuple_GET_SIZE(meta) == 2
                 && PyTuple_Check(e) && PyTuple_GET_SIZE(e) == 2;
        if (ok) {
            PyObject *d = GET(g, s_dtype);
            if (d == NULL)
                goto done;
            ok = d == PyTuple_GET_ITEM(meta, 1);
            Py_DECREF(d);
        }
        if (ok) {
            PyObject *sh = GET(g, s_shape);
            if (sh == NULL)
                goto done;
            ok = PyObject_RichCompareBool(sh, PyTuple_GET_ITEM(meta, 0), Py_EQ);
            Py_DECREF(sh);
            if (ok < 0)
                goto done;
        }
        if (ok) {
            Py_INCREF(g);
        } else {  /* a scalar, another dtype, a wrong shape: engine._fix (vjp_call._fix) decides */
            PyObject *a[3] = {node, g, meta};
            if ((g = call_in(engine_mod, "_fix", a, 3)) == NULL)
                goto done;
            if (g == Py_None) {
                Py_DECREF(g);
                continue;
            }
            if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) != 2) {
                Py_DECREF(g);
                PyErr_SetString(PyExc_TypeError, "a graph edge must be a (node, output_nr) pair");
                goto done;
            }
        }
        if (send(buffers, e, g) < 0)
            goto done;
    }
    ret = 0;
done:
    Py_XDECREF(seq); Py_XDECREF(nf); Py_XDECREF(im);
    return ret;
}

PyObject *
run_plain(PyObject *self, PyObject *const *argv, Py_ssize_t nargs)
{
    REQUIRE_CONFIGURED();
    if (nargs != 3 || !PyList_CheckExact(argv[0]) || !PyDict_CheckExact(argv[1])) {
        PyErr_SetString(PyExc_TypeError, "run_plain(order: list, buffers: dict, st)");
        return NULL;
    }
    PyObject *order = argv[0], *buffers = argv[1], *st = argv[2], *handed = NULL;
    int retain = get_truth(st, s_retain_graph), accumulate = retain < 0 ? -1 : get_truth(st, s_accumulate);
    if (accumulate < 0 || (handed = GET(st, s_handed)) == NULL)
        return NULL;
    Py_INCREF(order);  /* (held while we walk it) */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(order); i++) {
        PyObject *node = PyList_GET_ITEM(order, i), *grads = PyDict_GetItemWithError(buffers, node);
        if (grads == NULL) {
            if (PyErr_Occurred())
                goto fail;
            continue;
        }
        Py_INCREF(node);
        Py_INCREF(grads);
        int r = PyDict_DelItem(buffers, node);
        if (r == 0) {
            int hooked = get_truth(node, s_hooked);
            if (hooked < 0) {
                r = -1;
            } else if (hooked) {
                r = call_run_node(node, grads, buffers, st);
            } else if ((PyObject *)Py_TYPE(node) == Acc_type) {
                PyObject *leaf = GET(node, s_variable);
                int hooks = leaf ? get_truth(leaf, s_hooks) : -1;
                if (hooks < 0) {
                    r = -1;
                } else if (hooks) {
                    r = call_run_node(node, grads, buffers, st);
                } else if (accumulate) {
                    PyObject *g0 = PySequence_GetItem(grads, 0), *res = NULL;
                    if (g0 != NULL) {
                        PyObject *a[3] = {leaf, g0, handed};
                        res = call_in(engine_mod, "_accumulate_array", a, 3);
                        Py_DECREF(g0);
                    }
                    r = res == NULL ? -1 : 0;
                    Py_XDECREF(res);
                }
                Py_XDECREF(leaf);
            } else {
                r = run_twin(node, grads, buffers);
                if (r == 1) {
                    r = call_run_node(node, grads, buffers, st);
                } else if (r == 0 && !retain) {  /* free what the node saved: node.release(), inline */
                    int saved = get_truth(node, s_saved);
                    if (saved < 0 || (saved && (PyObject_SetAttr(node, s_saved, empty_tuple) < 0
                                                || PyObject_SetAttr(node, s_released, Py_True) < 0)))
                        r = -1;
                }
            }
        }
        Py_DECREF(grads);
        Py_DECREF(node);
        if (r < 0)
            goto fail;
    }
    Py_DECREF(order);
    Py_DECREF(handed);
    Py_RETURN_NONE;
fail:
    Py_DECREF(order);
    Py_DECREF(handed);
    return NULL;
}
