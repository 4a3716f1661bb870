/*
 * gradlab/autograd/csrc/module.c -- gradlab.autograd._speedups: the engine's hottest paths, compiled.
 *
 * Read the Python first: the files in this folder translate, line for line,
 *
 *   op_apply(cls, *args)          <- function.Op.apply   (every built-in op call)     record.c
 *   record(ctx, args, out)        <- function._record    (the forward: make a node,  record.c
 *                                    with _keep_saved and SavedTensor.__init__ inline: saved.c)
 *   saved_arrays(node)            <- Function.saved_arrays (what an array VJP reads)   saved.c
 *   schedule(starts)              <- schedule.schedule   (the backward's order)       schedule.c
 *   run_plain(order, buffers, st) <- engine._run_plain   (the everyday backward loop) backward.c
 *
 * and nothing more; this file holds what they share and the module itself.
 * The math (each op's forward and VJP), the checks that can fail and every
 * rare case stay in Python: the C calls back into the same Python helpers
 * (_edge, _keep_saved, _run_node, _fix, ...) that the Python versions call. It exists because a small tensor spends most of its time in
 * this bookkeeping (a 4x4 op costs about 0.3 us of NumPy and several us of
 * Python around it), the way CPython keeps heapq beside _heapq and json beside
 * _json. `gradlab/autograd/_accel.py` loads it; GRADLAB_PURE_PYTHON=1 runs the
 * Python versions instead, and tests/test_speedups.py runs both on generated
 * programs and requires the same results, bit for bit.
 *
 * Everything is plain CPython API (no NumPy headers): attributes are read by
 * name, exactly as the Python reads them.
 */
#include "speedups.h"

PyObject *Tensor_type, *Acc_type, *ndarray_type, *floating, *seq_counter, *node_observers;
PyObject *new_tensor, *record_py, *function_mod, *engine_mod, *views_mod, *schedule_mod;
PyObject *op_observers, *forward_ad_hook, *grad_state, *np_generic, *np_asarray, *apply_py;
PyObject *Saved_type, *Version_type, *saved_hooks, *saved_arrays_py;
PyObject *empty_tuple;
const char *st_names[ST_N] = {"tensor", "data", "version_obj", "version", "output_nr", "packed", "unpack", "name"};
Py_ssize_t st_off[ST_N], vc_value_off;
PyObject *s_data, *s_shape, *s_dtype, *s_requires_grad, *s_view_base, *s_vcounter, *s_value,
    *s_view_version, *s_grad_fn, *s_output_nr, *s_next_functions, *s_input_meta, *s_seq, *s_out_meta,
    *s_non_diff, *s_to_save, *s_to_save_out, *s_hooked, *s_variable, *s_hooks, *s_vjp_arrays,
    *s_released, *s_saved, *s_retain_graph, *s_handed, *s_accumulate, *s_enabled, *s_recording, *s_forward,
    *s_make, *s_name_attr, *s_array;

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
                                    "The engine's hottest loops, compiled; see the comment at the top of gradlab/autograd/csrc/module.c.",
                                    -1, methods, NULL, NULL, NULL, NULL};

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
