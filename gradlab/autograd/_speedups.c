/*
 * gradlab/autograd/_speedups.c -- the engine's hottest paths, compiled.
 *
 * Read the Python first: this file is a line-for-line translation of
 *
 *   op_apply(cls, *args)          <- function.Op.apply   (every built-in op call)
 *   record(ctx, args, out)        <- function._record    (the forward: make a node,
 *                                    with _keep_saved and SavedTensor.__init__ inline)
 *   saved_arrays(node)            <- Function.saved_arrays (what an array VJP reads)
 *   schedule(starts)              <- schedule.schedule   (the backward's order)
 *   run_plain(order, buffers, st) <- engine._run_plain   (the everyday backward loop)
 *
 * and nothing more. The math (each op's forward and VJP), the checks that can
 * fail and every rare case stay in Python: this file calls back into the same
 * Python helpers (_edge, _keep_saved, _run_node, _fix, ...) that the Python
 * versions call. It exists because a small tensor spends most of its time in
 * this bookkeeping (a 4x4 op costs about 0.3 us of NumPy and several us of
 * Python around it), the way CPython keeps heapq beside _heapq and json beside
 * _json. `gradlab/autograd/_accel.py` loads it; GRADLAB_PURE_PYTHON=1 runs the
 * Python versions instead, and tests/test_speedups.py runs both on generated
 * programs and requires the same results, bit for bit.
 *
 * Everything is plain CPython API (no NumPy headers): attributes are read by
 * name, exactly as the Python reads them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdlib.h>

/* set once by configure(): the Python objects the loops need. The Python helpers they call
 * back (_run_node, _fix, _edge, ...) are looked up in their modules when needed, as the Python
 * versions look up their globals, so a test may monkeypatch them. */
static PyObject *Tensor_type, *Acc_type, *ndarray_type, *floating, *seq_counter, *node_observers;
static PyObject *new_tensor, *record_py, *function_mod, *engine_mod, *views_mod, *schedule_mod;
static PyObject *op_observers, *forward_ad_hook, *grad_state, *np_generic, *np_asarray, *apply_py;
static PyObject *Saved_type, *Version_type, *saved_hooks, *saved_arrays_py;
/* where SavedTensor's and _Version's __slots__ live in their objects (read off their member
 * descriptors by configure): a slot is written as the descriptor would write it */
enum { ST_TENSOR, ST_DATA, ST_VERSION_OBJ, ST_VERSION, ST_OUTPUT_NR, ST_PACKED, ST_UNPACK, ST_NAME, ST_N };
static const char *st_names[ST_N] = {"tensor", "data", "version_obj", "version", "output_nr", "packed", "unpack",
                                     "name"};
static Py_ssize_t st_off[ST_N], vc_value_off;
#define SLOT(o, off) (*(PyObject **)((char *)(o) + (off)))
static PyObject *empty_tuple;

/* interned attribute names */
static PyObject *s_data, *s_shape, *s_dtype, *s_requires_grad, *s_view_base, *s_vcounter, *s_value,
    *s_view_version, *s_grad_fn, *s_output_nr, *s_next_functions, *s_input_meta, *s_seq, *s_out_meta,
    *s_non_diff, *s_to_save, *s_to_save_out, *s_hooked, *s_variable, *s_hooks, *s_vjp_arrays,
    *s_released, *s_saved, *s_retain_graph, *s_handed, *s_accumulate, *s_enabled, *s_recording, *s_forward,
    *s_make, *s_name_attr, *s_array;

#define GET(o, name) PyObject_GetAttr((o), (name))

/* call module.name(*args) */
static PyObject *
call_in(PyObject *mod, const char *name, PyObject *const *args, Py_ssize_t n)
{
    PyObject *f = PyObject_GetAttrString(mod, name);
    if (f == NULL)
        return NULL;
    PyObject *r = PyObject_Vectorcall(f, args, n, NULL);
    Py_DECREF(f);
    return r;
}

