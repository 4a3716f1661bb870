# A character-level LSTM language model (char-RNN), truncated backprop through time, gradient clipping.
import numpy as np
import torch
import torch.nn as nn

text = "hello world, hello gradients. the quick brown fox jumps over the lazy dog. " * 3
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
V, H, T, B = len(chars), 24, 12, 4


class CharLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(V, 16)
        self.lstm = nn.LSTM(16, H, num_layers=2, batch_first=True)
        self.head = nn.Linear(H, V)

    def forward(self, x, hidden=None):
        out, hidden = self.lstm(self.embed(x), hidden)
        return self.head(out), hidden


model = CharLSTM()
g = np.random.default_rng(5)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(g.uniform(-0.2, 0.2, tuple(p.shape)).astype(np.float32)))
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
criterion = nn.CrossEntropyLoss()
starts = np.arange(0, len(text) - T - 1, 17)[: B * 3]
losses = []
hidden = None
for it in range(6):
    idx = starts[(it * B) % len(starts): (it * B) % len(starts) + B]
    x = torch.stack([data[i:i + T] for i in idx])
    y = torch.stack([data[i + 1:i + T + 1] for i in idx])
    if hidden is not None:
        hidden = tuple(h.detach() for h in hidden)
    logits, hidden = model(x, hidden)
    loss = criterion(logits.reshape(-1, V), y.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    losses.append(loss.item())
