"""Per-epoch bookkeeping of a training job (:class:`Recorder`): every replica's losses (one host
sync per epoch), f and g at the checkpoint points, the early steps' checkpoints, the history and
the metrics each seed's metrics.json holds. Used by :mod:`.cells` and :mod:`.digits`."""

from __future__ import annotations

import logging
import platform
import time

import numpy as np
import torch

from .loops import check_losses
from .towers import embed

log = logging.getLogger(__name__)


def _run_info(dev) -> dict:
    out = {"device": str(dev), "threads": torch.get_num_threads(), "torch": torch.__version__}
    return out | {"machine": platform.machine()}


class Recorder:
    """Per-epoch bookkeeping for every replica: losses (one host sync), checkpoints, history."""

    def __init__(self, model, train, checkpoint_inputs, evaluate=None, early_steps=()):
        self.model, self.train, self.epochs = model, train, train["epochs"]
        self.inputs = checkpoint_inputs  # (x, y) of the checkpoint points: (n, d) or (R, n, d)
        self.evaluate = evaluate  # (f, g) of one replica -> (population loss, excess), or None
        self.f, self.g, self.steps = [], [], []
        self.early = {"step": [], "f": [], "g": []}
        self.early_steps, self.t = {int(t) for t in early_steps}, 0
        self.history = [[] for _ in model.seeds]

    def reads_model(self, t) -> bool:
        """Whether :meth:`after_step` reads the model after step t (an early step)."""
        return t in self.early_steps

    def after_step(self, t):
        """After optimiser step t: f and g at the checkpoint points if t is an early step."""
        self.t = t
        if t in self.early_steps:
            fx, gy = embed(self.model, *self.inputs)
            for key, value in zip(("step", "f", "g"), (t, fx, gy), strict=True):
                self.early[key].append(value)

    def __call__(self, epoch, train_loss, val_loss, t0):
        both = train_loss if val_loss is None else torch.stack([train_loss, val_loss])
        values = both.reshape(-1, self.model.replicas).tolist()  # the epoch's host sync
        check_losses(values[0], self.model.seeds, epoch, self.train)
        fx, gy = embed(self.model, *self.inputs)
        self.f.append(fx)
        self.g.append(gy)
        self.steps.append(self.t)
        seconds = time.perf_counter() - t0
        for r, seed in enumerate(self.model.seeds):
            rec = {"epoch": epoch, "train_loss": values[0][r]}
            if self.evaluate is not None:
                loss, rec["excess_risk"] = self.evaluate(fx[r], gy[r])
            # val: the in-batch validation loss, or (population objective) the evaluation grid's
            rec["val_loss"] = loss if val_loss is None else values[1][r]
            rec["seconds"] = seconds
            self.history[r].append(rec)
            log.info(
                "epoch %d/%d seed %d train_loss %.6f val_loss %.6f%s (%.2f s)",
                epoch,
                self.epochs,
                seed,
                rec["train_loss"],
                rec["val_loss"],
                f" excess {rec['excess_risk']:.4e}" if "excess_risk" in rec else "",
                seconds,
            )

    def metrics(self, r, dataset, objective, dim, tau, steps, wall, extra=None) -> dict:
        """Replica r's metrics.json: the run, ``extra`` (population metrics), its history."""
        hist = self.history[r]
        return {
            "dataset": dataset,
            "objective": objective,
            "score": self.model.score,
            "D": int(dim),
            "seed": self.model.seeds[r],
            "tau": tau,
            **(extra or {}),
            "cosine_scale": self.model.scales()[r],
            "final_train_loss": hist[-1]["train_loss"],
            "final_val_loss": hist[-1]["val_loss"],
            "steps": int(steps),
            "train_seconds": wall,
            **_run_info(next(self.model.parameters()).device),
            "history": hist,
        }

    def checkpoints(self, r: int) -> dict:
        """Replica r's checkpoints: per epoch (its end step), and the early steps if any."""
        out = {
            "epoch": np.arange(1, len(self.f) + 1),
            "step": np.asarray(self.steps, dtype=np.int64),
            "f": np.stack([f[r] for f in self.f]),
            "g": np.stack([g[r] for g in self.g]),
        }
        if self.early["step"]:
            out["early_step"] = np.asarray(self.early["step"], dtype=np.int64)
            out["early_f"] = np.stack([f[r] for f in self.early["f"]])
            out["early_g"] = np.stack([g[r] for g in self.early["g"]])
        return out
