# A tiny GPT (nanoGPT style): causal self-attention with a -inf mask, pre-LayerNorm blocks, GELU MLP,
# tied input/output embeddings, AdamW with decay only on matrices, a warmup-cosine learning rate.
import math

import numpy as np
import torch
import torch.nn as nn
from torch.nn import functional as F

torch.backends.cuda.matmul.allow_tf32 = True
torch.set_float32_matmul_precision("high")
ddp = False  # single process (torch.distributed not initialised)
device = "cuda" if torch.cuda.is_available() else "cpu"
n_embd, n_head, block_size, vocab = 16, 2, 8, 11


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=False)  # (a key bias has zero gradient)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(n_embd, dim=2)
        k = k.view(B, T, n_head, C // n_head).transpose(1, 2)
        q = q.view(B, T, n_head, C // n_head).transpose(1, 2)
        v = v.view(B, T, n_head, C // n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, n_embd), wpe=nn.Embedding(block_size, n_embd),
            h=nn.ModuleList([Block() for _ in range(2)]), ln_f=nn.LayerNorm(n_embd)))
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        loss = None if targets is None else F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


model = GPT().to(device)
g = np.random.default_rng(6)
with torch.no_grad():
    for name, p in model.named_parameters():
        p.copy_(torch.from_numpy(g.normal(0, 0.1, tuple(p.shape)).astype(np.float32)))
decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                              lr=1e-2, betas=(0.9, 0.95))
seq = (np.arange(200) * 3 % vocab).astype(np.int64)


def get_lr(it, warmup=2, max_iters=8, lr=1e-2, min_lr=1e-3):
    if it < warmup:
        return lr * (it + 1) / warmup
    ratio = (it - warmup) / (max_iters - warmup)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr - min_lr)


losses = []
for it in range(8):
    for group in optimizer.param_groups:
        group["lr"] = get_lr(it)
    ix = [(it * 7 + j * 13) % (len(seq) - block_size - 1) for j in range(4)]
    x = torch.stack([torch.from_numpy(seq[i:i + block_size]) for i in ix]).to(device)
    y = torch.stack([torch.from_numpy(seq[i + 1:i + 1 + block_size]) for i in ix]).to(device)
    logits, loss = model(x, y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    losses.append(loss.item())
