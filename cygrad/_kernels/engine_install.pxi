# The Python layers' hooks, the free lists, and install(): how cygrad/__init__.py
# connects the layers above to the engine, once.
# Part of engine.pyx (included there; it is one compiled module).

# Python-side hooks: install() below sets them, once, from cygrad/__init__.py.
cdef object _TensorCls = None        # the Python Tensor class
cdef object _grad_warning = None     # fn(t): warn on a non-leaf's .grad read
cdef object _backward_fn = None      # autograd.backward (the general case)
cdef object _graph_unary = None      # name -> fn(g, x, y) over Tensors
cdef object _graph_binary = None     # name -> (fn_a, fn_b)(g, a, b, y)
cdef object _graph_sum_to = None     # fn(tensor, shape) differentiable
cdef object _graph_matmul = None     # fn(g, a, b, need_a, need_b) over Tensors
cdef object _graph_expand = None     # fn(tensor, shape): differentiable expand
cdef object _graph_softmax = None    # fn(y, g, dim, take_log): softmax's
                                     # backward over Tensors
cdef object _graph_put_basic = None  # fn(tensor, index, shape): differentiable
                                     # zeros(shape) with the tensor at [index]
cdef object _inplace_views = None    # fn(name, opname, self, other): the
                                     # in-place operators' view-aware path
cdef object _stale_hint_fn = None    # fn(node, shape, gen): stale-graph hint
cdef object _out_hook = None         # fn(name, fn, args, out): torch's out=
                                     # keyword of the compiled functions
cdef object _half_cast = None        # fn(tensor, dtype): a recorded cast (float16)
cdef object _half_function = None    # fn(cls, node_cls, args): a Function on
                                     # float16 inputs, computed in float32
cdef bint _anomaly = False
cdef int _debug_level = 1            # 0: capture no creation sites
cdef bint _retain_all = False        # retain_grads() scope: keep every .grad
cdef long long _generation = 0       # bumped by optimizer.step()/zero_grad()
cdef object _gen_obj = 0             # the same, as a Python int (no boxing per node)
cdef object _bw_root_gen = None      # newest generation among the roots of the
                                     # running backward (for the stale hint)
cdef str _pkg_dir = ""


cdef extern from "cg_engine.h":
    void cg_copy_number_slot(object sub, object base, int which)

cdef extern from "cg_engine.h":
    void cg_install_setattro(object cls)

cdef extern from "cg_engine.h":
    int cg_fl_install(int slot, object cls, Py_ssize_t pre, Py_ssize_t max)

    Py_ssize_t cg_fl_size(int slot)
    void cg_fl_clear()

# Largest free lists (objects of each type): enough for the graph of a
# 5,000-step scalar chain, at most ~8 MB held in all (_clear_caches() gives
# it back).
cdef enum:
    FREELIST_MAX = 16384

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


def install(*, tensor_cls, backward, grad_warning, stale_hint, graph_unary,
            graph_binary, graph_sum_to, graph_matmul, graph_expand, graph_put_basic,
            graph_softmax, inplace_views, write_out, pkg_dir, half_cast=None, half_function=None):
    """Connect the Python layers above: called once, by ``cygrad/__init__.py``.

    ``tensor_cls``: the Python Tensor class; ``backward``: autograd.backward
    (Tensor.backward's general case); ``grad_warning(t)``: the warning on a
    non-leaf's ``.grad`` read; ``stale_hint(node, shape, gen)``: the hint of
    a gradient that reached a stale graph; ``graph_*``: differentiable forms
    of the compiled nodes' backwards over Tensors (create_graph; the
    softmax node's is ``graph_softmax(y, g, dim, take_log)``); and
    ``inplace_views(name, opname, self, other)``: the view-aware path of the
    in-place operators; ``write_out(name, fn, args, out)``: ``fn(*args)``
    written into ``out`` (the ``out=`` keyword of the compiled functions).
    ``pkg_dir``: frames under it are not the user's.
    ``half_cast``/``half_function``: the float16 rule (ops compute in float32
    and round back), for the table's ops and for Functions.
    """
    global _TensorCls, _graph_unary, _graph_binary, _graph_sum_to, _pkg_dir
    global _grad_warning, _backward_fn, _stale_hint_fn, _graph_matmul
    global _graph_expand, _inplace_views, _out_hook, _half_cast, _half_function
    global _graph_put_basic, _graph_softmax
    _out_hook = write_out
    _half_cast = half_cast
    _half_function = half_function
    _grad_warning = grad_warning
    _backward_fn = backward
    _stale_hint_fn = stale_hint
    _graph_matmul = graph_matmul
    _graph_expand = graph_expand
    _graph_put_basic = graph_put_basic
    _graph_softmax = graph_softmax
    _inplace_views = inplace_views
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
