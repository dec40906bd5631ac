"""API.md's ten autograd rules and PYTORCH-NOTES' subtle cases, one by one."""

import threading
import warnings

import numpy as np
import pytest

import cygrad as cg


def leaf(values, dtype=None):
    return cg.tensor(values, dtype=dtype, requires_grad=True)


# 1. leaves
def test_rule1_leaf_and_requires_grad_propagation():
    a = leaf([1.0, 2.0])
    b = cg.tensor([3.0, 4.0])
    assert a.is_leaf and b.is_leaf
    c = a * b
    assert not c.is_leaf and c.requires_grad and c.grad_fn is not None
    d = b * 2
    assert d.is_leaf and not d.requires_grad and d.grad_fn is None


def test_grad_fn_repr_and_next_functions():
    a = leaf([1.0])
    b = leaf([2.0])
    c = a * b
    assert "MulBackward" in repr(c.grad_fn)
    nf = c.grad_fn.next_functions
    assert len(nf) == 2
    assert nf[0][0].name() == "AccumulateGrad" and nf[0][0].variable is a
    assert nf[1][0].variable is b
    assert "grad_fn=<MulBackward0>" in repr(c)
    assert repr(a) == "tensor([1.], requires_grad=True)"


# 2. .grad only on leaves and retaining non-leaves
def test_rule2_grad_only_on_leaves_with_warning():
    a = leaf([1.0, 2.0])
    h = a * 3
    out = h.sum()
    out.backward()
    np.testing.assert_array_equal(a.grad.numpy(), [3.0, 3.0])
    with pytest.warns(UserWarning, match="not a leaf Tensor is being accessed") as rec:
        assert h.grad is None
    assert rec[0].filename == __file__       # points at the user's line


def test_retain_grad_on_nonleaf():
    a = leaf([1.0, 2.0])
    h = a * 3
    h.retain_grad()
    assert h.retains_grad
    (h * h).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), [6.0, 12.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        h.grad       # no warning once retained


def test_retain_grad_on_leaf_is_noop_and_on_nograd_raises():
    a = leaf([1.0])
    a.retain_grad()
    assert not a.retains_grad
    with pytest.raises(RuntimeError, match="requires_grad=False"):
        cg.tensor([1.0]).retain_grad()


def test_warning_not_after_user_assigns_grad():
    a = leaf([1.0])
    h = a * 2
    h.grad = cg.tensor([5.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert h.grad.item() == 5.0


# 3. accumulation
def test_rule3_accumulation_and_zero_grad_in_place():
    a = leaf([1.0, 2.0])
    (a * a).sum().backward()
    g = a.grad
    (a * a).sum().backward()
    assert a.grad is g                      # accumulated in place, as torch
    np.testing.assert_array_equal(g.numpy(), [4.0, 8.0])


# 4. requires_grad settable only on leaves
def test_rule4_requires_grad_on_nonleaf():
    a = leaf([1.0])
    h = a * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags "
                                           "of leaf variables."):
        h.requires_grad = False
    with pytest.raises(RuntimeError, match="only change requires_grad"):
        h.requires_grad_(False)
    assert h.requires_grad_(True) is h        # silent no-op


def test_integer_tensors_cannot_require_grad():
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can "
                                           "require gradients"):
        cg.tensor([1, 2], requires_grad=True)
    t = cg.tensor([True])
    with pytest.raises(RuntimeError, match="floating point"):
        t.requires_grad = True


# 5. in-place on leaves
def test_rule5_inplace_on_leaf_refused_then_allowed_under_no_grad():
    w = leaf([1.0, 2.0])
    for op in (lambda: w.add_(1), lambda: w.mul_(2), lambda: w.sub_(1),
               lambda: w.div_(2), lambda: w.zero_(), lambda: w.fill_(3)):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad "
                                               "is being used in an in-place "
                                               "operation."):
            op()
    np.testing.assert_array_equal(w.numpy(force=True), [1.0, 2.0])
    assert w._version == 0
    with cg.no_grad():
        w += 1
        w.mul_(2)
    assert w.is_leaf and w.requires_grad and w.grad_fn is None
    assert w._version == 2
    np.testing.assert_array_equal(w.detach().numpy(), [4.0, 6.0])


