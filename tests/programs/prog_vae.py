# A variational autoencoder on generated binary vectors (the PyTorch VAE example, shrunk); the
# reparameterisation noise is drawn once with NumPy so both runs see the same numbers.
import numpy as np
import torch
from torch import nn, optim
from torch.nn import functional as F

rng = np.random.default_rng(7)
protos = (rng.random((3, 20)) > 0.5).astype(np.float32)
data = protos[rng.integers(0, 3, 96)]
flip = rng.random(data.shape) < 0.05
data = np.where(flip, 1 - data, data).astype(np.float32)
noise = rng.standard_normal((6, 32, 2)).astype(np.float32)


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(20, 12)
        self.fc21 = nn.Linear(12, 2)
        self.fc22 = nn.Linear(12, 2)
        self.fc3 = nn.Linear(2, 12)
        self.fc4 = nn.Linear(12, 20)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar, eps):
        std = torch.exp(0.5 * logvar)
        return mu + eps * std

    def decode(self, z):
        return torch.sigmoid(self.fc4(F.relu(self.fc3(z))))

    def forward(self, x, eps):
        mu, logvar = self.encode(x)
        z = self.reparameterize(mu, logvar, eps)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    bce = F.binary_cross_entropy(recon_x, x, reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld


model = VAE()
g = np.random.default_rng(8)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(g.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))
optimizer = optim.RAdam(model.parameters(), lr=1e-2)
losses = []
for step in range(6):
    batch = torch.from_numpy(data[(step * 32) % 96:(step * 32) % 96 + 32])
    optimizer.zero_grad()
    recon, mu, logvar = model(batch, torch.from_numpy(noise[step]))
    loss = loss_function(recon, batch, mu, logvar)
    loss.backward()
    optimizer.step()
    losses.append(loss.item() / len(batch))
