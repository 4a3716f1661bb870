"""``torch.cuda.amp``: PyTorch's deprecated spellings ``torch.cuda.amp.autocast(...)`` and
``torch.cuda.amp.GradScaler(...)``, meaning ``gradlab.amp.autocast("cuda", ...)`` and
``gradlab.amp.GradScaler("cuda", ...)``. Found on first use (``gradlab.amp`` sits above this layer)."""


def __getattr__(name):
    import functools

    from ... import amp as _amp
    if name == "autocast":
        class autocast(_amp.autocast):  # noqa: N801 - PyTorch's name
            """``torch.cuda.amp.autocast(enabled=True, dtype=float16, cache_enabled=True)``."""

            def __init__(self, enabled=True, dtype=None, cache_enabled=True):
                from ...backend import dtypes as _dt
                super().__init__("cuda", dtype=dtype or _dt.float16, enabled=enabled, cache_enabled=cache_enabled)
        globals()["autocast"] = autocast
        return autocast
    if name == "GradScaler":
        cls = functools.partial(_amp.GradScaler, "cuda")
        globals()["GradScaler"] = cls
        return cls
    raise AttributeError(f"module 'gradlab.cuda.amp' has no attribute {name!r}")
