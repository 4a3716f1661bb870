# A GAN on a 1-D mixture (the DCGAN training loop, with MLPs): two models, two Adam optimizers with
# betas=(0.5, 0.999), BCELoss on sigmoid outputs, detach() for the discriminator step.
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

rng = np.random.default_rng(9)
real_all = np.concatenate([rng.normal(-2, 0.3, (64, 1)), rng.normal(2, 0.3, (64, 1))]).astype(np.float32)
rng.shuffle(real_all)
noise_all = rng.standard_normal((8, 16, 4)).astype(np.float32)

netG = nn.Sequential(nn.Linear(4, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
netD = nn.Sequential(nn.Linear(1, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1), nn.Sigmoid())
g = np.random.default_rng(10)
with torch.no_grad():
    for net in (netG, netD):
        for p in net.parameters():
            p.copy_(torch.from_numpy(g.normal(0, 0.3, tuple(p.shape)).astype(np.float32)))
criterion = nn.BCELoss()
optimizerD = optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
optimizerG = optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))
real_label, fake_label = 1.0, 0.0
losses = []
for i in range(8):
    real = torch.from_numpy(real_all[i * 16:(i + 1) * 16])
    netD.zero_grad()
    label = torch.full((16,), real_label)
    errD_real = criterion(netD(real).view(-1), label)
    errD_real.backward()
    fake = netG(torch.from_numpy(noise_all[i]))
    label.fill_(fake_label)
    errD_fake = criterion(netD(fake.detach()).view(-1), label)
    errD_fake.backward()
    optimizerD.step()
    netG.zero_grad()
    label.fill_(real_label)
    errG = criterion(netD(fake).view(-1), label)
    errG.backward()
    optimizerG.step()
    losses.append((errD_real + errD_fake).item())
    losses.append(errG.item())
models = {"netG": netG, "netD": netD}
