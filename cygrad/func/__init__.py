"""``cygrad.func``: torch.func's composable transforms.

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``,
``hessian``, ``linearize`` and ``functionalize`` differentiate functions
(``_autodiff``), ``vmap`` maps a function of one example over a batch
(``_vmap``: a loop over the examples, see there for its cost), and
``functional_call`` / ``stack_module_state`` treat a module as a function
of its parameters (``_stateless``).  They nest: per-example gradients are
``vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)`` with ``loss``
calling ``functional_call(model, params, (x,))``.
"""

from ._autodiff import (
    functionalize,
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    vjp,
)
from ._stateless import (
    functional_call,
    replace_all_batch_norm_modules_,
    stack_module_state,
)
from ._vmap import vmap

__all__ = ["functional_call", "functionalize", "grad", "grad_and_value", "hessian",
           "jacfwd", "jacrev", "jvp", "linearize", "replace_all_batch_norm_modules_",
           "stack_module_state", "vjp", "vmap"]