# 6. version counters
def test_rule6_saved_tensor_modified_in_place():
    a = leaf([1.0, 2.0])
    h = a * 1
    y = h.exp()               # saves its output
    y.add_(1)
    with pytest.raises(RuntimeError, match="one of the variables needed for gradient "
                                           "computation has been modified by an "
                                           "inplace operation") as e:
        y.sum().backward()
    assert "is at version 1; expected version 0 instead" in str(e.value)


def test_version_shared_with_detach():
    a = leaf([1.0, 2.0])
    h = a * 1
    y = h * h                 # saves h
    h.detach().mul_(3)        # in-place through a detached alias
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_nonleaf_inplace_records_history():
    a = leaf([1.0, 2.0])
    h = a * 2
    h += 1
    h *= 3
    assert "MulBackward0" in repr(h.grad_fn)
    h.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [6.0, 6.0])


def test_inplace_mul_by_tensor_saves_old_value():
    a = leaf([1.0, 2.0])
    b = leaf([3.0, 4.0])
    h = a * 1
    h *= b
    h.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 2.0])


# 7. backward twice
def test_rule7_second_backward_through_freed_buffers():
    a = leaf([1.0, 2.0])
    out = (a * 2).sum()
    out.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a "
                                           "second time") as e:
        out.backward()
    assert "retain_graph=True" in str(e.value)


def test_retain_graph_keeps_buffers():
    a = leaf([1.0, 2.0])
    out = (a * a).sum()
    out.backward(retain_graph=True)
    out.backward()
    np.testing.assert_array_equal(a.grad.numpy(), [4.0, 8.0])


def test_graph_without_saved_tensors_can_run_twice():
    # PyTorch: only nodes that saved tensors are "used up".
    a = leaf([1.0, 2.0])
    out = (a + 1).sum()
    out.backward()
    out.backward()
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 2.0])


# 8. implicit gradients
def test_rule8_nonscalar_backward_needs_gradient():
    a = leaf([1.0, 2.0])
    y = a * 2
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for "
                                           "scalar outputs"):
        y.backward()
    y.backward(cg.tensor([1.0, 10.0]))
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 20.0])


def test_gradient_of_wrong_shape():
    a = leaf([1.0, 2.0])
    y = a * 2
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has "
                                           r"a shape of \[3\] and output\[0\] has a "
                                           r"shape of \[2\]"):
        y.backward(cg.tensor([1.0, 1.0, 1.0]))
    assert a.grad is None


def test_backward_on_tensor_without_grad():
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require "
                                           "grad and does not have a grad_fn"):
        cg.tensor(1.0).backward()


# 9. detach, no_grad and friends
def test_rule9_detach_shares_storage():
    a = leaf([1.0, 2.0])
    d = a.detach()
    assert d.is_leaf and not d.requires_grad
    d.numpy()[1] = 7.0
    assert a.detach().numpy()[1] == 7.0


def test_detach_inplace():
    a = leaf([1.0])
    h = a * 2
    h.detach_()
    assert h.is_leaf and not h.requires_grad


def test_grad_modes_nest_and_decorate():
    a = leaf([1.0])
    assert cg.is_grad_enabled()
    with cg.no_grad():
        assert not cg.is_grad_enabled()
        assert not (a * 2).requires_grad
        with cg.enable_grad():
            assert (a * 2).requires_grad
        assert not cg.is_grad_enabled()
    assert cg.is_grad_enabled()

    @cg.no_grad
    def f(x):
        return x * 2

    @cg.no_grad()
    def g(x):
        return x * 2

    @cg.enable_grad()
    def h(x):
        return x * 2

    assert not f(a).requires_grad and not g(a).requires_grad
    with cg.no_grad():
        assert h(a).requires_grad
    with cg.set_grad_enabled(False):
        assert not (a * 2).requires_grad
    assert cg.is_grad_enabled()
    cg.set_grad_enabled(False)
    assert not cg.is_grad_enabled()
    cg.set_grad_enabled(True)
    assert cg.is_grad_enabled()


