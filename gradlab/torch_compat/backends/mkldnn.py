"""``torch.backends.mkldnn``: not used by gradlab (NumPy's BLAS does the cpu work); flags kept."""
enabled = True
deterministic = False


def is_available() -> bool:
    return False
