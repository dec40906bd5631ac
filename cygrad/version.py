"""``cygrad.version``: what scripts read of ``torch.version``.  cygrad runs
on the CPU, so there is no CUDA or ROCm version (None, as on a CPU build
of torch)."""

__version__ = "0.1.0"
cuda = None
hip = None
debug = False
git_version = "unknown"
