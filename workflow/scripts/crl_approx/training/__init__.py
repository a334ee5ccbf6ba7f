"""Layer 3a, training: stacked two-tower encoders and the loops that fit them.

- ``towers``: R independent models (one per seed) as stacked weights (``build_model``, ``embed``).
- ``loops``: the batched training loops (``fit_pairs``, ``fit_fresh``, ``fit_population``).
- ``optim``: AdamW replica by replica (``make_optimizer``) and the learning-rate schedule.
- ``batches``: the minibatches they read (pools permuted per replica, fresh draws, stacking).
- ``cells``: one training job, every seed of a cell (``run``, ``run_sample_size``).
- ``recorder``: a job's per-epoch bookkeeping (losses, checkpoints, metrics).
- ``digits``: one ``train_digits`` job (Experiment R), every seed of a (pairing, D) cell.
- ``evaluation``: population metrics of trained scores by quadrature.
- ``population``: the population objective on any 1-D world's quadratures (Experiment S).
- ``manual``: the hand-written steps (``in_batch_step``, ``population_step``), in fast layouts.
- ``native``: the same steps compiled from C++ (``native_step.cpp``), bitwise, where a compiler is.
- ``budget``: pairs seen and distinct pairs of a protocol (``pair_counts``).
- ``gpu_slots``: one card per concurrent job on a multi-GPU workstation.
- ``host``: what a job sets before its first step (threads, allocator, device).

Imports ``models`` and ``numerics``; never an analysis or the presentation.
"""
