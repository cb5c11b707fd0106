"""The test set-up works from any copy of the project, mutmut's `mutants/` included.

Mutation testing (`make mutation`) copies the project and runs the tests there. A test that
looks for a file beside the package, or a package imported from the wrong tree, would then skip
or pass silently, and every mutant it should kill would survive. These checks fail loudly
instead: the tests import the `paradnn` next to them, and the files they read are there.
"""

from pathlib import Path

import paradnn

ROOT = Path(__file__).resolve().parents[1]


def test_paradnn_is_imported_from_the_tree_beside_the_tests():
    here = Path(paradnn.__file__).resolve().parent
    assert here == ROOT / "src" / "paradnn", (
        f"the tests in {ROOT} import paradnn from {here}: under mutation testing the mutants "
        "would never run (check sys.path and the editable install)"
    )


def test_the_files_tests_read_by_path_are_in_this_copy():
    needed = [
        "src/paradnn/analysis",
        "src/paradnn/plots",
        "src/paradnn/report",
        "src/paradnn/sim",
        "src/paradnn/sweeps/quick.toml",
        "src/paradnn/platforms/specs.toml",
        "examples/chips",
        "docs/sweeps.md",
        "benchmarks/sim_validation.py",  # test_sim_fit runs the validation script
        "benchmarks/data/sim_validation_cpu_runs.csv",
    ]
    missing = [p for p in needed if not (ROOT / p).exists()]
    assert missing == [], (
        f"missing from {ROOT}: {missing} (mutmut copies src/ and tests/; "
        "add the rest to [tool.mutmut] also_copy in pyproject.toml)"
    )


def test_the_mutation_test_selection_names_existing_files():
    """A renamed test file must not quietly break `make mutation` (mutmut refuses to start)."""
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["mutmut"]
    missing = [p for p in config["pytest_add_cli_args_test_selection"] if not (root / p).exists()]
    assert missing == []