/* bool(o.name), or -1 on error */
static int
get_truth(PyObject *o, PyObject *name)
{
    PyObject *v = GET(o, name);
    if (v == NULL)
        return -1;
    int r = (v == Py_True) ? 1 : (v == Py_False || v == Py_None) ? 0 : PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* ------------------------------------------------------------------ record */

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
static int
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
static PyObject *
saved_arrays(PyObject *self, PyObject *node)
{
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


/* The edge for one argument (what _record_py computes inline), or NULL on error. */
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

static PyObject *
record(PyObject *self, PyObject *const *argv, Py_ssize_t nargs)
{
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

/* ------------------------------------------------------------------- apply */

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
static PyObject *
op_apply(PyObject *self, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames)
{
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

/* ---------------------------------------------------------------- schedule */

typedef struct {
    long long seq;
    Py_ssize_t index;
    PyObject *node;
} entry;

static int
by_seq_desc(const void *x, const void *y)  /* Python's stable sort(key=seq, reverse=True) */
{
    const entry *a = x, *b = y;
    if (a->seq != b->seq)
        return a->seq > b->seq ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

static int
seq_of(PyObject *node, long long *out)
{
    PyObject *s = GET(node, s_seq);
    if (s == NULL)
        return -1;
    if (!PyLong_CheckExact(s)) {
        Py_DECREF(s);
        return 1;  /* not a plain int: leave it to the Python version */
    }
    *out = PyLong_AsLongLong(s);
    Py_DECREF(s);
    if (*out == -1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return -1;
        PyErr_Clear();
        return 1;
    }
    return 0;
}

/* sort `nodes` (a list) by seq, highest first; 1 = some seq is not a C integer */
static int
sort_by_seq(PyObject *nodes)
{
    Py_ssize_t n = PyList_GET_SIZE(nodes);
    if (n < 2)
        return 0;
    entry *es = PyMem_Malloc(n * sizeof(entry));
    if (es == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        es[i].node = PyList_GET_ITEM(nodes, i);
        es[i].index = i;
        int r = seq_of(es[i].node, &es[i].seq);
        if (r != 0) {
            PyMem_Free(es);
            return r;
        }
    }
    qsort(es, n, sizeof(entry), by_seq_desc);
    PyObject **items = ((PyListObject *)nodes)->ob_item;  /* a permutation: references unchanged */
    for (Py_ssize_t i = 0; i < n; i++)
        items[i] = es[i].node;
    PyMem_Free(es);
    return 0;
}

static PyObject *
schedule(PyObject *self, PyObject *starts)
{
    PyObject *seen = PySet_New(starts), *stack = NULL, *ops = NULL, *first_user = NULL, *order = NULL;
    PyObject *roots = NULL, *behind = NULL, *result = NULL;
    if (seen == NULL || (stack = PySequence_List(seen)) == NULL || (ops = PyList_New(0)) == NULL
        || (first_user = PyDict_New()) == NULL)
        goto done;
    while (PyList_GET_SIZE(stack) > 0) {
        Py_ssize_t top = PyList_GET_SIZE(stack) - 1;
        PyObject *node = Py_NewRef(PyList_GET_ITEM(stack, top));
        if (PyList_SetSlice(stack, top, top + 1, NULL) < 0) {
            Py_DECREF(node);
            goto done;
        }
        if ((PyObject *)Py_TYPE(node) == Acc_type) {
            Py_DECREF(node);
            continue;
        }
        int bad = PyList_Append(ops, node);
        PyObject *nf = bad ? NULL : GET(node, s_next_functions);
        if (nf == NULL) {
            Py_DECREF(node);
            goto done;
        }
        if (!PyTuple_Check(nf))  /* (set by hand to something else: the Python version copes) */
            goto python;
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(nf); j++) {
            PyObject *e = PyTuple_GET_ITEM(nf, j);
            if (e == Py_None)
                continue;
            PyObject *nxt = PySequence_GetItem(e, 0);
            if (nxt == NULL)
                goto node_fail;
            int in = PySet_Contains(seen, nxt);
            if (in < 0 || (!in && (PySet_Add(seen, nxt) < 0 || PyList_Append(stack, nxt) < 0))) {
                Py_DECREF(nxt);
                goto node_fail;
            }
            if ((PyObject *)Py_TYPE(nxt) == Acc_type) {
                /* the accumulator runs behind its first-created user, at that user's first edge to it */
                PyObject *u = PyDict_GetItemWithError(first_user, nxt);
                int take = u == NULL;
                if (u == NULL && PyErr_Occurred()) {
                    Py_DECREF(nxt);
                    goto node_fail;
                }
                if (u != NULL) {
                    long long a, b;
                    int r1 = seq_of(node, &a), r2 = r1 ? r1 : seq_of(PyTuple_GET_ITEM(u, 0), &b);
                    if (r2 != 0) {
                        Py_DECREF(nxt);
                        if (r2 > 0)
                            goto python;
                        goto node_fail;
                    }
                    take = a < b;
                }
                if (take) {
                    PyObject *pos = PyLong_FromSsize_t(j), *pair = pos ? PyTuple_Pack(2, node, pos) : NULL;
                    Py_XDECREF(pos);
                    if (pair == NULL || PyDict_SetItem(first_user, nxt, pair) < 0) {
                        Py_XDECREF(pair);
                        Py_DECREF(nxt);
                        goto node_fail;
                    }
                    Py_DECREF(pair);
                }
            }
            Py_DECREF(nxt);
        }
        Py_DECREF(nf);
        Py_DECREF(node);
        continue;
    node_fail:
        Py_DECREF(nf);
        Py_DECREF(node);
        goto done;
    python:
        Py_DECREF(nf);
        Py_DECREF(node);
        goto use_python;
    }
    {
        int r = sort_by_seq(ops);
        if (r < 0)
            goto done;
        if (r > 0)
            goto use_python;
    }
    /* a root that is itself a leaf's accumulator, with no user in the graph: runs first */
    if ((roots = PyList_New(0)) == NULL)
        goto done;
    {
        PyObject *it = PyObject_GetIter(starts), *n;
        if (it == NULL)
            goto done;
        while ((n = PyIter_Next(it)) != NULL) {
            int in = 0;
            if ((PyObject *)Py_TYPE(n) == Acc_type && ((in = PyDict_Contains(first_user, n)) < 0 || (!in && PyList_Append(roots, n) < 0))) {
                Py_DECREF(n);
                Py_DECREF(it);
                goto done;
            }
            Py_DECREF(n);
        }
        Py_DECREF(it);
        if (PyErr_Occurred())
            goto done;
    }
    if (PyDict_GET_SIZE(first_user) == 0) {
        if (PyList_GET_SIZE(roots) == 0) {
            result = Py_NewRef(ops);
            goto done;
        }
        result = PySequence_Concat(roots, ops);
        goto done;
    }
    if ((behind = PyDict_New()) == NULL)
        goto done;
    {
        Py_ssize_t p = 0;
        PyObject *acc, *pair;
        while (PyDict_Next(first_user, &p, &acc, &pair)) {
            PyObject *user = PyTuple_GET_ITEM(pair, 0), *lst = PyDict_GetItemWithError(behind, user);
            if (lst == NULL) {
                if (PyErr_Occurred() || (lst = PyList_New(0)) == NULL)
                    goto done;
                int r = PyDict_SetItem(behind, user, lst);
                Py_DECREF(lst);
                if (r < 0)
                    goto done;
            }
            PyObject *item = PyTuple_Pack(2, PyTuple_GET_ITEM(pair, 1), acc);
            if (item == NULL || PyList_Append(lst, item) < 0) {
                Py_XDECREF(item);
                goto done;
            }
            Py_DECREF(item);
        }
    }
    {
        int r = sort_by_seq(roots);
        if (r < 0)
            goto done;
        if (r > 0)
            goto use_python;
    }
    order = roots;
    roots = NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ops); i++) {
        PyObject *node = PyList_GET_ITEM(ops, i);
        if (PyList_Append(order, node) < 0)
            goto done;
        PyObject *accs = PyDict_GetItemWithError(behind, node);
        if (accs == NULL) {
            if (PyErr_Occurred())
                goto done;
            continue;
        }
        if (PyList_GET_SIZE(accs) > 1 && PyList_Sort(accs) < 0)  /* by position (positions differ) */
            goto done;
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(accs); k++)
            if (PyList_Append(order, PyTuple_GET_ITEM(PyList_GET_ITEM(accs, k), 1)) < 0)
                goto done;
    }
    result = Py_NewRef(order);
    goto done;
use_python:
    result = call_in(schedule_mod, "schedule", &starts, 1);
done:
    Py_XDECREF(seen); Py_XDECREF(stack); Py_XDECREF(ops); Py_XDECREF(first_user); Py_XDECREF(order);
    Py_XDECREF(roots); Py_XDECREF(behind);
    return result;
}

/* --------------------------------------------------------------- run_plain */

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
    PyObject *nxt = PyTuple_GET_ITEM(e, 0), *buf = PyDict_GetItemWithError(buffers, nxt);
    if (buf == NULL) {
        if (PyErr_Occurred())
            goto fail;
        PyObject *om = GET(nxt, s_out_meta);
        if (om == NULL)
            goto fail;
        Py_ssize_t k = PyObject_Length(om);
        Py_DECREF(om);
        if (k < 0 || (buf = PyList_New(k)) == NULL)
            goto fail;
        for (Py_ssize_t i = 0; i < k; i++)
            PyList_SET_ITEM(buf, i, Py_NewRef(Py_None));
        int r = PyDict_SetItem(buffers, nxt, buf);
        Py_DECREF(buf);  /* the dict holds it */
        if (r < 0)
            goto fail;
        if (k == 1) {  /* the usual: one output, one gradient */
            PyList_SET_ITEM(buf, 0, g);  /* steals g */
            Py_DECREF(Py_None);
            return 0;
        }
    }
    PyObject *nr = PyTuple_GET_ITEM(e, 1), *cur = PyObject_GetItem(buf, nr);
    if (cur == NULL)
        goto fail;
    int r;
    if (cur == Py_None) {
        r = PyObject_SetItem(buf, nr, g);
    } else {
        PyObject *a[2] = {cur, g}, *s = call_in(engine_mod, "_sum", a, 2);
        r = s == NULL ? -1 : PyObject_SetItem(buf, nr, s);
        Py_XDECREF(s);
    }
    Py_DECREF(cur);
    Py_DECREF(g);
    return r;
fail:
    Py_DECREF(g);
    return -1;
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
        } else {  /* a scalar, another dtype, a wrong shape: engine._fix decides */
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

static PyObject *
run_plain(PyObject *self, PyObject *const *argv, Py_ssize_t nargs)
{
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

/* --------------------------------------------------------------- configure */

static int
slot_offset(PyObject *type, const char *name, Py_ssize_t *off)
{
    PyObject *d = PyDict_GetItemString(((PyTypeObject *)type)->tp_dict, name);  /* borrowed */
    if (d == NULL || !Py_IS_TYPE(d, &PyMemberDescr_Type)
        || ((PyMemberDescrObject *)d)->d_member->type != T_OBJECT_EX) {
        PyErr_Format(PyExc_TypeError, "%s.%s must be a __slots__ entry", ((PyTypeObject *)type)->tp_name, name);
        return -1;
    }
    *off = ((PyMemberDescrObject *)d)->d_member->offset;
    return 0;
}

static PyObject *
configure(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"Tensor", "AccumulateGrad", "ndarray", "floating", "seq_counter", "node_observers",
                            "new_tensor", "record_py", "function", "engine", "views", "schedule", "op_observers",
                            "forward_ad_hook", "grad_state", "generic", "asarray", "apply_py", "SavedTensor",
                            "Version", "saved_hooks", "saved_arrays_py", NULL};
    PyObject *v[22];
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O!O!O!OO!OOOOOOO!O!OO!OOO!O!O!O:configure", names,
                                     &PyType_Type, &v[0], &PyType_Type, &v[1], &PyType_Type, &v[2],
                                     &PyFrozenSet_Type, &v[3], &v[4], &PyList_Type, &v[5], &v[6], &v[7], &v[8],
                                     &v[9], &v[10], &v[11], &PyList_Type, &v[12], &PyList_Type, &v[13], &v[14],
                                     &PyType_Type, &v[15], &v[16], &v[17], &PyType_Type, &v[18], &PyType_Type,
                                     &v[19], &PyList_Type, &v[20], &v[21]))
        return NULL;
    if (PyList_GET_SIZE(v[13]) != 1) {
        PyErr_SetString(PyExc_ValueError, "forward_ad_hook must be a one-item list");
        return NULL;
    }
    for (int i = 0; i < ST_N; i++)
        if (slot_offset(v[18], st_names[i], &st_off[i]) < 0)
            return NULL;
    if (slot_offset(v[19], "value", &vc_value_off) < 0)
        return NULL;
    PyObject **slots[22] = {&Tensor_type, &Acc_type, &ndarray_type, &floating, &seq_counter, &node_observers,
                            &new_tensor, &record_py, &function_mod, &engine_mod, &views_mod, &schedule_mod,
                            &op_observers, &forward_ad_hook, &grad_state, &np_generic, &np_asarray, &apply_py,
                            &Saved_type, &Version_type, &saved_hooks, &saved_arrays_py};
    for (int i = 0; i < 22; i++)
        Py_XSETREF(*slots[i], Py_NewRef(v[i]));
    Py_RETURN_NONE;
}

