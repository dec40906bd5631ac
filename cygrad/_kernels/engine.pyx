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

One module, in parts read in this order (each ``include``d at the end of this
file, so the C compiler still sees one unit and inlines across them):
``engine_table`` (the op table by kernel index), ``engine_install`` (the hooks
``install()`` sets, the free lists), ``engine_modes`` (grad mode, creation
sites, version counters), ``engine_tensor`` (TensorBase), ``engine_diagnostics``
(live nodes, generations), ``engine_arrays`` (dtype promotion, broadcasting,
the 0-d pool), ``engine_elementwise`` (the table's ops and in-place updates),
``engine_nodes`` (graph nodes), ``engine_shape`` (cat, stack, view, reshape,
x[idx]), ``engine_loss`` (cross-entropy), ``engine_function`` (Python
Functions) and ``engine_backward`` (the scheduler), and ``engine_xp`` (the
NumPy side of the backwards' ``xp`` namespace).  The C it needs of CPython
is in ``cg_engine.h``.
"""

cimport cython
cimport numpy as cnp
from cpython.mem cimport PyMem_Calloc, PyMem_Free
from cpython.ref cimport PyObject, Py_DECREF, Py_INCREF, Py_REFCNT
from libc.math cimport NAN
from libc.stdint cimport int64_t
from libc.string cimport memcpy, memset

from cygrad._kernels.elementwise cimport (
    row_fn, unary_fwd, unary_bwd, binary_fwd, binary_bwd, nd_apply)
from cygrad._kernels.loss cimport ce_bwd_rows, ce_fwd_rows, first_bad_label
from cygrad._kernels.reductions cimport (
    softmax_rows as _rows_softmax, softmax_bwd_rows as _rows_softmax_bwd)

import sys
import threading
import warnings
import weakref

import numpy as np

from cygrad._kernels import elementwise as _ew
from cygrad._kernels import optable as _optable
from cygrad._kernels.reduce import sum_all as _reduce_sum_all
from cygrad._kernels.reduce import sum_to_shape as _sum_to_shape
from cygrad._kernels.reductions import sum_fwd as _row_sums
from cygrad._kernels.select import add_rows as _select_add_rows

cnp.import_array()

cdef extern from "cg_engine.h":
    int cygrad_grad_mode

cdef extern from "cg_engine.h":
    object cg_alloc(object type)

cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void*)
    void PyObject_GC_Track(void*)
    int PyObject_GC_IsTracked(object)
    bint PyObject_IS_GC(object)
    ctypedef struct PyCodeObject
    int PyCode_Addr2Line(PyCodeObject*, int)

cdef extern from "cg_engine.h":
    void* cg_user_frame(int* lasti) except? NULL
    void cg_set_pkg_dir(object d)


# Above this many elements a kernel releases the GIL (below it the release
# costs more than the loop).
cdef enum:
    GIL_RELEASE_MIN = 16384

include "engine_table.pxi"
include "engine_install.pxi"
include "engine_modes.pxi"
include "engine_tensor.pxi"
include "engine_diagnostics.pxi"
include "engine_arrays.pxi"
include "engine_elementwise.pxi"
include "engine_nodes.pxi"
include "engine_shape.pxi"
include "engine_loss.pxi"
include "engine_function.pxi"
include "engine_backward.pxi"
include "engine_xp.pxi"
