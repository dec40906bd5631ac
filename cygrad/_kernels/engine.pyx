# cython: c_api_binop_methods=True
# (The one directive set here, not in setup.py: with C-API binop semantics the
# arithmetic dunders are exposed as nb_* slot wrappers, which the Python
# Tensor subclass inherits as direct C calls.  As plain methods, CPython gave
# the subclass its generic slot_nb_add, a method lookup and call per op.)
"""The compiled core of cygrad: tensor base, graph nodes, and the backward engine.

Layout: a tensor's values live in a NumPy array (``TensorBase._arr``); the
graph is made of ``Node`` objects that point to their inputs' nodes (never to
their outputs, so no reference cycle forms).  Saved outputs are kept as
arrays plus the output's version counter.

Dtypes: elementwise math runs the kernels of ``elementwise`` for float32 and
float64; integer and bool tensors use NumPy ufuncs and never carry gradients.

Aliasing: in-place ops write into the tensor's own array; when autograd needs
the value being overwritten, it saves a copy first.

Threading: grad mode is a C thread-local (each OS thread has its own, on by
default).  Large kernels release the GIL.  The engine itself holds the GIL.

Recursion: nothing here recurses over the graph.  Backward orders nodes with
an explicit stack, and ``@cython.trashcan`` bounds the C stack when a chain of
a million nodes is freed.
"""

cimport cython
cimport numpy as cnp
from cpython.ref cimport PyObject, Py_DECREF, Py_INCREF, Py_REFCNT
from libc.string cimport memcpy, memset

from cygrad._kernels.elementwise cimport (
    row_fn, unary_fwd, unary_bwd, binary_fwd, binary_bwd, nd_apply)

import sys
import threading
import warnings
import weakref

import numpy as np

from cygrad._kernels import elementwise as _ew
from cygrad._kernels.reduce import sum_all as _reduce_sum_all
from cygrad._kernels.reduce import sum_to_shape as _sum_to_shape

cnp.import_array()

cdef extern from *:
    """
    static __thread int cygrad_grad_mode = 1;
    """
    int cygrad_grad_mode

cdef extern from *:
    """
    /* Allocate an instance of the Python Tensor class through its tp_new
       slot (inherited from TensorBase): no attribute lookup, no call. */
    static PyObject *cg_empty_args = NULL;
    static PyObject *cg_alloc(PyObject *type) {
        if (cg_empty_args == NULL) {
            cg_empty_args = PyTuple_New(0);
            if (cg_empty_args == NULL) return NULL;
        }
        return ((PyTypeObject *)type)->tp_new((PyTypeObject *)type, cg_empty_args,
                                              NULL);
    }
    """
    object cg_alloc(object type)

cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void*)
    void PyObject_GC_Track(void*)
    int PyObject_GC_IsTracked(object)
    bint PyObject_IS_GC(object)
    ctypedef struct PyCodeObject
    int PyCode_Addr2Line(PyCodeObject*, int)

cdef extern from *:
    """
    /* Creation-site capture: find the innermost frame whose code object is
       not cygrad's own, and return its code object and instruction offset
       (the line number is decoded only when a message is printed).  On
       CPython 3.11 the interpreter's frame list is read directly, which
       creates no frame objects; elsewhere the public frame API is used.
       Whether a code object belongs to cygrad is cached per code object in a
       small direct-mapped table that holds a reference to its keys (so a
       freed code object's address can never be mistaken for a cached one). */
    #if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000 && \
        !defined(PYPY_VERSION)
      #ifndef Py_BUILD_CORE
        #define Py_BUILD_CORE 1
      #endif
      #include "internal/pycore_frame.h"
      #define CG_FAST_FRAMES 1
    #else
      #include "frameobject.h"
      #define CG_FAST_FRAMES 0
    #endif
    #define CG_SITE_CACHE 64
    static PyObject *cg_site_keys[CG_SITE_CACHE];
    static char cg_site_inpkg[CG_SITE_CACHE];
    static PyObject *cg_pkg_dir = NULL;

    /* 1 when ``code`` is cygrad's, 0 when not, -1 on error. */
    static int cg_code_in_pkg(PyObject *code) {
        size_t h = (((size_t)code) >> 4) % CG_SITE_CACHE;
        PyObject *fn;
        int r;
        if (cg_site_keys[h] == code) return cg_site_inpkg[h];
        if (cg_pkg_dir == NULL) return 0;
        fn = ((PyCodeObject *)code)->co_filename;
        r = PyUnicode_Tailmatch(fn, cg_pkg_dir, 0, PY_SSIZE_T_MAX, -1);
        if (r < 0) return -1;
        Py_INCREF(code);
        Py_XDECREF(cg_site_keys[h]);
        cg_site_keys[h] = code;
        cg_site_inpkg[h] = (char)r;
        return r;
    }

    static void cg_set_pkg_dir(PyObject *d) {
        int i;
        Py_XINCREF(d);
        Py_XDECREF(cg_pkg_dir);
        cg_pkg_dir = d;
        for (i = 0; i < CG_SITE_CACHE; i++) Py_CLEAR(cg_site_keys[i]);
    }

    /* Borrowed code object of the innermost user frame (NULL if none or on
       error: check PyErr_Occurred), and its byte offset in *lasti. */
    static PyObject *cg_user_frame(int *lasti) {
    #if CG_FAST_FRAMES
        _PyInterpreterFrame *f = PyThreadState_GET()->cframe->current_frame;
        int r;
        while (f != NULL) {
            if (!_PyFrame_IsIncomplete(f)) {
                r = cg_code_in_pkg((PyObject *)f->f_code);
                if (r < 0) return NULL;
                if (r == 0) {
                    *lasti = _PyInterpreterFrame_LASTI(f) * sizeof(_Py_CODEUNIT);
                    return (PyObject *)f->f_code;
                }
            }
            f = f->previous;
        }
        return NULL;
    #else
        PyFrameObject *f = PyEval_GetFrame(), *back;
        PyCodeObject *code;
        int r;
        Py_XINCREF(f);
        while (f != NULL) {
            code = PyFrame_GetCode(f);
            r = cg_code_in_pkg((PyObject *)code);
            Py_DECREF(code);
            if (r < 0) { Py_DECREF(f); return NULL; }
            if (r == 0) {
                *lasti = PyFrame_GetLasti(f);
                Py_DECREF(f);   /* the code object outlives it: the frame's
                                   function or module still holds it */
                return (PyObject *)code;
            }
            back = PyFrame_GetBack(f);
            Py_DECREF(f);
            f = back;
        }
        return NULL;
    #endif
    }
    """
    void* cg_user_frame(int* lasti) except? NULL
    void cg_set_pkg_dir(object d)


# Above this many elements a kernel releases the GIL (below it the release
# costs more than the loop).
DEF GIL_RELEASE_MIN = 16384

cdef dict UNARY_OPS = _ew.UNARY_OPS
cdef dict BINARY_OPS = _ew.BINARY_OPS
cdef list UNARY_NAMES = [None] * len(UNARY_OPS)
cdef list BINARY_NAMES = [None] * len(BINARY_OPS)
cdef list UNARY_SAVES = [None] * len(UNARY_OPS)    # ("x",), ("y",), ...
cdef list BINARY_SAVES = [None] * len(BINARY_OPS)  # (uses_a, uses_b)
# The same as bit masks (x/a = 1, b = 2, y = 4), so that recording a node
# tests bits instead of searching tuples of strings.
cdef int[16] UNARY_SAVE_BITS
cdef int[16][2] BINARY_SAVE_BITS
cdef int[16] BINARY_IDENT_A
cdef int[16] BINARY_IDENT_B
for _name, _row in UNARY_OPS.items():
    UNARY_NAMES[_row[0]] = _name
    UNARY_SAVES[_row[0]] = _row[3]
    UNARY_SAVE_BITS[_row[0]] = ("x" in _row[3]) * 1 + ("y" in _row[3]) * 4
for _name, _row in BINARY_OPS.items():
    BINARY_NAMES[_row[0]] = _name
    BINARY_SAVES[_row[0]] = (_row[4], _row[5])
    for _k in range(2):
        BINARY_SAVE_BITS[_row[0]][_k] = (("a" in _row[4 + _k]) * 1
                                         + ("b" in _row[4 + _k]) * 2
                                         + ("y" in _row[4 + _k]) * 4)
    BINARY_IDENT_A[_row[0]] = _row[6]
    BINARY_IDENT_B[_row[0]] = _row[7]

cdef int OP_ADD = BINARY_OPS["add"][0]
cdef int OP_SUB = BINARY_OPS["sub"][0]
cdef int OP_MUL = BINARY_OPS["mul"][0]
cdef int OP_DIV = BINARY_OPS["div"][0]
cdef int OP_POW = BINARY_OPS["pow"][0]
cdef int OP_NEG = UNARY_OPS["neg"][0]
cdef int OP_SQUARE = UNARY_OPS["square"][0]

_NODE_NAMES_U = {n: n.capitalize() + "Backward0" for n in UNARY_OPS}
_NODE_NAMES_U["abs"] = "AbsBackward0"
_NODE_NAMES_U["square"] = "PowBackward0"    # torch: x ** 2 and square(x)
_NODE_NAMES_B = {n: n.capitalize() + "Backward0" for n in BINARY_OPS}

# Python-side hooks, installed by cygrad._tensor / cygrad.ops at import.
cdef object _TensorCls = None        # the Python Tensor class
cdef object _grad_warning = None     # fn(t): warn on a non-leaf's .grad read
cdef object _backward_fn = None      # autograd.backward (the general case)
cdef object _graph_unary = None      # name -> fn(g, x, y) over Tensors
cdef object _graph_binary = None     # name -> (fn_a, fn_b)(g, a, b, y)
cdef object _graph_sum_to = None     # fn(tensor, shape) differentiable
cdef object _np_ufuncs = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
    "pow": np.power, "maximum": np.maximum, "minimum": np.minimum,
}
cdef bint _anomaly = False
cdef int _debug_level = 1            # 0: capture no creation sites
cdef bint _retain_all = False        # retain_grads() scope: keep every .grad
cdef long long _generation = 0       # bumped by optimizer.step()/zero_grad()
cdef object _gen_obj = 0             # the same, as a Python int (no boxing per node)
cdef object _bw_root_gen = None      # newest generation among the roots of the
                                     # running backward (for the stale hint)
cdef str _pkg_dir = ""


cdef extern from *:
    """
    /* Give a Python subclass the base's C arithmetic slots.  Cython exposes
       the dunders as METH_COEXIST methods, so CPython gives a heap subclass
       the generic slot_nb_* (a method lookup and a call per operation).  Only
       slots the subclass does not override in Python are copied. */
    static void cg_copy_number_slot(PyObject *sub, PyObject *base, int which) {
        PyNumberMethods *s = ((PyTypeObject *)sub)->tp_as_number;
        PyNumberMethods *b = ((PyTypeObject *)base)->tp_as_number;
        switch (which) {
        case 0: s->nb_add = b->nb_add; break;
        case 1: s->nb_subtract = b->nb_subtract; break;
        case 2: s->nb_multiply = b->nb_multiply; break;
        case 3: s->nb_true_divide = b->nb_true_divide; break;
        case 4: s->nb_power = b->nb_power; break;
        case 5: s->nb_negative = b->nb_negative; break;
        case 6: s->nb_inplace_add = b->nb_inplace_add; break;
        case 7: s->nb_inplace_subtract = b->nb_inplace_subtract; break;
        case 8: s->nb_inplace_multiply = b->nb_inplace_multiply; break;
        case 9: s->nb_inplace_true_divide = b->nb_inplace_true_divide; break;
        }
    }
    """
    void cg_copy_number_slot(object sub, object base, int which)

cdef extern from *:
    """
    /* Tensors made by the compiled ops start untracked by the cyclic GC (see
       _new_tensor).  Setting an attribute from Python to an object that can
       take part in a cycle (a hook list, a __dict__ entry, a FunctionNode...)
       puts the tensor back under the collector's watch. */
    static int cg_tensor_setattro(PyObject *self, PyObject *name, PyObject *value) {
        int r = PyObject_GenericSetAttr(self, name, value);
        if (r == 0 && value != NULL && PyObject_IS_GC(value)
                && !PyObject_GC_IsTracked(self))
            PyObject_GC_Track(self);
        return r;
    }
    static void cg_install_setattro(PyObject *cls) {
        ((PyTypeObject *)cls)->tp_setattro = cg_tensor_setattro;
        PyType_Modified((PyTypeObject *)cls);
    }
    """
    void cg_install_setattro(object cls)

