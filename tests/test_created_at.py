"""The inspectors' "created at": animate_backward, called after the forward ran, names the notebook cell
that made each op (gradlab/autograd/cell_origin.py), as animate_forward names the line."""
from __future__ import annotations

import pytest

from gradlab.autograd import cell_origin

from .optional import require

require("anywidget", "the live widgets need anywidget (pip install 'gradlab[lab]')")
require("IPython", "the cells' origins are IPython's (pip install 'gradlab[lab]')")


@pytest.fixture
def shell():
    """A real IPython shell running numbered cells; removed afterwards (cells noted here leave no trace)."""
    from IPython.core import interactiveshell
    sh = interactiveshell.InteractiveShell.instance()
    saved = list(cell_origin._starts)
    try:
        assert cell_origin.install()
        yield sh
    finally:
        for event, fn in (("pre_run_cell", cell_origin._pre_run_cell), ("post_run_cell", cell_origin._post_run_cell)):
            if fn in sh.events.callbacks[event]:
                sh.events.unregister(event, fn)
        cell_origin._starts[:] = saved
        interactiveshell.InteractiveShell.clear_instance()


def _run(sh, code):
    r = sh.run_cell(code, store_history=True)
    r.raise_error()
    return r.execution_count


def test_animate_backward_names_the_cell_that_made_each_op(shell):
    _run(shell, "import gradlab\ngradlab.manual_seed(0)")
    made = _run(shell, "x = gradlab.randn(3, 4, requires_grad=True)\nh = (x * 2).tanh()")
    later = _run(shell, "loss = (h.exp()).sum()\nw = gradlab.animate_backward(loss)")
    w = shell.user_ns["w"]
    sites = {n["op"]: n.get("site") for n in w.nodes.values() if n.get("kind") == "op"}
    assert later > made
    assert sites["mul"] == sites["tanh"] == f"cell [{made}]", sites
    assert sites["exp"] == sites["sum"] == f"cell [{later}]", sites     # the cell still running counts too
    assert all(n.get("site") is None for n in w.nodes.values() if n.get("kind") != "op")


def test_outside_ipython_nothing_is_noted(monkeypatch):
    import gradlab
    monkeypatch.setattr(cell_origin, "_starts", [])
    monkeypatch.setattr(cell_origin, "_shell", lambda: None)
    assert cell_origin.install() is False
    x = gradlab.ones(2, requires_grad=True) * 3
    assert cell_origin.cell_of(x.grad_fn.seq) is None and cell_origin.cell_of(None) is None


def test_noting_a_cell_does_not_renumber_the_nodes(shell):
    """A notebook prints node numbers (``<... backward node #5>``): noting cells must not use any up."""
    _run(shell, "import gradlab\nf = lambda: (gradlab.ones(2, requires_grad=True) * 2).grad_fn.seq\na1 = f(); a2 = f()")
    _run(shell, "b = f()")
    ns = shell.user_ns
    assert ns["b"] - ns["a2"] == ns["a2"] - ns["a1"], "a new cell moved the node numbers on"
