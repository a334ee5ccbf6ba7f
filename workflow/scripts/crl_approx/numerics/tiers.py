"""The tolerances of the verdict tiers, shared by the analyses that decide "reaches" and the
report that prints the verdicts."""

#: the "within 10 %" verdict: |ours/paper − 1| <= this
CLOSE_TOLERANCE = 0.10
#: the "same order of magnitude" verdict: |log10(ours/paper)| < this (a factor 10^0.5 ≈ 3.16)
ORDER_TOLERANCE = 0.5