cdef extern from *:
    """
    /* Free lists for the objects every op makes: the result tensor (an
       exact cygrad.Tensor), its version counter and its backward node (an
       EWNode).  CPython's generic allocation, GC link and free cost ~150-250
       instructions per object (callgrind, scalar chain), and a training loop
       frees one iteration's graph just before building the next one of the
       same size.
       Each list is installed as its type's tp_alloc/tp_free (subclasses keep
       CPython's own: a heap type gets fresh slots).  An object is kept only
       after its whole dealloc ran (fields cleared, weakrefs and managed dict
       cleared, untracked), and comes back as PyType_GenericAlloc returns a
       new one: zeroed, pre-header included, referenced once, holding its
       type, tracked when the type is GC.  Pre-header layout (GC head, then
       the managed-dict pointers in front of it) is CPython 3.11's; elsewhere,
       or if the caller's measurement disagrees, the generic slots stay. */
    #if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000 && \
        !defined(PYPY_VERSION)
      #define CG_FREELISTS 1
    #else
      #define CG_FREELISTS 0
    #endif
    typedef struct {
        PyTypeObject *type;
        size_t pre;             /* bytes in front of the object */
        int gc;
        Py_ssize_t n, cap, max;   /* held, current cap, largest cap */
        PyObject **objs;
    } cg_freelist;
    #define CG_NFL 3
    static cg_freelist cg_fl[CG_NFL];   /* Tensor, EWNode, Version */

    static inline cg_freelist *cg_fl_of(PyTypeObject *type) {
        if (type == cg_fl[0].type) return &cg_fl[0];
        if (type == cg_fl[1].type) return &cg_fl[1];
        if (type == cg_fl[2].type) return &cg_fl[2];
        return NULL;
    }

    static PyObject *cg_fl_alloc(PyTypeObject *type, Py_ssize_t nitems) {
        cg_freelist *fl = cg_fl_of(type);
        if (fl != NULL && fl->n > 0 && nitems == 0) {
            PyObject *o = fl->objs[--fl->n];
            memset((char *)o - fl->pre, 0, fl->pre + (size_t)_PyObject_SIZE(type));
            PyObject_Init(o, type);
            if (fl->gc) PyObject_GC_Track(o);
            return o;
        }
        /* As the 0-d pool: hold no more than were ever asked for in vain. */
        if (fl != NULL && fl->cap < fl->max) fl->cap++;
        return PyType_GenericAlloc(type, nitems);
    }

    static void cg_fl_free(void *p) {
        PyObject *o = (PyObject *)p;
        cg_freelist *fl = cg_fl_of(Py_TYPE(o));
        if (fl != NULL && fl->n < fl->cap
                && !(fl->gc && PyObject_GC_IsTracked(o))) {
            fl->objs[fl->n++] = o;
            return;
        }
        if (PyType_IS_GC(Py_TYPE(o))) PyObject_GC_Del(p);
        else PyObject_Free(p);
    }

    /* Give ``cls`` a free list of at most ``max`` objects, if its pre-header
       is the ``pre`` bytes measured by the caller.  Returns 1 if installed. */
    static int cg_fl_install(int slot, PyObject *cls, Py_ssize_t pre,
                             Py_ssize_t max) {
    #if CG_FREELISTS
        PyTypeObject *t = (PyTypeObject *)cls;
        cg_freelist *fl = &cg_fl[slot];
        int gc = PyType_IS_GC(t);
        size_t expect = (gc ? 2 * sizeof(void *) : 0)               /* GC head */
            + ((t->tp_flags & Py_TPFLAGS_MANAGED_DICT) ? 2 * sizeof(void *) : 0);
        if (fl->type != NULL || t->tp_itemsize != 0 || pre < 0 || max <= 0
                || (size_t)pre != expect || t->tp_alloc != PyType_GenericAlloc
                || t->tp_free != (gc ? PyObject_GC_Del : PyObject_Free))
            return 0;
        fl->objs = (PyObject **)PyMem_Malloc((size_t)max * sizeof(PyObject *));
        if (fl->objs == NULL) return 0;
        fl->type = t;
        fl->pre = (size_t)pre;
        fl->gc = gc;
        fl->n = 0;
        fl->cap = 0;
        fl->max = max;
        t->tp_alloc = cg_fl_alloc;
        t->tp_free = cg_fl_free;
        PyType_Modified(t);
        return 1;
    #else
        return 0;
    #endif
    }

    /* Objects held by list ``slot`` (-1: not installed). */
    static Py_ssize_t cg_fl_size(int slot) {
        return cg_fl[slot].type == NULL ? -1 : cg_fl[slot].n;
    }

    /* Give every held object back to the allocator. */
    static void cg_fl_clear(void) {
        int i;
        for (i = 0; i < CG_NFL; i++) {
            cg_freelist *fl = &cg_fl[i];
            while (fl->n > 0) {
                char *mem = (char *)fl->objs[--fl->n] - fl->pre;
                PyObject_Free(mem);
            }
        }
    }
    """
    int cg_fl_install(int slot, object cls, Py_ssize_t pre, Py_ssize_t max)

    Py_ssize_t cg_fl_size(int slot)
    void cg_fl_clear()

# Largest free lists (objects of each type): enough for the graph of a
# 5,000-step scalar chain, at most ~8 MB held in all (_clear_caches() gives
# it back).
DEF FREELIST_MAX = 16384

_NUMBER_SLOTS = ("__add__", "__sub__", "__mul__", "__truediv__", "__pow__",
                 "__neg__", "__iadd__", "__isub__", "__imul__", "__itruediv__")


def _inherit_number_slots(cls):
    """Make ``cls`` (a Python subclass of TensorBase) call our C slots directly.

    Call again after assigning a dunder on the class from Python.
    """
    cdef int i
    for i in range(len(_NUMBER_SLOTS)):
        name = _NUMBER_SLOTS[i]
        for k in cls.__mro__:
            if k is TensorBase:
                cg_copy_number_slot(cls, TensorBase, i)
                break
            if name in k.__dict__:
                break


def _set_tensor_hooks(grad_warning, backward_fn):
    """cygrad._tensor's non-leaf .grad warning and autograd.backward."""
    global _grad_warning, _backward_fn
    _grad_warning = grad_warning
    _backward_fn = backward_fn


def _set_graph_matmul(fn):
    """cygrad.ops' differentiable matmul backward (create_graph)."""
    global _graph_matmul
    _graph_matmul = fn


def _install(tensor_cls, graph_unary, graph_binary, graph_sum_to, pkg_dir):
    """Called once by cygrad at import: connect the Python layer."""
    global _TensorCls, _graph_unary, _graph_binary, _graph_sum_to, _pkg_dir
    _TensorCls = tensor_cls
    _inherit_number_slots(tensor_cls)
    cg_install_setattro(tensor_cls)
    # Free lists (see cg_fl_install), each checked against the pre-header
    # in front of an object as sys.getsizeof counts it.
    for slot, cls in enumerate((tensor_cls, EWNode, Version)):
        probe = cls.__new__(cls)
        cg_fl_install(slot, cls, sys.getsizeof(probe) - cls.__basicsize__,
                      FREELIST_MAX)
        del probe
    _graph_unary = graph_unary
    _graph_binary = graph_binary
    _graph_sum_to = graph_sum_to
    _pkg_dir = pkg_dir
    cg_set_pkg_dir(pkg_dir)


# --- grad mode ----------------------------------------------------------------

def is_grad_enabled():
    """True when operations are recorded for autograd in this thread."""
    return cygrad_grad_mode != 0


def _set_grad_mode(bint flag):
    """Set this thread's grad mode; returns the previous mode."""
    global cygrad_grad_mode
    cdef bint prev = cygrad_grad_mode != 0
    cygrad_grad_mode = 1 if flag else 0
    return prev


def is_anomaly_enabled():
    return _anomaly


def _set_anomaly(bint flag):
    global _anomaly
    cdef bint prev = _anomaly
    _anomaly = flag
    return prev


def _set_debug_level(int level):
    global _debug_level
    cdef int prev = _debug_level
    _debug_level = level
    return prev


def _get_debug_level():
    return _debug_level


@cython.final
@cython.no_gc
cdef class Site:
    """Where a forward op ran: a user code object and instruction offset.

    Behaves like the tuple ``(filename, lineno)``; the line number is decoded
    from the code object's line table only when it is read.
    """
    cdef object code
    cdef int lasti

    @property
    def filename(self):
        return self.code.co_filename

    @property
    def lineno(self):
        return PyCode_Addr2Line(<PyCodeObject*>self.code, self.lasti)

    def __len__(self):
        return 2

    def __getitem__(self, i):
        return (self.filename, self.lineno)[i]

    def __iter__(self):
        return iter((self.filename, self.lineno))

    def __eq__(self, other):
        try:
            return tuple(self) == tuple(other)
        except TypeError:
            return NotImplemented

    def __hash__(self):
        return hash(tuple(self))

    def __str__(self):
        return f"{self.filename}:{self.lineno}"

    def __repr__(self):
        return f"Site({self.filename!r}, {self.lineno})"


cdef object _user_site():
    """The innermost user frame outside the cygrad package, as a ``Site``.

    Reads only the frame's code object and instruction offset: no frame
    object, traceback or string is made.  Returns None when capture is off
    (debug level 0) or no user frame exists.
    """
    cdef int lasti = 0
    cdef void* code
    cdef Site site
    cdef Py_ssize_t h
    if _debug_level <= 0:
        return None
    code = cg_user_frame(&lasti)
    if code == NULL:
        return None
    # Sites are immutable, so a loop that runs the same line again shares one
    # object (no allocation per node): a small direct-mapped cache.
    h = ((<Py_ssize_t>code >> 4) ^ lasti) & 63
    site = <Site>_site_cache[h]
    if site is not None and <void*>site.code == code and site.lasti == lasti:
        return site
    site = Site.__new__(Site)
    site.code = <object>code
    site.lasti = lasti
    _site_cache[h] = site
    return site


cdef list _site_cache = [None] * 64


def user_site():
    """Python access to the creation-site capture (for diagnostics)."""
    return _user_site()


cdef extern from *:
    """
    /* Iterative release of node chains.  A node's two inline receivers
       (Node._e0/_e1) would otherwise be freed from inside its dealloc, and
       a chain of a million nodes would recurse a million levels deep (nodes
       are no_gc, so CPython's trashcan cannot help).  A dying node hands the
       receivers it alone holds to a stack (cg_defer); the outermost dying
       node frees them one by one (cg_drain), and their own receivers land on
       the same stack.  Under the GIL; a dealloc that lets another thread run
       only adds to the stack the first thread is draining. */
    static PyObject **cg_pend = NULL;
    static Py_ssize_t cg_npend = 0, cg_cappend = 0;
    static int cg_draining = 0;

    /* Take a reference to ``o`` on the stack when the caller's is its only
       one (the caller then drops its own); 0 when it was not taken. */
    static int cg_defer(PyObject *o) {
        if (o == NULL || o == Py_None || Py_REFCNT(o) != 1) return 0;
        if (cg_npend == cg_cappend) {
            Py_ssize_t cap = cg_cappend ? 2 * cg_cappend : 256;
            PyObject **p = (PyObject **)PyMem_Realloc(cg_pend,
                                                      cap * sizeof(PyObject *));
            if (p == NULL) return 0;     /* then it is freed the usual way */
            cg_pend = p;
            cg_cappend = cap;
        }
        Py_INCREF(o);
        cg_pend[cg_npend++] = o;
        return 1;
    }

    static void cg_drain(void) {
        PyObject *o;
        if (cg_draining) return;
        cg_draining = 1;
        while (cg_npend > 0) {
            o = cg_pend[--cg_npend];
            Py_DECREF(o);
        }
        cg_draining = 0;
    }
    """
    bint cg_defer(PyObject* o) noexcept
    void cg_drain() noexcept


# --- version counters ------------------------------------------------------------

@cython.final
@cython.no_gc
cdef class Version:
    """A version counter shared by a tensor, its views and its detached aliases."""
    cdef public long long v
    cdef public object last_write    # (op name, site, old, new) of the last in-place
                                     # write while saved, for the version error
    cdef public bint saved           # some node saved this storage for backward:
                                     # only then do in-place writes record a site


# --- tensors -----------------------------------------------------------------------

@cython.trashcan(True)
cdef class TensorBase:
    """Compiled base of ``cygrad.Tensor``: storage, graph links and hot operators."""
    cdef public object _arr
    cdef public object _grad
    cdef public Node _grad_fn
    cdef public int _out_nr
    cdef public bint _requires_grad
    cdef public bint _retains_grad
    cdef public Version _ver
    cdef public object _hooks          # leaf hooks: list of callables, or None
    cdef public object _post_hooks     # post-accumulate hooks, or None
    cdef public object _base           # the tensor this one is a view of, or None
    cdef public AccumulateGrad _acc    # leaf's gradient sink (holds us weakly)
    cdef public object _origin         # diagnostics: ("no_grad"|"detach", site) or None
    cdef object __weakref__

    def __dealloc__(self):
        cdef object arr = self._arr
        self._arr = None        # so that ``arr`` holds the last reference
        _recycle(arr)

    def _bump_version(self):
        """Record an in-place modification of the storage."""
        self._ver.v += 1

    @property
    def _version(self):
        return self._ver.v

    # The members a training loop touches every step are compiled: as Python
    # methods and properties each cost a frame (~1-2k instructions).

    @property
    def grad(self):
        """The accumulated gradient (leaves, and non-leaves that retain it)."""
        if (self._grad is None and self._grad_fn is not None
                and not self._retains_grad and _grad_warning is not None):
            _grad_warning(self)
        return self._grad

    @grad.setter
    def grad(self, value):
        cdef TensorBase v
        if value is not None:
            if not isinstance(value, TensorBase):
                raise TypeError(
                    f"assigned grad expected to be a Tensor or None but got grad of "
                    f"type {type(value).__name__}")
            v = <TensorBase>value
            if not _same_shape(<cnp.ndarray>v._arr, <cnp.ndarray>self._arr):
                raise RuntimeError(
                    f"attempting to assign a gradient of size "
                    f"{list(v._arr.shape)} to a tensor of size "
                    f"{list(self._arr.shape)}. Please ensure that the gradient and "
                    "the tensor are the same size")
            if v._arr.dtype != self._arr.dtype:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype "
                    f"'{v._arr.dtype}' to a tensor with dtype "
                    f"'{self._arr.dtype}'. Please ensure that the gradient and the "
                    "tensor have the same dtype")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    def item(self):
        """The value of a one-element tensor as a Python number."""
        cdef cnp.ndarray arr = <cnp.ndarray>self._arr
        if cnp.PyArray_SIZE(arr) != 1:
            raise RuntimeError(
                f"a Tensor with {cnp.PyArray_SIZE(arr)} elements cannot be "
                "converted to Scalar (item() needs exactly one element)")
        return arr.item()

    def zero_(self):
        """Fill with zeros in place."""
        cdef cnp.ndarray arr = <cnp.ndarray>self._arr
        if (cygrad_grad_mode and self._requires_grad) or not cnp.PyArray_ISWRITEABLE(
                arr) or not cnp.PyArray_IS_C_CONTIGUOUS(arr):
            return self.fill_(0)        # recorded, refused, or strided: Python
        _check_leaf_inplace(self, "fill_")
        memset(cnp.PyArray_DATA(arr), 0, cnp.PyArray_NBYTES(arr))
        _note_write(self, "fill_")
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph=False,
                 inputs=None):
        """Accumulate d(self)/d(leaf) into ``.grad`` of the leaves that need it."""
        cdef cnp.ndarray arr = <cnp.ndarray>self._arr, seed
        cdef int typenum = cnp.PyArray_TYPE(arr)
        if (gradient is None and inputs is None and not create_graph
                and self._requires_grad and cnp.PyArray_SIZE(arr) == 1
                and (typenum == cnp.NPY_FLOAT or typenum == cnp.NPY_DOUBLE)):
            # The training-loop case (a scalar loss): straight to the engine.
            seed = _empty_nd(cnp.PyArray_NDIM(arr), cnp.PyArray_DIMS(arr), typenum)
            if typenum == cnp.NPY_FLOAT:
                (<float*>cnp.PyArray_DATA(seed))[0] = 1
            else:
                (<double*>cnp.PyArray_DATA(seed))[0] = 1
            with _engine_lock:
                _run_backward((self,), (seed,), bool(retain_graph), False, None,
                              True)
            return
        _backward_fn((self,), None if gradient is None else (gradient,),
                     retain_graph=retain_graph, create_graph=create_graph,
                     inputs=inputs)

    # The binary dunders are C-level slots (c_api_binop_methods, see the file
    # header): they receive the operands in call order, whichever is a Tensor.
    def __add__(a, b):
        return _binary(OP_ADD, a, b)

    def __sub__(a, b):
        return _binary(OP_SUB, a, b)

    def __mul__(a, b):
        return _binary(OP_MUL, a, b)

    def __truediv__(a, b):
        return _binary(OP_DIV, a, b)

    def __pow__(a, b, mod):
        if mod is not None:
            return NotImplemented
        return _binary(OP_POW, a, b)

    def __neg__(self):
        return _unary(OP_NEG, self)

    def __iadd__(self, other):
        return _inplace_operator(OP_ADD, self, other, "add_")

    def __isub__(self, other):
        return _inplace_operator(OP_SUB, self, other, "sub_")

    def __imul__(self, other):
        return _inplace_operator(OP_MUL, self, other, "mul_")

    def __itruediv__(self, other):
        return _inplace_operator(OP_DIV, self, other, "div_")


