"""Generate the submission fixtures in tests/fixtures/submissions/ from the exercise notebooks.

A fixture is what a student would hand in: the generated ``exercises/NN_name.ipynb`` (exactly as
``gradlab course build`` writes it) with each solution cell's source replaced by the code below.
Keeping the code here, and regenerating, keeps the fixtures in step with the exercises when their
test cells change.

* ``wrong_*``: plausible wrong implementations; ``tests/fixtures/submissions/expected_NN.json``
  says which parts each one must lose;
* ``alt_NN_*``: correct alternatives (a loop instead of vectorised code, an equivalent formula,
  another dtype within tolerance); they must get full marks.
* ``wrong_NN_fakes_*`` / ``wrong_unbroadcast_forged_records``: a wrong answer that redefines what the graded cells
  compute with (an instructor's helper, ``np``, ``isinstance``, ``str``) or forges malformed check
  records: graded in the grader's own namespace (``gradlab/course/graded.py``) and validated in the
  grader, it must lose exactly the parts it gets wrong, and the batch must finish.

    python scripts/make_fixtures.py            # write every fixture listed here
    python scripts/make_fixtures.py NAME...    # only these (file names without .ipynb)
    python scripts/make_fixtures.py --check    # exit 1 if a fixture on disk differs from what would be written

``FIXTURES[name] = (exercise, {solution grade_id: source})``; every solution cell of the exercise
must be given (the source replaces the whole cell): ``solved(exercise, grade_id)`` for one the fixture
leaves right, so that only the wrong cells are written out here. Add your exercise's cases in its own
section.
"""
from __future__ import annotations

import functools
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
EXERCISES = ROOT / "exercises"
OUT = ROOT / "tests" / "fixtures" / "submissions"

FIXTURES: dict[str, tuple[str, dict[str, str]]] = {}


@functools.lru_cache(maxsize=None)
def solution(exercise, gid):
    """The instructor's own source of one solution cell, markers included."""
    nb = nbformat.read(ROOT / "solutions" / f"{exercise}.ipynb", as_version=4)
    return next(c.source for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == gid)


def solved(exercise, gid):
    """One solution cell as a student who got it right hands it in: the instructor's source without the
    ``### BEGIN/END SOLUTION`` marker lines (for the cells a fixture leaves right)."""
    return "\n".join(line for line in solution(exercise, gid).split("\n")
                     if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))


# ---- 01_unbroadcast ----------------------------------------------
FIXTURES['wrong_unbroadcast_not_reduced'] = ('01_unbroadcast', {
    'unbroadcast': '''
def unbroadcast(grad, shape):
    """Sum `grad` (a NumPy array of the broadcast shape) down to `shape`."""
    shape = tuple(shape)
    extra = grad.ndim - len(shape)
    if extra > 0:
        grad = grad.sum(axis=tuple(range(extra)))
    # size-1 axes: the gradient is already there, just take the first copy
    index = tuple(slice(0, 1) if n == 1 else slice(None) for n in shape)
    return grad[index].reshape(shape)
''',
})
FIXTURES['alt_01_loop'] = ('01_unbroadcast', {
    'unbroadcast': '''
def unbroadcast(grad, shape):
    """Sum `grad` (a NumPy array of the broadcast shape) down to `shape`."""
    grad = np.asarray(grad)
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad
''',
})
FIXTURES['alt_01_accumulate'] = ('01_unbroadcast', {
    'unbroadcast': '''
def unbroadcast(grad, shape):
    out = np.zeros(shape)
    lead = grad.ndim - len(shape)
    for idx in np.ndindex(grad.shape):
        tgt = tuple(0 if n == 1 else i for i, n in zip(idx[lead:], shape))
        out[tgt] += grad[idx]
    return out
''',
})
FIXTURES['wrong_unbroadcast_mean'] = ('01_unbroadcast', {
    'unbroadcast': '''
def unbroadcast(grad, shape):
    shape = tuple(shape)
    extra = grad.ndim - len(shape)
    if extra > 0:
        grad = grad.mean(axis=tuple(range(extra)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    return grad.reshape(shape)
''',
})
FIXTURES['wrong_unbroadcast_one_leading_axis'] = ('01_unbroadcast', {
    'unbroadcast': '''
def unbroadcast(grad, shape):
    shape = tuple(shape)
    if grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    return grad.reshape(shape)
''',
})
FIXTURES['wrong_unbroadcast_float32_accumulator'] = ('01_unbroadcast', {
    'unbroadcast': '''
def unbroadcast(grad, shape):
    out = np.zeros(shape, dtype=np.float32)
    lead = grad.ndim - len(shape)
    g = grad.sum(axis=tuple(range(lead)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1)
    out += g.sum(axis=axes, keepdims=True)
    return out
''',
})

# ---- 02_matmul_vjp -----------------------------------------------
FIXTURES['wrong_matmul_missing_transpose'] = ('02_matmul_vjp', {
    'matmul_vjp': '''
def matmul_vjp(X, A, G):
    """Return (dX, dA) for Y = X @ A, given G = dL/dY (NumPy arrays, 2-D)."""
    return G @ A.T, (G.T @ X)   # dA: forgot to transpose back
''',
    'batched_matmul_vjp': '''
def batched_matmul_vjp(X, A, G):
    """X: (b, m, k), A: (k, n), G: (b, m, n). Return (dX, dA) with the shapes of X and A."""
    dX = G @ A.T
    dA = (X.transpose(0, 2, 1) @ G).mean(axis=0)
    return dX, dA
''',
})
FIXTURES['alt_02_einsum'] = ('02_matmul_vjp', {
    'matmul_vjp': '''
def matmul_vjp(X, A, G):
    return np.einsum("mn,kn->mk", G, A), np.einsum("mk,mn->kn", X, G)
''',
    'batched_matmul_vjp': '''
def batched_matmul_vjp(X, A, G):
    return np.einsum("bmn,kn->bmk", G, A), np.einsum("bmk,bmn->kn", X, G)
''',
})
FIXTURES['alt_02_reshape_loop'] = ('02_matmul_vjp', {
    'matmul_vjp': '''
def matmul_vjp(X, A, G):
    dX = (A @ G.T).T
    dA = np.zeros(A.shape)
    for i in range(X.shape[0]):
        dA += np.outer(X[i], G[i])
    return dX, dA
''',
    'batched_matmul_vjp': '''
def batched_matmul_vjp(X, A, G):
    b, m, k = X.shape
    dX = np.stack([g @ A.T for g in G])
    dA = X.reshape(-1, k).T @ G.reshape(-1, A.shape[1])
    return dX, dA
''',
})
FIXTURES['alt_02_float32'] = ('02_matmul_vjp', {
    'matmul_vjp': '''
def matmul_vjp(X, A, G):
    X, A, G = (np.asarray(t, dtype=np.float32) for t in (X, A, G))
    return G @ A.T, X.T @ G
''',
    'batched_matmul_vjp': solved('02_matmul_vjp', 'batched_matmul_vjp'),
})
FIXTURES['wrong_matmul_batch_product_of_sums'] = ('02_matmul_vjp', {
    'matmul_vjp': solved('02_matmul_vjp', 'matmul_vjp'),
    'batched_matmul_vjp': '''
def batched_matmul_vjp(X, A, G):
    return G @ A.T, X.sum(0).T @ G.sum(0)
''',
})
FIXTURES['wrong_matmul_batch_squeeze'] = ('02_matmul_vjp', {
    'matmul_vjp': solved('02_matmul_vjp', 'matmul_vjp'),
    'batched_matmul_vjp': '''
def batched_matmul_vjp(X, A, G):
    dX = G @ A.T
    dA = np.squeeze((X.transpose(0, 2, 1) @ G).sum(axis=0))
    return dX, dA
''',
})

# ---- 03_softmax --------------------------------------------------
FIXTURES['wrong_softmax_no_max_subtraction'] = ('03_softmax', {
    'softmax': '''
def softmax(x, dim=-1):
    e = np.exp(x)
    return e / e.sum(axis=dim, keepdims=True)


def log_softmax(x, dim=-1):
    """log(softmax(x)) without taking the log of a number that underflowed to 0."""
    z = x - x.max(axis=dim, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=dim, keepdims=True))
''',
    'softmax_vjp': solved('03_softmax', 'softmax_vjp'),
})
FIXTURES['alt_03_loop_logsumexp'] = ('03_softmax', {
    'softmax': '''
def softmax(x, dim=-1):
    x = np.moveaxis(np.asarray(x, dtype=float), dim, -1)
    out = np.empty_like(x)
    for idx in np.ndindex(x.shape[:-1]):
        row = x[idx]
        e = np.exp(row - row.max())
        out[idx] = e / e.sum()
    return np.moveaxis(out, -1, dim)


def log_softmax(x, dim=-1):
    m = np.max(x, axis=dim, keepdims=True)
    lse = m + np.log(np.sum(np.exp(x - m), axis=dim, keepdims=True))
    return x - lse
''',
    'softmax_vjp': '''
def softmax_vjp(y, g, dim=-1):
    gy = g * y
    return gy - y * gy.sum(axis=dim, keepdims=True)
''',
})
FIXTURES['alt_03_jacobian_vjp'] = ('03_softmax', {
    'softmax': solved('03_softmax', 'softmax'),
    'softmax_vjp': '''
def softmax_vjp(y, g, dim=-1):
    y2, g2 = np.moveaxis(y, dim, -1), np.moveaxis(g, dim, -1)
    out = np.empty(y2.shape)
    for idx in np.ndindex(y2.shape[:-1]):
        r = y2[idx]
        out[idx] = (np.diag(r) - np.outer(r, r)) @ g2[idx]
    return np.moveaxis(out, -1, dim)
''',
})
FIXTURES['wrong_softmax_global_max'] = ('03_softmax', {
    'softmax': '''
def softmax(x, dim=-1):
    e = np.exp(x - x.max())
    return e / e.sum(axis=dim, keepdims=True)

def log_softmax(x, dim=-1):
    z = x - x.max(axis=dim, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=dim, keepdims=True))
''',
    'softmax_vjp': solved('03_softmax', 'softmax_vjp'),
})
FIXTURES['wrong_log_softmax_of_softmax'] = ('03_softmax', {
    'softmax': '''
def softmax(x, dim=-1):
    z = x - x.max(axis=dim, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=dim, keepdims=True)

def log_softmax(x, dim=-1):
    return np.log(softmax(x, dim))
''',
    'softmax_vjp': solved('03_softmax', 'softmax_vjp'),
})
FIXTURES['wrong_softmax_vjp_diagonal'] = ('03_softmax', {
    'softmax': solved('03_softmax', 'softmax'),
    'softmax_vjp': '''
def softmax_vjp(y, g, dim=-1):
    return g * y * (1 - y)
''',
})
FIXTURES['wrong_softmax_mean_shift'] = ('03_softmax', {
    'softmax': '''
def softmax(x, dim=-1):
    e = np.exp(x - x.mean(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)

def log_softmax(x, dim=-1):
    z = x - x.max(axis=dim, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=dim, keepdims=True))
''',
    'softmax_vjp': solved('03_softmax', 'softmax_vjp'),
})

# ---- 04_layer_norm -----------------------------------------------
FIXTURES['wrong_layer_norm_constant_stats'] = ('04_layer_norm', {
    'layer_norm_forward': solved('04_layer_norm', 'layer_norm_forward'),
    'layer_norm_backward': '''
def layer_norm_backward(g, cache):
    """Given g = dL/dy and the cache from forward, return (dx, dw, db)."""
    xhat, rstd, w = cache
    lead = tuple(range(g.ndim - 1))
    dw = (g * xhat).sum(axis=lead)
    db = g.sum(axis=lead)
    dxhat = g * w
    dx = rstd * dxhat   # treats mean and variance as constants
    return dx, dw, db
''',
})
FIXTURES['wrong_layer_norm_eps_outside_sqrt'] = ('04_layer_norm', {
    'layer_norm_forward': '''
def layer_norm_forward(x, w, b, eps=EPS):
    """Return (y, cache): y the layer norm of x over its last dim; cache whatever backward needs."""
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    rstd = 1.0 / (np.sqrt(var) + eps)
    xhat = (x - mu) * rstd
    return xhat * w + b, (xhat, rstd, w)
''',
    'layer_norm_backward': solved('04_layer_norm', 'layer_norm_backward'),
})
FIXTURES['alt_04_recompute'] = ('04_layer_norm', {
    'layer_norm_forward': '''
def layer_norm_forward(x, w, b, eps=EPS):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.var(x, axis=-1, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps) * w + b
    return y, (x, mu, var, w, eps)
''',
    'layer_norm_backward': '''
def layer_norm_backward(g, cache):
    x, mu, var, w, eps = cache
    N = x.shape[-1]
    std = np.sqrt(var + eps)
    xhat = (x - mu) / std
    g2 = g.reshape(-1, N)
    dw = (g2 * xhat.reshape(-1, N)).sum(axis=0)
    db = g2.sum(axis=0)
    dxhat = g * w
    dx = (N * dxhat - dxhat.sum(-1, keepdims=True) - xhat * (dxhat * xhat).sum(-1, keepdims=True)) / (N * std)
    return dx, dw, db
''',
})
FIXTURES['alt_04_jacobian_loop'] = ('04_layer_norm', {
    'layer_norm_forward': solved('04_layer_norm', 'layer_norm_forward'),
    'layer_norm_backward': '''
def layer_norm_backward(g, cache):
    xhat, rstd, w = cache
    N = xhat.shape[-1]
    xh, r, gg = xhat.reshape(-1, N), rstd.reshape(-1, 1), g.reshape(-1, N)
    dx = np.empty_like(gg)
    for i in range(xh.shape[0]):
        J = r[i] * (np.eye(N) - 1.0 / N - np.outer(xh[i], xh[i]) / N)   # d xhat / d x (symmetric)
        dx[i] = J.T @ (gg[i] * w)
    return dx.reshape(g.shape), (gg * xh).sum(axis=0), gg.sum(axis=0)
''',
})
FIXTURES['wrong_layer_norm_unbiased_var'] = ('04_layer_norm', {
    'layer_norm_forward': '''
def layer_norm_forward(x, w, b, eps=EPS):
    mu = x.mean(axis=-1, keepdims=True)
    var = np.var(x, axis=-1, keepdims=True, ddof=1) if x.shape[-1] > 1 else np.zeros_like(mu)
    rstd = 1.0 / np.sqrt(var + eps)
    xhat = (x - mu) * rstd
    return xhat * w + b, (xhat, rstd, w)
''',
    'layer_norm_backward': solved('04_layer_norm', 'layer_norm_backward'),
})
FIXTURES['wrong_layer_norm_var_cancellation'] = ('04_layer_norm', {
    'layer_norm_forward': '''
def layer_norm_forward(x, w, b, eps=EPS):
    mu = x.mean(axis=-1, keepdims=True)
    var = (x ** 2).mean(axis=-1, keepdims=True) - mu ** 2
    rstd = 1.0 / np.sqrt(var + eps)
    xhat = (x - mu) * rstd
    return xhat * w + b, (xhat, rstd, w)
''',
    'layer_norm_backward': solved('04_layer_norm', 'layer_norm_backward'),
})

