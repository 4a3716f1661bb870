"""``torch.backends.cudnn``: gradlab does not use cuDNN. ``enabled``, ``benchmark``, ``deterministic`` and
``allow_tf32`` are plain flags: set them freely, they change nothing."""
enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: gradlab never calls cuDNN (its convolutions are im2col + matmul)."""
    return False


def version():
    return None
