# A graph convolutional network (the PyTorch gcn example, shrunk): GraphConv layers computing
# spmm(adj, x @ W), a symmetric-normalised sparse adjacency D^-1/2 (A + I) D^-1/2 built with
# sparse_coo_tensor, log_softmax + nll_loss on the training nodes, Adam with weight decay.
# The graph is two communities drawn with NumPy (a stochastic block model); the weights are set from NumPy.
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

rng = np.random.default_rng(2)
n, nfeat, nhid, nclass = 24, 6, 8, 2
labels_np = np.repeat([0, 1], n // 2)
same = labels_np[:, None] == labels_np[None, :]
upper = np.triu(rng.random((n, n)) < np.where(same, 0.35, 0.04), 1)
edges = np.argwhere(upper | upper.T)
features_np = (rng.normal(size=(n, nfeat)) + labels_np[:, None] * 0.8).astype(np.float32)


class GraphConv(nn.Module):
    def __init__(self, input_dim, output_dim, use_bias=False):
        super().__init__()
        self.kernel = nn.Parameter(torch.empty(size=(input_dim, output_dim)))
        self.bias = nn.Parameter(torch.zeros(output_dim)) if use_bias else None

    def forward(self, input_tensor, adj_mat):
        support = torch.mm(input_tensor, self.kernel)
        output = torch.spmm(adj_mat, support)
        if self.bias is not None:
            output = output + self.bias
        return output


class GCN(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim, use_bias=True, dropout_p=0.0):
        super().__init__()
        self.gc1 = GraphConv(input_dim, hidden_dim, use_bias=use_bias)
        self.gc2 = GraphConv(hidden_dim, output_dim, use_bias=use_bias)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input_tensor, adj_mat):
        x = self.gc1(input_tensor, adj_mat)
        x = F.relu(x)
        x = self.dropout(x)
        x = self.gc2(x, adj_mat)
        return torch.log_softmax(x, dim=1)


def normalized_adjacency(edges, n):
    loops = torch.arange(n)
    row = torch.cat([torch.tensor(edges[:, 0]), loops])
    col = torch.cat([torch.tensor(edges[:, 1]), loops])
    deg = torch.bincount(row, minlength=n).float()
    values = deg[row].pow(-0.5) * deg[col].pow(-0.5)
    return torch.sparse_coo_tensor(torch.stack([row, col]), values, (n, n)).coalesce()


adj = normalized_adjacency(edges, n)
features = torch.from_numpy(features_np).to_sparse().to_dense()
labels = torch.tensor(labels_np)
idx_train = torch.tensor(np.concatenate([np.arange(0, 4), np.arange(n // 2, n // 2 + 4)]))

model = GCN(nfeat, nhid, nclass)
w = np.random.default_rng(9)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(w.normal(0, 0.4, tuple(p.shape)).astype(np.float32)))
optimizer = optim.Adam(model.parameters(), lr=0.05, weight_decay=5e-4)
losses = []
for epoch in range(12):
    model.train()
    optimizer.zero_grad()
    output = model(features, adj)
    loss = F.nll_loss(output[idx_train], labels[idx_train])
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
