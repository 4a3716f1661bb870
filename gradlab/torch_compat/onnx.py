"""``torch.onnx``: importing it works (programs import it at the top); exporting is refused clearly,
since gradlab has no ONNX exporter."""
from __future__ import annotations

from ..errors import GradlabError


class OnnxExportNotSupported(GradlabError, RuntimeError):
    """``gradlab.onnx.export``: gradlab cannot write ONNX files."""


def export(model, args=(), f=None, *a, **kw):
    raise OnnxExportNotSupported(
        "onnx.export: gradlab has no ONNX exporter; save the weights with gradlab.save(model.state_dict(), "
        "'model.pt') and export from PyTorch (load the state_dict into the same model written with torch)")


def is_in_onnx_export() -> bool:
    """False: gradlab never exports."""
    return False