# ---- 05_conv2d_im2col --------------------------------------------
FIXTURES['wrong_col2im_overwrites'] = ('05_conv2d_im2col', {
    'im2col': solved('05_conv2d_im2col', 'im2col'),
    'conv_backward': '''
def col2im(dcols, x_shape, kh, kw, padding=0):
    """The adjoint of im2col: add each row of dcols back into its patch position; returns x's shape."""
    N, C, H, W = x_shape
    Ho, Wo = H + 2 * padding - kh + 1, W + 2 * padding - kw + 1
    d = dcols.reshape(N, Ho, Wo, C, kh, kw)
    dxp = np.zeros((N, C, H + 2 * padding, W + 2 * padding), dtype=dcols.dtype)
    for di in range(kh):
        for dj in range(kw):
            dxp[:, :, di:di + Ho, dj:dj + Wo] = d[:, :, :, :, di, dj].transpose(0, 3, 1, 2)
    return dxp[:, :, padding:padding + H, padding:padding + W]


def conv2d_backward(x, w, g, padding=0):
    """Given g = dL/dout of shape (N, F, Ho, Wo), return (dx, dw)."""
    F, C, kh, kw = w.shape
    g2 = g.transpose(0, 2, 3, 1).reshape(-1, F)
    dw = (g2.T @ im2col(x, kh, kw, padding)).reshape(w.shape)
    dx = col2im(g2 @ w.reshape(F, -1), x.shape, kh, kw, padding)
    return dx, dw
''',
})
FIXTURES['alt_05_loops_einsum'] = ('05_conv2d_im2col', {
    'im2col': '''
def im2col(x, kh, kw, padding=0):
    N, C, H, W = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    Ho, Wo = H + 2 * padding - kh + 1, W + 2 * padding - kw + 1
    rows = []
    for n in range(N):
        for i in range(Ho):
            for j in range(Wo):
                rows.append(xp[n, :, i:i + kh, j:j + kw].reshape(-1))
    return np.stack(rows)


def conv2d(x, w, padding=0):
    N = x.shape[0]
    F, C, kh, kw = w.shape
    Ho, Wo = x.shape[2] + 2 * padding - kh + 1, x.shape[3] + 2 * padding - kw + 1
    cols = im2col(x, kh, kw, padding).reshape(N, Ho, Wo, -1)
    return np.einsum("nijp,fp->nfij", cols, w.reshape(F, -1))
''',
    'conv_backward': '''
def col2im(dcols, x_shape, kh, kw, padding=0):
    N, C, H, W = x_shape
    Ho, Wo = H + 2 * padding - kh + 1, W + 2 * padding - kw + 1
    dxp = np.zeros((N, C, H + 2 * padding, W + 2 * padding))
    r = 0
    for n in range(N):
        for i in range(Ho):
            for j in range(Wo):
                dxp[n, :, i:i + kh, j:j + kw] += dcols[r].reshape(C, kh, kw)
                r += 1
    return dxp[:, :, padding:H + padding, padding:W + padding]


def conv2d_backward(x, w, g, padding=0):
    F, C, kh, kw = w.shape
    g2 = np.moveaxis(g, 1, -1).reshape(-1, F)
    cols = im2col(x, kh, kw, padding)
    dw = np.einsum("rf,rp->fp", g2, cols).reshape(w.shape)
    dx = col2im(g2 @ w.reshape(F, -1), x.shape, kh, kw, padding)
    return dx, dw
''',
})
FIXTURES['alt_05_sliding_window'] = ('05_conv2d_im2col', {
    'im2col': '''
def im2col(x, kh, kw, padding=0):
    N, C, H, W = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))  # N, C, Ho, Wo, kh, kw
    Ho, Wo = win.shape[2], win.shape[3]
    return win.transpose(0, 2, 3, 1, 4, 5).reshape(N * Ho * Wo, C * kh * kw)


def conv2d(x, w, padding=0):
    N, C, H, W = x.shape
    F, _, kh, kw = w.shape
    Ho, Wo = H + 2 * padding - kh + 1, W + 2 * padding - kw + 1
    out = im2col(x, kh, kw, padding) @ w.reshape(F, -1).T
    return out.reshape(N, Ho, Wo, F).transpose(0, 3, 1, 2)
''',
    'conv_backward': solved('05_conv2d_im2col', 'conv_backward'),
})
FIXTURES['wrong_conv_flipped_kernel'] = ('05_conv2d_im2col', {
    'im2col': '''
def im2col(x, kh, kw, padding=0):
    """Return cols of shape (N * Ho * Wo, C * kh * kw): one row per output position, (n, i, j) order,
    each row the patch flattened in (c, di, dj) order."""
    ### BEGIN SOLUTION
    N, C, H, W = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    Ho, Wo = H + 2 * padding - kh + 1, W + 2 * padding - kw + 1
    cols = np.empty((N, Ho, Wo, C, kh, kw), dtype=x.dtype)
    for di in range(kh):
        for dj in range(kw):
            cols[:, :, :, :, di, dj] = xp[:, :, di:di + Ho, dj:dj + Wo].transpose(0, 2, 3, 1)
    return cols.reshape(N * Ho * Wo, C * kh * kw)
    ### END SOLUTION


def conv2d(x, w, padding=0):
    """Forward pass via im2col + one matmul; returns (N, F, Ho, Wo)."""
    ### BEGIN SOLUTION
    N, C, H, W = x.shape
    F, _, kh, kw = w.shape
    Ho, Wo = H + 2 * padding - kh + 1, W + 2 * padding - kw + 1
    out = im2col(x, kh, kw, padding) @ w[:, :, ::-1, ::-1].reshape(F, -1).T
    return out.reshape(N, Ho, Wo, F).transpose(0, 3, 1, 2)
    ### END SOLUTION
''',
    'conv_backward': solved('05_conv2d_im2col', 'conv_backward'),
})
FIXTURES['wrong_col2im_kernel_typo'] = ('05_conv2d_im2col', {
    'im2col': solved('05_conv2d_im2col', 'im2col'),
    'conv_backward': '''
def col2im(dcols, x_shape, kh, kw, padding=0):
    """The adjoint of im2col: add each row of dcols back into its patch position; returns x's shape."""
    ### BEGIN SOLUTION
    N, C, H, W = x_shape
    Ho, Wo = H + 2 * padding - kh + 1, W + 2 * padding - kw + 1
    d = dcols.reshape(N, Ho, Wo, C, kh, kw)
    dxp = np.zeros((N, C, H + 2 * padding, W + 2 * padding), dtype=dcols.dtype)
    for di in range(kh):
        for dj in range(kh):
            dxp[:, :, di:di + Ho, dj:dj + Wo] += d[:, :, :, :, di, dj].transpose(0, 3, 1, 2)
    return dxp[:, :, padding:padding + H, padding:padding + W]
    ### END SOLUTION


def conv2d_backward(x, w, g, padding=0):
    """Given g = dL/dout of shape (N, F, Ho, Wo), return (dx, dw)."""
    ### BEGIN SOLUTION
    F, C, kh, kw = w.shape
    g2 = g.transpose(0, 2, 3, 1).reshape(-1, F)
    dw = (g2.T @ im2col(x, kh, kw, padding)).reshape(w.shape)
    dx = col2im(g2 @ w.reshape(F, -1), x.shape, kh, kw, padding)
    return dx, dw
    ### END SOLUTION
''',
})


