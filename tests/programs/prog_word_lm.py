# A word-level language model (the PyTorch word_language_model example, shrunk): GRU, tied weights,
# log_softmax + NLLLoss, plain SGD with gradient clipping and an annealed learning rate, hidden state
# detached between batches (repackage_hidden).
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

words = ("the cat sat on the mat the dog sat on the log a cat and a dog sat " * 4).split()
vocab = sorted(set(words))
ids = torch.tensor([vocab.index(w) for w in words], dtype=torch.long)
ntoken, ninp, bptt, bsz = len(vocab), 10, 5, 3


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    return data.narrow(0, 0, nbatch * bsz).view(bsz, -1).t().contiguous()


class RNNModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.GRU(ninp, ninp, 1)
        self.decoder = nn.Linear(ninp, ntoken)
        self.decoder.weight = self.encoder.weight

    def forward(self, input, hidden):
        output, hidden = self.rnn(self.encoder(input), hidden)
        return F.log_softmax(self.decoder(output), dim=-1), hidden

    def init_hidden(self, bsz):
        return torch.zeros(1, bsz, ninp)


def repackage_hidden(h):
    return h.detach() if isinstance(h, torch.Tensor) else tuple(repackage_hidden(v) for v in h)


model = RNNModel()
g = np.random.default_rng(11)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(g.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))
train = batchify(ids, bsz)
criterion = nn.NLLLoss()
lr = 2.0
losses = []
hidden = model.init_hidden(bsz)
for epoch in range(2):
    for i in range(0, train.size(0) - 1 - bptt, bptt):
        data, targets = train[i:i + bptt], train[i + 1:i + 1 + bptt].reshape(-1)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
        loss = criterion(output.view(-1, ntoken), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(p.grad, alpha=-lr)
        losses.append(loss.item())
    lr /= 4.0
