"""``RemovableHandle``: what ``Module.register_*_hook`` returns, as
``torch.utils.hooks.RemovableHandle``."""

import itertools

__all__ = ["RemovableHandle"]

_ids = itertools.count()


class RemovableHandle:
    """Removes its hook from every table it was put in: ``handle.remove()``,
    or on leaving a ``with handle:`` block.

    Parameters
    ----------
    hooks_dict : dict
        The table the hook is stored in under ``handle.id``.
    extra_dict : dict or list of dicts, optional
        Further tables keyed by the same id (the with_kwargs flags).
    on_change : callable, optional
        Called after a removal (the owner refreshes its fast-path flag).
    """

    def __init__(self, hooks_dict, *, extra_dict=None, on_change=None):
        self.id = next(_ids)
        self.hooks_dict_ref = hooks_dict
        if extra_dict is None:
            extra_dict = []
        elif isinstance(extra_dict, dict):
            extra_dict = [extra_dict]
        self.extra_dict_ref = tuple(extra_dict)
        self._on_change = on_change

    def remove(self):
        self.hooks_dict_ref.pop(self.id, None)
        for d in self.extra_dict_ref:
            d.pop(self.id, None)
        if self._on_change is not None:
            self._on_change()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