# ---- 06_mini_engine ------------------------------
_BACKWARD_06 = '''
def backward(root):
    order = topo_sort(root)
    for node in order:
        node.grad = 0.0
    root.grad = 1.0
    for node in reversed(order):
        for inp, local in zip(node.inputs, node.local_grads):
            inp.grad += node.grad * local
'''
FIXTURES['wrong_topo_sort_preorder'] = ('06_mini_engine', {
    'topo_sort': '''
def topo_sort(root):
    # visit a node, then its inputs (children after parents), and reverse at the end
    order, seen, stack = [], set(), [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        order.append(node)
        stack.extend(node.inputs)
    return order[::-1]
''',
    'backward': _BACKWARD_06,
})
FIXTURES['wrong_topo_sort_mark_on_push'] = ('06_mini_engine', {
    'topo_sort': '''
def topo_sort(root):
    stack, seen, order = [root], {id(root)}, []
    while stack:
        n = stack[-1]
        new = [i for i in n.inputs if id(i) not in seen]
        if new:
            for i in new:
                seen.add(id(i)); stack.append(i)
        else:
            stack.pop(); order.append(n)
    return order
''',
    'backward': _BACKWARD_06,
})
FIXTURES['wrong_backward_no_reset'] = ('06_mini_engine', {
    'topo_sort': '''
def topo_sort(root):
    """Return the list of every node reachable from root, each after all of its inputs (root last)."""
    order, seen = [], set()
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for inp in node.inputs:
            if id(inp) not in seen:
                stack.append((inp, False))
    return order
''',
    'backward': '''
def backward(root):
    order = topo_sort(root)
    root.grad = 1.0
    for node in reversed(order):
        for inp, local in zip(node.inputs, node.local_grads):
            inp.grad += node.grad * local
''',
})
FIXTURES['alt_06_kahn'] = ('06_mini_engine', {
    'topo_sort': '''
def topo_sort(root):
    nodes, stack, seen = [], [root], set()
    while stack:
        n = stack.pop()
        if id(n) in seen: continue
        seen.add(id(n)); nodes.append(n); stack.extend(n.inputs)
    users = {id(n): 0 for n in nodes}
    for n in nodes:
        for i in set(map(id, n.inputs)):
            users[i] += 1
    ready, out = [root], []
    while ready:
        n = ready.pop(); out.append(n)
        for i in {id(x): x for x in n.inputs}.values():
            users[id(i)] -= 1
            if users[id(i)] == 0: ready.append(i)
    return out[::-1]
''',
    'backward': _BACKWARD_06,
})
FIXTURES['alt_06_recursive_raised_limit'] = ('06_mini_engine', {
    'topo_sort': '''
def topo_sort(root):
    order, seen = [], set()
    def visit(n):
        if id(n) in seen: return
        seen.add(id(n))
        for i in n.inputs: visit(i)
        order.append(n)
    import sys
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 50000))
    visit(root)
    return order
''',
    'backward': _BACKWARD_06,
})
# ---- 07_gradcheck --------------------------------
FIXTURES['wrong_gradcheck_forward_difference'] = ('07_gradcheck', {
    'numerical_jacobian': '''
def numerical_jacobian(f, x, eps=1e-6):
    x = np.array(x, dtype=np.float64, order="C")
    y0 = np.asarray(f(x))
    J = np.zeros((y0.size, x.size))
    flat = x.reshape(-1)
    for j in range(x.size):
        old = flat[j]
        flat[j] = old + eps
        yp = np.asarray(f(x)).reshape(-1)
        flat[j] = old
        J[:, j] = (yp - y0.reshape(-1)) / eps
    return J
''',
    'gradcheck': '''
def analytic_jacobian(f, x):
    t = gradlab.tensor(x, dtype=gradlab.float64, requires_grad=True)
    y = f(t)
    J = np.zeros((y.numel(), x.size))
    for i in range(y.numel()):
        e = np.zeros(y.numel())
        e[i] = 1.0
        (g,) = gradlab.grad(y, [t], gradlab.tensor(e.reshape(y.shape)), retain_graph=True)
        J[i] = g.numpy().reshape(-1)
    return J


def gradcheck(f, x, eps=1e-6, atol=1e-5, rtol=1e-3):
    num = numerical_jacobian(lambda v: f(gradlab.tensor(v, dtype=gradlab.float64)).numpy(), x, eps)
    return bool(np.allclose(analytic_jacobian(f, x), num, atol=atol, rtol=rtol))
''',
})
_NUMERICAL_JACOBIAN_07 = '''
def numerical_jacobian(f, x, eps=1e-6):
    x = np.array(x, dtype=np.float64, order="C")
    y0 = np.asarray(f(x))
    J = np.zeros((y0.size, x.size))
    flat = x.reshape(-1)
    for j in range(x.size):
        old = flat[j]
        flat[j] = old + eps
        yp = np.asarray(f(x)).reshape(-1)
        flat[j] = old - eps
        ym = np.asarray(f(x)).reshape(-1)
        flat[j] = old
        J[:, j] = (yp - ym) / (2 * eps)
    return J
'''
FIXTURES['wrong_gradcheck_sum_only'] = ('07_gradcheck', {
    'numerical_jacobian': _NUMERICAL_JACOBIAN_07,
    'gradcheck': '''
def analytic_jacobian(f, x):
    t = gradlab.tensor(x, dtype=gradlab.float64, requires_grad=True)
    y = f(t)
    J = np.zeros((y.numel(), x.size))
    for i in range(y.numel()):
        e = np.zeros(y.numel())
        e[i] = 1.0
        (g,) = gradlab.grad(y, [t], gradlab.tensor(e.reshape(y.shape)), retain_graph=True)
        J[i] = g.numpy().reshape(-1)
    return J


def gradcheck(f, x, eps=1e-6, atol=1e-5, rtol=1e-3):
    num = numerical_jacobian(lambda v: f(gradlab.tensor(v, dtype=gradlab.float64)).numpy().sum(), x, eps)
    t = gradlab.tensor(x, dtype=gradlab.float64, requires_grad=True)
    f(t).sum().backward()
    return bool(np.allclose(t.grad.numpy().reshape(-1), num.reshape(-1), atol=atol, rtol=rtol))
''',
})
FIXTURES['wrong_gradcheck_atol_only'] = ('07_gradcheck', {
    'numerical_jacobian': _NUMERICAL_JACOBIAN_07,
    'gradcheck': '''
def analytic_jacobian(f, x):
    t = gradlab.tensor(x, dtype=gradlab.float64, requires_grad=True)
    y = f(t)
    J = np.zeros((y.numel(), x.size))
    for i in range(y.numel()):
        e = np.zeros(y.numel())
        e[i] = 1.0
        (g,) = gradlab.grad(y, [t], gradlab.tensor(e.reshape(y.shape)), retain_graph=True)
        J[i] = g.numpy().reshape(-1)
    return J


def gradcheck(f, x, eps=1e-6, atol=1e-5, rtol=1e-3):
    num = numerical_jacobian(lambda v: f(gradlab.tensor(v, dtype=gradlab.float64)).numpy(), x, eps)
    return bool(np.abs(analytic_jacobian(f, x) - num).max() < atol)
''',
})
FIXTURES['alt_07_vectorised'] = ('07_gradcheck', {
    'numerical_jacobian': '''
def numerical_jacobian(f, x, eps=1e-6):
    x = np.asarray(x, dtype=np.float64)
    cols = []
    for j in range(x.size):
        e = np.zeros(x.size); e[j] = eps
        e = e.reshape(x.shape)
        cols.append((np.ravel(f(x + e)) - np.ravel(f(x - e))) / (2 * eps))
    return np.stack(cols, axis=1)
''',
    'gradcheck': '''
def analytic_jacobian(f, x):
    t = gradlab.tensor(np.array(x), requires_grad=True)
    y = f(t).reshape(-1)
    rows = []
    for i in range(y.shape[0]):
        t.grad = None
        y[i].backward(retain_graph=True)
        rows.append(t.grad.numpy().reshape(-1).copy())
    return np.array(rows)


def gradcheck(f, x, eps=1e-6, atol=1e-5, rtol=1e-3):
    num = numerical_jacobian(lambda v: f(gradlab.tensor(v)).numpy(), x, eps)
    ana = analytic_jacobian(f, x)
    return np.all(np.abs(ana - num) <= atol + rtol * np.abs(num))
''',
})
# ---- 08_jvp --------------------------------------
FIXTURES['wrong_jvp_finite_difference'] = ('08_jvp', {
    'dual': solved('08_jvp', 'dual'),
    'jvp': '''
def jvp(f, x, v):
    x, v = np.asarray(x, float), np.asarray(v, float)
    e = 1e-6
    return np.array(f(x), float), (np.array(f(x + e * v), float) - np.array(f(x - e * v), float)) / (2 * e)


def jacobian_forward(f, x):
    cols = [jvp(f, x, np.eye(len(x))[j])[1] for j in range(len(x))]
    return np.stack(cols, axis=1)
''',
})
FIXTURES['wrong_dual_mul_one_term'] = ('08_jvp', {
    'dual': '''
class Dual:
    def __init__(self, value, tangent=0.0):
        self.value, self.tangent = value, tangent

    def __add__(self, other):
        other = other if isinstance(other, Dual) else Dual(other)
        return Dual(self.value + other.value, self.tangent + other.tangent)

    def __mul__(self, other):
        other = other if isinstance(other, Dual) else Dual(other)
        return Dual(self.value * other.value, self.tangent * other.value)

    __radd__, __rmul__ = __add__, __mul__


def sin(x):
    if isinstance(x, Dual):
        return Dual(np.sin(x.value), np.cos(x.value) * x.tangent)
    return np.sin(x)


def exp(x):
    if isinstance(x, Dual):
        e = np.exp(x.value)
        return Dual(e, e * x.tangent)
    return np.exp(x)
''',
    'jvp': '''
def jvp(f, x, v):
    out = f([Dual(xi, vi) for xi, vi in zip(x, v)])
    return np.array([o.value for o in out]), np.array([o.tangent for o in out])


def jacobian_forward(f, x):
    cols = [jvp(f, x, np.eye(len(x))[j])[1] for j in range(len(x))]
    return np.stack(cols, axis=1)
''',
})
FIXTURES['wrong_jvp_value_from_second_call'] = ('08_jvp', {
    'dual': solved('08_jvp', 'dual'),
    'jvp': '''
def jvp(f, x, v):
    out = f([Dual(xi, vi) for xi, vi in zip(x, v)])
    return np.array(f(list(x)), dtype=float), np.array([o.tangent for o in out])


def jacobian_forward(f, x):
    cols = [jvp(f, x, np.eye(len(x))[j])[1] for j in range(len(x))]
    return np.stack(cols, axis=1)
''',
})
FIXTURES['alt_08_math_module'] = ('08_jvp', {
    'dual': '''
import math
class Dual:
    def __init__(self, value, tangent=0.0):
        self.value, self.tangent = value, tangent

    def __add__(self, other):
        if isinstance(other, Dual):
            return Dual(self.value + other.value, self.tangent + other.tangent)
        return Dual(self.value + other, self.tangent)

    def __mul__(self, other):
        if isinstance(other, Dual):
            return Dual(self.value * other.value, other.tangent * self.value + other.value * self.tangent)
        return Dual(self.value * other, self.tangent * other)

    __radd__, __rmul__ = __add__, __mul__


def sin(x):
    return Dual(math.sin(x.value), math.cos(x.value) * x.tangent) if isinstance(x, Dual) else math.sin(x)


def exp(x):
    return Dual(math.exp(x.value), math.exp(x.value) * x.tangent) if isinstance(x, Dual) else math.exp(x)
''',
    'jvp': '''
def jvp(f, x, v):
    out = f([Dual(xi, vi) for xi, vi in zip(x, v)])
    return np.array([o.value for o in out]), np.array([o.tangent for o in out])


def jacobian_forward(f, x):
    n = len(x)
    m = len(f(list(x)))
    J = np.zeros((m, n))
    for j in range(n):
        e = [0.0] * n; e[j] = 1.0
        J[:, j] = jvp(f, x, e)[1]
    return J
''',
})
# ---- 09_optimizers -------------------------------
_SGD_MOMENTUM_09 = '''
def all_finite(grads):
    return all(g is None or bool(np.isfinite(g).all()) for g in grads)


class SGD:
    def __init__(self, params, lr, momentum=0.0, nesterov=False):
        self.params = list(params)
        self.lr, self.momentum, self.nesterov = lr, momentum, nesterov
        self.state = [{} for _ in self.params]

    def step(self, grads):
        if not all_finite(grads):
            return False
        for p, g, state in zip(self.params, grads, self.state):
            if g is None:
                continue
            buf = state.get("buf")
            buf = g.copy() if buf is None else self.momentum * buf + g
            state["buf"] = buf
            d = g + self.momentum * buf if self.nesterov else buf
            p -= self.lr * d
        return True
'''
FIXTURES['wrong_adamw_coupled_decay'] = ('09_optimizers', {
    'sgd_momentum': _SGD_MOMENTUM_09,
    'adamw': '''
class AdamW:
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        self.params = list(params)
        self.lr, self.betas, self.eps, self.weight_decay = lr, betas, eps, weight_decay
        self.state = [{} for _ in self.params]

    def step(self, grads):
        if not all_finite(grads):
            return False
        b1, b2 = self.betas
        for p, g, state in zip(self.params, grads, self.state):
            if g is None:
                continue
            t = state.get("t", 0) + 1
            g = g + self.weight_decay * p   # weight decay as an L2 term in the gradient
            m = b1 * state.get("m", np.zeros(p.shape)) + (1 - b1) * g
            v = b2 * state.get("v", np.zeros(p.shape)) + (1 - b2) * g * g
            state.update(t=t, m=m, v=v)
            m_hat, v_hat = m / (1 - b1 ** t), v / (1 - b2 ** t)
            p -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)
        return True
''',
})
_ADAMW_09 = '''
class AdamW:
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        self.params = list(params)
        self.lr, self.betas, self.eps, self.weight_decay = lr, betas, eps, weight_decay
        self.state = [{} for _ in self.params]

    def step(self, grads):
        if not all_finite(grads):
            return False
        b1, b2 = self.betas
        for p, g, state in zip(self.params, grads, self.state):
            if g is None:
                continue
            t = state.get("t", 0) + 1
            m = b1 * state.get("m", np.zeros(p.shape)) + (1 - b1) * g
            v = b2 * state.get("v", np.zeros(p.shape)) + (1 - b2) * g * g
            state.update(t=t, m=m, v=v)
            p *= 1 - self.lr * self.weight_decay
            m_hat, v_hat = m / (1 - b1 ** t), v / (1 - b2 ** t)
            p -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)
        return True
'''
FIXTURES['wrong_optim_skip_only_bad_tensor'] = ('09_optimizers', {
    'sgd_momentum': '''
def all_finite(grads):
    return all(g is None or bool(np.isfinite(g).all()) for g in grads)


class SGD:
    def __init__(self, params, lr, momentum=0.0, nesterov=False):
        self.params = list(params)
        self.lr, self.momentum, self.nesterov = lr, momentum, nesterov
        self.state = [{} for _ in self.params]

    def step(self, grads):
        ok = all_finite(grads)
        for p, g, state in zip(self.params, grads, self.state):
            if g is None or not all_finite([g]):
                continue
            buf = state.get("buf")
            buf = g.copy() if buf is None else self.momentum * buf + g
            state["buf"] = buf
            d = g + self.momentum * buf if self.nesterov else buf
            p -= self.lr * d
        return ok
''',
    'adamw': _ADAMW_09,
})
FIXTURES['wrong_optim_isnan_only'] = ('09_optimizers', {
    'sgd_momentum': '''
def all_finite(grads):
    return all(g is None or not np.isnan(g).any() for g in grads)


class SGD:
    def __init__(self, params, lr, momentum=0.0, nesterov=False):
        self.params = list(params)
        self.lr, self.momentum, self.nesterov = lr, momentum, nesterov
        self.state = [{} for _ in self.params]

    def step(self, grads):
        if not all_finite(grads):
            return False
        for p, g, state in zip(self.params, grads, self.state):
            if g is None:
                continue
            buf = state.get("buf")
            buf = g.copy() if buf is None else self.momentum * buf + g
            state["buf"] = buf
            d = g + self.momentum * buf if self.nesterov else buf
            p -= self.lr * d
        return True
''',
    'adamw': _ADAMW_09,
})
FIXTURES['wrong_adamw_global_step'] = ('09_optimizers', {
    'sgd_momentum': _SGD_MOMENTUM_09,
    'adamw': '''
class AdamW:
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        self.params = list(params)
        self.lr, self.betas, self.eps, self.weight_decay = lr, betas, eps, weight_decay
        self.state = [{} for _ in self.params]

    def step(self, grads):
        if not all_finite(grads):
            return False
        b1, b2 = self.betas
        self.t = getattr(self, "t", 0) + 1
        for p, g, state in zip(self.params, grads, self.state):
            if g is None:
                continue
            t = self.t
            m = b1 * state.get("m", np.zeros(p.shape)) + (1 - b1) * g
            v = b2 * state.get("v", np.zeros(p.shape)) + (1 - b2) * g * g
            state.update(t=t, m=m, v=v)
            p *= 1 - self.lr * self.weight_decay
            m_hat, v_hat = m / (1 - b1 ** t), v / (1 - b2 ** t)
            p -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)
        return True
''',
})
FIXTURES['wrong_adamw_eps_inside_sqrt'] = ('09_optimizers', {
    'sgd_momentum': _SGD_MOMENTUM_09,
    'adamw': '''
class AdamW:
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        self.params = list(params)
        self.lr, self.betas, self.eps, self.weight_decay = lr, betas, eps, weight_decay
        self.state = [{} for _ in self.params]

    def step(self, grads):
        if not all_finite(grads):
            return False
        b1, b2 = self.betas
        for p, g, state in zip(self.params, grads, self.state):
            if g is None:
                continue
            t = state.get("t", 0) + 1
            m = b1 * state.get("m", np.zeros(p.shape)) + (1 - b1) * g
            v = b2 * state.get("v", np.zeros(p.shape)) + (1 - b2) * g * g
            state.update(t=t, m=m, v=v)
            p *= 1 - self.lr * self.weight_decay
            m_hat, v_hat = m / (1 - b1 ** t), v / (1 - b2 ** t)
            p -= self.lr * m_hat / (np.sqrt(v_hat + self.eps))
        return True
''',
})
FIXTURES['alt_09_inplace_buffers'] = ('09_optimizers', {
    'sgd_momentum': '''
def all_finite(grads):
    for g in grads:
        if g is not None and (np.isnan(g).any() or np.isinf(g).any()):
            return False
    return True


class SGD:
    def __init__(self, params, lr, momentum=0.0, nesterov=False):
        self.params = list(params)
        self.lr, self.momentum, self.nesterov = lr, momentum, nesterov
        self.state = [{} for _ in self.params]

    def step(self, grads):
        if not all_finite(grads):
            return False
        for i in range(len(self.params)):
            g = grads[i]
            if g is None:
                continue
            st = self.state[i]
            if "buf" not in st:
                st["buf"] = np.array(g, dtype=np.float64)
            else:
                st["buf"] *= self.momentum
                st["buf"] += g
            if self.nesterov:
                self.params[i][...] = self.params[i] - self.lr * (g + self.momentum * st["buf"])
            else:
                self.params[i][...] -= self.lr * st["buf"]
        return np.True_
''',
    'adamw': '''
class AdamW:
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        self.params = list(params)
        self.lr, self.betas, self.eps, self.weight_decay = lr, betas, eps, weight_decay
        self.state = [{} for _ in self.params]

    def step(self, grads):
        if not all_finite(grads):
            return False
        beta1, beta2 = self.betas
        for p, g, s in zip(self.params, grads, self.state):
            if g is None:
                continue
            if not s:
                s["step"], s["m"], s["v"] = 0, np.zeros_like(p), np.zeros_like(p)
            s["step"] += 1
            s["m"] += (1 - beta1) * (g - s["m"])
            s["v"] = beta2 * s["v"] + (1 - beta2) * np.square(g)
            p *= 1 - self.lr * self.weight_decay
            bc1 = 1 - beta1 ** s["step"]
            bc2 = 1 - beta2 ** s["step"]
            denom = np.sqrt(s["v"]) / math.sqrt(bc2) + self.eps
            p -= (self.lr / bc1) * s["m"] / denom
        return True
''',
})
# ---- 10_checkpointing ----------------------------
FIXTURES['wrong_checkpoint_keeps_graph'] = ('10_checkpointing', {
    'checkpoint': '''
class Checkpoint(gradlab.autograd.Function):
    @staticmethod
    def forward(ctx, fn, *inputs):
        with gradlab.enable_grad():
            ctx.detached = [t.detach().requires_grad_() for t in inputs]
            ctx.y = fn(*ctx.detached)
        return ctx.y.detach()

    @staticmethod
    def backward(ctx, g):
        return (None, *gradlab.grad(ctx.y, ctx.detached, g))


def checkpoint(fn, *inputs):
    return Checkpoint.apply(fn, *inputs)
''',
})
FIXTURES['wrong_checkpoint_three_inputs_only'] = ('10_checkpointing', {
    'checkpoint': '''
class Checkpoint(gradlab.autograd.Function):
    @staticmethod
    def forward(ctx, fn, *inputs):
        ctx.fn = fn
        ctx.save_for_backward(*inputs)
        return fn(*inputs)

    @staticmethod
    def backward(ctx, g):
        x, W1, W2 = ctx.saved_tensors
        with gradlab.enable_grad():
            x, W1, W2 = x.detach().requires_grad_(), W1.detach().requires_grad_(), W2.detach().requires_grad_()
            y = ctx.fn(x, W1, W2)
        gx, g1, g2 = gradlab.grad(y, [x, W1, W2], g)
        return None, gx, g1, g2


def checkpoint(fn, *inputs):
    return Checkpoint.apply(fn, *inputs)
''',
})
FIXTURES['wrong_checkpoint_ignores_g'] = ('10_checkpointing', {
    'checkpoint': '''
class Checkpoint(gradlab.autograd.Function):
    @staticmethod
    def forward(ctx, fn, *inputs):
        ctx.fn = fn
        ctx.save_for_backward(*inputs)
        return fn(*inputs)

    @staticmethod
    def backward(ctx, g):
        inputs = ctx.saved_tensors
        with gradlab.enable_grad():
            detached = [t.detach().requires_grad_() for t in inputs]
            y = ctx.fn(*detached).sum()
        return (None, *gradlab.grad(y, detached))


def checkpoint(fn, *inputs):
    return Checkpoint.apply(fn, *inputs)
''',
})
FIXTURES['alt_10_ctx_attributes'] = ('10_checkpointing', {
    'checkpoint': '''
class Checkpoint(gradlab.autograd.Function):
    @staticmethod
    def forward(ctx, fn, *inputs):
        ctx.fn, ctx.inputs = fn, [t.detach() for t in inputs]
        with gradlab.no_grad():
            return fn(*inputs)

    @staticmethod
    def backward(ctx, g):
        xs = [t.clone().requires_grad_(True) for t in ctx.inputs]
        with gradlab.enable_grad():
            out = ctx.fn(*xs)
            out.backward(g)
        return (None,) + tuple(x.grad for x in xs)


def checkpoint(fn, *inputs):
    return Checkpoint.apply(fn, *inputs)
''',
})


