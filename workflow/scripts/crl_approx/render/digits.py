"""The report's section "Experiment R — real images" and its verdict lines in the summary, from
the tables of rule assemble_digits and the exact class operator (rule compute_digits_operator)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .verdicts import fmt


def _pm(mean, sd) -> str:
    if pd.isna(mean):
        return "—"
    return fmt(float(mean)) + ("" if pd.isna(sd) else f" ± {float(sd):.2g}")


def context(sweep_csv, elbow_csv, verdicts_csv, table1_csv, classes_csv, cancorr_csv) -> dict:
    """Every number the section prints, formatted, with the keys its provenance titles need."""
    sweep = pd.read_csv(sweep_csv)
    elbows = pd.read_csv(elbow_csv)
    verdicts = pd.read_csv(verdicts_csv)
    classes = pd.read_csv(classes_csv)
    cancorr = pd.read_csv(cancorr_csv)
    rows = []
    for r in sweep.itertuples():
        rows.append(
            {
                "pairing": r.pairing,
                "K": int(r.K),
                "D": int(r.D),
                "is_K": r.pairing != "halves" and int(r.D) == int(r.K),
                "excess": _pm(r.heldout_excess_mean, r.heldout_excess_sd),
                "infonce": _pm(r.heldout_infonce_mean, r.heldout_infonce_sd),
                "mi": _pm(r.mi_bound_mean, r.mi_bound_sd),
                "logloss": _pm(r.probe_logloss_mean, r.probe_logloss_sd),
                "accuracy": _pm(r.probe_accuracy_mean, r.probe_accuracy_sd),
                "erank": _pm(r.effective_rank_mean, r.effective_rank_sd),
                "best": f"{r.best_checkpoint_mean:.1f}",
                "n": int(r.n_seeds),
            }
        )
    t1 = pd.read_csv(table1_csv)
    table1 = [
        {
            "D": int(r.D),
            "tail": fmt(r.spectral_tail),
            "trunc": fmt(r.truncation_excess_risk),
            "floor": fmt(r.rank_d_floor),
            "mlp": _pm(r.mlp_heldout_excess_mean, r.mlp_heldout_excess_sd),
        }
        for r in t1.itertuples()
    ]
    operator = [
        {
            "K": int(k),
            "mi": fmt(float(g["mutual_information"].iloc[0])),
            "l_star": fmt(float(g["L_star"].iloc[0])),
            "eigenvalues": ", ".join(f"{v:.3g}" for v in g.sort_values("D")["eigenvalue"]),
        }
        for k, g in classes.groupby("K", sort=False)
    ]
    top = cancorr.head(12)
    return {
        "rows": rows,
        "elbows": [
            e | {"elbow_D": "none" if pd.isna(e["elbow_D"]) else int(e["elbow_D"])}
            for e in elbows.to_dict("records")
        ],
        "verdicts": verdicts.to_dict("records"),
        "table1": table1,
        "table1_K": int(t1["K"].iloc[0]) if len(t1) else None,
        "operator": operator,
        "cancorr": [
            {"i": int(r.index), "true": f"{r.cancorr:.3f}", "shuffled": f"{r.cancorr_shuffled:.3f}"}
            for r in top.itertuples()
        ],
    }


def nearest(dims, d: int) -> int:
    """The D of ``dims`` nearest to ``d`` (the larger on a tie)."""
    dims = sorted(int(x) for x in dims)
    return min(dims, key=lambda x: (abs(x - d), -x))


class RunTables:
    """What README's block ``digits_notes`` reads from a run: the tables (``table(name)`` for
    results/tables/digits_<name>.csv), the split sizes, where a learned spectrum drops, and the
    job times of the experiment's rules (``job_times``: readme's reader of a benchmarks/ folder,
    passed in so that this module imports no other report module)."""

    RULES = ("make_digits", "compute_digits_operator", "train_digits", "assemble_digits")
    RULES += ("plot_digits",)

    def __init__(self, results, job_times):
        self.results = Path(results)
        self._job_times = job_times
        self._tables = {}

    def table(self, name: str) -> pd.DataFrame:
        if name not in self._tables:
            self._tables[name] = pd.read_csv(self.results / "tables" / f"digits_{name}.csv")
        return self._tables[name]

    def split_sizes(self) -> list[int]:
        codes = np.load(self.results / "digits" / "images.npz")["codes"]
        return np.bincount(codes, minlength=3).tolist()

    def feature_gap(self, pairing: str) -> dict:
        """The largest ratio of consecutive seed-mean singular values of a pairing's learned
        features at its largest D: where the spectrum drops (``i`` None at D = 1, ``next`` NaN
        with a single ratio)."""
        sv = self.table("singular_values")
        sv = sv[sv["pairing"] == pairing]
        d = int(sv["D"].max())
        mean = sv[sv["D"] == d].groupby("index")["sv_normalised"].mean().to_numpy()
        ratios = mean[:-1] / mean[1:]
        order = np.argsort(ratios)[::-1]
        if not len(ratios):
            return {"D": d, "i": None, "ratio": np.nan, "next": np.nan}
        nxt = ratios[order[1]] if len(ratios) > 1 else np.nan
        return {"D": d, "i": int(order[0]) + 1, "ratio": ratios[order[0]], "next": nxt}

    def class_pairings(self) -> list[str]:
        """The configured groupings' pairings (K<k>), in the verdict table's order."""
        return [p for p in self.table("verdicts")["pairing"] if p != "halves"]

    def lead(self) -> dict:
        """The grouping of the real-image Table 1 (the most classes) for the block's prose: its
        pairing, K, sweep (indexed by D), the D of its sweep nearest to K, and I(Z_x; Z_y)."""
        k = int(self.table("table1")["K"].iloc[0])
        sweep = self.table("sweep")
        rows = sweep[sweep["pairing"] == f"K{k}"].set_index("D")
        ops = self.table("class_operator")
        mi = float(ops.loc[ops["K"] == k, "mutual_information"].iloc[0])
        return {"pairing": f"K{k}", "K": k, "sweep": rows, "at_K": nearest(rows.index, k), "mi": mi}

    def halves_at(self, d: int) -> int:
        """The D of the halves sweep nearest to ``d`` (the pre-registered D = 10 when swept)."""
        sweep = self.table("sweep")
        return nearest(sweep.loc[sweep["pairing"] == "halves", "D"], d)

    @staticmethod
    def rule() -> dict:
        """The saturation rule's and the convergence gate's constants, for the block's text."""
        from ..analyses.convergence import CONVERGED_SHARE
        from ..numerics.saturation import ALPHA, LEVEL_TEXT, RULE_DATE
        from ..numerics.tiers import CLOSE_TOLERANCE

        return {
            "date": RULE_DATE,
            "level": LEVEL_TEXT,
            "alpha": ALPHA,
            "tolerance": CLOSE_TOLERANCE,
            "share": CONVERGED_SHARE,
        }

    def budget(self) -> dict:
        """The budget evidence of the block (validation split): per class pairing, the second
        half's relative drop, the best checkpoint, and the drop from the middle to the last
        checkpoint as a share of the cell's held-out excess (``over``: whether some share is above
        the verdicts' tolerance); for the halves, the best checkpoint and the second half's rise
        (``overfits``: it rises in every cell)."""
        conv, sweep = self.table("convergence"), self.table("sweep")
        excess = sweep.set_index(["pairing", "D"])["heldout_excess_mean"]
        classes, halves = conv[conv["pairing"] != "halves"], conv[conv["pairing"] == "halves"]
        share = [
            (r.val_loss_mid - r.val_loss_last) / excess.loc[(r.pairing, r.D)]
            for r in classes.itertuples()
        ]
        rise = (-halves["second_half_rel_drop"]).tolist()
        return {
            "drop": classes["second_half_rel_drop"].tolist(),
            "best": classes["best_checkpoint_mean"].tolist(),
            "share": share,
            "over": max(share) > self.rule()["tolerance"],
            "halves_best": halves["best_checkpoint_mean"].tolist(),
            "halves_rise": rise,
            "overfits": min(rise) > 0,
        }

    def job_times(self) -> dict:
        times = self._job_times(self.results.parent / "benchmarks")
        return {r: times[r] for r in self.RULES if r in times}
