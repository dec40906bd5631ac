"""``biject_to`` and ``transform_to``: from a constraint to a transform
that maps the unconstrained reals onto it (torch's
``torch.distributions.constraint_registry``).

``biject_to(c)`` is a bijection (for optimisers and samplers that need a
Jacobian, HMC say); ``transform_to(c)`` need not be one (for plain
unconstrained optimisation).  ``register`` adds a factory for a
constraint class.
"""

import numbers

from cygrad.distributions import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """A table from constraint classes to transform factories."""

    def __init__(self):
        self._registry = {}
        super().__init__()

    def register(self, constraint, factory=None):
        """Register ``factory(constraint) -> Transform`` for a constraint
        class (or an instance's class); without ``factory``, a decorator."""
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(
                constraint, constraints.Constraint):
            raise TypeError("Expected constraint to be either a Constraint subclass "
                            f"or instance, but got {constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint):
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(
                f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _both(constraint):
    def deco(factory):
        biject_to.register(constraint, factory)
        transform_to.register(constraint, factory)
        return factory
    return deco


@_both(constraints.real)
def _to_real(constraint):
    return transforms.identity_transform


@biject_to.register(constraints.independent)
def _biject_independent(constraint):
    return transforms.IndependentTransform(biject_to(constraint.base_constraint),
                                           constraint.reinterpreted_batch_ndims)


@transform_to.register(constraints.independent)
def _transform_independent(constraint):
    return transforms.IndependentTransform(transform_to(constraint.base_constraint),
                                           constraint.reinterpreted_batch_ndims)


@_both(constraints.positive)
def _to_positive(constraint):
    return transforms.ExpTransform()


_both(constraints.nonnegative)(_to_positive)


@_both(constraints.greater_than)
def _to_greater_than(constraint):
    return transforms.ComposeTransform([
        transforms.ExpTransform(),
        transforms.AffineTransform(constraint.lower_bound, 1)])


_both(constraints.greater_than_eq)(_to_greater_than)


@_both(constraints.less_than)
def _to_less_than(constraint):
    return transforms.ComposeTransform([
        transforms.ExpTransform(),
        transforms.AffineTransform(constraint.upper_bound, -1)])


@_both(constraints.interval)
def _to_interval(constraint):
    lo, hi = constraint.lower_bound, constraint.upper_bound
    if isinstance(lo, numbers.Number) and lo == 0 and \
            isinstance(hi, numbers.Number) and hi == 1:
        return transforms.SigmoidTransform()
    return transforms.ComposeTransform([
        transforms.SigmoidTransform(), transforms.AffineTransform(lo, hi - lo)])


_both(constraints.half_open_interval)(_to_interval)


@biject_to.register(constraints.simplex)
def _biject_simplex(constraint):
    return transforms.StickBreakingTransform()


@transform_to.register(constraints.simplex)
def _transform_simplex(constraint):
    return transforms.SoftmaxTransform()


@transform_to.register(constraints.lower_cholesky)
def _transform_lower_cholesky(constraint):
    return transforms.LowerCholeskyTransform()


@transform_to.register(constraints.positive_definite)
def _transform_positive_definite(constraint):
    return transforms.PositiveDefiniteTransform()


transform_to.register(constraints.positive_semidefinite, _transform_positive_definite)


@_both(constraints.corr_cholesky)
def _to_corr_cholesky(constraint):
    return transforms.CorrCholeskyTransform()


@biject_to.register(constraints.cat)
def _biject_cat(constraint):
    return transforms.CatTransform([biject_to(c) for c in constraint.cseq],
                                   constraint.dim, constraint.lengths)


@transform_to.register(constraints.cat)
def _transform_cat(constraint):
    return transforms.CatTransform([transform_to(c) for c in constraint.cseq],
                                   constraint.dim, constraint.lengths)


@biject_to.register(constraints.stack)
def _biject_stack(constraint):
    return transforms.StackTransform([biject_to(c) for c in constraint.cseq],
                                     constraint.dim)


@transform_to.register(constraints.stack)
def _transform_stack(constraint):
    return transforms.StackTransform([transform_to(c) for c in constraint.cseq],
                                     constraint.dim)
