"""The experiment contract: each experiment declares, once, in its own rules file, what the rest
of the workflow needs to know of it; the shared lists are derived from the declarations.

A declaration (``experiment(key, ...)`` in ``workflow/rules/common.smk``, one call per experiment
after its rules) names:

- ``tables``: the report's inputs it contributes, by input name (``build_report`` reads them);
- ``figures``: its plot rules, by the report's figure name;
- ``claims``: the tables the package's claim builders read (``crl_approx.analyses.claims``), by
  the builders' name, each with its provenance table (the stem of a declared table's file);
- ``claims_table``: or its own claims, a table in the claims schema its assembly writes (an
  experiment of your own), with the config ``keys`` its rows depend on;
- ``docs``: the docs pages its report section links (the report's appendix carries them);
- ``partial``: a template its report section is printed from (an experiment of your own; the
  project's sections are in report/templates/index.html.j2);
- ``local``: its rules that run on the submitting host under a cluster executor;
- ``targets``: what ``rule all`` builds beyond the above.

From them: ``rule all``'s inputs, the workflow's local rules, the report's inputs, figure list and
docs pages, the claims table's sources, and the provenance registry: every declared table by its
file's stem, with the rule that writes it (:meth:`Registry.provenance`). Experiments are
kept in the report's section order (:mod:`crl_approx.config.sections`), experiments of your own
after the project's, in the order declared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePath

from . import sections


@dataclass(frozen=True)
class Experiment:
    key: str
    title: str
    tables: dict = field(default_factory=dict)
    figures: dict = field(default_factory=dict)
    claims: dict = field(default_factory=dict)
    claims_table: str | None = None
    keys: tuple = ()
    docs: tuple = ()
    partial: str | None = None
    local: tuple = ()
    targets: tuple = ()


class ContractError(ValueError):
    """A declaration the contract refuses (its message names the experiment and the field)."""


def _outputs(rule) -> list[str]:
    """A plot rule's figure (a Snakemake rule proxy's ``output.figure``, or a plain path)."""
    output = getattr(rule, "output", None)
    return [str(output.figure)] if output is not None else [str(rule)]


class Registry:
    """The declared experiments, in the report's order."""

    def __init__(self):
        self._declared: dict[str, Experiment] = {}

    def declare(self, key: str, **fields) -> Experiment:
        if key in self._declared:
            raise ContractError(f"experiment {key!r} is declared twice")
        if key not in sections.all_sections():
            raise ContractError(
                f"experiment {key!r}: no report section of that key (crl_approx.config.sections; "
                "an experiment of your own registers one with section(key, title))"
            )
        for name in ("tables", "figures", "claims"):
            mine = set(fields.get(name, {}))
            for other in self._declared.values():
                clash = mine & set(getattr(other, name))
                if clash:
                    raise ContractError(
                        f"experiment {key!r}: {name} {sorted(clash)} already declared by "
                        f"{other.key!r}"
                    )
        if fields.get("claims_table") and not fields.get("keys"):
            raise ContractError(f"experiment {key!r}: a claims_table needs the config keys")
        for name in ("keys", "docs", "local", "targets"):
            fields[name] = tuple(fields.get(name, ()))
        title = fields.pop("title", None) or sections.all_sections()[key]
        made = Experiment(key=key, title=title, **fields)
        self._declared[key] = made
        return made

    @property
    def experiments(self) -> list[Experiment]:
        order = list(sections.all_sections())
        return sorted(self._declared.values(), key=lambda e: order.index(e.key))

    def tables(self) -> dict:
        return {n: p for e in self.experiments for n, p in e.tables.items()}

    def figures(self) -> dict:
        return {n: r for e in self.experiments for n, r in e.figures.items()}

    def claim_inputs(self) -> dict:
        """The claim builders' tables: name → file."""
        return {n: f for e in self.experiments for n, (f, _) in e.claims.items()}

    def claim_sources(self) -> dict:
        """The claim builders' tables: name → its provenance table."""
        return {n: t for e in self.experiments for n, (_, t) in e.claims.items()}

    def own_claims(self) -> dict:
        """Experiments' own claims tables: ``own_<key>`` → file."""
        return {f"own_{e.key}": e.claims_table for e in self.experiments if e.claims_table}

    def own_keys(self) -> dict:
        return {f"own_{e.key}": e.keys for e in self.experiments if e.claims_table}

    def provenance(self, writer) -> dict:
        """The provenance registry (``render/provenance.py``): every declared CSV table and claims
        input, by its file's stem → (file, the rule that writes it: ``writer(file)``). Refused:
        two files of one stem, and a claims source that names no declared table."""
        files = map(str, [*self.tables().values(), *self.claim_inputs().values()])
        out: dict[str, tuple[str, str]] = {}
        for path in dict.fromkeys(p for p in files if p.endswith(".csv")):
            name = PurePath(path).stem
            if name in out:
                raise ContractError(
                    f"tables {out[name][0]} and {path}: one provenance name {name!r}"
                )
            out[name] = (path, writer(path))
        for builder, table in self.claim_sources().items():
            if table not in out:
                raise ContractError(
                    f"claims {builder!r}: its provenance table {table!r} is no declared table "
                    f"(declared: {', '.join(sorted(out))})"
                )
        return out

    def docs(self) -> list[str]:
        return [page for e in self.experiments for page in e.docs]

    def section_docs(self) -> dict:
        """Section → its first docs page's file name (the summary's rows link it)."""
        return {e.key: e.docs[0] for e in self.experiments if e.docs}

    def partials(self) -> list[dict]:
        """The sections printed from an experiment's own template: key, title, template, its
        tables (input names)."""
        return [
            {
                "key": e.key,
                "title": e.title,
                "template": str(e.partial),
                "tables": list(e.tables),
                "keys": list(e.keys),
            }
            for e in self.experiments
            if e.partial
        ]

    def local(self) -> list[str]:
        return [name for e in self.experiments for name in e.local]

    def targets(self) -> list[str]:
        """Everything ``rule all`` builds: every declared table, figure, claims table, target."""
        out = []
        for e in self.experiments:
            out += [str(p) for p in e.tables.values()]
            for rule in e.figures.values():
                out += _outputs(rule)
            out += [str(f) for f, _ in e.claims.values()]
            out += [str(e.claims_table)] if e.claims_table else []
            for target in e.targets:
                out += [str(t) for t in target] if not isinstance(target, str) else [target]
        return list(dict.fromkeys(out))

    def describe(self) -> dict:
        """The declarations as plain data (tests read the workflow's registry through it)."""
        return {
            e.key: {
                "title": e.title,
                "tables": {n: str(p) for n, p in e.tables.items()},
                "figures": {n: _outputs(r)[0] for n, r in e.figures.items()},
                "claims": {n: [str(f), t] for n, (f, t) in e.claims.items()},
                "claims_table": e.claims_table and str(e.claims_table),
                "keys": list(e.keys),
                "docs": [str(d) for d in e.docs],
                "partial": e.partial and str(e.partial),
                "local": list(e.local),
            }
            for e in self.experiments
        }