static PyObject *
configured(PyObject *self, PyObject *unused)
{
    return PyBool_FromLong(schedule_mod != NULL);
}

static PyMethodDef methods[] = {
    {"configure", (PyCFunction)(void (*)(void))configure, METH_VARARGS | METH_KEYWORDS,
     "configure(**objects): hand the loops the Python objects they use (done once by _accel.py)."},
    {"configured", configured, METH_NOARGS, "Whether configure() has run."},
    {"record", (PyCFunction)(void (*)(void))record, METH_FASTCALL, "record(ctx, args, out): function._record, compiled."},
    {"op_apply", (PyCFunction)(void (*)(void))op_apply, METH_FASTCALL | METH_KEYWORDS,
     "op_apply(cls, *args, **kwargs): function.Op.apply, compiled (installed as a classmethod)."},
    {"saved_arrays", saved_arrays, METH_O, "saved_arrays(node): Function.saved_arrays, compiled."},
    {"schedule", schedule, METH_O, "schedule(starts): schedule.schedule, compiled."},
    {"run_plain", (PyCFunction)(void (*)(void))run_plain, METH_FASTCALL,
     "run_plain(order, buffers, st): engine._run_plain, compiled."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_speedups",
                                    "The engine's hottest loops, compiled; see the comment at the top of _speedups.c.",
                                    -1, methods};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    const char *names[] = {"data", "shape", "dtype", "requires_grad", "_view_base", "_vcounter", "value",
                           "_view_version", "grad_fn", "_output_nr", "next_functions", "input_meta", "seq",
                           "out_meta", "_non_diff", "_to_save", "_to_save_out", "_hooked", "variable", "_hooks",
                           "vjp_arrays", "_released", "_saved", "retain_graph", "handed", "accumulate", "enabled",
                           "_recording", "forward", "_make", "name", "array"};
    PyObject **slots[] = {&s_data, &s_shape, &s_dtype, &s_requires_grad, &s_view_base, &s_vcounter, &s_value,
                          &s_view_version, &s_grad_fn, &s_output_nr, &s_next_functions, &s_input_meta, &s_seq,
                          &s_out_meta, &s_non_diff, &s_to_save, &s_to_save_out, &s_hooked, &s_variable, &s_hooks,
                          &s_vjp_arrays, &s_released, &s_saved, &s_retain_graph, &s_handed, &s_accumulate, &s_enabled,
                          &s_recording, &s_forward, &s_make, &s_name_attr, &s_array};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if ((*slots[i] = PyUnicode_InternFromString(names[i])) == NULL)
            return NULL;
    if ((empty_tuple = PyTuple_New(0)) == NULL)
        return NULL;
    return PyModule_Create(&module);
}
