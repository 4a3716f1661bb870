# A small CNN on generated 8x8 "images" (stripes vs blobs), in the style of the MNIST example.
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

rng = np.random.default_rng(3)
n = 64
imgs = rng.normal(0, 0.3, (n, 1, 8, 8)).astype(np.float32)
labels = rng.integers(0, 3, n)
for i, c in enumerate(labels):
    if c == 0:
        imgs[i, 0, ::2, :] += 1.0
    elif c == 1:
        imgs[i, 0, :, ::2] += 1.0
    else:
        imgs[i, 0, 2:6, 2:6] += 1.0
order = rng.permutation(n).tolist()   # a fixed shuffled order, as a sampler


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1, bias=False)  # BatchNorm follows
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 8, 3)
        self.fc1 = nn.Linear(8 * 2 * 2, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.max_pool2d(x, 2)
        x = F.relu(self.conv2(x))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


torch.backends.cudnn.benchmark = True
model = Net()
g = np.random.default_rng(4)
with torch.no_grad():
    for name, p in model.named_parameters():
        p.copy_(torch.from_numpy(g.normal(0, 0.3, tuple(p.shape)).astype(np.float32)))
loader = DataLoader(TensorDataset(torch.from_numpy(imgs), torch.from_numpy(labels)), batch_size=16, sampler=order)
optimizer = optim.Adam(model.parameters(), lr=1e-2)
scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
losses = []
for epoch in range(2):
    model.train()
    for data, target in loader:
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    scheduler.step()
model.eval()
with torch.no_grad():
    correct = model(torch.from_numpy(imgs)).argmax(dim=1).eq(torch.from_numpy(labels)).sum().item()