# ---- 11_loss_scaling -------------------------------
FIXTURES['alt_11_step_counter'] = ('11_loss_scaling', {
    'scaler': '''
class DynamicLossScaler:
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
        self.scale = float(init_scale)
        self.growth_factor, self.backoff_factor = growth_factor, backoff_factor
        self.growth_interval = growth_interval
        self.last_overflow_step, self.steps = -1, 0

    def unscale(self, grads):
        inv = 1.0 / self.scale
        out = [(g.astype(np.float64) * inv).astype(np.float32) for g in grads]
        found_inf = np.bool_(False)
        for g in grads:
            found_inf = found_inf | np.isinf(g).any() | np.isnan(g).any()
        return out, found_inf

    def update(self, found_inf):
        if found_inf:
            self.scale = self.scale * self.backoff_factor
            self.last_overflow_step = self.steps
        elif (self.steps - self.last_overflow_step) % self.growth_interval == 0:
            self.scale = self.scale * self.growth_factor
        self.steps += 1

    def step(self, params, grads, lr):
        unscaled, found_inf = self.unscale(grads)
        if found_inf:
            self.update(True)
            return False
        for k in range(len(params)):
            params[k][...] = params[k] - lr * unscaled[k]
        self.update(False)
        return True
''',
})
FIXTURES['wrong_scaler_first_tensor_only'] = ('11_loss_scaling', {
    'scaler': '''
class DynamicLossScaler:
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
        self.scale = float(init_scale)
        self.growth_factor, self.backoff_factor = growth_factor, backoff_factor
        self.growth_interval = growth_interval
        self._good_steps = 0

    def unscale(self, grads):
        """grads: a list of float16 arrays (the scaled gradients, one per parameter tensor).
        Return (a list of float32 arrays, each gradient divided by the scale;
                found_inf: True when any entry of any gradient is inf or NaN).
        Does not change the scale."""
        out = [g.astype(np.float32) / np.float32(self.scale) for g in grads]
        found_inf = not np.all(np.isfinite(out[0]))
        return out, found_inf

    def update(self, found_inf):
        """Adjust the scale after a step: backoff on inf/NaN (and start counting good steps again),
        growth after growth_interval consecutive good steps."""
        if found_inf:
            self.scale *= self.backoff_factor
            self._good_steps = 0
        else:
            self._good_steps += 1
            if self._good_steps == self.growth_interval:
                self.scale *= self.growth_factor
                self._good_steps = 0

    def step(self, params, grads, lr):
        """One SGD step from the float16 *scaled* gradients (one per parameter).
        Unscale them; if none has an inf/NaN, update every parameter in place (p -= lr * g), otherwise
        skip the step (leave every parameter unchanged). Then update the scale.
        Return True when the step was taken, False when it was skipped."""
        grads, found_inf = self.unscale(grads)
        if not found_inf:
            for p, g in zip(params, grads):
                p -= lr * g
        self.update(found_inf)
        return not found_inf
''',
})
FIXTURES['wrong_scaler_no_reset_on_overflow'] = ('11_loss_scaling', {
    'scaler': '''
class DynamicLossScaler:
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
        self.scale = float(init_scale)
        self.growth_factor, self.backoff_factor = growth_factor, backoff_factor
        self.growth_interval = growth_interval
        self._good_steps = 0

    def unscale(self, grads):
        """grads: a list of float16 arrays (the scaled gradients, one per parameter tensor).
        Return (a list of float32 arrays, each gradient divided by the scale;
                found_inf: True when any entry of any gradient is inf or NaN).
        Does not change the scale."""
        out = [g.astype(np.float32) / np.float32(self.scale) for g in grads]
        found_inf = not all(np.all(np.isfinite(g)) for g in out)
        return out, found_inf

    def update(self, found_inf):
        """Adjust the scale after a step: backoff on inf/NaN (and start counting good steps again),
        growth after growth_interval consecutive good steps."""
        if found_inf:
            self.scale *= self.backoff_factor
        else:
            self._good_steps += 1
            if self._good_steps == self.growth_interval:
                self.scale *= self.growth_factor
                self._good_steps = 0

    def step(self, params, grads, lr):
        """One SGD step from the float16 *scaled* gradients (one per parameter).
        Unscale them; if none has an inf/NaN, update every parameter in place (p -= lr * g), otherwise
        skip the step (leave every parameter unchanged). Then update the scale.
        Return True when the step was taken, False when it was skipped."""
        grads, found_inf = self.unscale(grads)
        if not found_inf:
            for p, g in zip(params, grads):
                p -= lr * g
        self.update(found_inf)
        return not found_inf
''',
})
FIXTURES['wrong_scaler_step_not_skipped'] = ('11_loss_scaling', {
    'scaler': '''
class DynamicLossScaler:
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
        self.scale = float(init_scale)
        self.growth_factor, self.backoff_factor = growth_factor, backoff_factor
        self.growth_interval = growth_interval
        self._good_steps = 0

    def unscale(self, grads):
        """grads: a list of float16 arrays (the scaled gradients, one per parameter tensor).
        Return (a list of float32 arrays, each gradient divided by the scale;
                found_inf: True when any entry of any gradient is inf or NaN).
        Does not change the scale."""
        out = [g.astype(np.float32) / np.float32(self.scale) for g in grads]
        found_inf = not all(np.all(np.isfinite(g)) for g in out)
        return out, found_inf

    def update(self, found_inf):
        """Adjust the scale after a step: backoff on inf/NaN (and start counting good steps again),
        growth after growth_interval consecutive good steps."""
        if found_inf:
            self.scale *= self.backoff_factor
            self._good_steps = 0
        else:
            self._good_steps += 1
            if self._good_steps == self.growth_interval:
                self.scale *= self.growth_factor
                self._good_steps = 0

    def step(self, params, grads, lr):
        """One SGD step from the float16 *scaled* gradients (one per parameter).
        Unscale them; if none has an inf/NaN, update every parameter in place (p -= lr * g), otherwise
        skip the step (leave every parameter unchanged). Then update the scale.
        Return True when the step was taken, False when it was skipped."""
        grads, found_inf = self.unscale(grads)
        if True:
            for p, g in zip(params, grads):
                p -= lr * g
        self.update(found_inf)
        return not found_inf
''',
})

# ---- 12_attention ----------------------------------
FIXTURES['alt_12_additive_mask'] = ('12_attention', {
    'causal_attention': '''
def causal_attention(q, k, v):
    """q, k, v: gradlab tensors (batch, T, d). Returns a tensor (batch, T, d)."""
    T, d = q.shape[-2], q.shape[-1]
    mask = gradlab.tensor(np.triu(np.full((T, T), -1e9), k=1))      # a large negative number above the diagonal
    scores = q @ k.transpose(-2, -1) * (1.0 / np.sqrt(d)) + mask
    scores = scores - scores.max(dim=-1, keepdim=True).values       # not detached: the softmax is shift-invariant
    w = scores.exp()
    return (w / w.sum(dim=-1, keepdim=True)) @ v
''',
})
FIXTURES['alt_12_row_loop'] = ('12_attention', {
    'causal_attention': '''
def causal_attention(q, k, v):
    """q, k, v: gradlab tensors (batch, T, d). Returns a tensor (batch, T, d)."""
    T, d = q.shape[-2], q.shape[-1]
    rows = []
    for t in range(T):                       # query t looks at keys 0..t only: no mask needed
        s = (q[:, t:t + 1] @ k[:, : t + 1].transpose(-2, -1)) / np.sqrt(d)    # (B, 1, t + 1)
        s = s - s.max(dim=-1, keepdim=True).values.detach()
        w = s.exp()
        rows.append((w / w.sum(dim=-1, keepdim=True)) @ v[:, : t + 1])
    return gradlab.cat(rows, dim=1)
''',
})
FIXTURES['alt_12_softmax_masked_fill'] = ('12_attention', {
    'causal_attention': '''
import gradlab.nn.functional as F


def causal_attention(q, k, v):
    """q, k, v: gradlab tensors (batch, T, d). Returns a tensor (batch, T, d)."""
    T, d = q.shape[-2], q.shape[-1]
    future = gradlab.tensor(np.triu(np.ones((T, T), dtype=bool), k=1))
    scores = (q @ k.transpose(-2, -1) / d ** 0.5).masked_fill(future, float("-inf"))
    return F.softmax(scores, dim=-1) @ v
''',
})
FIXTURES['wrong_attention_divides_by_d'] = ('12_attention', {
    'causal_attention': '''
def causal_attention(q, k, v):
    """q, k, v: gradlab tensors (batch, T, d). Returns a tensor (batch, T, d)."""
    T, d = q.shape[-2], q.shape[-1]
    scores = (q @ k.transpose(-2, -1)) / float(d)
    allowed = gradlab.tensor(np.tril(np.ones((T, T), dtype=bool)))
    scores = gradlab.where(allowed, scores, gradlab.full((T, T), -np.inf, dtype=scores.dtype))
    scores = scores - scores.max(dim=-1, keepdim=True).values.detach()
    w = scores.exp()
    w = w / w.sum(dim=-1, keepdim=True)
    return w @ v
''',
})
FIXTURES['wrong_attention_mask_after_softmax'] = ('12_attention', {
    'causal_attention': '''
def causal_attention(q, k, v):
    """q, k, v: gradlab tensors (batch, T, d). Returns a tensor (batch, T, d)."""
    T, d = q.shape[-2], q.shape[-1]
    scores = (q @ k.transpose(-2, -1)) / float(np.sqrt(d))
    allowed = gradlab.tensor(np.tril(np.ones((T, T), dtype=bool)))
    scores = scores - scores.max(dim=-1, keepdim=True).values.detach()
    w = scores.exp()
    w = w / w.sum(dim=-1, keepdim=True)
    w = gradlab.where(allowed, w, gradlab.zeros(T, T, dtype=w.dtype))
    return w @ v
''',
})

