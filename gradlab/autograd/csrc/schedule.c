/*
 * csrc/schedule.c -- the order of a backward pass.
 *
 * schedule  <- schedule.schedule (the walk, the sort by sequence number, the accumulators
 *              placed behind their first-created users; any seq that is not a C integer
 *              hands the whole job to the Python)
 */
#include <stdlib.h>
#include "speedups.h"

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

PyObject *
schedule(PyObject *self, PyObject *starts)
{
    REQUIRE_CONFIGURED();
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
