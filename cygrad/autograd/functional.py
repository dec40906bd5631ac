"""``cygrad.autograd.functional``: torch's name for the derivative helpers
(they live in ``higher``)."""

from .higher import hessian, hvp, jacobian, jvp, vhp, vjp

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]
