"""``gradlab.sparse``: sparse COO tensors for graph networks (``torch.sparse``'s names).

Holds (from ``coo.py``) ``sparse_coo_tensor``, ``SparseCOOTensor``, ``to_sparse`` (installed as
``Tensor.to_sparse``), the layouts ``sparse_coo`` and ``strided``, and here ``mm`` / ``spmm``: a sparse
matrix times a dense one, with gradients to the dense matrix and to the sparse values. Anything else
``torch.sparse`` has is refused with a message saying what to do.
"""
from .._tensor import Tensor
from .coo import SparseCOOTensor, SparseNotSupported, sparse_coo, sparse_coo_tensor, strided, to_sparse


def mm(mat1, mat2):
    """``torch.sparse.mm``: a sparse COO matrix times a dense matrix (a dense result); two dense matrices are
    multiplied as by ``gradlab.mm``."""
    if isinstance(mat1, SparseCOOTensor):
        return mat1._sparse_mm(mat2, "sparse.mm")
    if isinstance(mat2, SparseCOOTensor):
        raise SparseNotSupported("sparse.mm: a dense matrix times a sparse one is not supported in gradlab; write "
                                 "(S.t() @ D.t()).t() for D @ S")
    from .. import ops
    return ops.mm(mat1, mat2)


def spmm(input, mat2):
    """``torch.spmm``: the same as ``sparse.mm``."""
    return mm(input, mat2)


def _dense_to_dense(self, dtype=None):
    """``x.to_dense()`` of a dense tensor is the tensor itself (as PyTorch)."""
    return self if dtype is None else self.to(dtype)


Tensor.to_sparse = to_sparse
Tensor.to_dense = _dense_to_dense
Tensor.is_sparse = False
Tensor.layout = strided


def __getattr__(name):
    if name.startswith("_"):
        raise AttributeError(name)
    raise SparseNotSupported(f"gradlab.sparse.{name}: not in gradlab; gradlab.sparse has mm, spmm and "
                             "sparse_coo_tensor (convert with .to_dense() to use dense ops)")


__all__ = ["SparseCOOTensor", "SparseNotSupported", "mm", "spmm", "sparse_coo", "sparse_coo_tensor", "strided",
           "to_sparse"]
