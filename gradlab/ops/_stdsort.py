"""PyTorch's CPU order statistics, step for step, for the rows where the answer depends on the algorithm.

Which *index* ``topk``, ``kthvalue``, ``median(dim)`` and ``mode`` return among equal values (and
where NaNs go) is not a rule PyTorch states: it is whatever its CPU kernels leave behind. Those are
``std::sort``, ``std::nth_element`` and ``std::partial_sort`` from GCC's C++ library (libstdc++, which
PyTorch's Linux builds use) and, for ``kthvalue``, PyTorch's own quickselect
(``quick_select_template`` in ``aten/src/ATen/native/SortingUtils.h``). This module replays them on
a Python list, comparison for comparison, so gradlab returns the same indices.

It is slow (Python), so the ops use it only for rows with repeated values or NaNs; a row of distinct
values has one answer, which the ops compute with NumPy.
"""
from __future__ import annotations

_THRESHOLD = 16  # libstdc++'s _S_threshold: below it, sorting is insertion sort


def _isnan(v):
    return v != v


def _lg(n):
    return n.bit_length() - 1


def _insertion_sort(a, first, last, comp):
    if first == last:
        return
    for i in range(first + 1, last):
        val = a[i]
        if comp(val, a[first]):
            a[first + 1:i + 1] = a[first:i]
            a[first] = val
        else:
            _unguarded_linear_insert(a, i, comp)


def _unguarded_linear_insert(a, last, comp):
    val = a[last]
    nxt = last - 1
    while comp(val, a[nxt]):
        a[last] = a[nxt]
        last = nxt
        nxt -= 1
    a[last] = val


def _final_insertion_sort(a, first, last, comp):
    if last - first > _THRESHOLD:
        _insertion_sort(a, first, first + _THRESHOLD, comp)
        for i in range(first + _THRESHOLD, last):
            _unguarded_linear_insert(a, i, comp)
    else:
        _insertion_sort(a, first, last, comp)


def _move_median_to_first(a, result, x, y, z, comp):
    if comp(a[x], a[y]):
        if comp(a[y], a[z]):
            m = y
        elif comp(a[x], a[z]):
            m = z
        else:
            m = x
    elif comp(a[x], a[z]):
        m = x
    elif comp(a[y], a[z]):
        m = z
    else:
        m = y
    a[result], a[m] = a[m], a[result]


def _unguarded_partition(a, first, last, pivot, comp):
    while True:
        while comp(a[first], a[pivot]):
            first += 1
        last -= 1
        while comp(a[pivot], a[last]):
            last -= 1
        if not first < last:
            return first
        a[first], a[last] = a[last], a[first]
        first += 1


def _partition_pivot(a, first, last, comp):
    mid = first + (last - first) // 2
    _move_median_to_first(a, first, first + 1, mid, last - 1, comp)
    return _unguarded_partition(a, first + 1, last, first, comp)


