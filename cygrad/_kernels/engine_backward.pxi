# The backward scheduler: ordering, gradient accumulation, hooks, anomaly.
# Part of engine.pyx (included there; it is one compiled module).

# --- the engine ---------------------------------------------------------------------------

cdef long long _run_counter = 0
# The runs in progress, outermost first: a hook or a Function's backward may
# start a backward of its own (a checkpoint's recomputation, a gradient
# penalty), whose graph can share nodes (a parameter's AccumulateGrad) with
# the run that called it.  A node's scratch (_run, _deps, _buf, _needed) then
# belongs to the outer run: the inner one saves it when it claims the node
# and puts it back when it ends, so the outer run's pending gradient and
# dependency count survive.
cdef list _active_runs = []


cdef inline void _claim(Node node, long long run, list visited,
                        list saved) except *:
    """Give ``node`` this run's fresh scratch (saving an outer run's)."""
    if saved is not None and node._run in _active_runs:
        saved.append((node, node._run, node._deps, node._buf, node._needed))
    node._run = run
    node._deps = 0
    node._buf = None if node._n_out == 1 else [None] * node._n_out
    node._needed = False
    visited.append(node)


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
    global _run_counter
    cdef long long run
    cdef Node node
    cdef list visited, root_nodes
    cdef Py_ssize_t i
    cdef int prev_mode = cygrad_grad_mode
    cdef list saved = [] if _active_runs else None

    _run_counter += 1
    run = _run_counter
    visited = []
    root_nodes = []
    _active_runs.append(run)
    try:
        return _run_nodes(roots, root_grads, keep_graph, create_graph, inputs,
                          accumulate, run, visited, root_nodes, saved, prev_mode)
    finally:
        _active_runs.pop()
        if saved is not None:
            for i in range(len(saved) - 1, -1, -1):
                entry = saved[i]
                node = <Node>entry[0]
                node._run = entry[1]
                node._deps = entry[2]
                node._buf = entry[3]
                node._needed = entry[4]


cdef object _run_nodes(tuple roots, tuple root_grads, bint keep_graph,
                       bint create_graph, object inputs, bint accumulate,
                       long long run, list visited, list root_nodes, list saved,
                       int prev_mode):
    """The body of ``_run_backward`` for run number ``run``."""
    global cygrad_grad_mode
    cdef Node node, child
    cdef TensorBase t
    cdef list stack, ready, leaf_work
    cdef Py_ssize_t i, nr, n_next, sp, rp
    cdef dict capture = None
    cdef bint graph = create_graph
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
            _claim(node, run, visited, saved)
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
                _claim(child, run, visited, saved)
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
