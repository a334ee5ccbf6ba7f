"""Layer 2, the numerics: exact quantities of the data models and the statistics every analysis
shares.

- ``spectrum``: the PMI operator on Gauss–Hermite quadrature, its spectrum, the InfoNCE loss.
- ``spectrum_rule``: what the compute_spectrum rule writes (the tables, their convergence).
- ``lse``: the loss's weighted row logsumexp, bitwise scipy's, in fewer passes over the grid.
- ``crosscheck``: independent 2-D integrals that check the quadrature.
- ``floor``: the best achievable rank-D InfoNCE excess (``rank_d_floor``), and the best
  re-weighting of given features (``recombination_excess``).
- ``alignment``: subspaces of functions in L2(P): principal angles, capture, acquisition order.
- ``asymptotics``: the small-t law of the noise condition on the mixture.
- ``theory``: Table 2's encoder sizes (``sizes``).
- ``stats``: mean and sd over seeds (``summarise``).
- ``tiers``: the one tier system of every verdict against the paper (scale, bounded, interval).
- ``saturation``: the one noise-aware saturation rule of every D sweep (per-seed, paired t).
- ``powerlaw``: power-law fits with residuals, local exponents, t intervals over seeds.
- ``widths``: the width needed to reach ε, width(ε)'s growth fits and their shape test.
- ``smoothness``: Experiment S's exact spectra of the noise channels, γ̂, D(ε) and its growth.
- ``claims``: the claims table's schema and its one verdict enumeration (Experiment S first).

Imports ``models`` (and ``config``/``runtime``); never training, analyses or presentation.
"""