def test_grad_mode_is_thread_local():
    seen = {}

    def worker():
        seen["thread"] = cg.is_grad_enabled()
        with cg.no_grad():
            seen["inner"] = cg.is_grad_enabled()

    with cg.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert not cg.is_grad_enabled()
    assert seen == {"thread": True, "inner": False}


# 10. deep graphs
def test_rule10_long_chain_no_recursion():
    x = leaf(1.0, dtype=cg.float64)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.backward()
    assert x.grad.item() == 1.0
    del y         # freeing must not overflow the C stack


# broadcasting
def test_broadcast_gradients_are_sum_reduced():
    a = leaf(np.arange(3.0).reshape(3, 1))
    b = leaf(np.arange(4.0).reshape(1, 4))
    (a * b).sum().backward()
    assert a.grad.shape == (3, 1) and b.grad.shape == (1, 4)
    np.testing.assert_allclose(a.grad.numpy(), np.full((3, 1), 6.0))
    np.testing.assert_allclose(b.grad.numpy(), np.full((1, 4), 3.0))


def test_backward_inputs_accumulates_only_listed():
    a = leaf([1.0])
    b = leaf([2.0])
    (a * b).sum().backward(inputs=[a])
    assert a.grad.item() == 2.0 and b.grad is None


def test_hook_replaces_gradient():
    a = leaf([1.0, 2.0])
    h = a * 2
    h.register_hook(lambda g: g * 10)
    h.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [20.0, 20.0])
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that "
                                           "doesn't require gradient"):
        cg.tensor([1.0]).register_hook(lambda g: g)


def test_numpy_on_requires_grad():
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that "
                                           "requires grad. Use "
                                           "tensor.detach\\(\\).numpy\\(\\) instead."):
        leaf([1.0]).numpy()


def test_assign_wrong_shaped_grad():
    a = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="attempting to assign a gradient of size"):
        a.grad = cg.tensor([1.0])
    assert a.grad is None


# dtype inference and promotion
def test_dtype_inference():
    assert cg.tensor(1.0).dtype == cg.float32
    assert cg.tensor(1).dtype == cg.int64
    assert cg.tensor(True).dtype == cg.bool
    assert cg.tensor(np.zeros(2, np.float64)).dtype == cg.float64
    assert cg.tensor([1, 2.5]).dtype == cg.float32


# NumPy scalars, arrays and tensors inside tensor() data keep their dtype and
# promote with the Python numbers around them (torch 2.13, observed).
NUMPY_DATA = [
    (np.float64(0.5), "float64"),
    (np.float32(0.5), "float32"),
    (np.int32(3), "int32"),
    (np.bool_(True), "bool"),
    ([np.float64(0.5)], "float64"),
    ([np.int32(3), 5], "int64"),
    ([np.float16(1), 2.0], "float32"),
    ([1, np.float32(2)], "float32"),
    ([np.int64(1), 2.0], "float32"),
    ([1.0, np.float64(2)], "float64"),
    ([np.array([1.0, 2.0]), np.array([3.0, 4.0])], "float64"),
]


@pytest.mark.parametrize("data, want", NUMPY_DATA, ids=[w for _, w in NUMPY_DATA])
def test_dtype_inference_with_numpy_values(data, want):
    assert cg.tensor(data).dtype == np.dtype(want)
    torch = pytest.importorskip("torch")
    assert str(torch.tensor(data).dtype) == f"torch.{want}"


def _sequence_data(m):
    import array
    import collections
    return [collections.deque([1.5, 2.0, -0.25]), range(4), array.array("d", [1, 2]),
            [collections.deque([1, 2]), range(2)],
            collections.deque([m.tensor(1.0), m.tensor(2.0)]),
            collections.UserList([[1, 0], [True, 2]])]