cdef inline TensorBase _new_tensor(object arr):
    """A fresh Tensor over ``arr``, not tracked by the cyclic GC.

    A new tensor refers only to objects that cannot close a reference cycle
    (an ndarray, its Version, later a no_gc node), so the collector would only
    waste time on it: tracked, the tensors of a scalar chain cost ~1,300
    instructions per step in gen0/gen1 collections (callgrind).  Whoever
    stores a GC object into it (``_track_if`` here, ``cg_tensor_setattro``
    from Python) tracks it again.  Cycles through graph nodes were never
    collectable (nodes are no_gc), so nothing collectable becomes a leak.
    """
    cdef TensorBase t = <TensorBase>cg_alloc(_TensorCls)
    PyObject_GC_UnTrack(<void*>t)
    t._arr = arr
    t._ver = Version.__new__(Version)
    return t


cdef inline void _track_if(TensorBase t, object value) noexcept:
    """Track ``t`` again when it now refers to a GC object (see _new_tensor)."""
    if value is not None and PyObject_IS_GC(value) and not PyObject_GC_IsTracked(t):
        PyObject_GC_Track(<void*>t)


def _wrap(arr, requires_grad=False):
    """A new Tensor over ``arr`` (no copy)."""
    cdef TensorBase t = _new_tensor(arr)
    t._requires_grad = requires_grad
    return t


def _alias(TensorBase src, arr=None, bint share_version=True):
    """A new leaf Tensor sharing ``src``'s storage (and version counter)."""
    cdef TensorBase t = _new_tensor(src._arr if arr is None else arr)
    if share_version:
        t._ver = src._ver
    return t


cdef inline void _untrack(tuple edges) noexcept:
    """Hide a node's edge tuple from the cyclic GC.

    The tuple is reachable only from its (untracked) node, so the collector
    could never traverse into it anyway; untracked, it no longer costs a
    visit in every collection while the graph lives.
    """
    if PyObject_GC_IsTracked(edges):
        PyObject_GC_UnTrack(<void*>edges)


cdef inline Node _edge(TensorBase t):
    """The node that receives ``t``'s gradient: its grad_fn, or its leaf sink."""
    cdef AccumulateGrad acc
    if t._grad_fn is not None:
        return t._grad_fn
    if not t._requires_grad:
        return None
    acc = t._acc
    if acc is None:
        acc = AccumulateGrad.__new__(AccumulateGrad)
        acc._tref = weakref.ref(t)
        acc._n_out = 1
        t._acc = acc
    return acc


def _grad_edge(TensorBase t):
    return _edge(t)


cdef inline void _check_leaf_inplace(TensorBase t, str opname) except *:
    cdef TensorBase b
    if not cygrad_grad_mode:
        return
    if t._grad_fn is None and t._requires_grad:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place "
            f"operation. ({opname} on a leaf of shape {tuple(t._arr.shape)}"
            f"{_at_site()}; update parameters inside `with cygrad.no_grad():` or use "
            "an optimizer from cygrad.optim)")
    b = t._base
    if b is not None and b._grad_fn is None and b._requires_grad:
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an "
            f"in-place operation. ({opname}{_at_site()}; update parameters inside "
            "`with cygrad.no_grad():` or use an optimizer from cygrad.optim)")


cdef str _at_site():
    """" at file:line" of the user's current line, or "" (error messages)."""
    site = _user_site()
    return f" at {site[0]}:{site[1]}" if site is not None else ""


cdef inline void _note_write(TensorBase t, str opname):
    """Advance ``t``'s version; remember who wrote (for the version error)."""
    cdef Version ver = t._ver
    ver.v += 1
    if ver.saved and _debug_level > 0:
        ver.last_write = (opname, _user_site(), ver.v - 1, ver.v)


def _mark_inplace(TensorBase t, str opname):
    """Checks and version bump for an in-place op implemented in Python."""
    _check_leaf_inplace(t, opname)
    _note_write(t, opname)


def _check_inplace(TensorBase t, str opname):
    _check_leaf_inplace(t, opname)


# --- diagnostics support -----------------------------------------------------------
# Nodes made while the debug level is > 0 are kept in a doubly linked list in
# creation order (pointers without references: a node unlinks itself when it
# is freed), so that graph_stats() and the optimizer's leak check can find the
# live graph without a registry that would keep it alive.

cdef void* _live_head = NULL         # oldest
cdef void* _live_tail = NULL         # newest
cdef Py_ssize_t _n_live = 0


cdef inline void _register(Node node) except *:
    """Creation site, generation and live-list entry of a new graph node.

    Every place that makes a node calls this when ``_debug_level > 0``, and
    calls ``_retain(out)`` on its outputs when ``_retain_all`` (the
    retain_grads() scope): explain, viz, graph_stats, the stale-graph hint and
    the leak warning all rely on it.
    """
    global _live_head, _live_tail, _n_live
    node._site = _user_site()
    node._gen = _gen_obj
    node._lprev = _live_tail
    node._lnext = NULL
    if _live_tail != NULL:
        (<Node>_live_tail)._lnext = <void*>node
    else:
        _live_head = <void*>node
    _live_tail = <void*>node
    node._linked = True
    _n_live += 1


cdef inline void _unlink(Node node) noexcept:
    global _live_head, _live_tail, _n_live
    if node._lprev != NULL:
        (<Node>node._lprev)._lnext = node._lnext
    else:
        _live_head = node._lnext
    if node._lnext != NULL:
        (<Node>node._lnext)._lprev = node._lprev
    else:
        _live_tail = node._lprev
    node._lprev = node._lnext = NULL
    node._linked = False
    _n_live -= 1


cdef void _retain(TensorBase t) except *:
    """t.retain_grad() for a new non-leaf (the retain_grads() scope)."""
    cdef Node node = t._grad_fn
    if node._retained is None:
        node._retained = []
    node._retained.append((t._out_nr, weakref.ref(t)))
    t._retains_grad = True


cdef void _note_no_grad(TensorBase res, TensorBase a, TensorBase b) except *:
    """Remember why ``res`` has no history (for explain()).

    Under no_grad: ("no_grad", site).  In grad mode, when no input requires
    grad but one was detached or made under no_grad (possibly through other
    ops): ("derived", site, that first origin).
    """
    if not cygrad_grad_mode:
        res._origin = ("no_grad", _user_site())
        return
    src = a._origin if a is not None and a._origin is not None else (
        b._origin if b is not None else None)
    if src is None:
        return
    if src[0] == "derived":
        src = src[2]
    res._origin = ("derived", _user_site(), src)


def _set_retain_all(bint flag):
    global _retain_all
    cdef bint prev = _retain_all
    _retain_all = flag
    return prev


def _bump_generation():
    """A new training iteration begins (optimizer.step()/zero_grad())."""
    global _generation, _gen_obj
    _generation += 1
    _gen_obj = _generation
    return _generation


def _get_generation():
    return _generation


def _backward_root_gen():
    """Newest generation among the roots of the running (or last) backward."""
    return _bw_root_gen


def live_nodes(before_gen=None, Py_ssize_t limit=-1):
    """Live graph nodes recorded while the debug level was > 0, oldest first.

    before_gen: stop at the first node of that generation or newer.
    limit: return at most this many nodes (-1: all).
    """
    cdef void* p = _live_head
    cdef Node node
    cdef list out = []
    cdef long long g = -1 if before_gen is None else before_gen
    while p != NULL and (limit < 0 or len(out) < limit):
        node = None
        if Py_REFCNT(<object>p) > 0:    # skip nodes being freed right now
            node = <Node>p
            if g >= 0 and node._gen is not None and node._gen >= g:
                break
            out.append(node)
        p = (<Node>p)._lnext
    return out


def n_live_nodes():
    return _n_live


# --- dtype promotion ------------------------------------------------------------------

cdef inline int _category(int typenum) noexcept:
    if typenum == cnp.NPY_BOOL:
        return 0
    if typenum == cnp.NPY_FLOAT or typenum == cnp.NPY_DOUBLE:
        return 2
    return 1


cdef int _default_float = cnp.NPY_FLOAT


def _set_default_dtype(dtype):
    global _default_float
    _default_float = np.dtype(dtype).num


cdef int _scalar_category(object s):
    if isinstance(s, bool) or isinstance(s, np.bool_):
        return 0
    if isinstance(s, int) or isinstance(s, np.integer):
        return 1
    if isinstance(s, float) or isinstance(s, np.floating):
        return 2
    return -1


cdef int _promote_tensors(int ta, int ndim_a, int tb, int ndim_b):
    """torch's rule: dimensioned tensors outrank 0-d ones within a category."""
    cdef int ca = _category(ta), cb = _category(tb)
    if ta == tb:
        return ta
    if ca != cb:
        # A higher category wins outright (int64 + float32 -> float32).
        return ta if ca > cb else tb
    if (ndim_a == 0) != (ndim_b == 0):
        return tb if ndim_a == 0 else ta
    return np.result_type(np.dtype(cnp.PyArray_DescrFromType(ta)),
                          np.dtype(cnp.PyArray_DescrFromType(tb))).num


cdef int _promote_scalar(int tt, object s):
    cdef int cs = _scalar_category(s), ct = _category(tt)
    if cs <= ct:
        return tt
    if cs == 2:
        return _default_float
    return cnp.NPY_INT64


cdef cnp.ndarray _scalar_array(object s, int typenum):
    cdef cnp.ndarray out = _empty_nd(0, NULL, typenum)
    if typenum == cnp.NPY_FLOAT:
        (<float*>cnp.PyArray_DATA(out))[0] = <float>(<double>s)
    elif typenum == cnp.NPY_DOUBLE:
        (<double*>cnp.PyArray_DATA(out))[0] = <double>s
    else:
        out[()] = s
    return out


# --- broadcasting -------------------------------------------------------------------------

cdef tuple _broadcast_shape(tuple sa, tuple sb):
    cdef Py_ssize_t na = len(sa), nb = len(sb), n = max(na, nb), i, da, db
    if sa == sb:
        return sa
    out = [0] * n
    for i in range(n):
        da = sa[na - n + i] if na - n + i >= 0 else 1
        db = sb[nb - n + i] if nb - n + i >= 0 else 1
        if da == db or db == 1:
            out[i] = da
        elif da == 1:
            out[i] = db
        else:
            raise RuntimeError(
                f"The size of tensor a ({da}) must match the size of tensor b ({db}) "
                f"at non-singleton dimension {i}: shapes {list(sa)} and {list(sb)} "
                "do not broadcast")
    return tuple(out)


cdef int _fill_strides(cnp.ndarray arr, int ndim, const Py_ssize_t* shape,
                       Py_ssize_t* out) except -1:
    """Element strides of ``arr`` broadcast to ``shape`` (0 on broadcast axes)."""
    cdef int an = cnp.PyArray_NDIM(arr), d, ad
    cdef Py_ssize_t item = cnp.PyArray_ITEMSIZE(arr)
    cdef cnp.npy_intp* st = cnp.PyArray_STRIDES(arr)
    cdef cnp.npy_intp* dims = cnp.PyArray_DIMS(arr)
    for d in range(ndim):
        ad = d - (ndim - an)
        if ad < 0 or dims[ad] == 1:
            out[d] = 0
        else:
            if st[ad] % item:
                raise ValueError("array strides are not a multiple of its item size")
            out[d] = st[ad] // item
    return 0


cdef int _run_kernel(row_fn fn, int nargs, cnp.ndarray out, list args) except -1:
    """Apply ``fn`` with ``out`` as p[0] and ``args`` (arrays) as inputs.

    Every input is broadcast to ``out``'s shape through 0 strides; axes are
    coalesced so that contiguous data runs as one long row.
    """
    cdef int ndim = cnp.PyArray_NDIM(out), k, d, nd
    cdef Py_ssize_t shape[32]
    cdef Py_ssize_t strides[8 * 32]
    cdef Py_ssize_t cshape[32]
    cdef Py_ssize_t cstrides[8 * 32]
    cdef char* base[8]
    cdef Py_ssize_t n = cnp.PyArray_SIZE(out), item = cnp.PyArray_ITEMSIZE(out)
    cdef bint merge
    cdef cnp.ndarray a
    if ndim > 32:
        raise ValueError(f"cygrad supports at most 32 dimensions, got {ndim}")
    if n == 0:
        return 0
    for d in range(ndim):
        shape[d] = cnp.PyArray_DIMS(out)[d]
    _fill_strides(out, ndim, shape, strides)
    base[0] = <char*>cnp.PyArray_DATA(out)
    for k in range(1, nargs):
        a = <cnp.ndarray>args[k - 1]
        if a is None:
            base[k] = NULL
            for d in range(ndim):
                strides[k * ndim + d] = 0
            continue
        _fill_strides(a, ndim, shape, &strides[k * ndim])
        base[k] = <char*>cnp.PyArray_DATA(a)
    # Coalesce: drop size-1 axes, merge axis d into d+1 when every argument
    # steps through them as one.
    nd = 0
    for d in range(ndim):
        if shape[d] == 1:
            continue
        if nd > 0:
            merge = True
            for k in range(nargs):
                if cstrides[k * 32 + nd - 1] != strides[k * ndim + d] * shape[d]:
                    merge = False
                    break
            if merge:
                cshape[nd - 1] *= shape[d]
                for k in range(nargs):
                    cstrides[k * 32 + nd - 1] = strides[k * ndim + d]
                continue
        cshape[nd] = shape[d]
        for k in range(nargs):
            cstrides[k * 32 + nd] = strides[k * ndim + d]
        nd += 1
    # Re-pack strides densely as [k * nd + d].
    for k in range(nargs):
        for d in range(nd):
            strides[k * nd + d] = cstrides[k * 32 + d]
    if n >= GIL_RELEASE_MIN:
        with nogil:
            nd_apply(fn, nargs, nd, cshape, base, strides, item)
    else:
        nd_apply(fn, nargs, nd, cshape, base, strides, item)
    return 0


