"""crl-approx: the numerics behind the workflow that reproduces
"Approximation in Contrastive Representation Learning" (arXiv 2610.15388).

Every rule of the workflow is a thin shim around one function of this package; the unit tests import
the same functions. Importing the package is cheap: torch is only imported by the training modules.
"""

__version__ = "1.25.0"  # pyproject.toml's (tests/unit/test_catalog.py)