# ---- 13_debug_training_loop ------------------------
FIXTURES['alt_13_optim_sgd'] = ('13_debug_training_loop', {
    'train': '''
def train(X, y, steps=100, lr=0.1):
    """Return (w as a NumPy array of shape (D, 1), b as a float, history as a list of Python floats)."""
    w = gradlab.zeros(X.shape[1], 1, dtype=gradlab.float64, requires_grad=True)
    b = gradlab.zeros(1, dtype=gradlab.float64, requires_grad=True)
    opt = gradlab.optim.SGD([w, b], lr=lr)
    Xt, yt = gradlab.tensor(X), gradlab.tensor(y)
    history = []
    for _ in range(steps):
        opt.zero_grad()
        pred = (Xt @ w + b).squeeze(-1)           # (N,), the same shape as y
        loss = ((pred - yt) ** 2).mean()
        loss.backward()
        opt.step()
        history.append(float(loss.detach()))
    return w.detach().numpy(), float(b.detach().numpy()[0]), history
''',
})
FIXTURES['alt_13_zero_grad_after_step'] = ('13_debug_training_loop', {
    'train': '''
def train(X, y, steps=100, lr=0.1):
    """Return (w as a NumPy array of shape (D, 1), b as a float, history as a list of Python floats)."""
    w = gradlab.zeros(X.shape[1], 1, dtype=gradlab.float64, requires_grad=True)
    b = gradlab.zeros(1, dtype=gradlab.float64, requires_grad=True)
    Xt, yt = gradlab.tensor(X), gradlab.tensor(y[:, None])
    history = []
    for _ in range(steps):
        loss = ((Xt @ w + b - yt) ** 2).mean()
        loss.backward()
        with gradlab.no_grad():
            w -= lr * w.grad
            b -= lr * b.grad
        w.grad.zero_()
        b.grad.zero_()
        history.append(loss.item())
    return w.detach().numpy(), b.item(), history
''',
})
FIXTURES['wrong_train_history_tensors'] = ('13_debug_training_loop', {
    'train': '''
def train(X, y, steps=100, lr=0.1):
    """Return (w as a NumPy array of shape (D, 1), b as a float, history as a list of Python floats)."""
    w = gradlab.zeros(X.shape[1], 1, dtype=gradlab.float64, requires_grad=True)
    b = gradlab.zeros(1, dtype=gradlab.float64, requires_grad=True)
    Xt, yt = gradlab.tensor(X), gradlab.tensor(y).reshape(-1, 1)
    history = []
    for _ in range(steps):
        w.grad = None
        b.grad = None
        pred = Xt @ w + b
        loss = ((pred - yt) ** 2).mean()
        loss.backward()
        with gradlab.no_grad():
            w -= lr * w.grad
            b -= lr * b.grad
        history.append(loss)
    return w.detach().numpy(), b.item(), history
''',
})
FIXTURES['wrong_train_misbroadcast'] = ('13_debug_training_loop', {
    'train': '''
def train(X, y, steps=100, lr=0.1):
    """Return (w as a NumPy array of shape (D, 1), b as a float, history as a list of Python floats)."""
    w = gradlab.zeros(X.shape[1], 1, dtype=gradlab.float64, requires_grad=True)
    b = gradlab.zeros(1, dtype=gradlab.float64, requires_grad=True)
    Xt, yt = gradlab.tensor(X), gradlab.tensor(y)
    history = []
    for _ in range(steps):
        w.grad = None
        b.grad = None
        pred = Xt @ w + b
        loss = ((pred - yt) ** 2).mean()
        loss.backward()
        with gradlab.no_grad():
            w -= lr * w.grad
            b -= lr * b.grad
        history.append(loss.item())
    return w.detach().numpy(), b.item(), history
''',
})
FIXTURES['wrong_train_no_grad_reset'] = ('13_debug_training_loop', {
    'train': '''
def train(X, y, steps=100, lr=0.1):
    """Return (w as a NumPy array of shape (D, 1), b as a float, history as a list of Python floats)."""
    w = gradlab.zeros(X.shape[1], 1, dtype=gradlab.float64, requires_grad=True)
    b = gradlab.zeros(1, dtype=gradlab.float64, requires_grad=True)
    Xt, yt = gradlab.tensor(X), gradlab.tensor(y).reshape(-1, 1)
    history = []
    for _ in range(steps):
        pred = Xt @ w + b
        loss = ((pred - yt) ** 2).mean()
        loss.backward()
        with gradlab.no_grad():
            w -= lr * w.grad
            b -= lr * b.grad
        history.append(loss.item())
    return w.detach().numpy(), b.item(), history
''',
})

# ---- 14_einsum_vjp ---------------------------------
FIXTURES['alt_14_as_strided'] = ('14_einsum_vjp', {
    'parse': solved('14_einsum_vjp', 'parse'),
    'einsum_vjp': '''
from numpy.lib.stride_tricks import as_strided


def einsum_vjp(subscripts, operands, G, i):
    """dL/d operands[i] for out = einsum(subscripts, *operands) and G = dL/dout (same shape as out)."""
    ins, out = parse(subscripts)
    sub, shape = ins[i], np.shape(operands[i])
    others = [k for k in range(len(operands)) if k != i]
    available = set(out)
    for k in others:
        available |= set(ins[k])
    letters = []
    for c in sub:
        if c not in letters:
            letters.append(c)
    target = "".join(c for c in letters if c in available)
    g = np.einsum(",".join([out] + [ins[k] for k in others]) + "->" + target, G, *[operands[k] for k in others])
    grad = np.zeros(shape)
    # the diagonal of grad over the repeated indices, as a strided view: one stride per distinct index
    strides = [sum(grad.strides[p] for p, d in enumerate(sub) if d == c) for c in letters]
    diag = as_strided(grad, shape=[shape[sub.index(c)] for c in letters], strides=strides)
    diag[...] = np.expand_dims(g, [p for p, c in enumerate(letters) if c not in available])
    return grad
''',
})
FIXTURES['alt_14_identity'] = ('14_einsum_vjp', {
    'parse': solved('14_einsum_vjp', 'parse'),
    'einsum_vjp': '''
def einsum_vjp(subscripts, operands, G, i):
    """dL/d operands[i] for out = einsum(subscripts, *operands) and G = dL/dout (same shape as out)."""
    ins, out = parse(subscripts)
    sub, shape = ins[i], np.shape(operands[i])
    used = set(subscripts) - set(",->")
    fresh = iter(c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in used)
    # rename each repeat of an index to a fresh letter, tied to the first by an identity matrix
    seen, new_sub, deltas = set(), "", []
    for c, n in zip(sub, shape):
        if c in seen:
            f = next(fresh)
            new_sub += f
            deltas.append((c + f, np.eye(n)))
        else:
            seen.add(c)
            new_sub += c
    others = [k for k in range(len(operands)) if k != i]
    available = set(out).union(*(set(ins[k]) for k in others), *(set(d) for d, _ in deltas))
    target = "".join(c for c in new_sub if c in available)
    spec = ",".join([out] + [ins[k] for k in others] + [d for d, _ in deltas]) + "->" + target
    g = np.einsum(spec, G, *[operands[k] for k in others], *[e for _, e in deltas])
    g = g.reshape([n if c in available else 1 for c, n in zip(new_sub, shape)])
    return np.broadcast_to(g, shape).copy()
''',
})
FIXTURES['alt_14_loop'] = ('14_einsum_vjp', {
    'parse': solved('14_einsum_vjp', 'parse'),
    'einsum_vjp': '''
def einsum_vjp(subscripts, operands, G, i):
    """dL/d operands[i] for out = einsum(subscripts, *operands) and G = dL/dout (same shape as out)."""
    ins, out = parse(subscripts)
    size = {}
    for s, o in zip(ins, operands):
        for c, n in zip(s, np.shape(o)):
            size[c] = n
    letters = sorted(size)
    G = np.asarray(G)
    grad = np.zeros(np.shape(operands[i]))
    # every assignment of values to all the indices: d out[out idx] / d operand_i[its idx] = product of the others
    for idx in np.ndindex(*[size[c] for c in letters]):
        val = dict(zip(letters, idx))
        term = G[tuple(val[c] for c in out)]
        for k, (s, o) in enumerate(zip(ins, operands)):
            if k != i:
                term = term * o[tuple(val[c] for c in s)]
        grad[tuple(val[c] for c in ins[i])] += term
    return grad
''',
})
FIXTURES['wrong_einsum_vjp_no_broadcast'] = ('14_einsum_vjp', {
    'parse': solved('14_einsum_vjp', 'parse'),
    'einsum_vjp': '''
def einsum_vjp(subscripts, operands, G, i):
    ins, out = parse(subscripts)
    others = [k for k in range(len(operands)) if k != i]
    available = set(out).union(*(set(ins[k]) for k in others)) if others else set(out)
    target = "".join(c for c in ins[i] if c in available)
    spec = ",".join([out] + [ins[k] for k in others]) + "->" + target
    return np.einsum(spec, G, *[operands[k] for k in others])
''',
})
FIXTURES['wrong_einsum_vjp_no_diagonal'] = ('14_einsum_vjp', {
    'parse': solved('14_einsum_vjp', 'parse'),
    'einsum_vjp': '''
def einsum_vjp(subscripts, operands, G, i):
    ins, out = parse(subscripts)
    others = [k for k in range(len(operands)) if k != i]
    available = set(out).union(*(set(ins[k]) for k in others)) if others else set(out)
    target = "".join(c for c in ins[i] if c in available)      # indices we can produce directly
    spec = ",".join([out] + [ins[k] for k in others]) + "->" + target
    g = np.einsum(spec, G, *[operands[k] for k in others])
    shape = [operands[i].shape[p] if c in available else 1 for p, c in enumerate(ins[i])]
    return np.broadcast_to(g.reshape(shape), operands[i].shape).copy()
''',
})

# ---- 15_strides ------------------------------------
FIXTURES['alt_15_cumprod'] = ('15_strides', {
    'strides': '''
def contiguous_strides(shape, itemsize):
    """The strides (in bytes) of a C-contiguous array of this shape."""
    sizes = [max(n, 1) for n in shape[1:]] + [1]
    return [int(itemsize * np.prod(sizes[i:])) for i in range(len(shape))]


def is_contiguous(shape, strides, itemsize):
    """True when an array with these shape/strides is C-contiguous (dims of size 1 may have any stride)."""
    if 0 in shape:
        return True
    want = contiguous_strides(shape, itemsize)
    return all(n == 1 or s == w for n, s, w in zip(shape, strides, want))
''',
    'views': '''
def transpose_view(a):
    """The transpose of a 2-D array as a view (no copy), built with as_strided."""
    (r, c), (sr, sc) = a.shape, a.strides
    return as_strided(a, shape=(c, r), strides=(sc, sr))


def sliding_windows(x, k):
    """All length-k windows of a 1-D array, shape (len(x) - k + 1, k), as a view (the basis of im2col)."""
    return as_strided(x, shape=(len(x) - k + 1, k), strides=x.strides * 2, writeable=False)
''',
})
FIXTURES['wrong_contiguity_abs_strides'] = ('15_strides', {
    'strides': '''
def contiguous_strides(shape, itemsize):
    """The strides (in bytes) of a C-contiguous array of this shape."""
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def is_contiguous(shape, strides, itemsize):
    """True when an array with these shape/strides is C-contiguous (dims of size 1 may have any stride)."""
    expected = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n == 0:
            return True
        if n != 1 and abs(s) != expected:
            return False
        expected *= n
    return True
''',
    'views': solved('15_strides', 'views'),
})
FIXTURES['wrong_transpose_view_assumes_contiguous'] = ('15_strides', {
    'strides': solved('15_strides', 'strides'),
    'views': '''
def transpose_view(a):
    """The transpose of a 2-D array as a view (no copy), built with as_strided."""
    return as_strided(a, shape=a.shape[::-1], strides=(a.itemsize, a.itemsize * a.shape[1]))


def sliding_windows(x, k):
    """All length-k windows of a 1-D array, shape (len(x) - k + 1, k), as a view (the basis of im2col)."""
    return as_strided(x, shape=(x.shape[0] - k + 1, k), strides=(x.strides[0], x.strides[0]))
''',
})
FIXTURES['wrong_windows_itemsize_stride'] = ('15_strides', {
    'strides': solved('15_strides', 'strides'),
    'views': '''
def transpose_view(a):
    """The transpose of a 2-D array as a view (no copy), built with as_strided."""
    return as_strided(a, shape=a.shape[::-1], strides=a.strides[::-1])


def sliding_windows(x, k):
    """All length-k windows of a 1-D array, shape (len(x) - k + 1, k), as a view (the basis of im2col)."""
    return as_strided(x, shape=(x.shape[0] - k + 1, k), strides=(x.itemsize, x.itemsize))
''',
})

