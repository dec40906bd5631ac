/* The engine's C: CPython internals it relies on (the interpreter's frame list
 * for creation sites, the objects' pre-header for free lists, type slots),
 * grad mode's thread-local flag and the 0-d array pool's helpers. engine.pyx
 * declares what it calls of it. */
#ifndef CG_ENGINE_H
#define CG_ENGINE_H

static __thread int cygrad_grad_mode = 1;

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
#if PY_VERSION_HEX >= 0x030B0000
            *lasti = PyFrame_GetLasti(f);
#else
            /* 3.10 has no PyFrame_GetLasti; its f_lasti counts code units
               and PyCode_Addr2Line takes bytes. */
            *lasti = f->f_lasti * (int)sizeof(_Py_CODEUNIT);
#endif
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

#endif
