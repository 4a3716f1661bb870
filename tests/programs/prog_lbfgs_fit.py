# Fitting a curve with L-BFGS and a closure (the optimizer many physics/regression tutorials use), in float64.
import numpy as np
import torch

torch.set_default_dtype(torch.float64)
rng = np.random.default_rng(12)
t = np.linspace(0, 3, 40)
obs = 1.5 * np.exp(-0.7 * t) * np.cos(2.0 * t) + 0.02 * rng.standard_normal(40)
tt, yy = torch.tensor(t), torch.tensor(obs)


class Damped(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.amp = torch.nn.Parameter(torch.tensor(1.0))
        self.decay = torch.nn.Parameter(torch.tensor(0.3))
        self.freq = torch.nn.Parameter(torch.tensor(1.8))

    def forward(self, t):
        return self.amp * torch.exp(-self.decay * t) * torch.cos(self.freq * t)


model = Damped()
optimizer = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=6, history_size=5, line_search_fn="strong_wolfe")
losses = []
for step in range(5):
    def closure():
        optimizer.zero_grad()
        loss = ((model(tt) - yy) ** 2).mean()
        loss.backward()
        return loss
    losses.append(float(optimizer.step(closure)))
torch.set_default_dtype(torch.float32)
