"""``cygrad.backends.mps``: Apple's GPU backend, absent (cygrad runs on the CPU)."""


def is_available():
    return False


def is_built():
    return False
