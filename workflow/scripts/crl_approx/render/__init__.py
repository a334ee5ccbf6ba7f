"""Layer 4, presentation (text): the HTML report and README's generated blocks, rendered from the
templates of the top-level ``report/`` folder.

- ``html``: the report (``build``), its machine and benchmark tables.
- ``summary``: the verdict summary at the top of the report.
- ``sections``, ``study``: what each report section prints.
- ``dynamics``: the training-dynamics section and its summary lines.
- ``digits``: Experiment R's section and its verdict lines.
- ``verdicts``: how numbers are printed and compared with the paper's.
- ``provenance``: where each printed number comes from (its registry derived from the experiments'
  declarations).
- ``widths``: Experiment W's section and summary lines.
- ``smoothness``: Experiment S's section and its claims' summary lines.
- ``pages``: the docs pages the report links, carried in its appendix.
- ``readme``, ``numbers``: README's and docs/'s generated blocks and how they print numbers.
- ``facts``, ``records``: what those blocks print beyond a table's cells (differences, ratios,
  counts, sums of job times), from a run's tables and from the benchmark records.
- ``runrecord``: a default run's job times and training fingerprint (README's or another host's).
- ``reference``: a finished run compared cell by cell with the committed reference record.
- ``glance``: the summary (the report's and README's), printed from the claims table.
- ``rulegraph``: README's picture of the workflow (``docs/rulegraph.svg``) and its signature.
"""
