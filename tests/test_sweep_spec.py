"""Sweep files: expansion (grid, random, Latin hypercube), the shipped presets, and one-line
errors for every way a file can be wrong, including arbitrary input (hypothesis)."""

import collections
import itertools
import math
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paradnn import families, presets
from paradnn.errors import ConfigError, ParadnnError
from paradnn.measure.timer import QUICK_POLICY, TimingPolicy
from paradnn.sweep import Sweep, SweepError, load

DOCS = Path(__file__).resolve().parents[1] / "docs" / "sweeps.md"


def sweep(text: str, **kw) -> Sweep:
    return load(text, **kw)


def paper_grid(family: str) -> list[dict]:
    space = families.get(family).paper_space
    return [dict(zip(space, combo, strict=True)) for combo in itertools.product(*space.values())]


def error(text: str, tmp_path: Path) -> str:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(SweepError) as e:
        load(path)
    msg = str(e.value)
    assert isinstance(e.value, ConfigError)  # the CLI prints it as one line and exits 2
    assert "\n" not in msg and len(msg.splitlines()) == 1
    assert msg.startswith(f"{path}: ")
    return msg.removeprefix(f"{path}: ")


# --- shipped presets ------------------------------------------------------------------------


def test_preset_names_list_the_shipped_files_default_first():
    shipped = {p.name.removesuffix(".toml") for p in (resources.files("paradnn") / "sweeps")
               .iterdir() if p.name.endswith(".toml")}  # fmt: skip
    assert presets.names()[0] == "quick"
    assert set(presets.names()) == shipped >= {
        "quick", "cpu", "paper", "paper-fc", "paper-cnn", "paper-rnn"
    }  # fmt: skip


@pytest.mark.parametrize("name", presets.names())
def test_every_preset_loads_and_explains_itself(name):
    p = presets.get(name)
    assert (p.name, p.source) == (name, "<preset>")
    assert p.description and p.configs and p.skipped_invalid == 0
    text = (resources.files("paradnn") / "sweeps" / f"{name}.toml").read_text()
    assert text.startswith(f"# {name}: ")  # a comment at the top says what it is for


def test_quick_preset_is_grids_in_fp32_and_native():
    p = presets.get("quick")
    assert p.precisions == ("fp32", "native") and p.timing == QUICK_POLICY
    counts = collections.Counter(f for f, _ in p.configs)
    assert counts == {"fc": 18, "cnn": 10, "rnn": 9}
    specs = p.specs()
    assert [s.precision for s in specs] == ["fp32"] * 37 + ["native"] * 37  # precision-major


@pytest.mark.parametrize(
    ("name", "sizes"),
    [
        ("paper-fc", {"fc": 9_720}),
        ("paper-cnn", {"cnn": 2_160}),
        ("paper-rnn", {"rnn": 2_160}),
        ("paper", {"fc": 9_720, "cnn": 2_160, "rnn": 2_160}),
    ],
)
def test_paper_presets_are_table_2(name, sizes):
    p = presets.get(name)
    assert collections.Counter(f for f, _ in p.configs) == sizes
    assert len(p.specs()) == sum(sizes.values()) and p.precisions == ("fp32",)
    for fam in sizes:
        assert [dict(c) for f, c in p.configs if f == fam] == paper_grid(fam)


def test_paper_preset_expands_in_full():
    path = resources.files("paradnn") / "sweeps" / "paper.toml"
    specs = load(Path(str(path))).specs(["fp32", "bf16"])
    assert len(specs) == 2 * 14_040
    assert len({(s.family, tuple(sorted(s.config.items())), s.precision) for s in specs}) == len(
        specs
    )  # no run twice


def test_cpu_preset_is_small_paper_shaped_and_complete():
    p = presets.get("cpu")
    assert len(p.configs) >= 100 and 200 <= len(p.specs()) <= 500
    fams = collections.defaultdict(list)
    for f, c in p.configs:
        fams[f].append(c)
    assert set(fams) == {"fc", "cnn", "rnn"}
    assert {c["cell"] for c in fams["rnn"]} == {"rnn", "lstm", "gru"}
    assert {c["block"] for c in fams["cnn"]} == {"residual", "bottleneck"}
    assert max(c["image"] for c in fams["cnn"]) <= 128
    fc = families.get("fc")
    assert max(fc.params(fc.config(c)) for c in fams["fc"]) < 50e6  # fits any laptop


