/* GradModeBase: no_grad / enable_grad / inference_mode's __enter__ and __exit__ in C.
 *
 * Python runs a pending Ctrl-C's handler at the first instruction of a Python function, so
 * a KeyboardInterrupt could land at the top of a Python __exit__, before it put the grad
 * mode back: the `with` statement does not retry, and training went on with grad mode off
 * (tests/python/test_round4_interrupt.py's SIGINT storm failed about one run in three once
 * the C fast paths made the steps short). A method written in C has no such instruction: the
 * interrupt is raised after it returns, with the mode already set or restored. The state is
 * the Python side's (_grad_mode.py): the class's or instance's _mode and the instance's
 * _prev_stack list, so re-entering one object nests as there. */
#include "ffext.h"

static PyObject *prev_stack(PyObject *self)
{
    PyObject *stack = PyObject_GetAttrString(self, "_prev_stack");
    if (stack || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return stack;
    PyErr_Clear();
    stack = PyList_New(0);
    if (stack && PyObject_SetAttrString(self, "_prev_stack", stack) < 0)
        Py_CLEAR(stack);
    return stack;
}

static PyObject *gm_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    PyObject *mode = PyObject_GetAttrString(self, "_mode");
    int on = mode ? PyObject_IsTrue(mode) : -1;
    Py_XDECREF(mode);
    PyObject *stack = on < 0 ? NULL : prev_stack(self);
    if (!stack)
        return NULL;
    int appended = PyList_Append(stack, ffx.ff_grad_enabled() ? Py_True : Py_False);
    Py_DECREF(stack);
    if (appended < 0) /* nothing changed yet */
        return NULL;
    ffx.ff_set_grad_enabled(on);
    Py_INCREF(self);
    return self;
}

static PyObject *gm_exit(PyObject *self, PyObject *args)
{
    (void)args;
    PyObject *stack = prev_stack(self);
    if (!stack)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(stack);
    if (n == 0) {
        Py_DECREF(stack);
        PyErr_SetString(PyExc_RuntimeError, "grad mode __exit__ without __enter__");
        return NULL;
    }
    ffx.ff_set_grad_enabled(PyList_GET_ITEM(stack, n - 1) == Py_True);
    int popped = PyList_SetSlice(stack, n - 1, n, NULL);
    Py_DECREF(stack);
    if (popped < 0)
        return NULL;
    Py_RETURN_FALSE;
}

static PyMethodDef gm_methods[] = {
    {"__enter__", gm_enter, METH_NOARGS, "records the grad mode and sets self._mode"},
    {"__exit__", gm_exit, METH_VARARGS, "puts back the grad mode __enter__ recorded"},
    {NULL, NULL, 0, NULL}};

PyTypeObject ffx_grad_mode_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fusionflow._ffext.GradModeBase",
    .tp_basicsize = sizeof(PyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "no_grad / enable_grad / inference_mode's __enter__ and __exit__ (see ffext_grad_mode.c)",
    .tp_methods = gm_methods,
    .tp_new = PyType_GenericNew,
};
