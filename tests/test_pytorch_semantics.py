"""PyTorch semantics where gradlab once gave a silent wrong answer or a silent acceptance.

* a ``uint8`` index tensor is a mask (with PyTorch's deprecation warning), not integer positions;
* ``as_tensor(ndarray)`` shares memory with the array when no conversion is needed;
* inference tensors: refused where a backward would save them, and in place outside inference mode;
* the views ``unbind``/``split``/``chunk`` return cannot be changed in place while recording;
* ``DataLoader(num_workers=-1)`` is refused.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradlab
from gradlab.errors import ArgumentError, GradError


def test_uint8_index_is_a_mask_with_a_deprecation_warning():
    x = gradlab.arange(5.0)
    m = [1, 0, 1, 1, 0]
    with pytest.warns(UserWarning, match="uint8 is now deprecated"):
        got = x[gradlab.tensor(m, dtype=gradlab.uint8)]
    np.testing.assert_array_equal(got.numpy(), x.numpy()[np.array(m, dtype=bool)])
    with pytest.warns(UserWarning, match="uint8"):
        x[gradlab.tensor(m, dtype=gradlab.uint8)] = -1.0
    np.testing.assert_array_equal(x.numpy(), [-1.0, 1.0, -1.0, -1.0, 4.0])


def test_uint8_index_matches_pytorch(torch):
    m = np.array([[1, 0, 1], [0, 0, 1]], dtype=np.uint8)
    a = np.arange(6.0).reshape(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        want = torch.from_numpy(a)[torch.from_numpy(m)].numpy()
        got = gradlab.from_numpy(a)[gradlab.from_numpy(m)].numpy()
    np.testing.assert_array_equal(got, want)


def test_as_tensor_of_an_ndarray_shares_memory_when_no_conversion_is_needed():
    a = np.zeros(3, dtype=np.float32)
    t = gradlab.as_tensor(a)
    a[0] = 5.0
    assert t[0].item() == 5.0
    assert gradlab.as_tensor(a, dtype=gradlab.float32).numpy() is not None and \
        np.shares_memory(gradlab.as_tensor(a, dtype=gradlab.float32).numpy(), a)
    b = np.zeros(3)  # float64 asked as float32: a converted copy, as PyTorch's
    c = gradlab.as_tensor(b, dtype=gradlab.float32)
    b[0] = 5.0
    assert c.dtype == gradlab.float32 and c[0].item() == 0.0


def test_inference_tensors_are_not_saved_for_backward():
    with gradlab.inference_mode():
        it = gradlab.ones(3) * 2
        assert it.is_inference() and gradlab.ones(2).is_inference()
    assert not gradlab.ones(2).is_inference()
    w = gradlab.ones(3, requires_grad=True)
    with pytest.raises(GradError, match="inference_mode"):
        w * it  # mul saves both inputs
    (w + it).sum().backward()  # add saves nothing: allowed, as in PyTorch
    np.testing.assert_array_equal(w.grad.numpy(), np.ones(3))
    with gradlab.no_grad():
        nt = gradlab.ones(3) * 2
    assert not nt.is_inference()
    (w * nt).sum().backward()  # a no_grad tensor is fine


def test_inference_tensors_change_in_place_only_in_inference_mode():
    with gradlab.inference_mode():
        it = gradlab.ones(3)
        it.add_(1)  # inside: allowed
    with pytest.raises(GradError, match="inference_mode"):
        it.add_(1)
    with gradlab.no_grad(), pytest.raises(GradError, match="inference_mode"):
        it.mul_(2)
    np.testing.assert_array_equal(it.numpy(), [2.0, 2.0, 2.0])


@pytest.mark.parametrize("pieces", [lambda x: x.unbind(0), lambda x: x.split(1), lambda x: x.chunk(2)],
                         ids=["unbind", "split", "chunk"])
def test_in_place_on_a_multi_output_view_is_refused_while_recording(pieces):
    x = gradlab.ones(2, 3, requires_grad=True) * 1
    with pytest.raises(GradError, match="one of the views"):
        pieces(x)[0].mul_(2)
    leaf = gradlab.ones(2, 3, requires_grad=True)
    with gradlab.no_grad():
        v = pieces(leaf)[0]
    with pytest.raises(GradError, match="one of the views"):
        v.mul_(2)  # made under no_grad from a tensor that requires grad, changed while recording
    plain = gradlab.ones(2, 3)
    with pytest.raises(GradError, match="one of the views"):
        pieces(plain)[0].mul_(gradlab.ones(3, requires_grad=True))
    with gradlab.no_grad():
        pieces(x)[0].mul_(2)  # not recording: allowed, as in PyTorch
    pieces(plain)[0].mul_(2)  # nothing requires grad: allowed
    assert plain[0, 0].item() == 2.0


def test_multi_output_view_refusals_match_pytorch(torch):
    def cases(mod):
        yield lambda: (mod.ones(2, 3, requires_grad=True) * 1).unbind(0)[0].mul_(2)
        yield lambda: mod.ones(2, 3).unbind(0)[0].mul_(mod.ones(3, requires_grad=True))
        yield lambda: mod.ones(2, 3).unbind(0)[0].mul_(2)

        def under_no_grad():
            x = mod.ones(2, 3, requires_grad=True) * 1
            with mod.no_grad():
                x.unbind(0)[0].mul_(2)
        yield under_no_grad

    def refused(f):
        try:
            f()
        except RuntimeError:
            return True
        return False
    assert [refused(f) for f in cases(gradlab)] == [refused(f) for f in cases(torch)]


@pytest.mark.parametrize("bad", [-1, -3])
def test_dataloader_refuses_a_bad_num_workers(bad):
    with pytest.raises(ArgumentError, match="num_workers"):
        gradlab.utils.data.DataLoader([1, 2, 3], num_workers=bad)
    assert gradlab.utils.data.DataLoader([1, 2, 3], num_workers=0).num_workers == 0