# --- the format -------------------------------------------------------------------------------


def test_ranges_lists_scalars_and_duplicates():
    s = sweep('[families.fc]\nlayers = 4\nnodes = [32, "128..512 x2", 32]\ninput = 2000\n'
              'output = "200..400 +200"\nbatch = 64')  # fmt: skip
    assert [(c["nodes"], c["output"]) for _, c in s.configs] == [
        (32, 200), (32, 400), (128, 200), (128, 400), (256, 200), (256, 400), (512, 200),
        (512, 400),
    ]  # fmt: skip


def test_axes_left_out_span_the_paper_space():
    s = sweep("[families.fc]\nlayers = 4")
    space = families.get("fc").paper_space
    assert len(s.configs) == math.prod(len(v) for k, v in space.items() if k != "layers")
    assert {c["layers"] for _, c in s.configs} == {4}
    assert len(sweep("[families.rnn]").configs) == 2_160  # a bare table is the whole Table 2


def test_configs_are_complete_and_axes_outside_the_paper_space_take_defaults():
    s = sweep("[[runs]]\nfamily = 'rnn'\nconfig = { embed = 8 }")
    assert s.configs == (("rnn", {**vars(families.get("rnn").default_config()), "embed": 8}),)


def test_runs_are_appended_after_families_and_duplicates_dropped():
    s = sweep(
        "[families.fc]\nlayers = 4\nnodes = [32, 64]\ninput = 10\noutput = 2\nbatch = 1\n"
        "[[runs]]\nfamily = 'fc'\nconfig = { layers = 4, nodes = 64, input = 10, output = 2, "
        "batch = 1 }\n"
        "[[runs]]\nfamily = 'cnn'\nconfig = { image = 32 }\n"
    )
    assert [(f, c.get("nodes")) for f, c in s.configs] == [("fc", 32), ("fc", 64), ("cnn", None)]


def test_families_keep_file_order():
    s = sweep("[families.rnn]\nlayers = 1\n[families.fc]\nlayers = 4\n")
    order = [f for f, _ in s.configs]
    assert order.index("fc") == 4 * 3 * 3 * 5 * 4 * 3 // 4 and order[-1] == "fc"


def test_expansion_is_precision_major_then_optimizer_then_config():
    s = sweep(
        'precisions = ["bf16", "fp32"]\noptimizers = ["sgd", "momentum"]\n'
        "[families.fc]\nlayers = [1, 2]\nnodes = 4\ninput = 4\noutput = 2\nbatch = 1"
    )
    got = [(r.precision, r.optimizer, r.config["layers"]) for r in s.specs()]
    assert got == [(p, o, n) for p in ("bf16", "fp32") for o in ("sgd", "momentum")
                   for n in (1, 2)]  # fmt: skip
    # overrides replace (not extend) the file's lists, in the order given
    got = [(r.precision, r.optimizer) for r in s.specs(["fp16", "tf32"], ["rmsprop"])]
    assert got == [("fp16", "rmsprop")] * 2 + [("tf32", "rmsprop")] * 2
    assert [r.precision for r in s.specs([])] == [r.precision for r in s.specs()]
    with pytest.raises(ConfigError, match=r"^precision = 'fp64': must be one of fp32"):
        s.specs(["fp64"])


def test_grid_combinations_that_make_no_model_are_skipped_and_counted():
    s = sweep("[families.cnn]\nblocks = 1\nfilters = 4\noutput = 2\nblock = 'residual'\n"
              "image = [8, 64]\nbatch = [1, 2]")  # fmt: skip
    assert [(c["image"], c["batch"]) for _, c in s.configs] == [(8, 2), (64, 1), (64, 2)]
    assert s.skipped_invalid == 1


