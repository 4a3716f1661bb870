"""Arguments on another device are refused, and buffers follow their module: loss weights, index and
mask arguments, BatchNorm's running statistics, on the simulated device (``sim_device``, any machine).
"""
from __future__ import annotations

import numpy as np
import pytest

import gradlab
from gradlab.errors import ShapeError


def test_loss_weight_follows_module_to_device(sim_device):
    w = gradlab.tensor([1.0, 2.0, 3.0])
    crit = gradlab.nn.CrossEntropyLoss(weight=w.clone()).to(sim_device)
    assert crit.weight.device.type == "cuda"
    logits, target = gradlab.randn(4, 3), gradlab.tensor([0, 1, 2, 1])
    expected = gradlab.nn.functional.cross_entropy(logits, target, weight=w)
    got = crit(logits.to(sim_device), target.to(sim_device))
    np.testing.assert_allclose(got.cpu().item(), expected.item(), rtol=1e-6)


@pytest.mark.parametrize("case", ["where", "gather", "index_select", "scatter", "masked_fill", "cross_entropy",
                                  "nll_loss", "embedding"])
def test_index_and_mask_arguments_must_share_the_device(sim_device, case):
    from gradlab.errors import DeviceError
    F = gradlab.nn.functional
    x = gradlab.randn(3, 4).to(sim_device)
    idx, mask = gradlab.tensor([[0], [1], [2]]), gradlab.randn(3, 4) > 0   # left on the cpu
    run = {"where": lambda i, m: gradlab.where(m, x, 0.0), "gather": lambda i, m: x.gather(1, i),
           "index_select": lambda i, m: x.index_select(0, i[:, 0]), "scatter": lambda i, m: x.scatter(1, i, 1.0),
           "masked_fill": lambda i, m: x.masked_fill(m, 0.0), "cross_entropy": lambda i, m: F.cross_entropy(x, i[:, 0]),
           "nll_loss": lambda i, m: F.nll_loss(x, i[:, 0]),
           "embedding": lambda i, m: F.embedding(i[:, 0], gradlab.randn(5, 2).to(sim_device))}[case]
    with pytest.raises(DeviceError, match=r"cuda:0.*cpu|cpu.*cuda:0"):
        run(idx, mask)
    out = run(idx.to(sim_device), mask.to(sim_device))  # all on one device: fine
    assert out.device.type == "cuda"


def test_batchnorm_wrong_rank_and_device(sim_device):
    with pytest.raises(ShapeError, match=r"BatchNorm2d.*4-D.*\(2, 3\)"):
        gradlab.nn.BatchNorm2d(3)(gradlab.randn(2, 3))
    bn = gradlab.nn.BatchNorm2d(3).to(sim_device)
    assert bn.running_mean.device.type == "cuda" and bn.num_batches_tracked.dtype == gradlab.int64
    bn(gradlab.randn(2, 3, 4, 4).to(sim_device))
    assert int(bn.num_batches_tracked.item()) == 1