# ---- 16_inplace_bugs ---------------------------------------------
_GATED_16 = '''
def gated(x, w):
    z = x @ w
    return z.tanh() * z.sigmoid() + 1
'''
_STANDARDISE_16 = '''
def standardise(a, eps=1e-5):
    centred = a - a.mean(axis=-1, keepdims=True)
    return centred / np.sqrt((centred ** 2).mean(axis=-1, keepdims=True) + eps)
'''
_SGD_16 = '''
def sgd_step(params, lr):
    with gradlab.no_grad():
        for p in params:
            if p.grad is None:
                continue
            p -= lr * p.grad
            p.grad = None
'''
FIXTURES['wrong_16_gated_saved_overwritten'] = ('16_inplace_bugs', {
    'gated': '''
def gated(x, w):
    z = x @ w
    h = z.tanh()
    h *= z.sigmoid()          # tanh saved h for its backward
    h += 1
    return h
''', 'standardise': _STANDARDISE_16, 'sgd_step': _SGD_16})
FIXTURES['wrong_16_standardise_alias'] = ('16_inplace_bugs', {
    'gated': _GATED_16,
    'standardise': '''
def standardise(a, eps=1e-5):
    out = np.asarray(a)       # "a copy"
    out -= out.mean(axis=-1, keepdims=True)
    out /= np.sqrt((out ** 2).mean(axis=-1, keepdims=True) + eps)
    return out
''', 'sgd_step': _SGD_16})
FIXTURES['wrong_16_standardise_views_as_copies'] = ('16_inplace_bugs', {
    'gated': _GATED_16,
    'standardise': '''
def standardise(a, eps=1e-5):
    out = a.copy() if a.base is None else a     # a slice or transpose is already a new array (it is not)
    out -= out.mean(axis=-1, keepdims=True)
    out /= np.sqrt((out ** 2).mean(axis=-1, keepdims=True) + eps)
    return out
''', 'sgd_step': _SGD_16})
FIXTURES['wrong_16_sgd_rebinds_name'] = ('16_inplace_bugs', {
    'gated': _GATED_16, 'standardise': _STANDARDISE_16,
    'sgd_step': '''
def sgd_step(params, lr):
    for p in params:
        if p.grad is None:
            continue
        p = p - lr * p.grad
        p.grad = None
'''})
FIXTURES['wrong_16_sgd_grad_not_reset'] = ('16_inplace_bugs', {
    'gated': _GATED_16, 'standardise': _STANDARDISE_16,
    'sgd_step': '''
def sgd_step(params, lr):
    with gradlab.no_grad():
        for p in params:
            if p.grad is not None:
                p -= lr * p.grad
'''})
FIXTURES['wrong_16_sgd_no_grad_missing_skip'] = ('16_inplace_bugs', {
    'gated': _GATED_16, 'standardise': _STANDARDISE_16,
    'sgd_step': '''
def sgd_step(params, lr):
    with gradlab.no_grad():
        for p in params:
            p -= lr * p.grad
            p.grad = None
'''})
FIXTURES['alt_16_clone_and_zero'] = ('16_inplace_bugs', {
    'gated': '''
def gated(x, w):
    z = x @ w
    h = z.tanh().clone()      # in place on a copy: tanh's saved output is untouched
    h *= z.sigmoid()
    h += 1
    return h
''',
    'standardise': '''
def standardise(a, eps=1e-5):
    out = np.array(a, dtype=np.float64, copy=True)
    out -= out.mean(axis=-1, keepdims=True)
    out /= np.sqrt((out ** 2).mean(axis=-1, keepdims=True) + eps)
    return out
''',
    'sgd_step': '''
def sgd_step(params, lr):
    for p in params:
        if p.grad is not None:
            p.data -= lr * p.grad.data     # PyTorch's .data: the same storage, in place
            p.grad.zero_()
'''})
FIXTURES['alt_16_method_calls'] = ('16_inplace_bugs', {
    'gated': '''
def gated(x, w):
    z = x.matmul(w)
    return z.tanh().mul(z.sigmoid()).add(1.0)
''',
    'standardise': '''
def standardise(a, eps=1e-5):
    return (a - a.mean(axis=-1, keepdims=True)) / np.sqrt(a.var(axis=-1, keepdims=True) + eps)
''',
    'sgd_step': '''
def sgd_step(params, lr):
    with gradlab.no_grad():
        for p in [q for q in params if q.grad is not None]:
            p.sub_(lr * p.grad)
    for p in params:
        p.grad = None
'''})

# ---- 17_custom_function ------------------------------------------
_SOFTPLUS_17 = solved('17_custom_function', 'softplus')
_BINARIZE_17 = solved('17_custom_function', 'binarize')
_TOPK_17 = '''
class TopK(Function):
    @staticmethod
    def forward(ctx, x, k):
        a = x.detach().numpy()
        idx = np.argsort(-a, axis=-1, kind="stable")[..., :k]
        indices = gradlab.tensor(idx)
        ctx.mark_non_differentiable(indices)
        ctx.save_for_backward(indices)
        ctx.shape = x.shape
        return gradlab.tensor(np.take_along_axis(a, idx, -1), dtype=x.dtype), indices

    @staticmethod
    def backward(ctx, g_values, g_indices):
        (indices,) = ctx.saved_tensors
        dx = np.zeros(ctx.shape)
        np.put_along_axis(dx, indices.detach().numpy(), g_values.detach().numpy(), -1)
        return gradlab.tensor(dx, dtype=g_values.dtype), None
'''
FIXTURES['wrong_17_softplus_overflows'] = ('17_custom_function', {
    'softplus': '''
class Softplus(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with np.errstate(over="ignore"):
            return gradlab.tensor(np.log1p(np.exp(x.detach().numpy())), dtype=x.dtype)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.sigmoid()
''', 'binarize': _BINARIZE_17, 'topk': _TOPK_17})
FIXTURES['wrong_17_softplus_numpy_backward'] = ('17_custom_function', {
    'softplus': '''
class Softplus(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return gradlab.tensor(np.logaddexp(0.0, x.detach().numpy()), dtype=x.dtype)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        a = x.detach().numpy()
        return gradlab.tensor(g.detach().numpy() * np.exp(-np.logaddexp(0.0, -a)), dtype=g.dtype)
''', 'binarize': _BINARIZE_17, 'topk': _TOPK_17})
FIXTURES['wrong_17_binarize_np_sign'] = ('17_custom_function', {
    'softplus': _SOFTPLUS_17, 'topk': _TOPK_17,
    'binarize': '''
class BinarizeSTE(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return gradlab.tensor(np.sign(x.detach().numpy()), dtype=x.dtype)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x.abs() <= 1)
'''})
FIXTURES['wrong_17_binarize_strict_window'] = ('17_custom_function', {
    'softplus': _SOFTPLUS_17, 'topk': _TOPK_17,
    'binarize': '''
class BinarizeSTE(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return gradlab.tensor(np.where(x.detach().numpy() >= 0, 1.0, -1.0), dtype=x.dtype)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x.abs() < 1)
'''})
FIXTURES['wrong_17_binarize_identity_backward'] = ('17_custom_function', {
    'softplus': _SOFTPLUS_17, 'topk': _TOPK_17,
    'binarize': '''
class BinarizeSTE(Function):
    @staticmethod
    def forward(ctx, x):
        return gradlab.tensor(np.where(x.detach().numpy() >= 0, 1.0, -1.0), dtype=x.dtype)

    @staticmethod
    def backward(ctx, g):
        return g
'''})
FIXTURES['wrong_17_topk_ascending'] = ('17_custom_function', {
    'softplus': _SOFTPLUS_17, 'binarize': _BINARIZE_17,
    'topk': '''
class TopK(Function):
    @staticmethod
    def forward(ctx, x, k):
        a = x.detach().numpy()
        idx = np.argsort(a, axis=-1)[..., -k:]          # the k largest, but smallest first
        indices = gradlab.tensor(idx)
        ctx.mark_non_differentiable(indices)
        ctx.save_for_backward(indices)
        ctx.shape = x.shape
        return gradlab.tensor(np.take_along_axis(a, idx, -1), dtype=x.dtype), indices

    @staticmethod
    def backward(ctx, g_values, g_indices):
        (indices,) = ctx.saved_tensors
        dx = np.zeros(ctx.shape)
        np.put_along_axis(dx, indices.detach().numpy(), g_values.detach().numpy(), -1)
        return gradlab.tensor(dx, dtype=g_values.dtype), None
'''})
FIXTURES['alt_17_formulas'] = ('17_custom_function', {
    'softplus': '''
class Softplus(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        a = x.detach().numpy()
        return gradlab.tensor(np.maximum(a, 0) + np.log1p(np.exp(-np.abs(a))), dtype=x.dtype)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (0.5 * (0.5 * x).tanh() + 0.5)
''',
    'binarize': '''
class BinarizeSTE(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        a = x.detach().numpy()
        return gradlab.tensor(1.0 - 2.0 * (a < 0), dtype=x.dtype)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x.clamp(-1.0, 1.0) == x)
''',
    'topk': '''
class TopK(Function):
    @staticmethod
    def forward(ctx, x, k):
        a = x.detach().numpy()
        part = np.argpartition(-a, k - 1, axis=-1)[..., :k]
        order = np.argsort(-np.take_along_axis(a, part, -1), axis=-1)
        idx = np.take_along_axis(part, order, -1)
        indices = gradlab.tensor(idx)
        ctx.mark_non_differentiable(indices)
        ctx.save_for_backward(indices)
        ctx.n = x.shape[-1]
        return gradlab.tensor(np.take_along_axis(a, idx, -1), dtype=x.dtype), indices

    @staticmethod
    def backward(ctx, g_values, g_indices):
        (indices,) = ctx.saved_tensors
        onehot = gradlab.tensor(np.eye(ctx.n)[indices.detach().numpy()], dtype=g_values.dtype)   # (..., k, n)
        return (g_values.unsqueeze(-1) * onehot).sum(dim=-2), None
'''})
FIXTURES['alt_17_loops'] = ('17_custom_function', {
    'softplus': '''
class Softplus(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        a = x.detach().numpy()
        out = np.array([np.logaddexp(0.0, v) for v in a.ravel()]).reshape(a.shape)
        return gradlab.tensor(out, dtype=x.dtype)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * gradlab.sigmoid(x)
''',
    'binarize': '''
class BinarizeSTE(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        a = x.detach().numpy()
        out = np.array([1.0 if v >= 0 else -1.0 for v in a.ravel()]).reshape(a.shape)
        return gradlab.tensor(out, dtype=x.dtype)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        mask = np.abs(x.detach().numpy()) <= 1
        return g * gradlab.tensor(mask, dtype=g.dtype)
''',
    'topk': '''
class TopK(Function):
    @staticmethod
    def forward(ctx, x, k):
        a = x.detach().numpy()
        rows = a.reshape(-1, a.shape[-1])
        idx = np.array([sorted(range(len(r)), key=lambda j: -r[j])[:k] for r in rows]).reshape(a.shape[:-1] + (k,))
        indices = gradlab.tensor(idx)
        ctx.mark_non_differentiable(indices)
        ctx.save_for_backward(indices)
        ctx.shape = x.shape
        return gradlab.tensor(np.take_along_axis(a, idx, -1), dtype=x.dtype), indices

    @staticmethod
    def backward(ctx, g_values, g_indices):
        (indices,) = ctx.saved_tensors
        idx = indices.detach().numpy().reshape(-1, indices.shape[-1])
        gv = g_values.detach().numpy().reshape(idx.shape)
        dx = np.zeros((idx.shape[0], ctx.shape[-1]))
        for r in range(idx.shape[0]):
            for j in range(idx.shape[1]):
                dx[r, idx[r, j]] += gv[r, j]
        return gradlab.tensor(dx.reshape(ctx.shape), dtype=g_values.dtype), None
'''})

# ---- 18_init_deep_mlp --------------------------------------------
_GAIN_18 = solved('18_init_deep_mlp', 'gain')
_KAIMING_18 = solved('18_init_deep_mlp', 'kaiming')
_INIT_18 = solved('18_init_deep_mlp', 'init_model')
FIXTURES['wrong_18_relu_gain_is_variance'] = ('18_init_deep_mlp', {
    'gain': _GAIN_18.replace("return math.sqrt(2.0)\n", "return 2.0\n"), 'kaiming': _KAIMING_18, 'init_model': _INIT_18})
FIXTURES['wrong_18_unknown_name_is_linear'] = ('18_init_deep_mlp', {
    'gain': '''
def gain(nonlinearity, negative_slope=0.01):
    return {"tanh": 5.0 / 3, "relu": math.sqrt(2.0),
            "leaky_relu": math.sqrt(2.0 / (1 + negative_slope ** 2))}.get(nonlinearity, 1.0)
''', 'kaiming': _KAIMING_18, 'init_model': _INIT_18})
FIXTURES['wrong_18_fan_ignores_kernel'] = ('18_init_deep_mlp', {
    'gain': _GAIN_18, 'init_model': _INIT_18,
    'kaiming': '''
def kaiming_normal_(w, nonlinearity="relu", mode="fan_in", rng=None):
    fan = w.shape[1] if mode == "fan_in" else w.shape[0]
    w[...] = rng.standard_normal(w.shape) * (gain(nonlinearity) / math.sqrt(fan))
    return w
'''})
FIXTURES['wrong_18_fans_swapped'] = ('18_init_deep_mlp', {
    'gain': _GAIN_18, 'init_model': _INIT_18,
    'kaiming': '''
def kaiming_normal_(w, nonlinearity="relu", mode="fan_in", rng=None):
    receptive = int(np.prod(w.shape[2:])) if w.ndim > 2 else 1
    fan = w.shape[0] * receptive if mode == "fan_in" else w.shape[1] * receptive   # (in, out) order assumed
    w[...] = rng.standard_normal(w.shape) * (gain(nonlinearity) / math.sqrt(fan))
    return w
'''})
FIXTURES['wrong_18_new_parameters'] = ('18_init_deep_mlp', {
    'gain': _GAIN_18, 'kaiming': _KAIMING_18,
    'init_model': '''
def init_model_(model, nonlinearity="relu", rng=None):
    for m in model.modules():
        if isinstance(m, nn.Linear):
            w = kaiming_normal_(np.zeros(m.weight.shape), nonlinearity, "fan_in", rng)
            m.weight = nn.Parameter(gradlab.tensor(w, dtype=gradlab.float64))
            if m.bias is not None:
                m.bias = nn.Parameter(gradlab.zeros(m.bias.shape, dtype=gradlab.float64))
    return model
'''})
FIXTURES['wrong_18_bias_kept'] = ('18_init_deep_mlp', {
    'gain': _GAIN_18, 'kaiming': _KAIMING_18,
    'init_model': '''
def init_model_(model, nonlinearity="relu", rng=None):
    for m in model.modules():
        if isinstance(m, nn.Linear):
            kaiming_normal_(m.weight.detach().numpy(), nonlinearity, "fan_in", rng)
    return model
'''})
FIXTURES['alt_18_rng_normal'] = ('18_init_deep_mlp', {
    'gain': '''
def gain(nonlinearity, negative_slope=0.01):
    table = {"linear": 1.0, "sigmoid": 1.0, "tanh": 5.0 / 3, "relu": 2.0 ** 0.5,
             "leaky_relu": (2.0 / (1 + negative_slope ** 2)) ** 0.5}
    if nonlinearity not in table:
        raise ValueError(nonlinearity)
    return table[nonlinearity]
''',
    'kaiming': '''
def kaiming_normal_(w, nonlinearity="relu", mode="fan_in", rng=None):
    fan_in = w[0].size
    fan_out = w.size // w.shape[1]
    std = gain(nonlinearity) / math.sqrt(fan_in if mode == "fan_in" else fan_out)
    np.copyto(w, rng.normal(0.0, std, size=w.shape))
    return w
''',
    'init_model': '''
def init_model_(model, nonlinearity="relu", rng=None):
    for _, m in model.named_modules():
        if type(m) is nn.Linear:
            kaiming_normal_(m.weight.detach().numpy(), nonlinearity, "fan_in", rng)
            if m.bias is not None:
                m.bias.detach().numpy().fill(0.0)
    return model
'''})
FIXTURES['alt_18_no_grad_copy'] = ('18_init_deep_mlp', {
    'gain': '''
def gain(nonlinearity, negative_slope=0.01):
    if nonlinearity == "relu":
        nonlinearity, negative_slope = "leaky_relu", 0.0
    if nonlinearity == "leaky_relu":
        return math.sqrt(2.0 / (1 + negative_slope * negative_slope))
    if nonlinearity == "tanh":
        return 5 / 3
    if nonlinearity in {"linear", "sigmoid"}:
        return 1.0
    raise ValueError("unknown nonlinearity " + str(nonlinearity))
''',
    'kaiming': '''
def kaiming_normal_(w, nonlinearity="relu", mode="fan_in", rng=None):
    receptive = 1
    for k in w.shape[2:]:
        receptive *= k
    fan = (w.shape[1] if mode == "fan_in" else w.shape[0]) * receptive
    draw = rng.standard_normal(w.shape)
    np.multiply(draw, gain(nonlinearity) / math.sqrt(fan), out=w)
    return w
''',
    'init_model': '''
def init_model_(model, nonlinearity="relu", rng=None):
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    with gradlab.no_grad():
        for m in linears:
            w = kaiming_normal_(np.empty(m.weight.shape), nonlinearity, "fan_in", rng)
            m.weight.copy_(gradlab.tensor(w, dtype=m.weight.dtype))
            if m.bias is not None:
                m.bias.zero_()
    return model
'''})