cdef int _run_like(row_fn fn, int nargs, cnp.ndarray out, object a1, object a2=None,
                   object a3=None, object a4=None) except -1:
    """``_run_kernel(fn, nargs, out, [a1, ...])``, as one flat row when it can.

    The flat call (no list, no stride bookkeeping) needs every input that is
    not None to have ``out``'s shape and dtype, C-contiguous and aligned: the
    backward of a same-shape op, the common case (and every 0-d one).
    """
    cdef PyObject* args[4]            # borrowed: the caller holds them
    cdef char* ptrs[5]
    cdef Py_ssize_t st[5]
    cdef Py_ssize_t n = cnp.PyArray_SIZE(out)
    cdef int k, typenum = cnp.PyArray_TYPE(out)
    cdef cnp.ndarray a
    args[0] = <PyObject*>a1
    args[1] = <PyObject*>a2
    args[2] = <PyObject*>a3
    args[3] = <PyObject*>a4
    ptrs[0] = <char*>cnp.PyArray_DATA(out)
    st[0] = 1
    for k in range(nargs - 1):
        if <object>args[k] is None:
            ptrs[k + 1] = NULL
            st[k + 1] = 0
            continue
        a = <cnp.ndarray>args[k]
        if not (cnp.PyArray_TYPE(a) == typenum and cnp.PyArray_IS_C_CONTIGUOUS(a)
                and cnp.PyArray_ISALIGNED(a) and _same_shape(a, out)):
            return _run_kernel(fn, nargs, out, [a1, a2, a3, a4][:nargs - 1])
        ptrs[k + 1] = <char*>cnp.PyArray_DATA(a)
        st[k + 1] = 1
    if n >= GIL_RELEASE_MIN:
        with nogil:
            fn(n, ptrs, st)
    elif n > 0:
        fn(n, ptrs, st)
    return 0


cdef inline bint _same_shape(cnp.ndarray a, cnp.ndarray b) noexcept:
    cdef int nd = cnp.PyArray_NDIM(a), d
    if nd != cnp.PyArray_NDIM(b):
        return False
    for d in range(nd):
        if cnp.PyArray_DIMS(a)[d] != cnp.PyArray_DIMS(b)[d]:
            return False
    return True


cdef inline int _dt_index(int typenum) noexcept:
    return 0 if typenum == cnp.NPY_FLOAT else 1


# --- the pool of 0-d arrays ---------------------------------------------------------
# A graph of scalar ops (micrograd-style code, the scalar-chain benchmark)
# allocates one 0-d array per op and frees them all when the graph dies.
# NumPy spends ~550 instructions creating such an array and ~250 freeing it
# (data-handler lookup through a context variable, descriptor, flags); a pool
# of dead tensors' 0-d float arrays hands them back for ~20 (callgrind).  The
# pool keeps no more arrays per dtype than the ops have ever asked it for and
# found it empty (each miss raises the cap by one), and never more than
# SCALAR_POOL_MAX (~2 MB in all): code that makes few scalars keeps a few.
DEF SCALAR_POOL_MAX = 16384

cdef extern from *:
    """
    #include <numpy/ndarraytypes.h>
    /* True when ``a`` (exact ndarray, 0-d) can be handed out again as if new:
       it owns its data, is writeable and aligned, has no base, and no weak
       reference can observe its reuse. */
    static int cg_recyclable_0d(PyObject *a, PyArray_Descr *want, Py_ssize_t refs) {
        PyArrayObject_fields *f = (PyArrayObject_fields *)a;
        return Py_TYPE(a) == &PyArray_Type && Py_REFCNT(a) == refs && f->nd == 0
            && f->descr == want && f->base == NULL && f->weakreflist == NULL
            && (f->flags & (NPY_ARRAY_OWNDATA | NPY_ARRAY_WRITEABLE |
                            NPY_ARRAY_ALIGNED))
               == (NPY_ARRAY_OWNDATA | NPY_ARRAY_WRITEABLE | NPY_ARRAY_ALIGNED);
    }
    """
    bint cg_recyclable_0d(object a, void* want, Py_ssize_t refs)

cdef PyObject* _pool_f[SCALAR_POOL_MAX]
cdef PyObject* _pool_d[SCALAR_POOL_MAX]
cdef Py_ssize_t _n_pool_f = 0, _n_pool_d = 0
cdef Py_ssize_t _cap_pool_f = 0, _cap_pool_d = 0
cdef object _descr_f_obj = cnp.PyArray_DescrFromType(cnp.NPY_FLOAT)
cdef object _descr_d_obj = cnp.PyArray_DescrFromType(cnp.NPY_DOUBLE)
cdef void* _descr_f = <void*>_descr_f_obj
cdef void* _descr_d = <void*>_descr_d_obj


cdef inline void _recycle(object arr, Py_ssize_t refs=1) noexcept:
    """Keep a dying tensor's 0-d float array for reuse (see the pool above).

    ``refs``: the references the caller knows of (1: the one it is about to
    drop); any other holder makes the array ineligible.
    """
    global _n_pool_f, _n_pool_d
    if arr is None:
        return
    if _n_pool_f < _cap_pool_f and cg_recyclable_0d(arr, _descr_f, refs):
        Py_INCREF(arr)
        _pool_f[_n_pool_f] = <PyObject*>arr
        _n_pool_f += 1
    elif _n_pool_d < _cap_pool_d and cg_recyclable_0d(arr, _descr_d, refs):
        Py_INCREF(arr)
        _pool_d[_n_pool_d] = <PyObject*>arr
        _n_pool_d += 1


cdef inline void _recycle_results(object results) noexcept:
    """Pool the 0-d gradients a backward node returned that nothing kept
    (held by the ``results`` tuple alone), before the tuple is dropped: the
    backward of a scalar chain made ~2.7 new arrays per step for them."""
    cdef Py_ssize_t i
    cdef object g
    if type(results) is not tuple or Py_REFCNT(results) != 1:
        return
    for i in range(len(<tuple>results)):
        g = (<tuple>results)[i]
        if g is not None:
            _recycle(g, 2)      # the tuple's reference and g's


cdef inline object _pool_pop(int typenum):
    """A pooled 0-d array of ``typenum`` (float32/float64), or None."""
    global _n_pool_f, _n_pool_d, _cap_pool_f, _cap_pool_d
    cdef object arr
    if typenum == cnp.NPY_FLOAT:
        if _n_pool_f == 0:
            if _cap_pool_f < SCALAR_POOL_MAX:
                _cap_pool_f += 1
            return None
        _n_pool_f -= 1
        arr = <object>_pool_f[_n_pool_f]     # a new reference...
        Py_DECREF(arr)                       # ...so drop the pool's one
        return arr
    if typenum == cnp.NPY_DOUBLE:
        if _n_pool_d == 0:
            if _cap_pool_d < SCALAR_POOL_MAX:
                _cap_pool_d += 1
            return None
        _n_pool_d -= 1
        arr = <object>_pool_d[_n_pool_d]
        Py_DECREF(arr)
        return arr
    return None


def _freelist_sizes():
    """(tensors, elementwise nodes, versions) held by the free lists, -1
    where none is installed (tests)."""
    return cg_fl_size(0), cg_fl_size(1), cg_fl_size(2)


def _clear_caches():
    """Give the memory of the free lists and of the 0-d pool back."""
    global _n_pool_f, _n_pool_d
    cg_fl_clear()
    while _n_pool_f > 0:
        _n_pool_f -= 1
        Py_DECREF(<object>_pool_f[_n_pool_f])
    while _n_pool_d > 0:
        _n_pool_d -= 1
        Py_DECREF(<object>_pool_d[_n_pool_d])


def _scalar_pool_size():
    """((float32 held, cap), (float64 held, cap)) of the 0-d pool (tests)."""
    return (_n_pool_f, _cap_pool_f), (_n_pool_d, _cap_pool_d)


cdef inline cnp.ndarray _empty_nd(int nd, cnp.npy_intp* dims, int typenum):
    """A new C-contiguous array (kernels write every element)."""
    cdef object arr
    if nd == 0:
        arr = _pool_pop(typenum)
        if arr is not None:
            return <cnp.ndarray>arr
    return cnp.PyArray_EMPTY(nd, dims, typenum, 0)


cdef cnp.ndarray _empty_like_shape(tuple shape, int typenum):
    cdef cnp.npy_intp dims[32]
    cdef int nd = len(shape), d
    if nd > 32:
        raise ValueError(f"cygrad supports at most 32 dimensions, got {nd}")
    for d in range(nd):
        dims[d] = shape[d]
    return cnp.PyArray_EMPTY(nd, dims, typenum, 0)


cdef inline cnp.ndarray _as_float_array(cnp.ndarray a, int typenum):
    if cnp.PyArray_TYPE(a) != typenum:
        return a.astype(cnp.PyArray_DescrFromType(typenum))
    if not cnp.PyArray_ISALIGNED(a):
        return np.array(a)
    return a


# --- elementwise ops -------------------------------------------------------------------

cdef object _binary(int op, object a, object b):
    cdef TensorBase ta = None, tb = None
    cdef cnp.ndarray aa, ab, out
    cdef int typenum, t_a, t_b
    cdef bint need_grad
    cdef tuple shape
    if isinstance(a, TensorBase):
        ta = <TensorBase>a
        aa = <cnp.ndarray>ta._arr
    if isinstance(b, TensorBase):
        tb = <TensorBase>b
        ab = <cnp.ndarray>tb._arr
    if ta is not None and tb is not None:
        t_a = cnp.PyArray_TYPE(aa)
        t_b = cnp.PyArray_TYPE(ab)
        typenum = t_a if t_a == t_b else _promote_tensors(
            t_a, cnp.PyArray_NDIM(aa), t_b, cnp.PyArray_NDIM(ab))
    elif ta is not None:
        if op == OP_POW and (type(b) is int or type(b) is float) and b == 2 and (
                cnp.PyArray_TYPE(aa) == cnp.NPY_FLOAT
                or cnp.PyArray_TYPE(aa) == cnp.NPY_DOUBLE):
            # x ** 2: torch's x * x, one rounding, and a cheaper backward.
            return _unary(OP_SQUARE, ta)
        if _scalar_category(b) < 0:
            if isinstance(b, np.ndarray) and b.dtype.kind in "biuf":
                # torch treats an array operand as a tensor (no gradient).
                return _binary(op, a, _new_tensor(b))
            return NotImplemented
        typenum = _promote_scalar(cnp.PyArray_TYPE(aa), b)
    elif tb is not None:
        if _scalar_category(a) < 0:
            if isinstance(a, np.ndarray) and a.dtype.kind in "biuf":
                return _binary(op, _new_tensor(a), b)
            return NotImplemented
        typenum = _promote_scalar(cnp.PyArray_TYPE(ab), a)
    else:
        return NotImplemented
    if op == OP_SUB and (
            (ta is not None and cnp.PyArray_TYPE(aa) == cnp.NPY_BOOL) or
            (tb is not None and cnp.PyArray_TYPE(ab) == cnp.NPY_BOOL) or
            _scalar_category(a) == 0 or _scalar_category(b) == 0):
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. "
            "If you are trying to invert a mask, use the `~` or `logical_not()` "
            "operator instead.")
    if op == OP_DIV and _category(typenum) < 2:
        typenum = _default_float
    if op == OP_POW and _category(typenum) < 2:
        if (ta is not None and _category(cnp.PyArray_TYPE(aa)) == 2) or (
                tb is not None and _category(cnp.PyArray_TYPE(ab)) == 2):
            typenum = _default_float
    if ta is None:
        aa = _scalar_array(a, typenum)
    if tb is None:
        ab = _scalar_array(b, typenum)

    cdef char* ptrs[3]
    cdef Py_ssize_t st[3]
    cdef Py_ssize_t n
    cdef row_fn fn
    cdef TensorBase res_t
    if ((typenum == cnp.NPY_FLOAT or typenum == cnp.NPY_DOUBLE)
            and cnp.PyArray_TYPE(aa) == typenum and cnp.PyArray_TYPE(ab) == typenum
            and cnp.PyArray_IS_C_CONTIGUOUS(aa) and cnp.PyArray_IS_C_CONTIGUOUS(ab)
            and cnp.PyArray_ISALIGNED(aa) and cnp.PyArray_ISALIGNED(ab)):
        # Fast path: equal shapes, or a tensor with a scalar (0-d) operand.
        if _same_shape(aa, ab) or (cnp.PyArray_NDIM(ab) == 0 and tb is None):
            out = _empty_nd(cnp.PyArray_NDIM(aa), cnp.PyArray_DIMS(aa), typenum)
            st[1] = 1
        elif cnp.PyArray_NDIM(aa) == 0 and ta is None:
            out = _empty_nd(cnp.PyArray_NDIM(ab), cnp.PyArray_DIMS(ab), typenum)
            st[1] = 0
        else:
            out = None
        if out is not None:
            n = cnp.PyArray_SIZE(out)
            st[0] = 1
            st[2] = 1 if cnp.PyArray_SIZE(ab) == n else 0
            if st[1] == 1 and cnp.PyArray_SIZE(aa) != n:
                st[1] = 0
            ptrs[0] = <char*>cnp.PyArray_DATA(out)
            ptrs[1] = <char*>cnp.PyArray_DATA(aa)
            ptrs[2] = <char*>cnp.PyArray_DATA(ab)
            fn = binary_fwd(op, _dt_index(typenum))
            if n >= GIL_RELEASE_MIN:
                with nogil:
                    fn(n, ptrs, st)
            elif n > 0:
                fn(n, ptrs, st)
            res_t = _new_tensor(out)
            if cygrad_grad_mode and ((ta is not None and ta._requires_grad) or (
                    tb is not None and tb._requires_grad)):
                _make_binary_node(op, res_t, ta, tb, aa, ab, out, None, True)
            elif _debug_level > 0 and (
                    (ta is not None and (ta._requires_grad or ta._origin is not None))
                    or (tb is not None and (tb._requires_grad or
                                            tb._origin is not None))):
                _note_no_grad(res_t, ta, tb)
            return res_t

    if typenum != cnp.NPY_FLOAT and typenum != cnp.NPY_DOUBLE:
        # Integer and bool tensors: exact NumPy arithmetic, never a gradient.
        dt = cnp.PyArray_DescrFromType(typenum)
        res = _np_ufuncs[BINARY_NAMES[op]](aa.astype(dt, copy=False),
                                           ab.astype(dt, copy=False))
        return _new_tensor(np.asarray(res))

    aa = _as_float_array(aa, typenum)
    ab = _as_float_array(ab, typenum)
    shape = _broadcast_shape((<object>aa).shape, (<object>ab).shape)
    out = _empty_like_shape(shape, typenum)
    _run_kernel(binary_fwd(op, _dt_index(typenum)), 3, out, [aa, ab])

    res_t = _new_tensor(out)
    need_grad = cygrad_grad_mode and (
        (ta is not None and ta._requires_grad) or (tb is not None and tb._requires_grad))
    if need_grad:
        _make_binary_node(op, res_t, ta, tb, aa, ab, out, shape, False)
    elif _debug_level > 0 and (
            (ta is not None and (ta._requires_grad or ta._origin is not None)) or
            (tb is not None and (tb._requires_grad or tb._origin is not None))):
        _note_no_grad(res_t, ta, tb)
    return res_t