@pytest.mark.parametrize("i", range(6))
def test_tensor_reads_any_sequence_as_a_list_as_torch(i):
    """A deque (pytorch/examples' REINFORCE keeps its returns in one), a
    range, an array.array: torch reads every object with the sequence
    protocol as a list."""
    torch = pytest.importorskip("torch")
    ours = cg.tensor(_sequence_data(cg)[i])
    theirs = torch.tensor(_sequence_data(torch)[i])
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "")
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("data", [{1, 2}, {1: 2}, None, [1, None], [{1}], object()],
                         ids=["set", "dict", "None", "None-inside", "set-inside",
                              "object"])
def test_tensor_refuses_other_data_with_torchs_error(data):
    """Sets, mappings, None: RuntimeError, as torch (not TypeError)."""
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as theirs:
        torch.tensor(data)
    with pytest.raises(RuntimeError) as ours:
        cg.tensor(data)
    assert str(ours.value).startswith(str(theirs.value))


def test_promotion():
    f32 = cg.ones(2)
    f64 = cg.ones(2, dtype=cg.float64)
    i64 = cg.tensor([1, 2])
    assert (f32 + f64).dtype == cg.float64
    assert (f32 * 2.5).dtype == cg.float32
    assert (i64 + f32).dtype == cg.float32
    assert (i64 * 2).dtype == cg.int64
    assert (i64 / 2).dtype == cg.float32
    assert (i64 * 2.5).dtype == cg.float32
    assert (f32 + cg.tensor(1.0, dtype=cg.float64)).dtype == cg.float32  # 0-d ranks lower


def test_mixed_precision_grad_keeps_input_dtype():
    a = leaf([1.0, 2.0])                      # float32
    b = leaf([3.0, 4.0], dtype=cg.float64)
    out = (a * b).sum()
    assert out.dtype == cg.float64
    out.backward()
    assert a.grad.dtype == cg.float32 and b.grad.dtype == cg.float64
    np.testing.assert_array_equal(a.grad.numpy(), [3.0, 4.0])


# errors on bad input leave things unchanged
def test_non_broadcastable_shapes_named():
    a = leaf([1.0, 2.0, 3.0])
    b = cg.ones(2)
    with pytest.raises(RuntimeError, match=r"\[3\] and \[2\]"):
        a * b


def test_matmul_inner_mismatch():
    a = cg.ones(2, 3)
    b = cg.ones(4, 5)
    with pytest.raises(RuntimeError, match=r"cannot be multiplied \(2x3 and 4x5\)"):
        a @ b


def test_tensor_bad_data():
    with pytest.raises(ValueError, match="ragged"):
        cg.tensor([[1.0, 2.0], [3.0]])
    with pytest.raises(TypeError):
        cg.tensor(["a", "b"])
    with pytest.raises(TypeError):
        cg.tensor([1 + 2j])
    with pytest.raises(TypeError):
        cg.tensor(np.array([object()]))


def test_item_needs_one_element():
    with pytest.raises(RuntimeError, match="2 elements cannot be converted"):
        cg.tensor([1.0, 2.0]).item()
    assert cg.tensor([[3.5]]).item() == 3.5


def test_inplace_shape_mismatch_leaves_tensor():
    a = cg.ones(2)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        a += cg.ones(3, 2)
    assert a._version == 0 and a.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_inplace_operators_on_plain_tensors(dtype):
    """The compiled path of += -= *= /= (no view, no graph): values, version
    bumps, broadcasting of one element, and operands sharing the memory."""
    x = cg.tensor([3.0, 4.0, 5.0], dtype=dtype)
    x += 1
    x -= cg.tensor([1.0, 2.0, 3.0], dtype=dtype)
    x *= cg.tensor(2.0, dtype=dtype)
    x /= cg.tensor([4.0], dtype=dtype)
    assert x.tolist() == [1.5, 1.5, 1.5] and x._version == 4
    y = cg.tensor([3.0, 4.0, 5.0], dtype=dtype)
    y -= y                                  # the same buffer: elementwise
    assert y.tolist() == [0.0, 0.0, 0.0]
    z = cg.tensor([3.0, 4.0, 5.0, 6.0], dtype=dtype)
    for write in (lambda: z.__isub__(z[0]), lambda: z[1:].__iadd__(z[:3])):
        # torch refuses an operand that partly overlaps the written tensor
        with pytest.raises(RuntimeError, match="refer to a single memory location"):
            write()
        assert z.tolist() == [3.0, 4.0, 5.0, 6.0] and z._version == 0
    w = cg.tensor([1.0, 2.0], dtype=dtype, requires_grad=True)
    with cg.no_grad():                      # an optimizer's update
        w -= 0.5 * cg.tensor([2.0, 2.0], dtype=dtype)
    assert w.tolist() == [0.0, 1.0] and w.is_leaf and w.grad_fn is None


