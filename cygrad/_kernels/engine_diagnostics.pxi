# What the diagnostics read: the list of live nodes, retained gradients,
# generations (optimizer steps) and the no-grad notes.
# Part of engine.pyx (included there; it is one compiled module).

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


cdef inline void _attach(TensorBase res, Node node) except *:
    """Make ``node`` the history of ``res``, a fresh result: registered for
    the diagnostics when they are on, its ``.grad`` kept under
    retain_grads()."""
    if _debug_level > 0:
        _register(node)
    res._grad_fn = node
    res._requires_grad = True
    if _retain_all:
        _retain(res)


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
