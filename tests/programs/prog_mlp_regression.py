# An MLP fitting a noisy function, in the style of the PyTorch "learning by examples" tutorial.
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

rng = np.random.default_rng(0)
X = rng.uniform(-2, 2, size=(128, 3)).astype(np.float32)
y = (np.sin(X[:, :1]) + 0.5 * X[:, 1:2] ** 2 - X[:, 2:3] + 0.05 * rng.standard_normal((128, 1))).astype(np.float32)

device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))

    def forward(self, x):
        return self.net(x)


def init_weights(model, seed=1):
    g = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.from_numpy(g.uniform(-0.3, 0.3, size=tuple(p.shape)).astype(np.float32)))


model = MLP().to(device)
init_weights(model)
loader = DataLoader(TensorDataset(torch.from_numpy(X), torch.from_numpy(y)), batch_size=32, shuffle=False)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
loss_fn = nn.MSELoss()
losses = []
for epoch in range(3):
    model.train()
    for xb, yb in loader:
        xb, yb = xb.to(device), yb.to(device)
        pred = model(xb)
        loss = loss_fn(pred, yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
model.eval()
with torch.no_grad():
    test_loss = loss_fn(model(torch.from_numpy(X)), torch.from_numpy(y)).item()
