"""Draw the README's picture: the graph of a real small MLP, after backward.

    python scripts/make_readme_graph.py     # writes docs/images/mlp_graph.svg

A 2-layer MLP (``nn.Linear -> nn.ReLU -> nn.Linear``) classifies a batch of
8 points into 3 classes with cross-entropy; ``loss.backward()`` runs, then
``gradlab.show_graph`` draws the forward graph with the gradients filled in.
Seeded, so running it again gives the same file.
"""
from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import gradlab  # noqa: E402
from gradlab import nn  # noqa: E402


def mlp_loss():
    gradlab.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
    x = gradlab.randn(8, 4)
    y = gradlab.randint(0, 3, (8,))
    loss = nn.functional.cross_entropy(model(x), y)
    loss.name = "loss"
    loss.backward(retain_graph=True)     # keep the saved tensors so the picture shows them
    return loss, model


def main(out=os.path.join(ROOT, "docs", "images", "mlp_graph.svg")):
    loss, model = mlp_loss()
    view = gradlab.show_graph(loss, params=dict(model.named_parameters()))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    view.save(out)
    print(f"wrote {os.path.relpath(out, ROOT)}: {view.plan.count} nodes")
    return view


if __name__ == "__main__":
    main(*sys.argv[1:])
