"""``gradlab.source(op)``: where an op lives and its definition, for every registered op."""
import inspect
import os

import pytest

import gradlab
import gradlab.nn.functional as F
from gradlab.ops import REGISTRY


def test_source_of_tanh_shows_each_rule_with_its_file_and_line():
    s = gradlab.source(gradlab.tanh)
    text = str(s)
    assert s.name == "tanh" and s.formula == gradlab.ops.REGISTRY["tanh"].formula
    # tanh is one short class of the elementwise table (with its derivative, ``grad``) first, then the
    # rules every row shares (Elementwise's forward/vjp_arrays/jvp, inherited by Tanh) and its own vjp
    assert s.pieces[0].what == "class Tanh"
    for rule in ("forward", "vjp", "vjp_arrays", "jvp"):
        assert any(p.what.split(" ")[0].endswith(f".{rule}") and "Tanh" in p.what for p in s.pieces), rule
    assert any(p.what == "the function gradlab.tanh" for p in s.pieces)
    assert "vjp(self, g)" in text and "def forward(ctx" in text and "1 - Y^2" in s.pieces[0].code
    path, line = s.where.rsplit(":", 1)
    src_file = inspect.getsourcefile(REGISTRY["tanh"].op)
    assert src_file.endswith(path) and os.path.exists(src_file)
    with open(src_file) as f:
        assert f.read().splitlines()[int(line) - 1].startswith("class Tanh(Elementwise)")
    assert repr(s) == text and "```python" in s._repr_markdown_()


@pytest.mark.parametrize("how", ["name", "function", "class", "node", "tensor"])
def test_every_way_of_naming_an_op_finds_the_same_definition(how):
    x = gradlab.randn(3, requires_grad=True)
    y = x.tanh()
    arg = {"name": "tanh", "function": gradlab.tanh, "class": type(y.grad_fn), "node": y.grad_fn, "tensor": y}[how]
    assert [p.where for p in gradlab.source(arg).pieces] == [p.where for p in gradlab.source("tanh").pieces]


def test_functional_ops_are_found_by_short_name_and_by_function():
    assert gradlab.source("softmax").name == "softmax"
    assert gradlab.source(F.softmax).where == gradlab.source("functional.softmax").where


def test_source_works_for_every_registered_op():
    for key, info in REGISTRY.items():
        s = gradlab.source(key)
        assert s.pieces and all(p.where != "?" for p in s.pieces), key
        if info.op is not None:
            assert s.pieces[0].what.split(":")[0] == f"class {info.op.__name__}"


def test_a_user_function_and_bad_input_give_clear_answers():
    class Double(gradlab.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    s = gradlab.source(Double)
    assert [p.what for p in s.pieces][:1] == ["class Double"] and any("backward" in p.what for p in s.pieces)
    with pytest.raises(gradlab.debug.DebugInputError, match="no op named 'tahn'"):
        gradlab.source("tahn")
    with pytest.raises(gradlab.debug.DebugInputError, match="no grad_fn"):
        gradlab.source(gradlab.randn(2))
    with pytest.raises(TypeError):
        gradlab.source(3)


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def test_inspect_getsource_works_on_every_op_class():
    """Every op class is a ``class`` statement a student can read (no class made at import by ``type()``):
    ``inspect.getsource`` finds it, and the text it finds defines that class."""
    import gradlab.nn.functional  # noqa: F401 - imports the functional ops' classes too
    from gradlab.autograd.function import Op
    gradlab.polygamma(3, gradlab.tensor([1.5]))  # an order made on demand is still the one class
    classes = [c for c in set(_subclasses(Op)) if c.__module__.startswith("gradlab.")]
    assert len(classes) > 80
    for cls in classes:
        src = inspect.getsource(cls)
        assert src.lstrip().startswith(f"class {cls.__name__}("), cls
