"""The parts of ``cygrad.utils.benchmark``, in torch's module layout."""
