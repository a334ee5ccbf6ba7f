"""Layer 3b, the analyses: what the experiments measure, from trained encoders and the numerics.

- ``tables``: Table 1 and the cosine ablation assembled from the training runs.
- ``probes``: the LCGM's linear probes, canonical correlations and elbow.
- ``noise``, ``noise_mc``: the noise exponent's Monte Carlo and its fits.
- ``calibration``: retrieval excess against contrastive excess.
- ``dynamics``: alignment with the eigenfunctions and acquisition order over checkpoints.
- ``dynamics_budget``: the dynamics' budget check, the alignment statistic at 2x the budget.
- ``dynamics_lcgm``: the LCGM sweep's f, g against the posterior and log-ratio spans.
- ``sample_size``: where the sampled protocol's error goes.
- ``sample_size_fits``: the study's fits, per regime, with per-seed asymptotes.
- ``convergence``: measured convergence of trained runs, the gate of every verdict on them.
- ``digits_saturation``: Experiment R's verdicts by the saturation rule, gated by convergence.
- ``digits``, ``digits_tables``: Experiment R's exact class operator, held-out numbers, tables,
  elbows and verdicts.
- ``widths``, ``widths_cells``, ``widths_verdicts``, ``widths_predictions``: Experiment W's width
  cells (training plus the LCGM's held-out excess), tables with floors and approximation parts,
  and pre-registered verdicts (W1–W3; W4–W7 of 2026-12-04).
- ``smoothness``, ``smoothness_claims``, ``smoothness_relation``, ``smoothness_cells``:
  Experiment S's tables, its claims S1–S4, its post-hoc relations and its trained cells on the
  noise channels.
- ``claims`` (a folder, one module per experiment): every experiment's claims in one table, the
  summary's only source.

May import ``models``, ``numerics`` and ``training`` (to load trained towers); never the
presentation.
"""