# ---- 19_batch_norm -----------------------------------------------
_FORWARD_19 = '''
def batch_norm_forward(x, gamma, beta, running_mean, running_var, training=True, momentum=0.1, eps=1e-5):
    axes = (0,) + tuple(range(2, x.ndim))
    shape = [1] * x.ndim
    shape[1] = x.shape[1]
    if training:
        n = x.size // x.shape[1]
        if n <= 1:
            raise ValueError("batch_norm: expected more than 1 value per channel when training")
        mu = x.mean(axis=axes)
        var = x.var(axis=axes)
        running_mean *= 1 - momentum
        running_mean += momentum * mu
        running_var *= 1 - momentum
        running_var += momentum * var * n / (n - 1)
    else:
        mu, var = running_mean, running_var
    s = 1.0 / np.sqrt(var + eps)
    xhat = (x - mu.reshape(shape)) * s.reshape(shape)
    return gamma.reshape(shape) * xhat + beta.reshape(shape), (xhat, s, gamma, axes, shape, training)
'''
_BACKWARD_19 = solved('19_batch_norm', 'backward')
FIXTURES['wrong_19_running_var_biased'] = ('19_batch_norm', {
    'forward': _FORWARD_19.replace("momentum * var * n / (n - 1)", "momentum * var"), 'backward': _BACKWARD_19})
FIXTURES['wrong_19_running_stats_rebound'] = ('19_batch_norm', {
    'forward': _FORWARD_19.replace('''        running_mean *= 1 - momentum
        running_mean += momentum * mu
        running_var *= 1 - momentum
        running_var += momentum * var * n / (n - 1)''', '''        running_mean = (1 - momentum) * running_mean + momentum * mu
        running_var = (1 - momentum) * running_var + momentum * var * n / (n - 1)'''),
    'backward': _BACKWARD_19})
FIXTURES['wrong_19_var_cancellation'] = ('19_batch_norm', {
    'forward': _FORWARD_19.replace("var = x.var(axis=axes)", "var = (x * x).mean(axis=axes) - mu * mu"),
    'backward': _BACKWARD_19})
FIXTURES['wrong_19_batch_check_on_n_only'] = ('19_batch_norm', {
    'forward': _FORWARD_19.replace("if n <= 1:", "if x.shape[0] <= 1:"), 'backward': _BACKWARD_19})
FIXTURES['wrong_19_stats_as_constants'] = ('19_batch_norm', {
    'forward': _FORWARD_19,
    'backward': '''
def batch_norm_backward(g, cache):
    xhat, s, gamma, axes, shape, training = cache
    return g * gamma.reshape(shape) * s.reshape(shape), (g * xhat).sum(axis=axes), g.sum(axis=axes)
'''})
FIXTURES['wrong_19_eval_backward_as_train'] = ('19_batch_norm', {
    'forward': _FORWARD_19,
    'backward': '''
def batch_norm_backward(g, cache):
    xhat, s, gamma, axes, shape, training = cache
    gh = g * gamma.reshape(shape)
    dx = s.reshape(shape) * (gh - gh.mean(axis=axes, keepdims=True)
                             - xhat * (gh * xhat).mean(axis=axes, keepdims=True))
    return dx, (g * xhat).sum(axis=axes), g.sum(axis=axes)
'''})
FIXTURES['alt_19_step_by_step'] = ('19_batch_norm', {
    'forward': '''
def batch_norm_forward(x, gamma, beta, running_mean, running_var, training=True, momentum=0.1, eps=1e-5):
    axes = tuple(i for i in range(x.ndim) if i != 1)
    bshape = tuple(x.shape[1] if i == 1 else 1 for i in range(x.ndim))
    n = x.size // x.shape[1]
    if training:
        if n < 2:
            raise ValueError("need at least two values per channel")
        mu = x.mean(axis=axes, keepdims=True)
        xc = x - mu
        var = (xc ** 2).mean(axis=axes, keepdims=True)
        running_mean[...] = (1 - momentum) * running_mean + momentum * mu.reshape(-1)
        running_var[...] = (1 - momentum) * running_var + momentum * var.reshape(-1) * n / (n - 1)
    else:
        mu, var = running_mean.reshape(bshape), running_var.reshape(bshape)
        xc = x - mu
    std = np.sqrt(var + eps)
    xhat = xc / std
    cache = dict(xc=xc, std=std, xhat=xhat, gamma=gamma.reshape(bshape), axes=axes, n=n, training=training)
    return gamma.reshape(bshape) * xhat + beta.reshape(bshape), cache
''',
    'backward': '''
def batch_norm_backward(g, cache):
    c = cache
    axes, n = c["axes"], c["n"]
    dgamma = (g * c["xhat"]).sum(axis=axes)
    dbeta = g.sum(axis=axes)
    dxhat = g * c["gamma"]
    if not c["training"]:
        return dxhat / c["std"], dgamma, dbeta
    dvar = (dxhat * c["xc"]).sum(axis=axes, keepdims=True) * -0.5 * c["std"] ** -3
    dmu = -(dxhat / c["std"]).sum(axis=axes, keepdims=True) - 2.0 * dvar * c["xc"].mean(axis=axes, keepdims=True)
    dx = dxhat / c["std"] + dvar * 2.0 * c["xc"] / n + dmu / n
    return dx, dgamma, dbeta
'''})
FIXTURES['alt_19_channels_first'] = ('19_batch_norm', {
    'forward': '''
def batch_norm_forward(x, gamma, beta, running_mean, running_var, training=True, momentum=0.1, eps=1e-5):
    xc = np.moveaxis(x, 1, 0)
    flat = xc.reshape(xc.shape[0], -1)                 # (C, everything else)
    if training:
        if flat.shape[1] <= 1:
            raise ValueError("batch_norm: one value per channel")
        mu, var = flat.mean(axis=1), flat.var(axis=1)
        np.copyto(running_mean, running_mean + momentum * (mu - running_mean))
        unbiased = flat.var(axis=1, ddof=1)
        np.copyto(running_var, running_var + momentum * (unbiased - running_var))
    else:
        mu, var = running_mean, running_var
    inv = 1.0 / np.sqrt(var + eps)
    xhat = (flat - mu[:, None]) * inv[:, None]
    y = gamma[:, None] * xhat + beta[:, None]
    y = np.moveaxis(y.reshape(xc.shape), 0, 1)
    return y, (xhat, inv, gamma, xc.shape, training)
''',
    'backward': '''
def batch_norm_backward(g, cache):
    xhat, inv, gamma, cshape, training = cache
    gf = np.moveaxis(g, 1, 0).reshape(xhat.shape)
    dgamma, dbeta = (gf * xhat).sum(axis=1), gf.sum(axis=1)
    gh = gf * gamma[:, None]
    if training:
        m = xhat.shape[1]
        dx = inv[:, None] / m * (m * gh - gh.sum(axis=1, keepdims=True) - xhat * (gh * xhat).sum(axis=1, keepdims=True))
    else:
        dx = gh * inv[:, None]
    return np.moveaxis(dx.reshape(cshape), 0, 1), dgamma, dbeta
'''})

# ---- 20_multi_head_attention -------------------------------------
_HEADS_20 = solved('20_multi_head_attention', 'heads')
_MHA_20 = solved('20_multi_head_attention', 'mha')
FIXTURES['wrong_20_split_without_transpose'] = ('20_multi_head_attention', {
    'heads': _HEADS_20.replace("return x.reshape(B, T, n_heads, d // n_heads).transpose(1, 2)",
                               "return x.reshape(B, n_heads, T, d // n_heads)").replace(
                               "return h.transpose(1, 2).reshape(B, T, H * dh)", "return h.reshape(B, T, H * dh)"),
    'mha': _MHA_20})
FIXTURES['wrong_20_scale_by_d_model'] = ('20_multi_head_attention', {
    'heads': _HEADS_20, 'mha': _MHA_20.replace("math.sqrt(d // n_heads)", "math.sqrt(d)")})
FIXTURES['wrong_20_mask_after_softmax'] = ('20_multi_head_attention', {
    'heads': _HEADS_20,
    'mha': '''
def multi_head_attention(x, w_qkv, w_out, n_heads, mask=None):
    d = x.shape[-1]
    q, k, v = (split_heads(t, n_heads) for t in (x @ w_qkv).split(d, dim=-1))
    w = (q @ k.transpose(-2, -1) / math.sqrt(d // n_heads)).softmax(dim=-1)
    if mask is not None:
        w = w * mask            # zero the masked weights (rows no longer sum to 1)
    return merge_heads(w @ v) @ w_out
'''})
FIXTURES['wrong_20_no_max_shift'] = ('20_multi_head_attention', {
    'heads': _HEADS_20,
    'mha': '''
def multi_head_attention(x, w_qkv, w_out, n_heads, mask=None):
    d = x.shape[-1]
    q, k, v = (split_heads(t, n_heads) for t in (x @ w_qkv).split(d, dim=-1))
    w = (q @ k.transpose(-2, -1) / math.sqrt(d // n_heads)).exp()
    if mask is not None:
        w = w * mask
    w = w / w.sum(dim=-1, keepdim=True)
    return merge_heads(w @ v) @ w_out
'''})
FIXTURES['wrong_20_qkv_interleaved'] = ('20_multi_head_attention', {
    'heads': _HEADS_20,
    'mha': '''
def multi_head_attention(x, w_qkv, w_out, n_heads, mask=None):
    B, T, d = x.shape
    qkv = (x @ w_qkv).reshape(B, T, d, 3)          # q, k, v interleaved column by column (they are not)
    q, k, v = (split_heads(qkv[..., i], n_heads) for i in range(3))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d // n_heads)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return merge_heads(scores.softmax(dim=-1) @ v) @ w_out
'''})
FIXTURES['wrong_20_causal_upper'] = ('20_multi_head_attention', {
    'heads': _HEADS_20.replace("np.tril(np.ones((T, T), dtype=bool))", "np.triu(np.ones((T, T), dtype=bool))"),
    'mha': _MHA_20})
FIXTURES['alt_20_einsum_additive'] = ('20_multi_head_attention', {
    'heads': '''
def split_heads(x, n_heads):
    B, T, d = x.shape
    return x.reshape(B, T, n_heads, -1).permute(0, 2, 1, 3)


def merge_heads(h):
    B, H, T, dh = h.shape
    return h.permute(0, 2, 1, 3).reshape(B, T, -1)


def causal_mask(T):
    i = np.arange(T)
    return gradlab.tensor(i[:, None] >= i[None, :])
''',
    'mha': '''
def multi_head_attention(x, w_qkv, w_out, n_heads, mask=None):
    d = x.shape[-1]
    qkv = x @ w_qkv
    q, k, v = (split_heads(qkv[..., i * d:(i + 1) * d], n_heads) for i in range(3))
    scores = gradlab.einsum("bhqd,bhkd->bhqk", q, k) * (d // n_heads) ** -0.5
    if mask is not None:
        scores = scores + gradlab.where(mask, 0.0, -1e30)
    return merge_heads(gradlab.einsum("bhqk,bhkd->bhqd", scores.softmax(dim=-1), v)) @ w_out
'''})
FIXTURES['alt_20_head_loop'] = ('20_multi_head_attention', {
    'heads': '''
def split_heads(x, n_heads):
    d = x.shape[-1] // n_heads
    return gradlab.stack([x[..., h * d:(h + 1) * d] for h in range(n_heads)], dim=1)


def merge_heads(h):
    return gradlab.cat([h[:, i] for i in range(h.shape[1])], dim=-1)


def causal_mask(T):
    m = np.zeros((T, T), dtype=bool)
    for i in range(T):
        m[i, :i + 1] = True
    return gradlab.tensor(m)
''',
    'mha': '''
def multi_head_attention(x, w_qkv, w_out, n_heads, mask=None):
    B, T, d = x.shape
    dh = d // n_heads
    qkv = x @ w_qkv
    outs = []
    for h in range(n_heads):
        q = qkv[..., h * dh:(h + 1) * dh]
        k = qkv[..., d + h * dh:d + (h + 1) * dh]
        v = qkv[..., 2 * d + h * dh:2 * d + (h + 1) * dh]
        s = q @ k.transpose(1, 2) / math.sqrt(dh)
        if mask is not None:
            m = mask
            while m.ndim < 4:
                m = m.unsqueeze(0)
            m = m[:, 0] if m.shape[1] == 1 else m[:, h]
            s = gradlab.where(m, s, gradlab.full(s.shape, -math.inf, dtype=s.dtype))
        s = s - s.max(dim=-1, keepdim=True).values.detach()
        e = s.exp()
        outs.append((e / e.sum(dim=-1, keepdim=True)) @ v)
    return gradlab.cat(outs, dim=-1) @ w_out
'''})


