"""show_graph's outputs: SVG/PNG/DOT files, graphviz.Digraph, notebook display, nbconvert HTML,
and the guard that keeps Graphviz's fontconfig warning out of stderr."""
from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET

import pytest

import gradlab
from gradlab.viz import show_graph

from .test_viz import dot_graph, mlp, pgv


def test_view_outputs(tmp_path):
    loss, _ = mlp()
    v = show_graph(loss)
    bundle = v._repr_mimebundle_()
    assert bundle["image/svg+xml"].startswith("<svg") and "GraphView" in bundle["text/plain"]
    assert v._repr_svg_().startswith("<svg")
    assert (tmp_path / "g.png").exists() is False
    v.save(tmp_path / "g.png")
    assert (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    v.save(str(tmp_path / "g.svg"))
    ET.parse(tmp_path / "g.svg")                      # well-formed
    v.save(str(tmp_path / "g.dot"))
    assert (tmp_path / "g.dot").read_text() == v.source
    with pytest.raises(ValueError, match=r"\.svg, \.png"):
        v.save(str(tmp_path / "g.xyz"))
    graphviz = pytest.importorskip("graphviz")
    d = v.to_graphviz()
    assert isinstance(d, graphviz.Digraph) and 'id="op0"' in d.source
    assert set(pgv.AGraph(string=d.source).nodes()) == set(dot_graph(v).nodes())   # the same drawing
    assert "forward graph of 'loss'" in repr(v) and "memory:" in repr(v)


def test_gradlab_exports_show_graph():
    assert gradlab.show_graph is show_graph
    assert gradlab.viz.show_graph is show_graph


def test_fontconfig_warning_never_reaches_stderr():
    """A fresh interpreter renders for the first time; its fd 2 must stay empty."""
    code = textwrap.dedent("""
        import gradlab
        x = gradlab.randn(3, requires_grad=True)
        v = gradlab.show_graph((x * 2).sum())
        assert v.svg().startswith("<?xml") or "<svg" in v.svg()
        import tempfile, os
        v.save(os.path.join(tempfile.mkdtemp(), "g.png"))
        print("ok")
    """)
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"
    assert res.stderr == "", res.stderr


def test_quiet_stderr_drops_only_fontconfig(capfd):
    from gradlab.viz.render import quiet_stderr
    with quiet_stderr():
        os.write(2, b'Fontconfig warning: "x.conf", line 6: unknown element "reset-dirs"\n')
        os.write(2, b"something else went wrong\n")
    err = capfd.readouterr().err
    assert "Fontconfig" not in err and "something else went wrong" in err


def test_notebook_gets_inline_svg_and_no_stderr(tmp_path):
    """In a fresh Jupyter kernel the first render shows an SVG and writes nothing to stderr."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(
        "import gradlab\nx = gradlab.randn(3, requires_grad=True)\ngradlab.show_graph((x * 2).sum())")]
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                resources={"metadata": {"path": repo}}).execute()
    except Exception as exc:  # pragma: no cover - no kernel installed
        if "No such kernel" in str(exc):
            pytest.skip(f"no python3 Jupyter kernel: {exc}")
        raise
    outputs = nb.cells[0].outputs
    assert [o for o in outputs if o.output_type == "stream"] == []
    result = [o for o in outputs if o.output_type == "execute_result"]
    assert result and result[0].data["image/svg+xml"].lstrip().startswith("<svg")
    nbconvert = pytest.importorskip("nbconvert")
    html, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    # exported HTML embeds the picture (inline, or as a base64 data: image in nbconvert 7), ids intact
    found = re.findall(r"data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)", html)
    embedded = [base64.b64decode(m).decode() for m in found]
    assert any('<g id="op0" class="node op">' in part for part in embedded + [html])


def test_display_falls_back_to_text_when_drawing_fails(monkeypatch):
    loss, _ = mlp()
    v = show_graph(loss)
    import gradlab.viz.render as render

    def broken(dot, format="svg"):
        raise RuntimeError("no layout engine")
    monkeypatch.setattr(render, "render_svg", broken)
    bundle = v._repr_mimebundle_()
    assert list(bundle) == ["text/plain"] and "could not draw it: RuntimeError: no layout engine" in bundle["text/plain"]