cdef void _make_binary_node(int op, TensorBase res, TensorBase ta, TensorBase tb,
                            cnp.ndarray aa, cnp.ndarray ab, cnp.ndarray out,
                            tuple shape, bint exact) except *:
    """Record the backward node of ``res = op(a, b)``.

    ``exact``: aa/ab are the tensors' own arrays and have the output's shape
    (the fast path), so no reduction or cast is ever needed.
    """
    cdef EWNode node = EWNode.__new__(EWNode)
    cdef bint ga = ta is not None and ta._requires_grad
    cdef bint gb = tb is not None and tb._requires_grad
    cdef int bits = ((BINARY_SAVE_BITS[op][0] if ga else 0)
                     | (BINARY_SAVE_BITS[op][1] if gb else 0))
    cdef bint need_a = bits & 1
    cdef bint need_b = bits & 2
    cdef bint need_y = bits & 4
    node.op = op
    node.binary = True
    node._n_out = 1
    node._n_in = 2
    if ga:
        node._e0 = _edge(ta)
    if gb:
        node._e1 = _edge(tb)
    if ga and ta._out_nr != 0 or gb and tb._out_nr != 0:
        node._nrs = (ta._out_nr if ga else 0, tb._out_nr if gb else 0)
    if not exact and ((ga and ((<object>aa).shape != shape or aa is not ta._arr)) or (
            gb and ((<object>ab).shape != shape or ab is not tb._arr))):
        node._in_meta = (
            (ta._arr.shape, ta._arr.dtype) if ga and (
                (<object>aa).shape != shape or aa is not ta._arr) else None,
            (tb._arr.shape, tb._arr.dtype) if gb and (
                (<object>ab).shape != shape or ab is not tb._arr) else None)
    if need_a:
        node.sa = aa
        node.ta = ta
        if ta is not None:
            node.va = ta._ver
            node.na = ta._ver.v
            ta._ver.saved = True
    if need_b:
        node.sb = ab
        node.tb = tb
        if tb is not None:
            node.vb = tb._ver
            node.nb = tb._ver.v
            tb._ver.saved = True
    if need_y:
        node.sy = out
        node.vy = res._ver
        node.ny = 0
        res._ver.saved = True
    node._has_saved = need_a or need_b or need_y
    if _debug_level > 0:
        _register(node)
    res._grad_fn = node
    res._requires_grad = True
    if _retain_all:
        _retain(res)


cdef object _unary(int op, TensorBase t):
    cdef cnp.ndarray x = <cnp.ndarray>t._arr, out
    cdef int typenum = cnp.PyArray_TYPE(x)
    if typenum != cnp.NPY_FLOAT and typenum != cnp.NPY_DOUBLE:
        if op == OP_NEG:
            if typenum == cnp.NPY_BOOL:
                raise RuntimeError(
                    "Negation, the `-` operator, on a bool tensor is not supported. "
                    "If you are trying to invert a mask, use the `~` or "
                    "`logical_not()` operator instead.")
            return _new_tensor(np.negative(x))
        x = x.astype(cnp.PyArray_DescrFromType(_default_float))
        typenum = _default_float
    cdef char* ptrs[2]
    cdef Py_ssize_t st[2]
    cdef Py_ssize_t n
    cdef row_fn fn
    if cnp.PyArray_IS_C_CONTIGUOUS(x) and cnp.PyArray_ISALIGNED(x):
        # Fast path: one flat row, no stride bookkeeping.
        out = _empty_nd(cnp.PyArray_NDIM(x), cnp.PyArray_DIMS(x), typenum)
        n = cnp.PyArray_SIZE(out)
        ptrs[0] = <char*>cnp.PyArray_DATA(out)
        ptrs[1] = <char*>cnp.PyArray_DATA(x)
        st[0] = st[1] = 1
        fn = unary_fwd(op, _dt_index(typenum))
        if n >= GIL_RELEASE_MIN:
            with nogil:
                fn(n, ptrs, st)
        elif n > 0:
            fn(n, ptrs, st)
    else:
        x = _as_float_array(x, typenum)
        out = _empty_like_shape((<object>x).shape, typenum)
        _run_kernel(unary_fwd(op, _dt_index(typenum)), 2, out, [x])
    cdef TensorBase res = _new_tensor(out)
    if cygrad_grad_mode and t._requires_grad:
        _make_unary_node(op, res, t, x, out)
    elif _debug_level > 0 and (
            t._requires_grad or t._origin is not None):
        _note_no_grad(res, t, None)
    return res


cdef void _make_unary_node(int op, TensorBase res, TensorBase t, cnp.ndarray x,
                           cnp.ndarray out) except *:
    cdef EWNode node = EWNode.__new__(EWNode)
    cdef int bits = UNARY_SAVE_BITS[op]
    node.op = op
    node.binary = False
    node._n_out = 1
    node._n_in = 1
    node._e0 = _edge(t)
    if t._out_nr != 0:
        node._nrs = (t._out_nr,)
    if x is not t._arr and x.dtype != t._arr.dtype:
        node._in_meta = ((t._arr.shape, t._arr.dtype),)
    if bits & 1:
        node.sa = x
        node.ta = t
        node.va = t._ver
        node.na = t._ver.v
        t._ver.saved = True
    if bits & 4:
        node.sy = out
        node.vy = res._ver
        node.ny = 0
        res._ver.saved = True
    node._has_saved = bits != 0
    if _debug_level > 0:
        _register(node)
    res._grad_fn = node
    res._requires_grad = True
    if _retain_all:
        _retain(res)


def unary_method(str name):
    """A compiled function ``f(input)`` applying table op ``name``.

    Cython functions bind as methods, so ``Tensor.tanh = unary_method("tanh")``
    costs no Python frame per call (measured: the Python wrapper was ~1,900
    instructions of the scalar chain's ~3,000 per tanh).
    """
    cdef int op = UNARY_OPS[name][0]

    def fn(TensorBase input):
        return _unary(op, input)
    fn.__name__ = name
    fn.__qualname__ = name
    return fn


def unary(str name, TensorBase t):
    """Apply the elementwise op ``name`` of the kernel table to ``t``."""
    return _unary(UNARY_OPS[name][0], t)


def binary(str name, a, b):
    """Apply the binary elementwise op ``name`` (broadcasting) to a and b."""
    res = _binary(BINARY_OPS[name][0], a, b)
    if res is NotImplemented:
        raise TypeError(
            f"{name}(): expected Tensor or number arguments, got "
            f"{type(a).__name__} and {type(b).__name__}")
    return res


cdef object _inplace_binary(int op, TensorBase self, object other, str opname):
    """self <op>= other, in place, with torch's autograd rules."""
    cdef cnp.ndarray arr = <cnp.ndarray>self._arr, src, out
    cdef int typenum = cnp.PyArray_TYPE(arr)
    cdef TensorBase to = other if isinstance(other, TensorBase) else None
    cdef bint need_grad
    cdef TensorBase res
    if to is None and _scalar_category(other) < 0:
        return NotImplemented
    if not cnp.PyArray_ISWRITEABLE(arr):
        raise ValueError(f"{opname}: the tensor's memory is read-only")
    if to is not None:
        rt = _promote_tensors(typenum, 1, cnp.PyArray_TYPE(<cnp.ndarray>to._arr), 1)
    else:
        rt = _promote_scalar(typenum, other)
    if op == OP_DIV and _category(rt) < 2:
        rt = _default_float
    if _category(rt) > _category(typenum):
        raise RuntimeError(
            f"result type {np.dtype(cnp.PyArray_DescrFromType(rt))} can't be cast "
            f"to the desired output type {arr.dtype} ({opname})")
    if to is not None and not _same_shape(arr, <cnp.ndarray>to._arr):
        bshape = _broadcast_shape((<object>arr).shape, to._arr.shape)
        if bshape != (<object>arr).shape:
            raise RuntimeError(
                f"output with shape {list((<object>arr).shape)} doesn't match the "
                f"broadcast shape {list(bshape)} ({opname})")
    _check_leaf_inplace(self, opname)
    need_grad = cygrad_grad_mode and (
        self._requires_grad or (to is not None and to._requires_grad))
    if need_grad:
        # Compute out of place (the node saves the old value if it needs it),
        # then write the result into self's storage and rebase self's history.
        old = _alias(self, arr.copy(), False)
        (<TensorBase>old)._grad_fn = self._grad_fn
        _track_if(<TensorBase>old, self._grad_fn)
        (<TensorBase>old)._out_nr = self._out_nr
        (<TensorBase>old)._requires_grad = self._requires_grad
        (<TensorBase>old)._acc = self._acc if self._grad_fn is None else None
        res = _binary(op, old, other)
        np.copyto(arr, res._arr, casting="unsafe")
        self._grad_fn = res._grad_fn
        _track_if(self, self._grad_fn)
        self._out_nr = 0
        self._requires_grad = True
        # A saved output of the new node is the result array, which self no
        # longer aliases, so it stays valid.
        _note_write(self, opname)
        return self
    if typenum != cnp.NPY_FLOAT and typenum != cnp.NPY_DOUBLE:
        res = _binary(op, self, other)
        np.copyto(arr, res._arr, casting="unsafe")
        _note_write(self, opname)
        return self
    src = _as_float_array(to._arr, typenum) if to is not None else _scalar_array(
        other, typenum)
    if (cnp.PyArray_IS_C_CONTIGUOUS(arr) and cnp.PyArray_ISALIGNED(arr)
            and cnp.PyArray_IS_C_CONTIGUOUS(src)
            and (cnp.PyArray_SIZE(src) == cnp.PyArray_SIZE(arr)
                 or cnp.PyArray_SIZE(src) == 1)):
        # One flat row (the broadcast check above makes a same-size operand
        # the same shape): an optimizer's `p -= lr * g`, a scalar update.
        _inplace_row(op, typenum, arr, src)
    else:
        if np.shares_memory(arr, src) and src is not arr:
            src = src.copy()
        _run_kernel(binary_fwd(op, _dt_index(typenum)), 3, arr, [arr, src])
    _note_write(self, opname)
    return self


cdef void _inplace_row(int op, int typenum, cnp.ndarray arr,
                       cnp.ndarray src) except *:
    """arr = arr op src over contiguous arrays; src has arr's size or one
    element.  An operand that overlaps arr without being arr's own buffer
    element for element is refused, as torch refuses it (its check covers
    dense operands; strided ones are copied by the caller)."""
    cdef char* ptrs[3]
    cdef Py_ssize_t st[3]
    cdef Py_ssize_t n = cnp.PyArray_SIZE(arr)
    cdef char* a0 = <char*>cnp.PyArray_DATA(arr)
    cdef char* s0 = <char*>cnp.PyArray_DATA(src)
    cdef Py_ssize_t nb = cnp.PyArray_NBYTES(arr), ns = cnp.PyArray_NBYTES(src)
    cdef row_fn fn = binary_fwd(op, _dt_index(typenum))
    if n == 0:
        return
    if s0 < a0 + nb and a0 < s0 + ns and not (s0 == a0 and ns == nb):
        raise RuntimeError(
            "unsupported operation: some elements of the input tensor and the "
            "written-to tensor refer to a single memory location. Please clone() "
            "the tensor before performing the operation.")
    if not cnp.PyArray_ISALIGNED(src):
        src = np.array(src)
        s0 = <char*>cnp.PyArray_DATA(src)
    ptrs[0] = ptrs[1] = a0
    ptrs[2] = s0
    st[0] = st[1] = 1
    st[2] = 1 if cnp.PyArray_SIZE(src) == n else 0
    if n >= GIL_RELEASE_MIN:
        with nogil:
            fn(n, ptrs, st)
    else:
        fn(n, ptrs, st)


cdef object _inplace_views = None     # fn(name, opname, self, other): the
                                      # operators' view-aware path (cygrad.ops)


def _set_inplace_views(fn):
    global _inplace_views
    _inplace_views = fn


cdef object _inplace_operator(int op, TensorBase self, object other, str opname):
    """``self op= other``.  A tensor that is no view, owns a contiguous array
    (no element shared) and is outside the graph's in-place rules (no grad
    required, or grad mode off: an optimizer's update) goes straight to the
    kernel; anything else takes the view-aware path in Python (rebasing a
    view's history, regenerating views, the overlap error)."""
    if _inplace_views is None or (
            self._base is None
            and not (self._requires_grad and cygrad_grad_mode)
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>self._arr)):
        return _inplace_binary(op, self, other, opname)
    return _inplace_views(BINARY_NAMES[op], opname, self, other)


def inplace_binary(str name, TensorBase self, other, str opname):
    res = _inplace_binary(BINARY_OPS[name][0], self, other, opname)
    if res is NotImplemented:
        raise TypeError(f"{opname}(): expected a Tensor or a number, got "
                        f"{type(other).__name__}")
    return res


# --- graph nodes ------------------------------------------------------------------------