def test_filters_use_the_analytic_counts():
    fc = families.get("fc")
    s = sweep("[families.fc]\n[filters]\nmax_params = 2e6\nmax_flops_per_step = 1e11")
    assert s.configs and s.skipped_filtered + len(s.configs) == 9_720
    for _, c in s.configs:
        cfg = fc.config(c)
        assert fc.params(cfg) <= 2e6 and fc.train_flops(cfg) <= 1e11
    # explicit runs were asked for by name: filters do not drop them
    big = sweep("[filters]\nmax_params = 10\n[[runs]]\nfamily = 'fc'")
    assert len(big.configs) == 1 and big.skipped_filtered == 0


def test_timing_overrides_start_from_the_default_policy():
    assert sweep("[families.rnn]").timing == TimingPolicy()
    s = sweep("[families.rnn]\n[timing]\nmin_time_s = 2\nmax_time_s = 4.5\nmin_samples = 20")
    assert s.timing == TimingPolicy(min_time_s=2.0, max_time_s=4.5, min_samples=20)


def test_name_description_and_source(tmp_path):
    path = tmp_path / "my-sweep.toml"
    path.write_text("[families.rnn]\nlayers = 1")
    for arg in (path, str(path)):
        s = load(arg)
        assert (s.name, s.source, s.description) == ("my-sweep", str(path), "")
    s = sweep('name = "other"\ndescription = "why"\n[families.rnn]', name="ignored")
    assert (s.name, s.description, s.source) == ("other", "why", "<string>")
    assert sweep("[families.rnn]", name="given").name == "given"
    assert load({"families": {"rnn": {"layers": 1}}}).source == "<dict>"


