"""``torch.nn.modules.channelshuffle``'s ``ChannelShuffle`` (kept in ``nn/coverage/modules/resample_layers.py``)."""
from ._layer_helpers import rest_from as _rest_from

__all__ = ["ChannelShuffle"]
__getattr__ = _rest_from(__name__, "gradlab.nn.coverage.modules.resample_layers")
