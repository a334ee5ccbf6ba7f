# A toy experiment of your own (tests/e2e/test_contract.py): this rules file, one module
# (toy_experiment.py), one template partial (toy.html.j2) and a caption, plugged in with the
# config key extra_experiments (toy.yaml) and no edit to any file of the workflow.
import os
import sys

TOY_DIR = workflow.current_basedir.get_path_or_uri(secret_free=True)
sys.path.insert(0, TOY_DIR)
import toy_experiment  # noqa: E402

TOY = section("toy", "Toy experiment: a sample mean")
#: the config keys its numbers depend on (its claims' provenance)
TOY_KEYS = ("extra_experiments.toy.params.n", "seeds")


rule assemble_toy:
    """The toy's table and claims: the mean of n standard normals per seed."""
    output:
        table=reported(
            "results/tables/toy.csv",
            caption=os.path.join(TOY_DIR, "toy.rst"),
            category=TOY,
        ),
        claims="results/tables/toy_claims.csv",
    log:
        "logs/assemble_toy/toy.log",
    benchmark:
        "benchmarks/assemble_toy/toy.tsv"
    threads: 1
    resources:
        mem_mb=500,
        runtime="5m",
    params:
        # exactly the keys its claims name (TOY_KEYS)
        config=subset(config, TOY_KEYS),
    run:
        toy_experiment.assemble(params.config, output.table, output.claims)


experiment(
    "toy",
    tables={"toy_table": rules.assemble_toy.output.table},
    claims_table=rules.assemble_toy.output.claims,
    keys=TOY_KEYS,
    partial=os.path.join(TOY_DIR, "toy.html.j2"),
    local=["assemble_toy"],
)