def test_presets_get_accepts_a_path(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text("[[runs]]\nfamily = 'fc'")
    assert presets.get(str(path)).name == "mine"
    with pytest.raises(SweepError, match=r"nope\.toml: cannot read: No such file"):
        presets.get(str(tmp_path / "nope.toml"))
    with pytest.raises(ConfigError, match=r"^preset = 'nope': must be one of quick, cpu, .* or a "
                       r"path to a \.toml sweep file$"):  # fmt: skip
        presets.get("nope")


# --- sampling ---------------------------------------------------------------------------------

SAMPLED = "[families.fc]\n[sampling]\nmethod = '{method}'\nn = {n}\nseed = {seed}\n"


@pytest.mark.parametrize("method", ["random", "lhs"])
def test_sampling_draws_n_distinct_grid_points_reproducibly(method):
    a = sweep(SAMPLED.format(method=method, n=50, seed=1))
    grid = {tuple(c.values()) for c in paper_grid("fc")}
    points = [tuple(c.values()) for _, c in a.configs]
    assert len(points) == len(set(points)) == 50 and set(points) <= grid
    assert a.configs == sweep(SAMPLED.format(method=method, n=50, seed=1)).configs
    assert a.configs != sweep(SAMPLED.format(method=method, n=50, seed=2)).configs
    # n beyond the grid is the whole grid, in grid order
    everything = sweep(SAMPLED.format(method=method, n=100_000, seed=1))
    assert [dict(c) for _, c in everything.configs] == paper_grid("fc")


def test_latin_hypercube_uses_every_axis_value_equally():
    s = sweep("[families.fc]\nlayers = '1..6'\nnodes = '1..1000'\nbatch = '1..1000'\n"
              "[sampling]\nmethod = 'lhs'\nn = 60\nseed = 3")  # fmt: skip
    assert len(s.configs) == 60
    assert collections.Counter(c["layers"] for _, c in s.configs) == {i: 10 for i in range(1, 7)}
    inputs = collections.Counter(c["input"] for _, c in s.configs)
    assert inputs == {2000: 15, 4000: 15, 6000: 15, 8000: 15}


@pytest.mark.parametrize("method", ["random", "lhs"])
def test_sampling_never_enumerates_a_huge_grid(method):
    ranges = {
        "layers": "1..128",
        "d_model": "1..8192",
        "ffn": "1..8",
        "length": "1..8192",
        "vocab": "2..10001",
        "batch": "1..256",
    }  # every axis at the family's bounds: 1.8e20 points
    axes = "\n".join(f"{a} = '{r}'" for a, r in ranges.items())
    s = sweep(f"[families.transformer]\n{axes}\n[sampling]\nmethod = '{method}'\nn = 100")
    assert len(s.configs) == 100  # from a 10^20-point grid (more than sys.maxsize)
    assert len({tuple(sorted(c.items())) for _, c in s.configs}) == 100  # drawn, not enumerated


def test_sweep_package_is_torch_free():
    code = (
        "import sys\nfrom paradnn.sweep import load\n"
        "load('[families.cnn]\\n[sampling]\\nmethod = \"lhs\"\\nn = 5').specs()\n"
        "from paradnn import presets\npresets.get('paper').specs()\n"
        "sys.exit(any(m == 'torch' or m.startswith('torch.') for m in sys.modules))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_examples_in_the_docs_load():
    blocks = re.findall(r"```toml\n(.*?)```", DOCS.read_text(), re.S)
    assert len(blocks) >= 3
    for text in blocks:
        assert load(text).specs()


# --- errors: one line naming the file, the key, the value and what is allowed ----------------

FAMILY_NAMES = ", ".join(families.names())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('nme = "x"', "nme = 'x': unknown key; allowed: name, description, precisions"),
        ("[familes.fc]", "familes = {'fc': {}}: unknown section; allowed: name,"),
        ("[families.mlp]", f"families.mlp: unknown family; allowed: {FAMILY_NAMES}"),
        ("[families.fc]\nlayrs = 3", "families.fc.layrs = 3: unknown axis; allowed: layers, nodes"),
        ('[families.fc]\n"a b" = 3', 'families.fc."a b" = 3: unknown axis'),
        ('[families.fc]\nlayers = "4..x"',
         "families.fc.layers = '4..x': must look like 'LOW..HIGH'"),
        ('[families.fc]\nlayers = "8..4"', "families.fc.layers = '8..4': HIGH must be ≥ LOW"),
        ('[families.fc]\nlayers = ["4..8", "0..8 x2"]',
         "families.fc.layers[1] = '0..8 x2': a geometric range needs LOW ≥ 1"),
        ('[families.fc]\nnodes = "1..100000000"',
         "families.fc.nodes = '1..100000000': has 100,000,000 values; an axis may have at most"),
        ("[families.fc]\nlayers = [4, 0]",
         "families.fc.layers[1] = 0: must be an integer in [1, 512]"),
        ('[families.fc]\nlayers = [4, "0..8"]',
         "families.fc.layers[1] = 0: must be an integer in [1, 512] (in range '0..8')"),
        ("[families.fc]\nlayers = 4.0", "families.fc.layers = 4.0: must be an integer in [1, 512]"),
        ("[families.fc]\nlayers = true",
         "families.fc.layers = True: must be an integer in [1, 512]"),
        ("[families.fc]\nlayers = []", "families.fc.layers = []: must list at least one value"),
        ("[families.fc]\nlayers = [[4]]", "families.fc.layers[0] = [4]: must be a number or a"),
        ("[families.fc]\nlayers = { a = 1 }", "families.fc.layers = {'a': 1}: must be a number"),
        ('[families.cnn]\nblock = "dense"',
         "families.cnn.block = 'dense': must be one of residual, bottleneck"),
        ('[families.rnn]\ncell = ["lstm", 3]', "families.rnn.cell[1] = 3: must be one of"),
        ("[families.fc]\nlayers = '1..100'\nnodes = '1..100'",
         "families.fc: expands to 1,800,000 configs; at most 100,000 per family"),
        ("[families]\nfc = 3", "families.fc = 3: must be a table"),
        ("families = 3", "families = 3: must be a table"),
        ("[families.fc]\n[sampling]\nmethod = 'sobol'",
         "sampling.method = 'sobol': must be one of grid, random, lhs"),
        ("[families.fc]\n[sampling]\nmethod = 'lhs'",
         "sampling.n: is required with method = 'lhs' (configs per family)"),
        ("[families.fc]\n[sampling]\nmethod = 'random'\nn = 0",
         "sampling.n = 0: must be an integer in [1, 100000]"),
        ("[families.fc]\n[sampling]\nmethod = 'random'\nn = 5\nseed = -1",
         "sampling.seed = -1: must be an integer in [0, 4294967295]"),
        ("[families.fc]\n[sampling]\nmethod = 'random'\nn = 5\nseed = 1.5",
         "sampling.seed = 1.5: must be an integer in [0, 4294967295]"),
        ("[families.fc]\n[sampling]\nn = 5", "sampling.n = 5: only used with method = 'random'"),
        ("[families.fc]\n[sampling]\nsize = 5", "sampling.size = 5: unknown key; allowed: method"),
        ("[families.fc]\n[filters]\nmax_params = -1",
         "filters.max_params = -1: must be a number > 0"),
        ("[families.fc]\n[filters]\nmax_params = nan",
         "filters.max_params = nan: must be a number > 0"),
        ("[families.fc]\n[filters]\nmax_memory = 1", "filters.max_memory = 1: unknown key"),
        ("[families.fc]\n[timing]\nmin_tim_s = 3", "timing.min_tim_s = 3: unknown key; allowed:"),
        ("[families.fc]\n[timing]\nmin_time_s = 2\nmax_time_s = 1",
         "timing.max_time_s = 1.0: must be a number in [2, 86400]"),
        ("[families.fc]\n[timing]\nconfidence = [1]", "timing.confidence = [1]: must be a number"),
        ("[families.fc]\n[timing]\nmin_samples = 1.5", "timing.min_samples = 1.5: must be an int"),
        ('precisions = ["fp32", "fp64"]\n[families.fc]',
         "precisions[1] = 'fp64': must be one of fp32, tf32, bf16, fp16"),
        ('precisions = "fp8"\n[families.fc]', "precisions = 'fp8': must be one of fp32"),
        ("optimizers = []\n[families.fc]", "optimizers = []: must be a non-empty list of: rmsprop"),
        ('optimizers = ["lamb"]\n[families.fc]', "optimizers[0] = 'lamb': must be one of rmsprop"),
        ('name = ""\n[families.fc]', "name = '': must be non-empty printable ASCII"),
        ("description = 3\n[families.fc]", "description = 3: must be a printable one-line string"),
        ("[[runs]]\nfamily = 'cnn'\nconfig = { batch = 1, image = 32 }",
         "runs[0].config.batch = 1: with image=32 the last feature map is 1×1"),
        ("[[runs]]\nfamily = 'fc'\n[[runs]]\nfamily = 'fc'\nconfig = { layers = 0 }",
         "runs[1].config.layers = 0: must be an integer in [1, 512]"),
        ("[[runs]]\nfamily = 'fc'\nconfig = { nodez = 1 }",
         "runs[0].config.nodez = 1: unknown field; allowed: layers, nodes"),
        ("[[runs]]\nconfig = { layers = 1 }",
         f"runs[0].family: is required; one of {FAMILY_NAMES}"),
        ("[[runs]]\nfamily = 'mlp'", f"runs[0].family = 'mlp': must be one of {FAMILY_NAMES}"),
        ("[[runs]]\nfamily = 'fc'\nconfig = 3", "runs[0].config = 3: must be a table"),
        ("[[runs]]\nfamily = 'fc'\nprecision = 'bf16'", "runs[0].precision = 'bf16': unknown key"),
        ("runs = 3", "runs = 3: must be an array of tables, written [[runs]]"),
        ("", "has no runs: add a [families.NAME] table or [[runs]] entries"),
        ('name = "x"\n\nlayers = = 4', "line 3, column 10: invalid TOML: Invalid value"),
        ("[families.fc]\n[families.fc]", "line 2, column 13: invalid TOML: Cannot declare"),
    ],
)  # fmt: skip
def test_every_error_is_one_line_naming_file_key_value_and_what_is_allowed(
    tmp_path, text, expected
):
    assert error(text, tmp_path).startswith(expected)


