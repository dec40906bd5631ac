"""Storages (``Tensor.storage()``, ``untyped_storage()``, the legacy typed
storage classes), ``Tensor.set_``, ``is_set_to`` and the legacy ``Tensor.new``
against torch on the same inputs."""

import warnings

import numpy as np
import pytest

import cygrad

torch = pytest.importorskip("torch")
LIBS = (cygrad, torch)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "TypedStorage is deprecated")
        yield


def both(fn):
    return [fn(m) for m in LIBS]


def test_typed_storage_is_the_memory_of_the_tensor_and_its_views():
    def run(m):
        t = m.arange(6.0)
        s, u = t.storage(), t[2:].untyped_storage()
        return (s.size(), len(s), s.element_size(), s.nbytes(), u.nbytes(),
                s.data_ptr() == t.data_ptr(), u.data_ptr() == t.data_ptr(),
                t[2:].storage_offset(), t[2:].detach().storage_offset(),
                t.view(2, 3)[1].storage_offset(), m.ones(2, 3).t().storage().size(),
                s.type(), u.type(), s.tolist(), t.untyped_storage()[4])
    got, want = both(run)
    assert got == want


def test_writes_through_a_storage_reach_the_tensor():
    def run(m):
        t = m.arange(4.0)
        s = t.storage()
        s[0] = 9
        first = t.tolist()
        s.fill_(2)
        c = s.clone()
        c[1] = 7
        return first, t.tolist(), c.tolist(), s[3], type(s[3]).__name__
    got, want = both(run)
    assert got == want


def test_storage_dtype_device_and_legacy_classes():
    for m in LIBS:
        s = m.zeros(2).storage()
        assert isinstance(s, m.FloatStorage) and not isinstance(s, m.DoubleStorage)
        assert isinstance(s, m.TypedStorage)
        assert s.dtype == m.float32 and str(s.device) == "cpu"
        assert isinstance(m.zeros(2, dtype=m.int64).storage(), m.LongStorage)
        assert m.FloatStorage([1, 2]).tolist() == [1.0, 2.0]
        assert m.DoubleStorage(3).size() == 3
        assert m.UntypedStorage(4).nbytes() == 4
        assert list(m.UntypedStorage([1, 2, 3])) == [1, 2, 3]
        assert m.UntypedStorage(2).element_size() == 1


def test_typed_storage_warns_that_it_is_deprecated():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cygrad.zeros(2).storage()
    assert any("TypedStorage is deprecated" in str(w.message) for w in caught)


@pytest.mark.parametrize("index, error", [(10, IndexError), (-7, IndexError)])
def test_storage_index_out_of_range(index, error):
    for m in LIBS:
        with pytest.raises(error, match="out of range"):
            m.arange(6.0).storage()[index]
        with pytest.raises(error, match="out of range"):
            m.arange(6.0).untyped_storage()[index * 4]


def test_typed_storage_refuses_slices_like_torch():
    for m in LIBS:
        with pytest.raises(RuntimeError, match="slices are only supported"):
            m.arange(3.0).storage()[0:2]


def test_set_to_a_tensor_shares_its_memory():
    def run(m):
        a = m.arange(6.0)
        b = m.zeros(1).set_(a)
        flags = (b.is_set_to(a), a.is_set_to(b), a[1:].is_set_to(a),
                 b.data_ptr() == a.data_ptr())
        b[0] = 7
        return flags, a.tolist(), tuple(b.shape)
    got, want = both(run)
    assert got == want


@pytest.mark.parametrize("offset, size, stride", [
    (1, (2, 2), None), (0, (3,), (2,)), (None, None, None), (1, (2, 2), (1, 2)),
    (0, (0,), None)])
@pytest.mark.parametrize("via", ["storage", "tensor"])
def test_set_to_a_storage_views_it(offset, size, stride, via):
    def run(m):
        a = m.arange(6.0)
        src = a.untyped_storage() if via == "storage" else a
        if size is None and via == "tensor":
            src = a.untyped_storage()
        c = m.zeros(1).set_(src) if size is None else \
            m.zeros(1).set_(src, offset, size, stride)
        out = (c.tolist(), c.stride(), c.storage_offset())
        c.fill_(-1)
        return out, a.tolist()
    got, want = both(run)
    assert got == want


def test_set_empty_and_bad_sources():
    for m in LIBS:
        with pytest.raises(TypeError):
            m.zeros(1).set_(m.arange(3.0).untyped_storage(), 1)
        assert tuple(m.ones(3).set_().shape) == (0,)
        with pytest.raises(RuntimeError, match="Could not set tensor of type long int "
                                               "to a tensor of type float"):
            m.zeros(3).set_(m.arange(6))
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            m.ones(2, requires_grad=True).set_(m.arange(3.0))


def test_set_past_the_storage_raises_and_changes_nothing():
    # torch grows the storage; cygrad's storages do not resize (differences.md)
    a = cygrad.arange(6.0)
    t = cygrad.ones(2)
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 24"):
        t.set_(a.untyped_storage(), 5, (2,))
    assert t.tolist() == [1.0, 1.0]


def test_new_is_the_legacy_constructor():
    def run(m):
        x = m.zeros(2)
        a = m.arange(3.0)
        return (tuple(x.new().shape), tuple(x.new(2, 3).shape), x.new((2, 3)).tolist(),
                x.new([1, 2]).tolist(), tuple(x.new(m.Size([2, 3])).shape),
                str(x.new(2).dtype).rpartition(".")[2],
                m.zeros(2, dtype=m.int32).new([1.7, 2]).tolist(),
                x.new(a).data_ptr() == a.data_ptr())
    got, want = both(run)
    assert got == want


def test_new_refuses_a_scalar():
    for m in LIBS:
        with pytest.raises(TypeError, match="data must be a sequence"):
            m.zeros(2).new(2.5)


def test_as_strided_counts_offsets_from_the_storage_start():
    def run(m):
        x = m.arange(8.0)[2:].detach()
        return m.as_strided(x, (2, 2), (1, 2), 3).tolist()
    got, want = both(run)
    assert got == want
    np.testing.assert_array_equal(got, [[3.0, 5.0], [4.0, 6.0]])


@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0), (2, 0, 4)])
def test_empty_tensors_have_torchs_strides(shape):
    assert cygrad.zeros(*shape).stride() == torch.zeros(*shape).stride()


# --- as_subclass and how subclasses print ----------------------------------------------

def _subclass(m):
    return type("MyTensor", (m.Tensor,), {})


def test_as_subclass_aliases_with_history():
    def run(m):
        cls = _subclass(m)
        x = m.ones(2, requires_grad=True)
        y = x.as_subclass(cls)
        z = (x * 2).as_subclass(cls)
        (z * 3).sum().backward()
        first = x.grad.tolist()
        y.sum().backward()
        return (type(y).__name__, y.requires_grad, y.grad_fn.name(), y.is_leaf,
                y.data_ptr() == x.data_ptr(), first, x.grad.tolist())
    got, want = both(run)
    assert got == want


def test_as_subclass_refuses_a_class_that_is_not_a_tensor():
    for m in LIBS:
        with pytest.raises(TypeError, match="does not inherit from Tensor"):
            m.ones(2).as_subclass(int)


def test_subclasses_print_under_their_name_and_parameters_say_so():
    def run(m):
        cls = _subclass(m)
        p = m.nn.Parameter(m.ones(2))
        return (str(m.ones(2, 2).as_subclass(cls)),
                repr(m.ones(2, requires_grad=True).as_subclass(cls)), str(p), repr(p))
    got, want = both(run)
    assert got == want
