# The import paths larger programs use: torch.nn.modules.<file>, torch.utils.data.<submodule>, a batch sampler,
# Subset, the distributed guard (single process here), NAdam, a loss subclassing _Loss.
import numpy as np
import torch
import torch.distributed as dist
from torch.nn.modules.activation import ReLU
from torch.nn.modules.batchnorm import BatchNorm1d
from torch.nn.modules.container import Sequential
from torch.nn.modules.dropout import Dropout
from torch.nn.modules.linear import Linear
from torch.nn.modules.loss import _Loss
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.dataloader import DataLoader
from torch.utils.data.dataset import Subset, TensorDataset
from torch.utils.data.sampler import BatchSampler, SequentialSampler

rng = np.random.default_rng(13)
X = rng.standard_normal((60, 5)).astype(np.float32)
Y = (X @ rng.standard_normal((5, 2))).astype(np.float32)
ds = Subset(TensorDataset(torch.from_numpy(X), torch.from_numpy(Y)), list(range(50)))
loader = DataLoader(ds, batch_sampler=BatchSampler(SequentialSampler(ds), batch_size=10, drop_last=False))


class HalfMSE(_Loss):
    def forward(self, input, target):
        return 0.5 * ((input - target) ** 2).mean()


model = Sequential(Linear(5, 16, bias=False), BatchNorm1d(16), ReLU(), Dropout(0.0), Linear(16, 2))
g = np.random.default_rng(14)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(g.uniform(-0.4, 0.4, tuple(p.shape)).astype(np.float32)))
if dist.is_available() and dist.is_initialized():
    model = DDP(model)
optimizer = torch.optim.NAdam(model.parameters(), lr=1e-2)
loss_fn = HalfMSE()
losses = []
for epoch in range(2):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
