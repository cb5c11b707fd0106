import pytest

from paradnn import families
from paradnn.errors import ConfigError
from paradnn.space import parse_range
from paradnn.validate import parse_assignments


@pytest.mark.parametrize(
    ("family", "values", "needle"),
    [
        ("fc", {"layers": 0}, "fc.layers = 0: must be an integer in [1, 512]"),
        ("fc", {"nodes": -3}, "fc.nodes = -3"),
        ("fc", {"output": 1}, "fc.output = 1: must be an integer in [2, 1048576]"),
        ("fc", {"batch": "many"}, "fc.batch = 'many': must be an integer"),
        ("fc", {"layers": 2.5}, "fc.layers = 2.5"),
        ("fc", {"layers": True}, "fc.layers = True"),
        ("cnn", {"block": "dense"}, "cnn.block = 'dense': must be one of residual, bottleneck"),
        ("cnn", {"image": 0}, "cnn.image = 0"),
        ("rnn", {"cell": "transformer"}, "rnn.cell = 'transformer': must be one of rnn, gru, lstm"),
        ("rnn", {"vocab": 1}, "rnn.vocab = 1: must be an integer in [2, 1048576]"),
    ],
)
def test_bad_values_name_field_value_and_range(family, values, needle):
    with pytest.raises(ConfigError) as e:
        families.get(family).config(values)
    assert needle in str(e.value)
    assert "\n" not in str(e.value)


def test_unknown_key_is_rejected_with_the_allowed_keys():
    with pytest.raises(ConfigError, match=r"fc.nodez = '64': unknown key; allowed: layers, nodes"):
        families.get("fc").config({"nodez": "64"})


def test_cli_strings_are_coerced_to_field_types():
    cfg = families.get("fc").config({"nodes": "64", "input": "256"})
    assert (cfg.nodes, cfg.input) == (64, 256)


def test_small_models_outside_the_paper_space_are_valid():
    # validity is "makes a model", not "inside Table 2"
    cfg = families.get("fc").config(nodes=64, input=256)
    assert cfg.nodes == 64


def test_unknown_family():
    with pytest.raises(ConfigError, match="family = 'mlp': must be one of fc, cnn, rnn"):
        families.get("mlp")


def test_parse_assignments():
    assert parse_assignments(["a=1", " b = x "]) == {"a": "1", "b": "x"}
    with pytest.raises(ConfigError, match="must be written key=value"):
        parse_assignments(["layers"])


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("4..128 x2", (4, 8, 16, 32, 64, 128)),
        ("2000..8000 +2000", (2000, 4000, 6000, 8000)),
        ("1..3", (1, 2, 3)),
        ("2..1024 x4", (2, 8, 32, 128, 512)),
    ],
)
def test_paper_ranges(text, values):
    assert parse_range(text) == values


@pytest.mark.parametrize("text", ["4-128", "128..4", "0..8 x2", "1..8 x1", "a..b"])
def test_bad_ranges(text):
    with pytest.raises(ConfigError, match="range"):
        parse_range(text)


def test_cnn_that_batchnorm_cannot_train_is_rejected_up_front():
    with pytest.raises(
        ConfigError, match=r"cnn.batch = 1: with image=32 the last feature map is 1×1"
    ):
        families.get("cnn").config(batch=1, image=32)
    assert families.get("cnn").config(batch=1, image=33).final_map == 2
    assert families.get("cnn").config(batch=2, image=8).final_map == 1


def test_absurd_ranges_are_refused_before_enumeration():
    with pytest.raises(ConfigError, match="has 100,000,000 values; an axis may have at most"):
        parse_range("1..100000000")
    with pytest.raises(ConfigError, match="at most 18 digits"):
        parse_range("1.." + "9" * 5000)


def test_user_text_in_a_field_name_stays_on_one_line():
    err = ConfigError("a\nb config", "x", "must be something")
    assert "\n" not in str(err) and "'a\\nb config'" in str(err)
