"""``size=`` on the factories, as PyTorch's signatures take it (``zeros(size=(2, 3))``), and the TypeErrors
PyTorch raises for the shape given twice or as an int."""
from __future__ import annotations

import pytest

import gradlab

FACTORIES = ["zeros", "ones", "empty", "rand", "randn"]


@pytest.mark.oracle
@pytest.mark.parametrize("name", FACTORIES)
def test_size_keyword_gives_the_shape_pytorch_gives(name, torch):
    for size in [(2, 3), [4], (), (1, 0, 2)]:
        g, t = getattr(gradlab, name)(size=size), getattr(torch, name)(size=size)
        assert tuple(g.shape) == tuple(t.shape)
        assert g.dtype == gradlab.float32
    g = getattr(gradlab, name)(size=(2,), dtype=gradlab.float64, requires_grad=True)
    assert g.dtype == gradlab.float64 and g.requires_grad
    assert tuple(getattr(gradlab, name)(size=torch.Size([3, 1])).shape) == (3, 1)  # torch.Size is a tuple


@pytest.mark.oracle
@pytest.mark.parametrize("name", FACTORIES)
def test_size_given_twice_or_as_an_int_is_a_type_error_as_in_pytorch(name, torch):
    for call in (lambda lib: getattr(lib, name)(2, size=(2, 3)), lambda lib: getattr(lib, name)(size=3)):
        with pytest.raises(TypeError):
            call(torch)
        with pytest.raises(TypeError, match=f"{name}\\(\\).*size"):
            call(gradlab)


@pytest.mark.oracle
def test_randint_full_and_new_methods_take_size_keywords(torch):
    for lib in (gradlab, torch):
        assert tuple(lib.randint(high=5, size=(3,)).shape) == (3,)
        assert tuple(lib.randint(1, 5, size=(2, 2)).shape) == (2, 2)
        assert tuple(lib.full(size=(2,), fill_value=3.0).shape) == (2,)
        x = lib.ones(2, dtype=lib.float64)
        for m in ("new_zeros", "new_ones", "new_empty"):
            y = getattr(x, m)(size=(3, 1))
            assert tuple(y.shape) == (3, 1) and y.dtype == x.dtype
    assert (gradlab.randint(high=5, size=(200,)).numpy() < 5).all()
    with pytest.raises(TypeError, match="new_zeros\\(\\) got multiple values"):
        gradlab.ones(2).new_zeros(3, size=(2,))
    with pytest.raises(TypeError, match="randint"):
        gradlab.randint(size=(2,))


def test_positional_spellings_still_work():
    assert gradlab.zeros(2, 3).shape == gradlab.zeros((2, 3)).shape == gradlab.zeros(size=(2, 3)).shape == (2, 3)
    gradlab.manual_seed(3)
    a = gradlab.randn(size=(4,))
    gradlab.manual_seed(3)
    assert (a.numpy() == gradlab.randn(4).numpy()).all()  # the same draw either way