# ------------------------------------------------------------------ heaps (stl_heap.h)
def _adjust_heap(a, base, hole, length, value, comp):
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if comp(a[base + child], a[base + child - 1]):
            child -= 1
        a[base + hole] = a[base + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[base + hole] = a[base + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and comp(a[base + parent], value):
        a[base + hole] = a[base + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[base + hole] = value


def _make_heap(a, first, last, comp):
    length = last - first
    if length < 2:
        return
    parent = (length - 2) // 2
    while True:
        _adjust_heap(a, first, parent, length, a[first + parent], comp)
        if parent == 0:
            return
        parent -= 1


def _pop_heap(a, first, last, result, comp):
    value = a[result]
    a[result] = a[first]
    _adjust_heap(a, first, 0, last - first, value, comp)


def _heap_select(a, first, middle, last, comp):
    _make_heap(a, first, middle, comp)
    for i in range(middle, last):
        if comp(a[i], a[first]):
            _pop_heap(a, first, middle, i, comp)


def _partial_sort(a, first, middle, last, comp):
    _heap_select(a, first, middle, last, comp)
    while middle - first > 1:
        middle -= 1
        _pop_heap(a, first, middle, middle, comp)


# ------------------------------------------------------------------ the algorithms
def sort(a, comp, first=0, last=None):
    """``std::sort(a + first, a + last, comp)`` in place."""
    last = len(a) if last is None else last
    if last - first > 1:
        _introsort_loop(a, first, last, 2 * _lg(last - first), comp)
        _final_insertion_sort(a, first, last, comp)


def _introsort_loop(a, first, last, depth, comp):
    while last - first > _THRESHOLD:
        if depth == 0:
            _partial_sort(a, first, last, last, comp)
            return
        depth -= 1
        cut = _partition_pivot(a, first, last, comp)
        _introsort_loop(a, cut, last, depth, comp)
        last = cut


def nth_element(a, nth, comp):
    """``std::nth_element(a, a + nth, a + len(a), comp)`` in place."""
    first, last = 0, len(a)
    if first == last or nth == last:
        return
    depth = 2 * _lg(last - first)
    while last - first > 3:
        if depth == 0:
            _heap_select(a, first, nth + 1, last, comp)
            a[first], a[nth] = a[nth], a[first]
            return
        depth -= 1
        cut = _partition_pivot(a, first, last, comp)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(a, first, last, comp)


def partial_sort(a, middle, comp):
    """``std::partial_sort(a, a + middle, a + len(a), comp)`` in place."""
    _partial_sort(a, 0, middle, len(a), comp)


def quick_select(vals, idx, k):
    """PyTorch's ``quick_select_template`` (kthvalue): partitions ``vals`` (and ``idx`` alongside) in
    place so that position ``k`` holds the k-th smallest, NaN counting as the largest."""
    def gt(x, y):
        return (_isnan(x) and not _isnan(y)) or x > y

    def swap(i, j):
        vals[i], vals[j] = vals[j], vals[i]
        idx[i], idx[j] = idx[j], idx[i]
    lo, hi = 0, len(vals) - 1
    while True:
        if hi <= lo:
            return
        if hi == lo + 1:
            if gt(vals[lo], vals[hi]):
                swap(lo, hi)
            return
        p = lo + (hi - lo) // 2
        swap(p, lo + 1)
        if gt(vals[lo + 1], vals[hi]):
            swap(lo + 1, hi)
        if gt(vals[lo], vals[hi]):
            swap(lo, hi)
        if gt(vals[lo + 1], vals[lo]):
            swap(lo + 1, lo)
        i, j = lo + 1, hi
        piv = vals[lo]
        while True:
            i += 1
            while gt(piv, vals[i]):
                i += 1
            j -= 1
            while gt(vals[j], piv):
                j -= 1
            if j < i:
                break
            swap(i, j)
        swap(lo, j)
        if j <= k:
            lo = i
        if j >= k:
            hi = j - 1


# ------------------------------------------------------------------ what each op does with them
def topk_row(row, k, largest, sorted_=True):
    """The indices ``torch.topk`` picks in one row (a list of Python numbers)."""
    if k == 0:
        return []
    q = [(v, i) for i, v in enumerate(row)]
    if largest:
        def comp(x, y):
            return (_isnan(x[0]) and not _isnan(y[0])) or x[0] > y[0]
    else:
        def comp(x, y):
            return (not _isnan(x[0]) and _isnan(y[0])) or x[0] < y[0]
    if k * 64 <= len(q):
        partial_sort(q, k, comp)
    else:
        nth_element(q, k - 1, comp)
        if sorted_:
            sort(q, comp, 0, k - 1)
    return [i for _, i in q[:k]]


def kthvalue_row(row, k):
    """The index ``torch.kthvalue`` picks (``k`` counts from 1)."""
    vals, idx = list(row), list(range(len(row)))
    quick_select(vals, idx, k - 1)
    return idx[k - 1]


def all_nan_median_index(n):
    """The index ``torch.nanmedian(x, dim)`` returns for a row of ``n`` NaNs: its kernel breaks ties between
    equal values by index (so a row with numbers picks as a stable sort), but NaNs are equal to nothing,
    so an all-NaN row is left where ``std::nth_element`` puts position 0."""
    order = list(range(n))
    nth_element(order, 0, lambda i, j: False)
    return order[0]


def mode_row(row):
    """The index ``torch.mode`` picks in one row: ``std::sort`` of (value, index) pairs by value, then the
    last pair of the first longest run of equal values (a NaN equals nothing: a run of its own)."""
    q = [(v, i) for i, v in enumerate(row)]
    sort(q, lambda x, y: x[0] < y[0])
    best, best_i, run = 0, 0, 0
    for j in range(len(q)):
        run += 1
        if j == len(q) - 1 or q[j][0] != q[j + 1][0]:
            if run > best:
                best, best_i = run, q[j][1]
            run = 0
    return best_i
