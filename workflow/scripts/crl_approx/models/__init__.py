"""Layer 1, the data models: the paper's worlds in closed form and how pairs are drawn from them.

- ``gmm``: the binary Gaussian mixture of Experiment 1 (densities, PMI, posteriors).
- ``lcgm``: the latent-class generative model of Experiment 3 and the rank-K check of its design.
- ``digits``: Experiment R's real images (bundled digits), splits, class channel, exact class PMI
  and the vectorised pair sampler.
- ``data``: training and validation pairs drawn once per seed (``run``), the fresh stream.
- ``channel``: Experiment S's additive-noise channels, whose PMI has a cusp of Hölder order β,
  at a prescribed mutual information.
- ``rng``: one random stream per stochastic step of a seed (``stream``).

Imports only ``config`` and ``runtime`` above it; nothing here knows of training or reports.
"""
