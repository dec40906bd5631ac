# The NumPy side of the ``xp`` namespace that backwards are written against
# (cygrad/ops/registry.py), as compiled functions: called from a backward
# they cost no Python frame and skip NumPy's function dispatch (np.reshape
# and np.sum are Python wrappers around the methods).  The MLP benchmark's
# step ran 5.8% more instructions with the Python forms.
# Part of engine.pyx (included there; it is one compiled module).

def xp_val(t):
    """A tensor's array (anything else as it is)."""
    if isinstance(t, TensorBase):
        return (<TensorBase>t)._arr
    return t


def xp_out(a):
    """An array result as a new Tensor; None stays None."""
    if a is None:
        return None
    if not isinstance(a, cnp.ndarray):
        a = np.asarray(a)
    return _new_tensor(a)


def xp_reshape(a, shape):
    return a.reshape(shape)


def xp_swapaxes(a, int d0, int d1):
    return a.swapaxes(d0, d1)


def xp_transpose(a, axes):
    return a.transpose(axes)


def xp_sum(a, axis=None, keepdims=False):
    return a.sum(axis=axis, keepdims=keepdims)