def test_unreadable_files(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes('name = "caf\xe9"'.encode("latin-1"))
    with pytest.raises(SweepError, match=r"latin1\.toml: cannot read: a sweep file must be UTF-8"):
        load(path)
    with pytest.raises(SweepError, match=r"gone\.toml: cannot read: No such file or directory$"):
        load(str(tmp_path / "gone.toml"))


def test_odd_keys_are_quoted_so_the_message_stays_one_line(tmp_path):
    msg = error('[families.fc]\n"a\\nb\\u2028c" = 1', tmp_path)
    assert msg.startswith('families.fc."a\\nb\\u2028c" = 1: unknown axis')


# --- arbitrary input: a Sweep or a one-line ParadnnError, never anything else ----------------

JUNK = st.sampled_from(
    ["4..16 x2", "1..3", "2..1024 x4", "200..300 +50", "0..8", "9..1", "1..x", "1..99999999",
     "fp32", "lhs", "lstm", "residual", "fc", ""]
)  # fmt: skip
SCALARS = st.booleans() | st.integers(-3, 300) | st.integers() | st.floats() | st.text(max_size=8)
ANY = st.recursive(
    SCALARS | JUNK,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


def maybe(strategy):
    """Nearly always well-shaped, sometimes anything: errors deep inside a valid-looking file."""
    return st.integers(0, 9).flatmap(lambda i: ANY if i == 0 else strategy)


FIELDS = st.sampled_from(
    sorted({f.name for n in ("fc", "cnn", "rnn") for f in families.get(n).fields()})
) | st.text(max_size=3)
AXIS = maybe(st.integers(-1, 300) | JUNK | st.lists(st.integers(-1, 300) | JUNK, max_size=3))
AXES = st.dictionaries(FIELDS, AXIS, max_size=6)
FAMILY = st.sampled_from(["fc", "cnn", "rnn"])


def table(**fields):
    return maybe(st.fixed_dictionaries({}, optional={k: maybe(v) for k, v in fields.items()}))


WELL_SHAPED = st.fixed_dictionaries(
    {"families": maybe(st.dictionaries(FAMILY | st.text(max_size=3), maybe(AXES), min_size=1,
                                      max_size=2))},
    optional={
        "name": maybe(st.from_regex(r"[a-z]{1,5}", fullmatch=True)),
        "description": st.text(max_size=5),
        "precisions": st.lists(maybe(st.sampled_from(["fp32", "bf16"])), min_size=1, max_size=3),
        "optimizers": st.lists(maybe(st.sampled_from(["rmsprop", "sgd"])), min_size=1, max_size=2),
        "sampling": table(method=st.sampled_from(["grid", "random", "lhs"]),
                          n=st.integers(-1, 40), seed=st.integers(-1, 2**70)),
        "filters": table(max_params=st.floats() | st.integers(),
                         max_flops_per_step=st.floats() | st.integers()),
        "timing": table(min_time_s=st.floats(-1, 5) | st.integers(), max_time_s=st.floats(),
                        min_samples=st.integers(-1, 20), confidence=SCALARS),
        "runs": maybe(st.lists(table(family=FAMILY, config=AXES), max_size=3)),
    },
)  # fmt: skip
ANY_DOC = st.dictionaries(st.sampled_from(["families", "runs", "sampling", "x"]) | st.text(), ANY)
FAST = settings(
    max_examples=150,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)


def outcome(source) -> Sweep | None:
    try:
        s = load(source)
    except ParadnnError as e:
        msg = str(e)
        assert msg and "\n" not in msg and len(msg.splitlines()) == 1, msg
        return None
    assert isinstance(s, Sweep)
    s.specs()
    return s


def toml(value) -> str:
    """A TOML literal (inline form) for what the strategies generate."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        escaped = (
            c if " " <= c != "\x7f" and c not in '"\\' else f"\\u{ord(c):04x}" for c in value
        )
        return '"' + "".join(escaped) + '"'
    if isinstance(value, list):
        return "[" + ", ".join(map(toml, value)) + "]"
    return "{" + ", ".join(f"{toml(k)} = {toml(v)}" for k, v in value.items()) + "}"


@FAST
@given(WELL_SHAPED | ANY_DOC)
def test_any_mapping_gives_a_sweep_or_a_one_line_error(doc):
    outcome(doc)


@FAST
@given(WELL_SHAPED)
def test_any_toml_document_gives_a_sweep_or_a_one_line_error(doc):
    outcome("\n".join(f"{toml(k)} = {toml(v)}" for k, v in doc.items()))


@FAST
@given(
    st.text(max_size=200)
    | st.from_regex(
        r"\[(families\.(fc|cnn|rnn)|sampling|timing|filters|\[runs\])\]\n"
        r"(layers|nodes|batch|cell|method|n|seed|family|min_time_s) = [^\n]{0,12}\n?",
        fullmatch=True,
    )
)
def test_any_text_gives_a_sweep_or_a_one_line_error(text):
    outcome(text)
