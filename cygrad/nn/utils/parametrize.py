"""``register_parametrization``: a tensor of a module computed from
"original" parameters by a chain of modules, as
``torch.nn.utils.parametrize``.

``register_parametrization(m, "weight", P)`` moves ``m.weight`` to
``m.parametrizations.weight.original`` (or ``original0``, ``original1``,
... when ``P.right_inverse`` returns a tuple), and turns ``m`` into a
subclass ``Parametrized<Class>`` whose ``weight`` is a property: reading it
evaluates the chain on the originals (differentiably), assigning to it runs
the chain's ``right_inverse`` and copies into the originals.  State-dict
keys and reprs are torch's, so checkpoints interchange.
"""

import contextlib

from cygrad._tensor import Tensor
from cygrad.autograd.grad_mode import no_grad

from ..module import Module
from ..modules.container import ModuleDict, ModuleList
from ..parameter import Parameter

__all__ = ["cached", "is_parametrized", "register_parametrization",
           "remove_parametrizations", "type_before_parametrizations"]

_cache = None      # {(id(module), name): tensor} inside ``cached()``


@contextlib.contextmanager
def cached():
    """Inside the block, each parametrized tensor is computed once."""
    global _cache
    outer = _cache
    if outer is None:
        _cache = {}
    try:
        yield
    finally:
        if outer is None:
            _cache = None


class ParametrizationList(ModuleList):
    """The chain of parametrizations of one tensor, holding its originals."""

    def __init__(self, modules, original, unsafe=False):
        super().__init__(modules)
        self.unsafe = unsafe
        with no_grad():
            new = original
            for m in reversed(modules):
                if hasattr(m, "right_inverse"):
                    try:
                        new = m.right_inverse(new)
                    except NotImplementedError:
                        pass    # as torch: the original is kept as it is
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if new is not original and tuple(new.shape) == tuple(original.shape):
                with no_grad():
                    original.copy_(new)
                new = original
            self._store("original", new, original)
        else:
            for i, t in enumerate(new):
                self._store(f"original{i}", t, original)

    def _store(self, name, value, like):
        if isinstance(value, Parameter):
            self.register_parameter(name, value)
        elif isinstance(like, Parameter):
            self.register_parameter(name, Parameter(value.detach().clone(),
                                                    like.requires_grad))
        else:
            self.register_buffer(name, value)

    def right_inverse(self, value):
        """Assign ``value`` to the parametrized tensor (through the chain's
        right inverses) in place of the originals."""
        with no_grad():
            for m in reversed(list(self)):
                if hasattr(m, "right_inverse"):
                    value = m.right_inverse(value)
            if self.is_tensor:
                self.original.copy_(value)
            else:
                for i, t in enumerate(value):
                    getattr(self, f"original{i}").copy_(t)

    def forward(self):
        mods = list(self)
        if self.is_tensor:
            x = mods[0](self.original)
        else:
            x = mods[0](*[getattr(self, f"original{i}") for i in range(self.ntensors)])
        for m in mods[1:]:
            x = m(x)
        return x


def _property(name):
    def get(self):
        key = (id(self), name)
        if _cache is not None and key in _cache:
            return _cache[key]
        value = self.parametrizations[name]()
        if _cache is not None:
            _cache[key] = value
        return value

    def set_(self, value):
        self.parametrizations[name].right_inverse(value)

    return property(get, set_)


def _inject_class(module):
    cls = module.__class__
    new = type(f"Parametrized{cls.__name__}", (cls,), {"_original_class": cls})
    object.__setattr__(module, "__class__", new)


def is_parametrized(module, tensor_name=None):
    """Whether ``module`` (or its ``tensor_name``) has a parametrization."""
    plist = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(plist, ModuleDict):
        return False
    return True if tensor_name is None else tensor_name in plist


def type_before_parametrizations(module):
    """The module's class before any parametrization was registered."""
    return getattr(type(module), "_original_class", type(module)) if \
        is_parametrized(module) else type(module)


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Parametrize ``module.<tensor_name>`` by the module ``parametrization``
    (appended to the chain if the tensor already has one).  Returns module."""
    if not isinstance(parametrization, Module):
        raise TypeError(f"parametrization must be an nn.Module, got "
                        f"{type(parametrization).__name__}")
    if is_parametrized(module, tensor_name):
        plist = module.parametrizations[tensor_name]
        if not unsafe:
            current = plist()
            Y = parametrization(current)
            if not isinstance(Y, Tensor):
                raise ValueError(
                    f"A parametrization must return a tensor. Got {type(Y).__name__}.")
            if Y.dtype != current.dtype or tuple(Y.shape) != tuple(current.shape):
                raise ValueError(
                    "Registering a parametrization may not change the shape or dtype "
                    f"of the tensor. unparametrized dtype: {current.dtype}, shape: "
                    f"{tuple(current.shape)}; parametrized: {Y.dtype}, {tuple(Y.shape)}")
        plist.append(parametrization)
        return module
    if tensor_name not in module._parameters and tensor_name not in module._buffers:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    original = getattr(module, tensor_name)
    plist = ParametrizationList([parametrization], original, unsafe=unsafe)
    if not unsafe:
        Y = plist()
        if not isinstance(Y, Tensor):
            raise ValueError(
                f"A parametrization must return a tensor. Got {type(Y).__name__}.")
        if Y.dtype != original.dtype or tuple(Y.shape) != tuple(original.shape):
            raise ValueError(
                "Registering a parametrization may not change the shape or dtype of "
                f"the tensor. unparametrized dtype: {original.dtype}, shape: "
                f"{tuple(original.shape)}; parametrized: {Y.dtype}, {tuple(Y.shape)}")
    delattr(module, tensor_name)
    if not is_parametrized(module):
        _inject_class(module)
        module.parametrizations = ModuleDict()
    module.parametrizations[tensor_name] = plist
    setattr(type(module), tensor_name, _property(tensor_name))
    return module


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undo ``register_parametrization`` for ``tensor_name``; the tensor
    keeps its current parametrized value (``leave_parametrized``) or its
    original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on "
                         f"{tensor_name}")
    plist = module.parametrizations[tensor_name]
    if leave_parametrized:
        with no_grad():
            value = getattr(module, tensor_name)
        if plist.is_tensor:
            with no_grad():
                plist.original.data = value.detach().clone()
            kept = plist.original
        else:
            kept = Parameter(value.detach().clone())
    else:
        if not plist.is_tensor:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) "
                             "a tensor that is parametrized in terms of a sequence of "
                             "tensors.")
        kept = plist.original
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    if isinstance(kept, Parameter):
        module.register_parameter(tensor_name, kept)
    else:
        module.register_buffer(tensor_name, kept)
    if not module.parametrizations:
        del module.parametrizations
        object.__setattr__(module, "__class__", type(module)._original_class)
    return module



def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Give ``to_module`` the parametrizations of ``from_module`` (all of them,
    or those of ``tensor_name``) with the same original parameters (shared,
    not copied); a tensor ``to_module`` lacks is first created as a Parameter
    of ``from_module``'s value.  Returns ``to_module``."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None \
        else [tensor_name]
    for name in names:
        source = from_module.parametrizations[name]
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        if hasattr(source, "original"):
            target.original = source.original
        else:
            i = 0
            while hasattr(source, f"original{i}"):
                setattr(target, f"original{i}", getattr(source, f"original{i}"))
                i += 1
    return to_module


__all__ += ["transfer_parametrizations_and_params"]