# Not GC-tracked (no_gc): nodes point only backwards, to other nodes and to
# input tensors, so they form no cycles; tracking them made the cyclic GC
# walk every node of a live graph (38% of the scalar chain's instructions
# under callgrind).  No trashcan either (CPython's trashcan needs a GC
# header): freeing a long chain is bounded by the trashcan of the tuples
# (Node -> tuple -> Node) and of TensorBase (Node -> saved tensor -> Node).
@cython.no_gc
cdef class Node:
    """A backward function in the graph (``grad_fn``)."""
    # Per input, the Node receiving its gradient (None: no gradient).  The
    # first two live in the node itself (no tuple per op); a node with more
    # inputs keeps them all in ``_next``.  Read them with _child/_children.
    cdef int _n_in             # inputs
    cdef Node _e0, _e1
    cdef tuple _next           # all receivers when _n_in > 2, else None
    cdef tuple _nrs            # per input: which output of that node, or None (all 0)
    cdef tuple _in_meta        # per input: (shape, dtype) to check/reduce to, or None
    cdef int _n_out
    cdef bint _freed
    cdef bint _has_saved
    cdef public object _pre_hooks    # list of (out_nr, fn) from Tensor.register_hook
    cdef public object _retained     # list of (out_nr, weakref) from retain_grad()
    cdef public object _site         # (filename, lineno) of the forward call
    cdef public object _gen          # optimizer generation at creation (diagnostics)
    cdef void* _lprev                # live-node list (diagnostics; no references)
    cdef void* _lnext
    cdef bint _linked
    # engine scratch
    cdef Py_ssize_t _deps
    cdef long long _run
    cdef object _buf
    cdef bint _needed
    cdef object __weakref__

    def __dealloc__(self):
        if self._linked:
            _unlink(self)
        # The receivers this node alone keeps alive die after this dealloc,
        # not inside it: a chain of a million nodes is freed in a loop.
        if cg_defer(<PyObject*>self._e0):
            self._e0 = None
        if cg_defer(<PyObject*>self._e1):
            self._e1 = None
        cg_drain()

    cdef object apply(self, object grads, bint graph):
        raise NotImplementedError

    cdef void release(self):
        pass

    def name(self):
        return type(self).__name__

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"

    @property
    def next_functions(self):
        cdef Py_ssize_t i
        return tuple(
            (_child(self, i), self._nrs[i] if self._nrs is not None else 0)
            for i in range(self._n_in))

    @property
    def _saved_freed(self):
        return self._freed

    @property
    def _saved_bytes(self):
        return self.saved_nbytes()

    cpdef Py_ssize_t saved_nbytes(self):
        return 0

    def _saved_shapes(self):
        return []

    def register_prehook(self, fn):
        if self._pre_hooks is None:
            self._pre_hooks = []
        entry = (-1, fn)
        self._pre_hooks.append(entry)
        return _HookHandle(self._pre_hooks, entry)

    @property
    def metadata(self):
        return {}


cdef inline Node _child(Node node, Py_ssize_t i):
    """The receiver of input ``i``'s gradient (i < node._n_in), or None."""
    if node._next is not None:
        return <Node>node._next[i]      # holds Nodes or None: no type test
    return node._e1 if i else node._e0


cdef tuple _children(Node node):
    """Every input's receiver, as a tuple (for the walks outside backward)."""
    if node._next is not None:
        return node._next
    if node._n_in == 0:
        return ()
    if node._n_in == 1:
        return (node._e0,)
    return (node._e0, node._e1)


cdef void _set_children(Node node, tuple receivers) except *:
    cdef Py_ssize_t n = len(receivers)
    node._n_in = n
    if n > 2:
        node._next = receivers
        _untrack(receivers)
        return
    if n > 0:
        node._e0 = receivers[0]
    if n > 1:
        node._e1 = receivers[1]


class _HookHandle:
    """Returned by register_hook: ``remove()`` unregisters the hook."""

    def __init__(self, lst, entry):
        self._lst = lst
        self._entry = entry

    def remove(self):
        try:
            self._lst.remove(self._entry)
        except ValueError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _make_handle(lst, entry):
    return _HookHandle(lst, entry)


@cython.final
@cython.no_gc
cdef class AccumulateGrad(Node):
    """Sink of a leaf's gradient: sums into ``.grad`` (holds the leaf weakly)."""
    cdef object _tref

    @property
    def variable(self):
        return self._tref()

    def name(self):
        return "AccumulateGrad"


cdef str _describe(object arr):
    return f"[{arr.dtype} tensor of shape {list(arr.shape)}]"


cdef void _check_version(Version ver, long long expected, object arr, Node node,
                         str what) except *:
    if ver.v == expected:
        return
    msg = (
        "one of the variables needed for gradient computation has been modified "
        f"by an inplace operation: {_describe(arr)}, which is {what} of "
        f"{node.name()}, is at version {ver.v}; expected version {expected} instead."
    )
    lw = ver.last_write
    if lw is not None:
        op, site, old, new = lw
        where = f" at {site[0]}:{site[1]}" if site is not None else ""
        msg += f" It was modified by {op}{where}, version {old} -> {new}."
    msg += (" Hint: the operation that failed was created"
            + (f" at {node._site[0]}:{node._site[1]}" if node._site else "")
            + "; avoid the in-place change, or .clone() the tensor before it.")
    raise RuntimeError(msg)


cdef inline object _freed_error(Node node, object grads=None):
    return RuntimeError(
        "Trying to backward through the graph a second time (or directly access "
        "saved tensors after they have already been freed). Saved intermediate "
        "values of the graph are freed when you call .backward() or "
        "autograd.grad(). Specify retain_graph=True if you need to backward "
        f"through the graph a second time or if you need to access saved tensors "
        f"after calling backward. (node {node.name()}"
        + (f", created at {node._site[0]}:{node._site[1]}" if node._site else "")
        + ")" + _stale_hint(node, grads))


cdef object _stale_hint_fn = None


def _set_stale_hint(fn):
    global _stale_hint_fn
    _stale_hint_fn = fn


cdef str _stale_hint(Node node, object grads):
    if _stale_hint_fn is None:
        return ""
    shape = None
    if grads is not None and not isinstance(grads, list):
        shape = tuple(grads.shape)
    return _stale_hint_fn(node, shape, _bw_root_gen)


@cython.final
@cython.no_gc
cdef class EWNode(Node):
    """Backward of an elementwise op of the kernel table."""
    cdef int op
    cdef bint binary
    cdef object sa, sb, sy           # saved arrays, or None
    cdef TensorBase ta, tb           # saved input tensors (for create_graph)
    cdef Version va, vb, vy
    cdef long long na, nb, ny

    def name(self):
        if self.binary:
            return _NODE_NAMES_B[BINARY_NAMES[self.op]]
        return _NODE_NAMES_U[UNARY_NAMES[self.op]]

    def __dealloc__(self):
        # Whoever drops a 0-d array's last reference offers it to the pool.
        if self._has_saved:
            self._recycle_saved()

    cdef inline void _recycle_saved(self) noexcept:
        cdef object a = self.sa, b = self.sb, y = self.sy
        self.sa = self.sb = self.sy = None
        _recycle(a)
        _recycle(b)
        _recycle(y)

    cdef void release(self):
        if self._has_saved:
            self._recycle_saved()
            self.ta = self.tb = None
            self._freed = True

    cpdef Py_ssize_t saved_nbytes(self):
        cdef Py_ssize_t n = 0
        for a in (self.sa, self.sb, self.sy):
            if a is not None:
                n += a.nbytes
        return n

    def _saved_shapes(self):
        return [(k, tuple(a.shape), a.nbytes) for k, a in
                (("self", self.sa), ("other", self.sb), ("result", self.sy))
                if a is not None]

    cdef void _check(self) except *:
        if self._freed:
            raise _freed_error(self)
        if self.va is not None:
            _check_version(self.va, self.na, self.sa, self, "an input")
        if self.vb is not None:
            _check_version(self.vb, self.nb, self.sb, self, "an input")
        if self.vy is not None:
            _check_version(self.vy, self.ny, self.sy, self, "output 0")

    cdef object apply(self, object grads, bint graph):
        cdef cnp.ndarray g, ga, gb
        cdef int dt, ident, typenum
        if self._freed:
            raise _freed_error(self, grads)
        self._check()
        if graph:
            return self._apply_graph(grads)
        g = <cnp.ndarray>grads
        typenum = cnp.PyArray_TYPE(g)
        dt = _dt_index(typenum)
        if not self.binary:
            ga = _empty_nd(cnp.PyArray_NDIM(g), cnp.PyArray_DIMS(g), typenum)
            if self.op == OP_NEG:
                _run_like(unary_fwd(OP_NEG, dt), 2, ga, g)
            else:
                _run_like(unary_bwd(self.op, dt), 4, ga, g, self.sa, self.sy)
            return (ga,)
        ga = gb = None
        if self._e0 is not None:
            ident = BINARY_IDENT_A[self.op]
            if ident == 1:
                ga = g
            else:
                ga = _empty_nd(cnp.PyArray_NDIM(g), cnp.PyArray_DIMS(g), typenum)
                _run_like(binary_bwd(self.op, 0, dt), 5, ga, g, self.sa, self.sb,
                          self.sy)
        if self._e1 is not None:
            ident = BINARY_IDENT_B[self.op]
            if ident == 1:
                gb = g
            elif ident == 2:
                gb = _empty_nd(cnp.PyArray_NDIM(g), cnp.PyArray_DIMS(g), typenum)
                _run_like(unary_fwd(OP_NEG, dt), 2, gb, g)
            else:
                gb = _empty_nd(cnp.PyArray_NDIM(g), cnp.PyArray_DIMS(g), typenum)
                _run_like(binary_bwd(self.op, 1, dt), 5, gb, g, self.sa, self.sb,
                          self.sy)
        return (ga, gb)

    cdef object _saved_tensor(self, TensorBase t, object arr):
        if t is not None:
            return t
        return _new_tensor(arr) if arr is not None else None

    cdef object _apply_graph(self, object g):
        """The same rule over Tensors, recorded: backward of the backward."""
        cdef TensorBase y = None
        if self.sy is not None:
            # The saved output, re-attached to this node (torch's unpacking).
            y = _new_tensor(self.sy)
            y._ver = self.vy
            y._grad_fn = self
            y._requires_grad = True
        if not self.binary:
            fn = _graph_unary[UNARY_NAMES[self.op]]
            return (fn(g, self._saved_tensor(self.ta, self.sa), y),)
        fa, fb = _graph_binary[BINARY_NAMES[self.op]]
        a = self._saved_tensor(self.ta, self.sa)
        b = self._saved_tensor(self.tb, self.sb)
        return (fa(g, a, b, y) if self._e0 is not None else None,
                fb(g, a, b, y) if self._e1 is not None else None)


cdef object _graph_expand = None      # fn(tensor, shape): differentiable expand


def _set_graph_expand(fn):
    global _graph_expand
    _graph_expand = fn


cdef extern from "numpy/arrayobject.h":
    # NumPy's dot for arrays (BLAS gemm for float32/float64 operands whose
    # strides BLAS accepts, transposed views included; a loop otherwise).
    object PyArray_MatrixProduct2(object a, object b, PyObject* out)


cdef object _graph_matmul = None     # fn(g, a, b, need_a, need_b) over Tensors


@cython.final
@cython.no_gc
cdef class MatmulNode(Node):
    """Backward of a 2-D float matrix product (torch's mm): grad_a = g @ b.T,
    grad_b = a.T @ g.  Saves a only when b needs a gradient, b only when a
    does, as torch."""
    cdef object sa, sb               # saved arrays, or None
    cdef TensorBase ta, tb           # the same as tensors (for create_graph)
    cdef Version va, vb
    cdef long long na, nb

    def name(self):
        return "MmBackward0"

    cdef void release(self):
        if self._has_saved:
            self.sa = self.sb = None
            self.ta = self.tb = None
            self._freed = True

    cpdef Py_ssize_t saved_nbytes(self):
        cdef Py_ssize_t n = 0
        for a in (self.sa, self.sb):
            if a is not None:
                n += a.nbytes
        return n

    def _saved_shapes(self):
        return [(k, tuple(a.shape), a.nbytes) for k, a in
                (("self", self.sa), ("mat2", self.sb)) if a is not None]

    cdef object apply(self, object grads, bint graph):
        cdef cnp.ndarray g
        if self._freed:
            raise _freed_error(self, grads)
        if self.va is not None:
            _check_version(self.va, self.na, self.sa, self, "an input")
        if self.vb is not None:
            _check_version(self.vb, self.nb, self.sb, self, "an input")
        if graph:
            return _graph_matmul(grads, self.ta, self.tb, self._e0 is not None,
                                 self._e1 is not None)
        g = <cnp.ndarray>grads
        ga = gb = None
        if self._e0 is not None:
            ga = PyArray_MatrixProduct2(
                g, cnp.PyArray_Transpose(<cnp.ndarray>self.sb, NULL), NULL)
        if self._e1 is not None:
            gb = PyArray_MatrixProduct2(
                cnp.PyArray_Transpose(<cnp.ndarray>self.sa, NULL), g, NULL)
        return (ga, gb)


def matmul_2d(a, b):
    """a @ b for two 2-D float tensors of one dtype whose inner sizes agree
    (BLAS through NumPy's dot, a compiled node); None for anything else,
    which cygrad.ops.matmul handles (vectors, batches, errors)."""
    cdef TensorBase ta, tb
    cdef cnp.ndarray x, y
    cdef int typenum
    cdef MatmulNode node
    if not isinstance(a, TensorBase) or not isinstance(b, TensorBase):
        return None
    ta = <TensorBase>a
    tb = <TensorBase>b
    x = <cnp.ndarray>ta._arr
    y = <cnp.ndarray>tb._arr
    typenum = cnp.PyArray_TYPE(x)
    if (cnp.PyArray_NDIM(x) != 2 or cnp.PyArray_NDIM(y) != 2
            or cnp.PyArray_TYPE(y) != typenum
            or (typenum != cnp.NPY_FLOAT and typenum != cnp.NPY_DOUBLE)
            or cnp.PyArray_DIMS(x)[1] != cnp.PyArray_DIMS(y)[0]):
        return None
    cdef TensorBase res = _new_tensor(PyArray_MatrixProduct2(x, y, NULL))
    if cygrad_grad_mode and (ta._requires_grad or tb._requires_grad):
        node = MatmulNode.__new__(MatmulNode)
        node._n_out = 1
        node._n_in = 2
        if ta._requires_grad:
            node._e0 = _edge(ta)
            node.sb = y
            node.tb = tb
            node.vb = tb._ver
            node.nb = tb._ver.v
            tb._ver.saved = True
        if tb._requires_grad:
            node._e1 = _edge(tb)
            node.sa = x
            node.ta = ta
            node.va = ta._ver
            node.na = ta._ver.v
            ta._ver.saved = True
        if ta._out_nr != 0 or tb._out_nr != 0:
            node._nrs = (ta._out_nr, tb._out_nr)
        node._has_saved = True
        if _debug_level > 0:
            _register(node)
        res._grad_fn = node
        res._requires_grad = True
        if _retain_all:
            _retain(res)
    elif _debug_level > 0 and (ta._requires_grad or ta._origin is not None
                               or tb._requires_grad or tb._origin is not None):
        _note_no_grad(res, ta, tb)
    return res


