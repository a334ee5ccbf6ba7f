"""Layer 4, presentation (figures): one plot rule per figure, drawn from cached tables.

- ``draw``: the dispatch of every plot rule (``draw``) and the Table 1 figures.
- ``experiments``: Experiments 3 and 4, calibration and cosine figures.
- ``study``: the sample-size study's figure.
- ``dynamics``: the training-dynamics figures (alignment, per-direction curves, order).
- ``digits``: Experiment R's four-panel figure.
- ``widths``: Experiment W's excess against one tower's width, Table 2's shapes beside.
- ``smoothness``: Experiment S's eigenvalues, excess against D and D(ε) per world.
- ``style``: one style for every figure.
"""