def test_inplace_on_read_only_memory_is_refused_and_leaves_it():
    arr = np.array([1.0, 2.0], dtype=np.float32)
    arr.flags.writeable = False
    t = cg.from_numpy(arr)
    with pytest.raises(ValueError, match="read-only"):
        t += 1
    assert t.tolist() == [1.0, 2.0] and t._version == 0


def test_zero_on_every_kind_of_tensor():
    """zero_'s compiled path (plain contiguous tensors) and the cases it hands
    to fill_: strided views, the graph's in-place rules, read-only memory."""
    t = cg.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert t.zero_() is t and t.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert t._version == 1
    u = cg.tensor([[1, 2], [3, 4]])
    u.t().zero_()                                   # a strided view
    assert u.tolist() == [[0, 0], [0, 0]] and u._version == 1
    w = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w.zero_()
    assert w.tolist() == [1.0, 2.0] and w._version == 0
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        w[:1].zero_()
    with cg.no_grad():
        w.zero_()
    assert w.tolist() == [0.0, 0.0] and w.is_leaf
    h = leaf([1.0, 2.0]) * 2
    h.zero_()                                       # recorded in the graph
    h.sum().backward()
    assert h.grad_fn is not None


def test_grad_setter_checks_type_shape_and_dtype():
    w = leaf([1.0, 2.0])
    with pytest.raises(TypeError, match="expected to be a Tensor or None"):
        w.grad = [1.0, 2.0]
    with pytest.raises(RuntimeError, match="same size"):
        w.grad = cg.zeros(3)
    with pytest.raises(RuntimeError, match="same dtype"):
        w.grad = cg.zeros(2, dtype=cg.float64)
    assert w.grad is None
    w.grad = cg.ones(2)
    assert w.grad.tolist() == [1.0, 1.0]
    del w.grad
    assert w.grad is None


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matrix_product_node_saves_what_torch_saves(dtype):
    """2-D float products take the compiled node (MmBackward0): a is saved
    only for b's gradient and b only for a's, so an in-place change of an
    operand nothing saved is allowed, as in torch."""
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((3, 4)).astype(dtype)
    b0 = rng.standard_normal((5, 4)).astype(dtype)
    x = cg.tensor(x0, requires_grad=True)
    h = x * 2
    b = cg.tensor(b0)
    out = h @ b.t()                           # a transposed (strided) operand
    assert out.grad_fn.name() == "MmBackward0"
    h.add_(1.0)                               # h is not saved: b needs no grad
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.ones((3, 5)) @ b0,
                               rtol=1e-5)
    with pytest.raises(RuntimeError, match="backward through the graph a second"):
        out.sum().backward()
    out = (x * 2) @ b.t()
    b.add_(1.0)                               # b is saved for h's gradient
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_where_backward_gives_exact_zeros_beside_inf_and_nan():
    # torch: grad_x = where(cond, grad, 0), so an inf or NaN upstream gradient
    # never leaks into the unselected side (g * 0 would give NaN there).
    x = cg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = cg.tensor([0.0, 0.0, 0.0], requires_grad=True)
    cond = cg.tensor([True, False, True])
    cg.where(cond, x, y).backward(cg.tensor([float("inf"), float("nan"), 2.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [np.inf, 0.0, 2.0])
    np.testing.assert_array_equal(y.grad.numpy(), [0.0, np.nan, 0.0])
