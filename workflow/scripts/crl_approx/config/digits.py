"""Experiment R's cross-key rules (:mod:`.rules` runs them): groupings that partition the digits,
one K per grouping, splits that leave images in every class, and candidates, batches and
checkpoints within what the splits and the step budgets hold. The image counts are the bundled
data set's, so that the validator needs no scikit-learn.
"""

from __future__ import annotations

#: images per digit 0-9 of scikit-learn's bundled 8×8 digits (1797 in all; tests/unit/
#: test_digits.py checks this against the installed file), so that the validator knows the
#: splits of Experiment R without loading scikit-learn
DIGIT_COUNTS = (178, 182, 177, 183, 181, 182, 181, 179, 174, 180)


def split_sizes(n: int, train_fraction: float, val_fraction: float) -> tuple[int, int, int]:
    """(train, validation, held-out) images of a digit with n images: round(n·train_fraction),
    round(n·val_fraction), the rest (models.digits.split_codes cuts by these)."""
    n_train, n_val = round(n * train_fraction), round(n * val_fraction)
    return n_train, n_val, n - n_train - n_val


def _grouping_errors(digits: dict) -> list[str]:
    errors, by_k = [], {}
    for i, grouping in enumerate(digits["groupings"]):
        key, groups = f"digits.groupings.{i}.groups", grouping["groups"]
        flat = sorted(d for g in groups for d in g)
        if flat != list(range(10)):
            repeated = sorted({d for d in flat if flat.count(d) > 1})
            missing = sorted(set(range(10)) - set(flat))
            errors.append(
                f"config key '{key}': {groups} is not a partition of the digits 0-9 (repeated: "
                f"{repeated}, missing: {missing}); allowed: every digit in exactly one group"
            )
        k = len(groups)
        if k in by_k:
            errors.append(
                f"config key '{key}': K = {k} groups, as {by_k[k]} has; allowed: a distinct K "
                f"per grouping (its results are named K{k})"
            )
        by_k.setdefault(k, key)
    return errors


def _split_errors(digits: dict) -> list[str]:
    """The fractions must leave images in every split, and every class of every grouping needs
    >= 2 images in each split (the pair sampler draws x and y within a class)."""
    tf, vf = digits["train_fraction"], digits["val_fraction"]
    if tf + vf >= 1:
        return [
            f"config key 'digits.val_fraction': {vf:g} + digits.train_fraction {tf:g} = "
            f"{tf + vf:g} leaves no held-out images; allowed: train_fraction + val_fraction < 1"
        ]
    sizes = [split_sizes(n, tf, vf) for n in DIGIT_COUNTS]
    errors = []
    for s, (name, key) in enumerate(
        (("train", "train_fraction"), ("validation", "val_fraction"), ("held-out", "val_fraction"))
    ):
        for i, grouping in enumerate(digits["groupings"]):
            counts = [sum(sizes[d][s] for d in g if 0 <= d <= 9) for g in grouping["groups"]]
            if min(counts) < 2:
                errors.append(
                    f"config key 'digits.{key}': digits.train_fraction {tf:g}, val_fraction "
                    f"{vf:g} leave {min(counts)} {name} image(s) in a class of "
                    f"digits.groupings.{i}; allowed: fractions that leave >= 2 per class"
                )
    return errors


def digits_errors(cfg: dict) -> list[str]:
    digits = cfg["digits"]
    errors = _grouping_errors(digits) + _split_errors(digits)
    tf, vf = digits["train_fraction"], digits["val_fraction"]
    sizes = [split_sizes(n, tf, vf) for n in DIGIT_COUNTS]
    n_train_images, n_val_images, n_held_out = (sum(s[i] for s in sizes) for i in range(3))
    limits = (
        (
            "n_candidates",
            digits["n_test_pairs"],
            "digits.n_test_pairs (pairing 1's held-out pairs)",
        ),
        ("halves_candidates", n_held_out, "the held-out images (pairing 2's held-out pairs)"),
        ("batch_size", digits["n_train_pairs"], "digits.n_train_pairs"),
        ("batch_size", n_train_images, "the train images (pairing 2's training pairs)"),
        ("batch_size", digits["n_val_pairs"], "digits.n_val_pairs"),
        ("batch_size", n_val_images, "the validation images (pairing 2's validation pairs)"),
        ("checkpoints", digits["steps"], "digits.steps"),
        ("checkpoints", digits["halves_steps"], "digits.halves_steps"),
    )
    for i, g in enumerate(digits["groupings"]):
        if "steps" in g and digits["checkpoints"] > g["steps"]:
            errors.append(
                f"config key 'digits.checkpoints': {digits['checkpoints']} exceeds "
                f"digits.groupings[{i}].steps = {g['steps']}; allowed: at most {g['steps']}"
            )
    for key, limit, what in limits:
        if digits[key] > limit:
            errors.append(
                f"config key 'digits.{key}': {digits[key]} exceeds {what} = {limit}; allowed: "
                f"at most {limit}"
            )
    return errors
