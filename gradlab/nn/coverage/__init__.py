"""The breadth of ``torch.nn`` that a reader of the core does not need: kept so PyTorch code runs unchanged.

``gradlab.nn`` follows PyTorch's names; PyTorch has many layers and losses that are rarely the point
of a lesson (CTC, bags of embeddings, lazy layers, a multi-GPU wrapper, a dozen margin losses...).
They live here, off the reading path, and are re-exported where PyTorch has them (``F.ctc_loss``,
``nn.CTCLoss``...), so nothing here is imported by name from ``coverage``:

* ``coverage/functional/``: the functions (``ctc.py``, ``embedding_bag_functions.py``, ``gumbel.py``,
  ``losses.py`` (the rarer losses), ``pooling_functions.py`` (``lp_pool``, ``max_unpool``),
  ``resample_functions.py`` (``interpolate``, ``upsample``, ``pixel_shuffle``, ``channel_shuffle``),
  ``normalization_functions.py`` (``local_response_norm``));
* ``coverage/modules/``: the layers over them, one ``<kind>_layers.py`` each, plus ``lazy_layers.py``
  (``LazyLinear``, ``LazyConv2d``...) and ``parallel_layers.py`` (``DataParallel``, a pass-through).

A file is named for its kind and its side (``_functions``/``_layers``), never as a ``torch.nn.modules`` file
(``nn/modules/pooling.py`` is PyTorch's path) nor as a function it holds (which would hide it).

Each is written with gradlab ops, so autograd, the registry's generic tests and the graph tools work
through them unchanged.
"""
