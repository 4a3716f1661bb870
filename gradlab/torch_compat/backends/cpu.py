"""``torch.backends.cpu``."""


def get_cpu_capability() -> str:
    """What NumPy's build uses is NumPy's business; PyTorch answers e.g. 'AVX2'. gradlab answers 'numpy'."""
    return "numpy"
