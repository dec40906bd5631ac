"""``cygrad.backends.cudnn``: flags accepted and kept (cygrad has no cuDNN)."""

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available():
    return False


def version():
    return None
