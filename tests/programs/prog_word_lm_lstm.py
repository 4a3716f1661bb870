# The PyTorch word_language_model example (main.py and model.py), shrunk: a 2-layer LSTM with dropout
# modules and tied weights, weights initialised through .data (uniform_ in the original; set from NumPy
# here so both runs start alike), repackage_hidden, clip_grad_norm_, the hand-written SGD step
# `p.data.add_(p.grad, alpha=-lr)`, evaluation under no_grad, and the learning rate annealed when the
# validation loss stops improving.
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

corpus = ("the cat sat on the mat . the dog sat on the log . a cat saw a dog . the dog saw the cat . " * 6).split()
vocab = sorted(set(corpus))
ids = torch.tensor([vocab.index(w) for w in corpus], dtype=torch.long)
ntokens, emsize, nhid, nlayers, bptt, clip = len(vocab), 12, 12, 2, 6, 0.25
train_ids, val_ids = ids[: len(ids) * 3 // 4], ids[len(ids) * 3 // 4:]


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


class RNNModel(nn.Module):
    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.0, tie_weights=False):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            self.decoder.weight = self.encoder.weight
        self.init_weights()
        self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers

    def init_weights(self):
        initrange = 0.1
        g = np.random.default_rng(4)
        self.encoder.weight.data.copy_(torch.from_numpy(g.uniform(-initrange, initrange, (self.ntoken, 12))
                                                        .astype(np.float32)))
        self.decoder.bias.data.zero_()

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == "LSTM":
            return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))
        return weight.new_zeros(self.nlayers, bsz, self.nhid)


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    return data, target


model = RNNModel("LSTM", ntokens, emsize, nhid, nlayers, dropout=0.0, tie_weights=True)
w = np.random.default_rng(8)
for name, p in model.named_parameters():
    if name.startswith("rnn."):
        p.data.copy_(torch.from_numpy(w.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))
train_data, val_data = batchify(train_ids, 4), batchify(val_ids, 2)
criterion = nn.NLLLoss()
lr = 4.0
losses = []


def evaluate(data_source):
    model.eval()
    total_loss = 0.0
    hidden = model.init_hidden(2)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, bptt):
            data, targets = get_batch(data_source, i)
            output, hidden = model(data, hidden)
            hidden = repackage_hidden(hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def train():
    model.train()
    hidden = model.init_hidden(4)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
        data, targets = get_batch(train_data, i)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        losses.append(loss.item())


best_val_loss = None
for epoch in range(1, 4):
    train()
    val_loss = evaluate(val_data)
    losses.append(val_loss)
    assert math.isfinite(val_loss)
    if not best_val_loss or val_loss < best_val_loss:
        best_val_loss = val_loss
    else:
        lr /= 4.0
