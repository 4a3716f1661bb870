# REINFORCE on a cart-pole (the PyTorch reinforcement_learning/reinforce.py example, shrunk): a policy
# network, Categorical(probs) for log_prob, discounted returns normalised with finfo(float32).eps, Adam.
# The environment is the classic cart-pole written out in NumPy (no gym), and each action is drawn with
# NumPy from the policy's probabilities so that both runs take the same actions.
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

gamma = 0.99
eps = np.finfo(np.float32).eps.item()
rng = np.random.default_rng(3)


class CartPole:
    """The cart-pole of Barto, Sutton and Anderson (1983), with gym's constants."""

    def reset(self):
        self.state = rng.uniform(-0.05, 0.05, 4)
        return self.state

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = 10.0 if action == 1 else -10.0
        cos, sin = np.cos(theta), np.sin(theta)
        temp = (force + 0.05 * theta_dot ** 2 * sin) / 1.1
        theta_acc = (9.8 * sin - cos * temp) / (0.5 * (4.0 / 3.0 - 0.1 * cos ** 2 / 1.1))
        x_acc = temp - 0.05 * theta_acc * cos / 1.1
        x, x_dot = x + 0.02 * x_dot, x_dot + 0.02 * x_acc
        theta, theta_dot = theta + 0.02 * theta_dot, theta_dot + 0.02 * theta_acc
        self.state = np.array([x, x_dot, theta, theta_dot])
        done = abs(x) > 2.4 or abs(theta) > 12 * 2 * np.pi / 360
        return self.state, 1.0, done


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(4, 32)
        self.affine2 = nn.Linear(32, 2)
        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        x = F.relu(self.affine1(x))
        action_scores = self.affine2(x)
        return F.softmax(action_scores, dim=1)


model = Policy()
w = np.random.default_rng(5)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(w.normal(0, 0.3, tuple(p.shape)).astype(np.float32)))
optimizer = optim.Adam(model.parameters(), lr=1e-2)
env = CartPole()


def select_action(state):
    state = torch.from_numpy(state).float().unsqueeze(0)
    probs = model(state)
    m = Categorical(probs)
    u = rng.random()
    action = torch.tensor([int(u >= probs[0, 0].item())])  # (NumPy's draw; m.sample() in the original)
    model.saved_log_probs.append(m.log_prob(action))
    return action.item()


def finish_episode():
    R = 0
    policy_loss = []
    returns = []
    for r in model.rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    for log_prob, R in zip(model.saved_log_probs, returns):
        policy_loss.append(-log_prob * R)
    optimizer.zero_grad()
    policy_loss = torch.cat(policy_loss).sum()
    policy_loss.backward()
    optimizer.step()
    del model.rewards[:]
    del model.saved_log_probs[:]
    return policy_loss.item()


losses = []
for i_episode in range(8):
    state, ep_reward = env.reset(), 0
    for t in range(1, 40):
        action = select_action(state)
        state, reward, done = env.step(action)
        model.rewards.append(reward)
        ep_reward += reward
        if done:
            break
    losses.append(finish_episode())
