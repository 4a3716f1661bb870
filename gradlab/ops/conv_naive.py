"""``conv2d_naive``: convolution written as the definition, one output pixel at a time.

For teaching and benchmarking only (``F.conv2d`` is the im2col version).
For every output position ``(i, j)`` it cuts the input patch under the kernel
and takes its dot product with every filter::

    Y[:, o, i, j] = sum_{c, u, v} Xpad[:, c, i*s + u*d, j*s + v*d] * W[o, c, u, v]   (+ b[o])

Backward walks the same loop: each output pixel's gradient flows back into
its patch (``dX``) and into the filters (``dW``). The Python loop over
``OH * OW`` positions is exactly what im2col removes by turning all the
patches into one matrix. First-order gradients only.
"""
from __future__ import annotations

from ..autograd.function import Op
from ..autograd.grad_mode import state as _grad_state
from ..backend import xp_of
from ..errors import GradError
from .._tensor import Tensor
from .conv import NS, check_conv_args, conv_samples, out_size
from .registry import register


def _patch(k, d, s, i, j):
    """The slices of the padded input under the kernel for output pixel ``(i, j)``."""
    return (slice(i * s[0], i * s[0] + d[0] * (k[0] - 1) + 1, d[0]),
            slice(j * s[1], j * s[1] + d[1] * (k[1] - 1) + 1, d[1]))


class Conv2dNaive(Op):
    name = "conv2d_naive"
    formula = "for each output pixel: dW += dY[:, :, i, j]^T . patch ; dpatch += dY[:, :, i, j] . W"

    @staticmethod
    def forward(ctx, x, w, b, s, p, d, groups):
        ctx.save_for_backward(x, w)
        ctx.conf = (s, p, d, groups)
        xp = xp_of(x.data)
        a = xp.pad(x.data, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
        n, c, h, wd = x.shape
        oc, cg, kh, kw = w.shape
        k, ocg = (kh, kw), oc // groups
        oh, ow = out_size(h, kh, d[0], p[0], s[0]), out_size(wd, kw, d[1], p[1], s[1])
        out = xp.zeros((n, oc, oh, ow), dtype=w.dtype)
        for g in range(groups):
            wg = w.data[g * ocg:(g + 1) * ocg]
            xg = a[:, g * cg:(g + 1) * cg]
            for i in range(oh):
                for j in range(ow):
                    rows, cols = _patch(k, d, s, i, j)
                    patch = xg[:, :, rows, cols]                                  # (N, C/G, kh, kw)
                    out[:, g * ocg:(g + 1) * ocg, i, j] = xp.tensordot(patch, wg, axes=([1, 2, 3], [1, 2, 3]))
        if b is not None:
            out += b.data.reshape(1, oc, 1, 1)
        return out

    def vjp(self, grad):
        if _grad_state.enabled:  # backward with create_graph=True: the loops below record no graph
            raise GradError("conv2d_naive: its backward is plain loops over arrays, so it cannot be "
                            "differentiated again (create_graph=True); use gradlab.nn.functional.conv2d "
                            "for higher-order gradients")
        dx, dw, db = Conv2dNaiveBackward.apply(grad, self)
        return dx, dw, (db if self.needs_input_grad[2] else None), None, None, None, None


class Conv2dNaiveBackward(Op):
    """The loop-by-loop backward of :class:`Conv2dNaive` (arrays in, arrays out: no second order)."""

    name = "conv2d_naive_backward"
    formula = "(not differentiable again: use F.conv2d for higher-order gradients)"

    @staticmethod
    def forward(ctx, grad, node):
        x, w = node.saved_tensors
        s, p, d, groups = node.conf
        xp = xp_of(x.data)
        a = xp.pad(x.data, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
        da = xp.zeros_like(a)
        dw = xp.zeros_like(w.data)
        oc, cg, kh, kw = w.shape
        k, ocg = (kh, kw), oc // groups
        g_ = grad.data
        for g in range(groups):
            co, ci = slice(g * ocg, (g + 1) * ocg), slice(g * cg, (g + 1) * cg)
            wg = w.data[co]
            for i in range(g_.shape[2]):
                for j in range(g_.shape[3]):
                    rows, cols = _patch(k, d, s, i, j)
                    gij = g_[:, co, i, j]                                            # (N, OC/G)
                    dw[co] += xp.tensordot(gij, a[:, ci, rows, cols], axes=([0], [0]))
                    da[:, ci, rows, cols] += xp.tensordot(gij, wg, axes=([1], [0]))
        h, wd = x.shape[2:]
        dx = da[:, :, p[0]:p[0] + h, p[1]:p[1] + wd]
        return dx.astype(x.dtype, copy=False), dw, g_.sum(axis=(0, 2, 3))

    def vjp(self, *grads):  # pragma: no cover - Conv2dNaive.vjp refuses create_graph first
        raise GradError("conv2d_naive: gradients of its gradient are not implemented (it is the teaching "
                        "version); use gradlab.nn.functional.conv2d for higher-order gradients")


def conv2d_naive(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """The same result as ``F.conv2d``, computed with a Python loop over output pixels (slow; for teaching)."""
    x, w, b, s, p, d, g, unbatched = check_conv_args("conv2d_naive", input, weight, bias, stride, padding,
                                                     dilation, groups)
    out = Conv2dNaive.apply(x, w, b, s, p, d, g)
    return out.squeeze(0) if unbatched else out


register("conv2d_naive", op=Conv2dNaive, samples=conv_samples, order=1, jvp=False, namespace="gradlab.ops.conv",  # not in F: PyTorch has no such function
         torch=lambda torch, *a, **k: torch.nn.functional.conv2d(*a, **k))(conv2d_naive)