@cython.final
@cython.no_gc
cdef class SumNode(Node):
    """Backward of the full sum: grad = g broadcast to the input's shape.

    The hottest reduction (every loss ends with one) gets a compiled node:
    as a Python Function it cost about 85k instructions per forward+backward.
    """
    cdef tuple in_shape

    def name(self):
        return "SumBackward0"

    cdef object apply(self, object grads, bint graph):
        cdef cnp.ndarray g, out
        cdef Py_ssize_t i, n
        cdef int typenum
        cdef double v
        if graph:
            return (_graph_expand(grads, self.in_shape),)
        g = <cnp.ndarray>grads
        typenum = cnp.PyArray_TYPE(g)
        n = 1
        for i in range(len(self.in_shape)):
            n *= <Py_ssize_t>self.in_shape[i]
        if n >= GIL_RELEASE_MIN:
            # Large input: a read-only broadcast view of the 0-d gradient (no
            # write of n elements; consumers read it with stride 0, and a leaf
            # copies it into its own .grad).
            return (np.broadcast_to(g, self.in_shape),)
        out = _empty_like_shape(self.in_shape, typenum)
        if typenum == cnp.NPY_FLOAT:
            v = (<float*>cnp.PyArray_DATA(g))[0]
            for i in range(n):
                (<float*>cnp.PyArray_DATA(out))[i] = <float>v
        else:
            v = (<double*>cnp.PyArray_DATA(g))[0]
            for i in range(n):
                (<double*>cnp.PyArray_DATA(out))[i] = v
        return (out,)


def sum_all(TensorBase t):
    """Sum of every element of a float tensor, recorded with a compiled node."""
    cdef SumNode node
    cdef TensorBase res = _new_tensor(_reduce_sum_all(t._arr))
    if cygrad_grad_mode and t._requires_grad:
        node = SumNode.__new__(SumNode)
        node._n_out = 1
        node._n_in = 1
        node._e0 = _edge(t)
        if t._out_nr != 0:
            node._nrs = (t._out_nr,)
        node.in_shape = t._arr.shape
        if _debug_level > 0:
            _register(node)      # site, generation, live list (diagnostics)
        res._grad_fn = node
        res._requires_grad = True
        if _retain_all:
            _retain(res)
    elif _debug_level > 0 and (
            t._requires_grad or t._origin is not None):
        _note_no_grad(res, t, None)
    return res


# --- Python Functions ----------------------------------------------------------------

@cython.final
@cython.freelist(8)
cdef class SavedValue:
    cdef public object tensor        # the saved input Tensor, or None for outputs
    cdef public object arr
    cdef public Version ver
    cdef public long long v
    cdef public int out_nr           # >= 0 for a saved output of this node
    cdef public bint requires_grad


cdef class FunctionNode(Node):
    """Backward node and ``ctx`` of a ``cygrad.autograd.Function`` call."""
    cdef dict __dict__
    cdef public object _fn
    cdef public tuple _saved
    cdef public tuple _to_save
    cdef public tuple needs_input_grad
    cdef public object _non_diff
    cdef public object _dirty
    cdef public bint materialize_grads
    cdef public tuple _out_meta      # per output: (shape, dtype) or None
    cdef public tuple _arg_is_tensor

    def save_for_backward(self, *tensors):
        self._to_save = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_diff = tensors

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def set_materialize_grads(self, bint value):
        self.materialize_grads = value

    @property
    def saved_tensors(self):
        cdef SavedValue s
        cdef TensorBase t
        if self._freed:
            raise _freed_error(self)
        if self._saved is None:
            return self._to_save if self._to_save is not None else ()
        out = []
        for s in self._saved:
            if s is None:
                out.append(None)
                continue
            _check_version(s.ver, s.v, s.arr, self,
                           "an input" if s.out_nr < 0 else f"output {s.out_nr}")
            if s.out_nr < 0:
                out.append(s.tensor)
            else:
                t = _new_tensor(s.arr)
                t._ver = s.ver
                t._grad_fn = self
                _track_if(t, self)
                t._out_nr = s.out_nr
                t._requires_grad = s.requires_grad
                out.append(t)
        return tuple(out)

    @property
    def saved_variables(self):
        return self.saved_tensors

    cdef void release(self):
        if self._saved is not None and len(self._saved):
            self._saved = None
            self._freed = True

    cpdef Py_ssize_t saved_nbytes(self):
        cdef Py_ssize_t n = 0
        cdef SavedValue s
        if self._saved is None:
            return 0
        for s in self._saved:
            if s is not None:
                n += s.arr.nbytes
        return n

    def _saved_shapes(self):
        cdef SavedValue s
        if self._saved is None:
            return []
        return [("saved", tuple(s.arr.shape), s.arr.nbytes)
                for s in self._saved if s is not None]

    cdef object apply(self, object grads, bint graph):
        cdef Py_ssize_t i, n_args = self._n_in
        cdef tuple metas = self._out_meta
        if self._n_out == 1:
            grads = [grads]
        gs = []
        for i in range(self._n_out):
            g = grads[i]
            if g is None:
                if self.materialize_grads and metas[i] is not None:
                    shape, dtype = metas[i]
                    g = np.zeros(shape, dtype)
                    if graph:
                        g = _new_tensor(g)
                else:
                    gs.append(None)
                    continue
            gs.append(g if graph else _new_tensor(g))
        res = self._fn.backward(self, *gs)
        if not isinstance(res, tuple):
            res = (res,)
        cdef Py_ssize_t n_res = len(res)
        if n_res != n_args:
            if n_res > n_args and all(r is None for r in res[n_args:]):
                res = res[:n_args]
            else:
                raise RuntimeError(
                    f"Function {self.name()} returned an incorrect number of "
                    f"gradients (expected {n_args}, got {n_res})")
        out = []
        for i in range(n_args):
            r = res[i]
            if r is None:
                out.append(None)
                continue
            if not self._arg_is_tensor[i]:
                raise RuntimeError(
                    f"function {self.name()} returned a gradient different than "
                    f"None at position {i + 1}, but the corresponding forward input "
                    "was not a Tensor")
            if _child(self, i) is None:
                out.append(None)
                continue
            if not isinstance(r, TensorBase):
                raise TypeError(
                    f"function {self.name()} returned a gradient of type "
                    f"{type(r).__name__} at index {i}; expected a Tensor or None")
            out.append(r if graph else (<TensorBase>r)._arr)
        return tuple(out)


def function_apply(cls, node_cls, tuple args):
    """Run a Function's forward and, when needed, connect it to the graph."""
    cdef FunctionNode ctx = node_cls.__new__(node_cls)
    cdef Py_ssize_t i, n = len(args)
    cdef TensorBase t
    cdef SavedValue sv
    cdef bint is_exec = False
    cdef list needs = [False] * n
    cdef list is_tensor = [False] * n
    cdef list versions = [0] * n
    for i in range(n):
        a = args[i]
        if isinstance(a, TensorBase):
            t = <TensorBase>a
            is_tensor[i] = True
            versions[i] = t._ver.v
            if t._requires_grad:
                needs[i] = True
                is_exec = True
    cdef bint dropped = is_exec and not cygrad_grad_mode
    is_exec = is_exec and cygrad_grad_mode
    ctx.needs_input_grad = tuple(needs) if is_exec else tuple([False] * n)
    ctx._fn = cls
    ctx.materialize_grads = True
    global cygrad_grad_mode
    cdef int prev = cygrad_grad_mode
    cygrad_grad_mode = 0
    try:
        out = cls.forward(ctx, *args)
    finally:
        cygrad_grad_mode = prev
    cdef bint single = not isinstance(out, tuple)
    cdef tuple outs = (out,) if single else out
    dirty = ctx._dirty or ()
    # An input modified in place inside forward must be declared.
    for i in range(n):
        if is_tensor[i]:
            t = <TensorBase>args[i]
            if t._ver.v != versions[i] and not any(d is t for d in dirty):
                raise RuntimeError(
                    f"{cls.__name__}.forward modified its input {i} in place "
                    "without ctx.mark_dirty(); declare it with ctx.mark_dirty(x) "
                    "so that autograd can account for the change")
    for d in dirty:
        if not any(d is args[i] for i in range(n)):
            raise RuntimeError("mark_dirty() received a tensor that is not an input")
        if is_exec:
            _check_leaf_inplace(<TensorBase>d, cls.__name__)
    if not is_exec:
        if _debug_level > 0 and (dropped or any(
                is_tensor[i] and (<TensorBase>args[i])._origin is not None
                for i in range(n))):
            src = None
            for i in range(n):
                if is_tensor[i] and (<TensorBase>args[i])._origin is not None:
                    src = args[i]
                    break
            for o in ((out,) if not isinstance(out, tuple) else out):
                if isinstance(o, TensorBase) and not any(o is a for a in args):
                    _note_no_grad(<TensorBase>o, src, None)
        return out
    non_diff = ctx._non_diff or ()
    ctx._n_out = len(outs)
    _set_children(ctx, tuple(_edge(<TensorBase>args[i]) if needs[i] else None
                             for i in range(n)))
    if any(needs[i] and (<TensorBase>args[i])._out_nr for i in range(n)):
        ctx._nrs = tuple((<TensorBase>args[i])._out_nr if needs[i] else 0
                         for i in range(n))
    ctx._in_meta = tuple(((<TensorBase>args[i])._arr.shape,
                          (<TensorBase>args[i])._arr.dtype) if needs[i] else None
                         for i in range(n))
    ctx._arg_is_tensor = tuple(is_tensor)
    if _debug_level > 0:
        _register(ctx)
    new_outs = []
    metas = []
    for i in range(len(outs)):
        o = outs[i]
        if not isinstance(o, TensorBase):
            new_outs.append(o)
            metas.append(None)
            continue
        t = <TensorBase>o
        if any(t is nd for nd in non_diff):
            new_outs.append(t)
            metas.append(None)
            continue
        if any(t is d for d in dirty):
            pass    # rebase the modified input's history onto this node
        elif any(t is args[j] for j in range(n)) or t._requires_grad:
            t = _alias(t)
            (<TensorBase>t)._base = o if (<TensorBase>o)._base is None else (
                <TensorBase>o)._base
            _track_if(<TensorBase>t, (<TensorBase>t)._base)
        if t._arr.dtype.kind != "f":
            metas.append(None)
            new_outs.append(t)
            continue
        t._grad_fn = ctx
        _track_if(<TensorBase>t, ctx)
        t._out_nr = i
        t._requires_grad = True
        if _retain_all:
            _retain(t)
        new_outs.append(t)
        metas.append((t._arr.shape, t._arr.dtype))
    ctx._out_meta = tuple(metas)
    # Saved tensors: inputs by reference, outputs as (array, version) so that
    # the node never holds its own output (no cycle).
    if ctx._to_save is not None:
        saved = []
        for s in ctx._to_save:
            if s is None:
                saved.append(None)
                continue
            if not isinstance(s, TensorBase):
                raise TypeError("save_for_backward can only save tensors, but "
                                f"argument {len(saved)} is of type "
                                f"{type(s).__name__}")
            t = <TensorBase>s
            sv = SavedValue.__new__(SavedValue)
            sv.arr = t._arr
            sv.ver = t._ver
            sv.v = t._ver.v
            t._ver.saved = True
            sv.out_nr = -1
            for i in range(len(new_outs)):
                if new_outs[i] is t or (outs[i] is t and t._grad_fn is ctx):
                    sv.out_nr = i
                    sv.requires_grad = t._requires_grad
                    break
            if sv.out_nr < 0:
                sv.tensor = t
            saved.append(sv)
        ctx._saved = tuple(saved)
        ctx._to_save = None
        ctx._has_saved = len(saved) > 0
    return new_outs[0] if single else tuple(new_outs)


# --- the engine ---------------------------------------------------------------------------

cdef long long _run_counter = 0


cdef inline object _add_values(object a, object b, bint graph):
    """a + b for two gradient values; in place into ``a`` when it is ours."""
    if graph:
        return a + b
    cdef int typenum = cnp.PyArray_TYPE(<cnp.ndarray>a)
    if (Py_REFCNT(a) <= 2 and cnp.PyArray_CHKFLAGS(<cnp.ndarray>a, cnp.NPY_ARRAY_OWNDATA)
            and (typenum == cnp.NPY_FLOAT or typenum == cnp.NPY_DOUBLE)
            and cnp.PyArray_TYPE(<cnp.ndarray>b) == typenum
            and _same_shape(<cnp.ndarray>a, <cnp.ndarray>b)
            and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>a)):
        _run_like(binary_fwd(OP_ADD, _dt_index(typenum)), 3, <cnp.ndarray>a, a, b)
        return a
    # asarray: np.add of two 0-d arrays returns a NumPy scalar, which the
    # unchecked <ndarray> casts downstream read as an array (segfault).
    return np.asarray(np.add(a, b))


cdef object _fit_grad(Node node, Py_ssize_t i, object g, bint graph):
    """Reduce ``g`` to input i's shape and cast it to its dtype, or raise."""
    meta = node._in_meta[i]
    if meta is None:
        return g
    shape, dtype = meta
    gshape = g.shape if not graph else tuple(g.shape)
    if gshape != shape:
        try:
            if graph:
                g = _graph_sum_to(g, shape)
            else:
                g = _sum_to_shape(g, shape)
        except (ValueError, RuntimeError):
            raise RuntimeError(
                f"Function {node.name()} returned an invalid gradient at index {i} "
                f"- got {list(gshape)} but expected shape compatible with "
                f"{list(shape)}") from None
    gd = g.dtype
    if gd != dtype:
        if np.dtype(gd).kind not in "fc":
            raise RuntimeError(
                f"Function {node.name()} returned an invalid gradient at index {i} "
                f"- expected a floating point gradient of dtype {dtype} but got {gd}")
        g = g.to(dtype) if graph else g.astype(dtype)
    return g


cdef object _wrap_value(object g, bint graph):
    return g if graph else _new_tensor(g)


cdef object _unwrap_value(object g, bint graph):
    if graph:
        return g
    return (<TensorBase>g)._arr


cdef object _hook_result(object fn, object res, object old, bint graph):
    """A hook's replacement gradient, unwrapped, after torch's checks: a
    Tensor of the old value's shape and dtype (kernels rely on both)."""
    cdef TensorBase r
    if not isinstance(res, TensorBase):
        raise TypeError(f"expected Tensor, but hook returned '{type(res).__name__}'")
    r = <TensorBase>res
    ref = (<TensorBase>old)._arr if graph else old
    if r._arr.shape != ref.shape:
        raise RuntimeError(
            f"hook '{getattr(fn, '__name__', fn)}' has changed the size of value "
            f"(was {list(ref.shape)}, got {list(r._arr.shape)})")
    if r._arr.dtype != ref.dtype:
        raise RuntimeError(
            f"hook '{getattr(fn, '__name__', fn)}' has changed the type of value "
            f"(was {ref.dtype}, got {r._arr.dtype})")
    return _unwrap_value(res, graph)


