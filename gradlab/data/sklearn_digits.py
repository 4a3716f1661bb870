"""The 8x8 handwritten digits (1797 images) that scikit-learn ships inside its package.

Optional: install ``gradlab[data]`` (scikit-learn). Nothing is downloaded:
the images are a file inside the scikit-learn wheel.
"""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor


def have_digits() -> bool:
    try:
        import sklearn.datasets  # noqa: F401
    except ImportError:
        return False
    return True


def digits(flatten: bool = False, normalize: bool = True):
    """``(X, y)``: X float32 ``(1797, 1, 8, 8)`` (or ``(1797, 64)`` if ``flatten``) in ``[0, 1]``, y int64."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise ImportError("gradlab.data.digits needs scikit-learn, which bundles the 8x8 digits: "
                          "pip install 'gradlab[data]' (or pip install scikit-learn)") from None
    d = load_digits()
    X = d.data.astype(np.float32)
    if normalize:
        X = X / 16.0
    X = X if flatten else X.reshape(-1, 1, 8, 8)
    return Tensor._make(np.ascontiguousarray(X)), Tensor._make(d.target.astype(np.int64))
