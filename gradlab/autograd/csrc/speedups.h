/*
 * csrc/speedups.h -- what the parts of gradlab's C extension share.
 *
 * gradlab.autograd._speedups is built from the files in this folder; start
 * with module.c, which says what each one translates from the Python.
 */
#ifndef GRADLAB_SPEEDUPS_H
#define GRADLAB_SPEEDUPS_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* set once by configure() (module.c): the Python objects the loops need. The Python helpers they
 * call back (_run_node, _fix, _edge, ...) are looked up in their modules when needed, as the
 * Python versions look up their globals, so a test may monkeypatch them. */
extern PyObject *Tensor_type, *Acc_type, *ndarray_type, *floating, *seq_counter, *node_observers;
extern PyObject *new_tensor, *record_py, *function_mod, *engine_mod, *views_mod, *schedule_mod;
extern PyObject *op_observers, *forward_ad_hook, *grad_state, *np_generic, *np_asarray, *apply_py;
extern PyObject *Saved_type, *Version_type, *saved_hooks, *saved_arrays_py;
extern PyObject *empty_tuple;

/* where SavedTensor's and _Version's __slots__ live in their objects (read off their member
 * descriptors by configure): a slot is written as the descriptor would write it */
enum { ST_TENSOR, ST_DATA, ST_VERSION_OBJ, ST_VERSION, ST_OUTPUT_NR, ST_PACKED, ST_UNPACK, ST_NAME, ST_N };
extern const char *st_names[ST_N];
extern Py_ssize_t st_off[ST_N], vc_value_off;
#define SLOT(o, off) (*(PyObject **)((char *)(o) + (off)))

/* interned attribute names */
extern PyObject *s_data, *s_shape, *s_dtype, *s_requires_grad, *s_view_base, *s_vcounter, *s_value,
    *s_view_version, *s_grad_fn, *s_output_nr, *s_next_functions, *s_input_meta, *s_seq, *s_out_meta,
    *s_non_diff, *s_to_save, *s_to_save_out, *s_hooked, *s_variable, *s_hooks, *s_vjp_arrays,
    *s_released, *s_saved, *s_retain_graph, *s_handed, *s_accumulate, *s_enabled, *s_recording, *s_forward,
    *s_make, *s_name_attr, *s_array;

#define GET(o, name) PyObject_GetAttr((o), (name))

/* every entry point starts with this: the globals above are NULL until configure() */
#define REQUIRE_CONFIGURED()                                                                      \
    do {                                                                                          \
        if (schedule_mod == NULL) {                                                               \
            PyErr_SetString(PyExc_RuntimeError, "gradlab.autograd._speedups: configure() has not run"); \
            return NULL;                                                                          \
        }                                                                                         \
    } while (0)

/* call module.name(*args) */
static inline PyObject *
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
static inline int
get_truth(PyObject *o, PyObject *name)
{
    PyObject *v = GET(o, name);
    if (v == NULL)
        return -1;
    int r = (v == Py_True) ? 1 : (v == Py_False || v == Py_None) ? 0 : PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* the entry points (module.c lists them in the method table) */
PyObject *record(PyObject *self, PyObject *const *argv, Py_ssize_t nargs);
PyObject *op_apply(PyObject *self, PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames);
PyObject *saved_arrays(PyObject *self, PyObject *node);
PyObject *schedule(PyObject *self, PyObject *starts);
PyObject *run_plain(PyObject *self, PyObject *const *argv, Py_ssize_t nargs);
/* saved.c, for record.c */
int keep_saved_one(PyObject *ctx, PyObject *out, PyObject *ret);

#endif