cdef object _run_leaf_hooks(TensorBase t, object buf, bint graph):
    """Tensor hooks of a leaf, in registration order, on its summed gradient."""
    for fn in list(t._hooks):
        res = fn(_wrap_value(buf, graph))
        if res is not None:
            buf = _hook_result(fn, res, buf, graph)
    return buf


cdef object _run_pre_hooks(Node node, object buf, bint graph):
    """Tensor hooks and retain_grad of a non-leaf, on its summed gradient."""
    cdef Py_ssize_t k
    if node._pre_hooks:
        for (nr, fn) in list(node._pre_hooks):
            if nr < 0:
                # node-level prehook: receives the tuple of output grads
                vals = buf if node._n_out != 1 else [buf]
                res = fn(tuple(_wrap_value(v, graph) if v is not None else None
                               for v in vals))
                if res is not None:
                    new = [(_unwrap_value(r, graph) if r is not None else None)
                           for r in res]
                    buf = new[0] if node._n_out == 1 else new
                continue
            v = buf if node._n_out == 1 else buf[nr]
            if v is None:
                continue
            res = fn(_wrap_value(v, graph))
            if res is not None:
                res = _hook_result(fn, res, v, graph)
                if node._n_out == 1:
                    buf = res
                else:
                    buf[nr] = res
    if node._retained:
        for (nr, ref) in node._retained:
            t = ref()
            v = buf if node._n_out == 1 else buf[nr]
            if t is None or v is None:
                continue
            _accumulate_into(<TensorBase>t, v, graph)
    return buf


cdef void _accumulate_into(TensorBase t, object g, bint graph) except *:
    """t.grad += g with torch's rules (steal, in place, or out of place)."""
    cdef TensorBase cur = t._grad
    if not graph and not isinstance(g, np.ndarray):
        g = np.asarray(g)   # a NumPy scalar would be cast to ndarray below
    if cur is None:
        if graph:
            t._grad = g
        else:
            if (Py_REFCNT(g) > 3 or not cnp.PyArray_CHKFLAGS(<cnp.ndarray>g,
                                                           cnp.NPY_ARRAY_OWNDATA)
                    or not cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>g)):
                g = np.array(g, order="C")
            t._grad = _new_tensor(g)
        _track_if(t, t._grad)
        return
    if graph or cur._requires_grad:
        t._grad = cur + (g if graph else _new_tensor(g))
        _track_if(t, t._grad)
        return
    arr = cur._arr
    if arr.shape != g.shape:
        g = np.broadcast_to(g, arr.shape)
    if arr.dtype == g.dtype and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>arr):
        _run_kernel(binary_fwd(OP_ADD, _dt_index(cnp.PyArray_TYPE(<cnp.ndarray>arr))), 3,
                    <cnp.ndarray>arr, [arr, g])
    else:
        np.add(arr, g, out=arr, casting="unsafe")
    cur._ver.v += 1


# One backward at a time per process: graphs of different threads share nodes
# (a shared leaf's AccumulateGrad), whose per-run scratch (_run, _deps, _buf)
# and in-place .grad sums (kernels release the GIL) would race.  Reentrant, so
# a hook may call backward/grad.  Forward work still runs in parallel.
_engine_lock = threading.RLock()


def run_backward(tuple roots, tuple root_grads, bint keep_graph, bint create_graph,
                 object inputs=None, bint accumulate=True):
    """Serialized entry point of ``_run_backward`` (see ``_engine_lock``)."""
    with _engine_lock:
        return _run_backward(roots, root_grads, keep_graph, create_graph, inputs,
                             accumulate)


def _run_backward(tuple roots, tuple root_grads, bint keep_graph, bint create_graph,
                  object inputs=None, bint accumulate=True):
    """Backpropagate ``root_grads`` from ``roots`` through the graph.

    roots: Tensors; root_grads: one array (or Tensor when create_graph) each.
    inputs: optional tuple of Tensors.  With accumulate=True only those leaves
    (and non-leaves) receive ``.grad``; with accumulate=False nothing is
    accumulated and their gradients are returned (autograd.grad).
    Returns the list of captured gradients (or None per unreached input).
    """
    global _run_counter, cygrad_grad_mode
    cdef long long run
    cdef Node node, child
    cdef TensorBase t
    cdef list stack, ready, visited, leaf_work
    cdef Py_ssize_t i, nr, n_next, sp, rp
    cdef dict capture = None
    cdef bint graph = create_graph
    cdef int prev_mode = cygrad_grad_mode

    _run_counter += 1
    run = _run_counter
    visited = []
    root_nodes = []
    _note_root_gen(roots)
    # Seed: every root's node gets its gradient.
    for i in range(len(roots)):
        t = <TensorBase>roots[i]
        node = _edge(t)
        if node is None:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a "
                "grad_fn")
        if node._run != run:
            node._run = run
            node._deps = 0
            node._buf = None if node._n_out == 1 else [None] * node._n_out
            node._needed = False
            visited.append(node)
            root_nodes.append(node)
        g = root_grads[i]
        if node._n_out == 1:
            node._buf = g if node._buf is None else _add_values(node._buf, g, graph)
        else:
            nr = t._out_nr
            node._buf[nr] = g if node._buf[nr] is None else _add_values(
                node._buf[nr], g, graph)

    # Count dependencies with an explicit stack (no recursion).
    stack = list(root_nodes)
    sp = len(stack)
    while sp > 0:
        node = <Node>_pop(stack, &sp)
        n_next = node._n_in
        for i in range(n_next):
            child = _child(node, i)
            if child is None:
                continue
            if child._run != run:
                child._run = run
                child._deps = 0
                child._buf = None if child._n_out == 1 else [None] * child._n_out
                child._needed = False
                visited.append(child)
                _push(stack, &sp, child)
            child._deps += 1

    # Capture targets: inputs of autograd.grad / backward(inputs=...).
    captured = None
    if inputs is not None:
        capture = {}
        captured = [None] * len(inputs)
        for i in range(len(inputs)):
            t = <TensorBase>inputs[i]
            node = _edge(t)
            if node is None:
                raise RuntimeError(
                    f"One of the differentiated Tensors (index {i}) does not "
                    "require grad")
            capture.setdefault(node, []).append((t._out_nr, i))
        _mark_needed(visited, capture, run)

    leaf_work = []
    ready = [n for n in root_nodes if (<Node>n)._deps == 0]
    rp = len(ready)
    cygrad_grad_mode = 1 if create_graph else 0
    try:
        while rp > 0:
            node = <Node>_pop(ready, &rp)
            buf = node._buf
            node._buf = None
            if capture is not None and not node._needed:
                # Not on a path to a requested input: skip, but release deps.
                _release_children(node, ready, &rp)
                continue
            if node._pre_hooks or node._retained:
                buf = _run_pre_hooks(node, buf, graph)
            if capture is not None and node in capture:
                if not accumulate and buf is not None and isinstance(
                        node, AccumulateGrad):
                    # autograd.grad returns a leaf's gradient after its hooks
                    # (backward() runs them in the leaf phase below).
                    t = (<AccumulateGrad>node)._tref()
                    if t is not None and t._hooks:
                        buf = _run_leaf_hooks(t, buf, graph)
                for (nr, idx) in capture[node]:
                    v = buf if node._n_out == 1 else buf[nr]
                    if v is not None and not graph and not accumulate:
                        v = _new_tensor(v)
                    captured[idx] = v
            if isinstance(node, AccumulateGrad):
                if buf is not None and (accumulate and (
                        capture is None or node in capture)):
                    if _eager_leaf(node):
                        _finish_leaf(node, buf, graph)
                    else:
                        leaf_work.append((node, buf))
                continue
            if capture is not None and not accumulate and node in capture and \
                    not _any_child_needed(node):
                _release_children(node, ready, &rp)
                continue
            if node._n_out == 1:
                has_grad = buf is not None
            else:
                has_grad = any(b is not None for b in buf)
            if has_grad:
                results = node.apply(buf, graph)
                if not graph:
                    _recycle(buf)      # unless the node kept or returned it
                buf = None
                if not keep_graph:
                    node.release()
                if _anomaly:
                    _check_nan(node, results, graph)
            else:
                results = None
            n_next = node._n_in
            eager = None
            for i in range(n_next):
                child = _child(node, i)
                if child is None:
                    continue
                if results is not None:
                    g = results[i]
                    if g is not None:
                        if node._in_meta is not None:
                            g = _fit_grad(node, i, g, graph)
                        if child._n_out == 1:
                            child._buf = g if child._buf is None else _add_values(
                                child._buf, g, graph)
                        else:
                            nr = node._nrs[i] if node._nrs is not None else 0
                            child._buf[nr] = g if child._buf[nr] is None else \
                                _add_values(child._buf[nr], g, graph)
                        g = None
                child._deps -= 1
                if child._deps == 0:
                    if _eager_leaf(child):
                        eager = [child] if eager is None else eager + [child]
                    else:
                        _push(ready, &rp, child)
            if eager is not None:
                # pushed last, so popped next and in input order: torch runs
                # leaf sinks before any other ready node
                for child in reversed(eager):
                    _push(ready, &rp, child)
                eager = None
            if not graph and results is not None:
                _recycle_results(results)
            results = None
        # Leaves last, all or nothing: hooks first (they may raise), then sums.
        # (Leaves with post-accumulate hooks were finished when ready.)
        finals = []
        for (node, buf) in leaf_work:
            t = (<AccumulateGrad>node)._tref()
            if t is None:
                continue
            # (the node's own pre-hooks already ran when it was popped)
            if t._hooks:
                buf = _run_leaf_hooks(t, buf, graph)
            finals.append((t, buf))
        leaf_work = None
        for (t, buf) in finals:
            _accumulate_into(t, buf, graph)
            buf = None
        for (t, buf) in finals:
            if t._post_hooks:
                for fn in list(t._post_hooks):
                    fn(t)
    finally:
        cygrad_grad_mode = prev_mode
        for i in range(len(visited)):
            (<Node>visited[i])._buf = None
    return captured


cdef inline bint _eager_leaf(Node node) except -1:
    """A leaf's sink whose tensor has post-accumulate hooks (DDP's gradient-ready
    signal): it runs as soon as its gradient is final, not in the leaf phase."""
    if type(node) is not AccumulateGrad:
        return False
    t = (<AccumulateGrad>node)._tref()
    return t is not None and bool((<TensorBase>t)._post_hooks)


cdef void _finish_leaf(Node node, object buf, bint graph) except *:
    """Tensor hooks, ``.grad`` sum, then post-accumulate hooks of one leaf."""
    cdef TensorBase t = (<AccumulateGrad>node)._tref()
    if t._hooks:
        buf = _run_leaf_hooks(t, buf, graph)
    _accumulate_into(t, buf, graph)
    buf = None
    for fn in list(t._post_hooks):
        fn(t)


cdef void _note_root_gen(tuple roots) except *:
    global _bw_root_gen
    cdef TensorBase t
    cdef object newest = None
    if _debug_level > 0:
        for r in roots:
            t = <TensorBase>r
            if t._grad_fn is not None and t._grad_fn._gen is not None and (
                    newest is None or t._grad_fn._gen > newest):
                newest = t._grad_fn._gen
    _bw_root_gen = newest


cdef bint _any_child_needed(Node node):
    cdef Node c
    for c in _children(node):
        if c is not None and c._needed:
            return True
    return False


cdef void _release_children(Node node, list ready, Py_ssize_t* rp) except *:
    cdef Node child
    for child in _children(node):
        if child is None:
            continue
        child._deps -= 1
        if child._deps == 0:
            _push(ready, rp, child)


# The engine's stacks are lists used up to a height ``sp``: list.pop() and
# append() on a list that keeps emptying and refilling reallocate it each time
# (~950 instructions per node of a chain, callgrind).
cdef inline void _push(list st, Py_ssize_t* sp, object x) except *:
    if sp[0] < len(st):
        st[sp[0]] = x
    else:
        st.append(x)
    sp[0] += 1


cdef inline object _pop(list st, Py_ssize_t* sp):
    sp[0] -= 1
    x = st[sp[0]]
    st[sp[0]] = None        # hold no reference past the pop
    return x


cdef void _mark_needed(list visited, dict capture, long long run) except *:
    """Flag the nodes from which a capture target is reachable."""
    # Topological order by a dry Kahn pass over copies of the counts.
    cdef dict deps = {}
    cdef Node node, child
    for node in visited:
        deps[node] = node._deps
    order = []
    ready = [n for n in visited if deps[n] == 0]
    while ready:
        node = ready.pop()
        order.append(node)
        for child in _children(node):
            if child is None:
                continue
            deps[child] -= 1
            if deps[child] == 0:
                ready.append(child)
    for node in reversed(order):
        if node in capture:
            node._needed = True
            continue
        for child in _children(node):
            if child is not None and child._needed:
                node._needed = True
                break


cdef void _check_nan(Node node, tuple results, bint graph) except *:
    cdef Py_ssize_t i
    for i in range(len(results)):
        r = results[i]
        if r is None:
            continue
        arr = (<TensorBase>r)._arr if graph else r
        if arr.dtype.kind == "f" and np.isnan(arr).any():
            where = ""
            if node._site is not None:
                where = (f" The forward call that created it ran at "
                         f"{node._site[0]}:{node._site[1]}.")
            raise RuntimeError(
                f"Function '{node.name()}' returned nan values in its {i}th "
                f"output.{where}")


def node_inputs(Node node):
    """(next nodes, output numbers) of ``node`` for graph walkers (viz, stats)."""
    return _children(node), node._nrs


def node_is_freed(Node node):
    return node._freed


def node_has_saved(Node node):
    return node._has_saved


def node_saved_arrays(Node node):
    """The arrays ``node`` holds for backward (graph_stats counts their bytes)."""
    cdef EWNode ew
    cdef FunctionNode fn
    cdef SavedValue sv
    if isinstance(node, EWNode):
        ew = <EWNode>node
        return [a for a in (ew.sa, ew.sb, ew.sy) if a is not None]
    if isinstance(node, FunctionNode):
        fn = <FunctionNode>node
        if fn._saved is not None:
            return [sv.arr for sv in fn._saved if sv is not None]
    return []
