"""Experiment R's verdicts from a sweep table: the pre-registered predictions, decided with the
elbow rule passed in, change when the curves do."""

import numpy as np
import pandas as pd

from crl_approx.analyses.digits_tables import elbow_table, table1, verdict_table


def sweep(k=5, saturate_at=4, erank_cap=None, halves_saturate=20):
    rows = []
    dims = [2, 3, 4, 5, 6, 8, 10]
    for d in dims:
        excess = 0.001 + 0.3 * max(0, saturate_at - d)
        erank = min(d, saturate_at) - 0.2 if erank_cap is None else min(d, erank_cap)
        rows.append(
            {
                "pairing": f"K{k}",
                "K": k,
                "D": d,
                "heldout_excess_mean": excess,
                "effective_rank_mean": erank,
                "heldout_infonce_mean": np.nan,
            }
        )
    for d in [2, 5, 10, 20, 32]:
        rows.append(
            {
                "pairing": "halves",
                "K": 10,
                "D": d,
                "heldout_excess_mean": np.nan,
                "effective_rank_mean": d,
                "heldout_infonce_mean": -0.1 * min(d, halves_saturate),
            }
        )
    return pd.DataFrame(rows)


def verdicts(s, elbow_fn=None):
    return verdict_table(s, elbow_table(s, 0.95, elbow_fn)).set_index("pairing")["verdict"]


def test_predictions_hold_when_the_curves_saturate_at_k_minus_1():
    v = verdicts(sweep())
    assert v["K5"] == "holds" and v["halves"] == "holds"
    e = elbow_table(sweep(), 0.95).set_index(["pairing", "curve"])["elbow_D"]
    assert e[("K5", "heldout_excess")] == 4 and e[("halves", "heldout_infonce")] == 20


def test_an_early_elbow_fails():
    assert verdicts(sweep(saturate_at=2))["K5"] == "fails"


def test_effective_rank_above_k_fails():
    """With the elbows held inside the prediction (an elbow rule returning K − 1), the rank clause
    alone decides: a rank of 5.2 > K = 5 above D = K fails, 4.8 holds."""

    def at_k_minus_1(dims, values, fraction, increasing, log=False):
        return 4 if max(dims) <= 10 else 20

    for cap, verdict in ((5.2, "fails"), (4.8, "holds")):
        s = sweep(erank_cap=cap)
        v = verdict_table(s, elbow_table(s, 0.95, at_k_minus_1)).set_index("pairing").loc["K5"]
        assert v["max_effective_rank_above_K"] == cap and v["verdict"] == verdict


def test_halves_saturating_at_10_fails():
    assert verdicts(sweep(halves_saturate=10))["halves"] == "fails"


def test_the_elbow_rule_is_a_parameter():
    def last_d(dims, values, fraction, increasing, log=False):
        return max(dims)

    v = verdicts(sweep(), elbow_fn=last_d)
    assert v["K5"] == "fails" and v["halves"] == "holds"


def test_table1_is_zero_beyond_k():
    classes = pd.DataFrame(
        {
            "K": 5,
            "D": [1, 2, 3, 4, 5],
            "spectral_tail": [4.0, 3.0, 2.0, 1.0, 0.0],
            "truncation_excess_risk": [0.4, 0.3, 0.2, 0.1, 0.0],
            "rank_d_floor": [0.3, 0.2, 0.1, 0, 0],
        }
    )
    s = sweep().assign(heldout_excess_sd=0.01)
    t = table1(classes, s, 5).set_index("D")
    assert t.loc[4, "spectral_tail"] == 1.0 and t.loc[8, "spectral_tail"] == 0.0
    assert t.loc[3, "mlp_heldout_excess_mean"] == 0.301


def test_no_elbow_is_a_miss_not_a_crash():
    """The LCGM's robust rule returns None when no D stays in the band (a curve that turns back
    at the end): the elbow is NaN and every prediction that needs an elbow fails."""

    def none(dims, values, fraction, increasing, log=False):
        return None

    s = sweep()
    e = elbow_table(s, 0.95, none)
    assert e["elbow_D"].isna().all() and not e["holds"].any()
    assert set(verdict_table(s, e)["verdict"]) == {"fails"}


def test_the_excess_elbow_is_read_on_a_log_scale():
    """The default rule gets log=True for the held-out excess (it falls over decades), False for
    the effective rank and the halves' InfoNCE, as the LCGM's elbow does."""
    seen = {}

    def spy(dims, values, fraction, increasing, log=False):
        seen[(round(values[0], 12), increasing)] = log
        return max(dims)

    s = sweep()
    e = elbow_table(s, 0.95, spy)
    assert len(seen) == len(e)
    first = s.sort_values("D").groupby("pairing", sort=False).first()
    for pairing, r in first.iterrows():
        curves = (
            ("heldout_infonce",) if pairing == "halves" else ("heldout_excess", "effective_rank")
        )
        for curve in curves:
            log = seen[(round(r[f"{curve}_mean"], 12), curve == "effective_rank")]
            assert log == (curve == "heldout_excess"), (pairing, curve)