# ---- redefining what the graded cells compute with, forging records (any exercise) -------------
FIXTURES['wrong_06_fakes_order_report'] = ('06_mini_engine', {
    'topo_sort': """
def order_report(root, order):
    # the report every correct order gets, whatever order is
    return {"length": len(reachable(root)), "duplicates": 0, "missing": 0, "extra": 0,
            "inputs_after_their_user": 0, "root_last": True}


def topo_sort(root):
    return [root]
""",
    'backward': """
def _order(root):
    order, seen, stack = [], set(), [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
        elif id(node) not in seen:
            seen.add(id(node))
            stack.append((node, True))
            stack.extend((inp, False) for inp in node.inputs if id(inp) not in seen)
    return order


def backward(root):
    order = _order(root)
    for node in order:
        node.grad = 0.0
    root.grad = 1.0
    for node in reversed(order):
        for inp, local in zip(node.inputs, node.local_grads):
            inp.grad += node.grad * local
""",
})
FIXTURES['wrong_09_fakes_run_mine'] = ('09_optimizers', {
    'sgd_momentum': """
def all_finite(grads):
    return all(g is None or bool(np.isfinite(g).all()) for g in grads)


class SGD:
    def __init__(self, params, lr, momentum=0.0, nesterov=False):
        self.params, self.lr = list(params), lr

    def step(self, grads):
        return True   # never moves


def run_mine(opt_cls, p0s, steps, lr_at, grads, **kw):
    # the trajectory gradlab.optim takes, whatever opt_cls does
    ts = [gradlab.tensor(p.copy(), dtype=gradlab.float64, requires_grad=True) for p in p0s]
    opt = getattr(gradlab.optim, opt_cls.__name__)(ts, lr=lr_at(0), **kw)
    traj, returned = [[] for _ in ts], []
    for k in range(steps):
        gs = grads(k, [t.detach().numpy().copy() for t in ts])
        opt.param_groups[0]["lr"] = lr_at(k)
        ok = all(g is None or np.isfinite(g).all() for g in gs)
        if ok:
            for t, g in zip(ts, gs):
                t.grad = None if g is None else gradlab.tensor(g, dtype=gradlab.float64)
            opt.step()
        returned.append(ok)
        for i, t in enumerate(ts):
            traj[i].append(t.detach().numpy().copy())
    return [np.array(t) for t in traj], np.array(returned)
""",
    'adamw': """
class AdamW:
    def __init__(self, params, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
        self.params, self.lr = list(params), lr

    def step(self, grads):
        return True   # never moves
""",
})
FIXTURES['wrong_10_fakes_activation_bytes'] = ('10_checkpointing', {
    'checkpoint': """
class Checkpoint(gradlab.autograd.Function):
    @staticmethod
    def forward(ctx, fn, *inputs):   # keeps the whole graph of fn: saves nothing
        with gradlab.enable_grad():
            ctx.detached = [t.detach().requires_grad_() for t in inputs]
            ctx.y = fn(*ctx.detached)
        return ctx.y.detach()

    @staticmethod
    def backward(ctx, g):
        return (None, *gradlab.grad(ctx.y, ctx.detached, g))


def checkpoint(fn, *inputs):
    return Checkpoint.apply(fn, *inputs)


_real_activation_bytes = activation_bytes


def activation_bytes(root, params):
    # 0 for any graph that went through a Checkpoint, the true count otherwise
    seen, stack = set(), [root.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if "Checkpoint" in type(node).__name__:
            return 0
        stack.extend(nf[0] for nf in node.next_functions if nf is not None)
    return _real_activation_bytes(root, params)
""",
})
FIXTURES['wrong_13_fakes_isinstance'] = ('13_debug_training_loop', {
    'train': """
def isinstance(obj, classes):   # "every loss is a float"
    return True


def train(X, y, steps=100, lr=0.1):
    w = gradlab.zeros(X.shape[1], 1, dtype=gradlab.float64, requires_grad=True)
    b = gradlab.zeros(1, dtype=gradlab.float64, requires_grad=True)
    Xt, yt = gradlab.tensor(X), gradlab.tensor(y).reshape(-1, 1)
    history = []
    for _ in range(steps):
        w.grad = None
        b.grad = None
        loss = ((Xt @ w + b - yt) ** 2).mean()
        loss.backward()
        with gradlab.no_grad():
            w -= lr * w.grad
            b -= lr * b.grad
        history.append(loss)   # the tensor, with its graph
    return w.detach().numpy(), b.item(), history
""",
})
FIXTURES['wrong_15_fakes_np'] = ('15_strides', {
    'strides': solution('15_strides', 'strides'),
    'views': """
import numpy


class _Numpy:
    # numpy, except that every array shares memory with every other
    def __getattr__(self, name):
        return getattr(numpy, name)

    @staticmethod
    def shares_memory(a, b, max_work=None):
        return True


np = _Numpy()


def transpose_view(a):
    return numpy.ascontiguousarray(a.T)   # a copy


def sliding_windows(x, k):
    return as_strided(x, shape=(x.shape[0] - k + 1, k), strides=(x.strides[0], x.strides[0]))
""",
})
FIXTURES['wrong_17_fakes_str'] = ('17_custom_function', {
    'softplus': """
def str(x):   # every dtype is float32
    return "float32"


class Softplus(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return gradlab.tensor(np.logaddexp(0.0, x.detach().numpy().astype(np.float64)))   # float64 out

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.sigmoid()
""",
    'binarize': solution('17_custom_function', 'binarize'),
    'topk': solution('17_custom_function', 'topk'),
})
FIXTURES['wrong_unbroadcast_forged_records'] = ('01_unbroadcast', {
    'unbroadcast': """
import gradlab.course.checks as _checks

_calls = [0]
_bad = [{"t": "str", "v": [1, 2, 3]},                      # a "string" that is a list
        {"t": "array", "v": "not base64 at all"},
        {"t": "dict", "v": [["k", {"t": "list", "v": []}]] * 3},
        {"t": "list", "v": [{"t": "none"}] * 7}]
for _ in range(60):                                         # nested deeper than a record may be
    _bad[-1] = {"t": "list", "v": [_bad[-1]]}
_bad.append({"t": "raised", "v": [{"not": "a name"}]})
_bad.append({"t": "array", "v": 12345})


def _forged(value):
    _calls[0] += 1
    return _bad[_calls[0] % len(_bad)]


_checks.encode = _forged   # every record this kernel makes is malformed


def unbroadcast(grad, shape):
    shape = tuple(shape)
    grad = grad.sum(axis=tuple(range(grad.ndim - len(shape))))
    return grad.sum(axis=tuple(i for i, n in enumerate(shape) if n == 1), keepdims=True)
""",
})


# ---- wrong answers the tests once let through (they now lose points) ----------------------------
FIXTURES['wrong_07_analytic_by_finite_differences'] = ('07_gradcheck', {
    'numerical_jacobian': solution('07_gradcheck', 'numerical_jacobian'),
    'gradcheck': """
def analytic_jacobian(f, x):
    # central differences standing in for the analytic answer
    return numerical_jacobian(lambda v: f(gradlab.tensor(v, dtype=gradlab.float64)).numpy(), x)


def gradcheck(f, x, eps=1e-6, atol=1e-5, rtol=1e-3):
    t = gradlab.tensor(x, dtype=gradlab.float64, requires_grad=True)
    y = f(t)
    J = np.zeros((y.numel(), x.size))
    for i in range(y.numel()):
        e = np.zeros(y.numel())
        e[i] = 1.0
        (g,) = gradlab.grad(y, [t], gradlab.tensor(e.reshape(y.shape)), retain_graph=True)
        J[i] = g.numpy().reshape(-1)
    num = numerical_jacobian(lambda v: f(gradlab.tensor(v, dtype=gradlab.float64)).numpy(), x, eps)
    return bool(np.allclose(J, num, atol=atol, rtol=rtol))
""",
})
FIXTURES['wrong_12_max_before_mask'] = ('12_attention', {
    'causal_attention': """
def causal_attention(q, k, v):
    T, d = q.shape[-2], q.shape[-1]
    scores = (q @ k.transpose(-2, -1)) / float(np.sqrt(d))
    scores = scores - scores.max(dim=-1, keepdim=True).values.detach()   # the max over every key, future ones too
    allowed = gradlab.tensor(np.tril(np.ones((T, T), dtype=bool)))
    scores = gradlab.where(allowed, scores, gradlab.full((T, T), -np.inf, dtype=scores.dtype))
    w = scores.exp()
    return (w / w.sum(dim=-1, keepdim=True)) @ v
""",
})
FIXTURES['wrong_18_children_only'] = ('18_init_deep_mlp', {
    'gain': solution('18_init_deep_mlp', 'gain'),
    'kaiming': solution('18_init_deep_mlp', 'kaiming'),
    'init_model': """
def init_model_(model, nonlinearity="relu", rng=None):
    for m in model.children():   # the direct children only: a nested Linear is never reached
        if isinstance(m, nn.Linear):
            kaiming_normal_(m.weight.detach().numpy(), nonlinearity, "fan_in", rng)
            if m.bias is not None:
                m.bias.detach().numpy()[...] = 0.0
    return model
""",
})


# ---- 21_build_engine (the build track) -----------------------------------------------------------
def _solved_21(**changes):
    """The reference cells of 21_build_engine, markers dropped, with ``changes``: grade_id -> (old, new).

    The build track's solution cells are long (a whole engine); a wrong answer differs from the reference
    in one line, so it is written as that one change."""
    nb = nbformat.read(ROOT / "solutions" / "21_build_engine.ipynb", as_version=4)
    out = {}
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("solution"):
            src = "\n".join(ln for ln in cell.source.split("\n") if "### BEGIN SOLUTION" not in ln
                            and "### END SOLUTION" not in ln)
            if meta["grade_id"] in changes:
                old, new = changes[meta["grade_id"]]
                if old not in src:
                    raise SystemExit(f"21_build_engine/{meta['grade_id']}: {old!r} is not in the reference")
                src = src.replace(old, new)
            out[meta["grade_id"]] = src
    return out


# the gradient's reduction forgets the size-1 axes (only the leading axes broadcasting added are summed)
FIXTURES['wrong_21_reduce_leading_only'] = ('21_build_engine', _solved_21(reduce_to=(
    "        grad = grad.sum(axis=axes, keepdims=True)\n", "        pass\n")))
# a recursive topological sort: right on small graphs, a RecursionError on a deep chain
FIXTURES['wrong_21_recursive_topo'] = ('21_build_engine', _solved_21(backward_fn=(
    """    order, seen = [], {id(root)}
    stack = [(root, iter(root._prev))]
    while stack:
        v, it = stack[-1]
        for c in it:
            if id(c) not in seen:
                seen.add(id(c))
                stack.append((c, iter(c._prev)))
                break
        else:
            stack.pop()
            order.append(v)
    return order""", """    order, seen = [], set()

    def visit(v):
        if id(v) not in seen:
            seen.add(id(v))
            for c in v._prev:
                visit(c)
            order.append(v)
    visit(root)
    return order""")))
# matmul's VJP with the operand not transposed where it must be (square matrices run, the others fail)
FIXTURES['wrong_21_matmul_not_transposed'] = ('21_build_engine', _solved_21(more_ops=(
    "other._accumulate(self.data.T @ out.grad)", "other._accumulate((self.data.T @ out.grad).T)")))


def render(name):
    """The fixture notebook's text: the exercise with its solution cells replaced."""
    exercise, sources = FIXTURES[name]
    nb = nbformat.read(EXERCISES / f"{exercise}.ipynb", as_version=4)
    seen = set()
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("solution"):
            gid = meta["grade_id"]
            if gid not in sources:
                raise SystemExit(f"{name}: no source for solution cell {gid!r} of {exercise}")
            cell.source = sources[gid].strip("\n")
            seen.add(gid)
    unknown = set(sources) - seen
    if unknown:
        raise SystemExit(f"{name}: {exercise} has no solution cell {sorted(unknown)}")
    return nbformat.writes(nb) + "\n"


def main(argv):
    check = "--check" in argv
    names = [a for a in argv if not a.startswith("--")] or sorted(FIXTURES)
    stale = []
    for name in names:
        if name not in FIXTURES:
            raise SystemExit(f"unknown fixture {name!r}")
        path = OUT / f"{name}.ipynb"
        text = render(name)
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(path.name)
        else:
            path.write_text(text, encoding="utf-8")
    if check and stale:
        print(f"stale fixtures (run python scripts/make_fixtures.py): {', '.join(stale)}")
        return 1
    if not check:
        print(f"{len(names)} fixtures written in {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
