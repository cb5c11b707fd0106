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
        "src/paradnn/platforms/datasheets.toml",
        "examples/chips",
        "docs/sweeps.md",
        "benchmarks/sim_validation.py",  # test_sim_validation runs the validation script
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


def test_every_mutation_group_names_modules_mutmut_mutates_and_tests_that_reach_them():
    """A group whose modules are not in `only_mutate` has no mutants, and one whose tests are
    not in the selection has mutants no test can kill: either reads as a score it is not."""
    import importlib.util
    import tomllib
    from fnmatch import fnmatch

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    spec = importlib.util.spec_from_file_location("mutation_tool", ROOT / "benchmarks/mutation.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    mutated = [p.removeprefix("src/").removesuffix(".py").replace("/", ".").replace("*", "")
               for p in config["only_mutate"]]  # fmt: skip
    for name, (globs, target) in tool.GROUPS.items():
        assert 0.9 <= target <= 1.0, name
        for g in globs:
            module = g.split(".x", 1)[0].removesuffix(".*")
            assert any(module.startswith(m.rstrip(".")) for m in mutated), (name, g)
    measure, target = tool.GROUPS["measure"]
    assert target == 0.90
    for module in ("quality", "infeed", "collectives", "faults"):
        assert f"paradnn.measure.{module}.*" in measure
        assert f"src/paradnn/measure/{module}.py" in config["only_mutate"]
    # the supervisor's failure classification (a dead worker's run), not its process loop
    member = lambda n: any(fnmatch(n, g) for g in measure)  # noqa: E731
    assert member("paradnn.runner.supervisor.x__death__mutmut_3")
    assert member("paradnn.runner.units.xǁRunUnitǁfailed__mutmut_1")
    assert not member("paradnn.runner.supervisor.xǁSupervisorǁ_collect__mutmut_1")
    assert not member("paradnn.runner.supervisor.x__cpu_sets__mutmut_1")
    assert not member("paradnn.measure.timer.x_measure__mutmut_1")
    tests = ("test_quality", "test_infeed", "test_supervisor", "test_execute", "test_scaling",
             "test_collectives")  # fmt: skip
    for test in tests:
        assert f"tests/{test}.py" in config["pytest_add_cli_args_test_selection"], test


def test_the_modules_added_since_the_groups_were_drawn_are_in_a_group():
    """Issue 46: every module of the last rounds' work is mutated and scored in a group, with
    the tests that reach it selected."""
    import importlib.util
    import tomllib
    from fnmatch import fnmatch

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    spec = importlib.util.spec_from_file_location("mutation_tool", ROOT / "benchmarks/mutation.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    modules = {
        "sim.timeline": "test_sim_timeline", "sim.hostprofile": "test_hostprofile",
        "sim.identify": "test_sim_identify", "sim.gemmlib": "test_sim_gemmlib",
        "sim.xlalayout": "test_sim_tpu", "analysis.whatif": "test_whatif",
        "sim.errorbands": "test_errorbands", "sim.curve": "test_sim_small_pinned",
        "sim.papers": "test_papers", "report.keyresults": "test_report_web",
        "rounding": "test_lastbit", "measure.sanity": "test_ceilings",
        "platforms.cores": "test_platforms", "store.claims": "test_shared_db",
        "runner.resume": "test_handing_on",
    }  # fmt: skip
    for module, test in modules.items():
        path = f"src/paradnn/{module.replace('.', '/')}.py"
        assert (ROOT / path).exists(), path
        assert any(fnmatch(path, p) for p in config["only_mutate"]), path
        mutant = f"paradnn.{module}.x_f__mutmut_1"
        groups = [
            g for g, (globs, _) in tool.GROUPS.items() if any(fnmatch(mutant, x) for x in globs)
        ]
        assert len(groups) == 1, (module, groups)
        assert f"tests/{test}.py" in config["pytest_add_cli_args_test_selection"], test
