"""``torch.backends.mps``: gradlab has no Apple-GPU (MPS) backend."""


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False
