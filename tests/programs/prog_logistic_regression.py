# Logistic regression with a hand-written SGD step (the classic first autograd example).
import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(2)
X = np.concatenate([rng.normal(-1, 1, (50, 2)), rng.normal(1.5, 1, (50, 2))]).astype(np.float32)
Y = np.concatenate([np.zeros(50), np.ones(50)]).astype(np.float32)
x, y = torch.tensor(X), torch.tensor(Y)


class Logistic(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor([[0.1], [-0.2]]))
        self.b = torch.nn.Parameter(torch.zeros(1))

    def forward(self, x):
        return (x @ self.w + self.b).squeeze(-1)


model = Logistic()
lr = 0.5
losses = []
for step in range(40):
    logits = model(x)
    loss = F.binary_cross_entropy_with_logits(logits, y)
    for p in model.parameters():
        p.grad = None
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= lr * p.grad
    losses.append(float(loss))
accuracy = ((torch.sigmoid(model(x)) > 0.5).float() == y).float().mean().item()
