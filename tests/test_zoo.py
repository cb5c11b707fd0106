"""The real-world models: parameter counts equal the reference implementations, FLOPs counted by
PyTorch equal the analytic walk and the published oracles, and each trains on CPU."""

import pytest
import torch

from paradnn import api, families, memory, presets
from paradnn.errors import ConfigError
from paradnn.families.shapes import Conv2d
from paradnn.measure.flops import count_step, count_train_flops
from paradnn.zoo.layers import RealModel, RectConv2d, pool_out

ZOO = [
    "resnet50", "densenet121", "mobilenet_v2", "squeezenet1_1", "retinanet", "transformer_base",
    "vgg16", "inception_v3", "lstm_ptb", "deepspeech2",
]  # fmt: skip
CPU = torch.device("cpu")

# torchvision's `sum(p.numel())` (reference/flops.md §8.1); RetinaNet's with FrozenBatchNorm2d.
EXACT = [
    ("resnet50", {}, 25_557_032),
    ("vgg16", {}, 138_357_544),
    ("inception_v3", {}, 27_161_264),
    ("inception_v3", {"aux": False}, 23_834_568),
    ("mobilenet_v2", {}, 3_504_872),
    ("densenet121", {}, 7_978_856),
    ("squeezenet1_1", {}, 1_235_496),
    ("retinanet", {"frozen_bn": True}, 34_014_999),
    ("lstm_ptb", {}, 66_034_000),  # PyTorch's word_language_model at 1500 × 2
]
# Papers' totals in millions, with the tolerance the issue allows.
PUBLISHED = [
    ("transformer_base", {}, 65, 0.03),  # Vaswani et al. Table 3, base
    ("transformer_base", {"big": True}, 213, 0.03),  # big
    ("lstm_ptb", {}, 66, 0.05),  # seed 002 Table 5
    ("deepspeech2", {}, 27, 0.05),
    ("resnet50", {}, 26, 0.05),
    ("vgg16", {}, 138, 0.05),
    ("inception_v3", {}, 27, 0.05),
]


def _meta_params(name, cfg):
    with torch.device("meta"):
        module = families.get(name).build(cfg, "meta").module
    return sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize(("name", "values", "expected"), EXACT)
def test_parameter_counts_equal_the_reference_implementations(name, values, expected):
    fam = families.get(name)
    cfg = fam.config(values)
    assert fam.params(cfg) == expected
    assert _meta_params(name, cfg) == expected


@pytest.mark.parametrize(("name", "values", "millions", "tol"), PUBLISHED)
def test_parameter_counts_match_the_papers(name, values, millions, tol):
    fam = families.get(name)
    cfg = fam.config(values)
    assert fam.params(cfg) == pytest.approx(millions * 1e6, rel=tol)
    assert _meta_params(name, cfg) == fam.params(cfg)


@pytest.mark.parametrize(("big", "body"), [(False, 44_140_544), (True, 176_361_472)])
def test_transformer_body_is_nn_transformer_exactly(big, body):
    # reference/flops.md §8.3: nn.Transformer(d, h, 6, 6, d_ff) without embeddings
    fam = families.get("transformer_base")
    cfg = fam.config(big=big)
    d = cfg.dims[0]
    assert fam.params(cfg) - cfg.vocab * d == body
    with torch.device("meta"):
        module = fam.build(cfg, "meta").module
    assert sum(p.numel() for p in module.body.parameters()) == body


def test_every_zoo_config_field_has_a_paper_default_and_the_kind_is_real():
    info = {f.name: f for f in api.family_info()}
    for name in ZOO:
        fam = families.get(name)
        assert isinstance(fam, RealModel) and fam.kind == "real" and info[name].kind == "real"
        assert "batch" in info[name].fields and fam.source
    for name in ("fc", "cnn", "rnn", "transformer"):
        assert info[name].kind == "generated"
    defaults = {n: families.get(n).default_config() for n in ZOO}
    assert defaults["inception_v3"].image == 299 and defaults["retinanet"].image == 640
    assert defaults["resnet50"].image == defaults["vgg16"].image == 224
    assert defaults["lstm_ptb"].length == 20 and defaults["transformer_base"].length == 512
    assert defaults["deepspeech2"].frames == 400
    assert defaults["retinanet"].batch == 64  # seed 000's TPU batch
    assert defaults["transformer_base"].batch * defaults["transformer_base"].length == 4096


# Published FlopCounterMode training counts per image, batch 1 (reference/flops.md §8.2) and
# forward counts (§8.1: 2 × torchvision's exact MACs).
ORACLES = [
    ("resnet50", {}, 8_178_368_512, 24_299_077_632),
    ("vgg16", {}, 30_940_528_640, 92_648_177_664),
    ("densenet121", {}, 5_668_323_328, 16_768_942_080),
    ("squeezenet1_1", {}, 698_303_872, 2_052_330_240),
    ("inception_v3", {"aux": False}, 11_426_432_192, 34_240_933_248),
    ("mobilenet_v2", {}, 601_548_544, 1_782_969_600),  # with the grouped-backward fix
]


@pytest.mark.parametrize(("name", "values", "fwd", "train"), ORACLES)
def test_analytic_flops_equal_the_published_oracles(name, values, fwd, train):
    fam = families.get(name)
    cfg = fam.config({"batch": 1, **values})
    assert sum(s.fwd_flops() for s in fam.shapes(cfg)) == fwd * cfg.batch
    assert fam.train_flops(cfg) == train * cfg.batch


# Small inputs where the architecture allows: the counter's work grows with them on meta too.
# Every model is also counted at its contract config (test_family_contract.py); these are the
# other shapes worth a count (odd sizes, Inception's auxiliary head).
COUNT = [
    ("inception_v3", {"batch": 2}),  # 299 with the auxiliary head: its graph is counted too
    ("mobilenet_v2", {"batch": 2, "image": 96}),
    ("squeezenet1_1", {"batch": 2, "image": 97}),
    ("retinanet", {"batch": 1, "image": 160}),
    ("transformer_base", {"batch": 1, "length": 12, "vocab": 101}),
    ("deepspeech2", {"batch": 2, "frames": 24, "hidden": 24, "layers": 2}),
]


@pytest.mark.parametrize(("name", "values"), COUNT)
def test_counted_train_flops_equal_the_analytic_walk(name, values):
    """Exact: every FLOP-carrying op is in `shapes` (RetinaNet's focal loss, CTC and pooling
    have none), and the counter's corrections make it count model FLOPs."""
    fam = families.get(name)
    cfg = fam.config(values)
    assert count_train_flops(fam, cfg).total == fam.train_flops(cfg)


@pytest.mark.parametrize(
    ("name", "values"),
    [("deepspeech2", {"batch": 2, "frames": 16, "hidden": 8, "layers": 2}),
     ("lstm_ptb", {"batch": 1, "length": 2})],
)  # fmt: skip
def test_cpu_count_equals_meta_count_for_fused_recurrent_layers(name, values):
    """On CPU the GRU/LSTM run as fused oneDNN or per-step kernels and CTC runs for real (on
    meta a sum stands in for it): the counts still agree."""
    fam = families.get(name)
    cfg = fam.config(values)
    torch.manual_seed(0)
    built = fam.build(cfg, CPU)
    x, y = built.make_batch()
    counted = count_step(lambda: built.loss(built.module(x), y).backward(), CPU).total
    assert counted == fam.train_flops(cfg) == count_train_flops(fam, cfg).total


def test_retinanet_anchor_count_and_levels():
    fam = families.get("retinanet")
    cfg = fam.default_config()
    # P3–P7 at 640: 80, 40, 20, 10, 5 per side, 9 anchors each
    assert fam.anchors(cfg) == 9 * (80**2 + 40**2 + 20**2 + 10**2 + 5**2) == 76_725
    with torch.device("meta"):
        built = fam.build(fam.config(batch=2, image=128), "meta")
        x, _ = built.make_batch()
        cls, reg = built.module(x)
    assert cls.shape == (2, fam.anchors(fam.config(batch=2, image=128)), 91)
    assert reg.shape == (*cls.shape[:2], 4)


def test_inception_uses_rectangular_kernels():
    fam = families.get("inception_v3")
    rect = [s for s in fam.shapes(fam.default_config()) if isinstance(s, RectConv2d)]
    assert rect and all(isinstance(s, Conv2d) for s in rect)
    one_by_seven = next(s for s in rect if s.kernel == 1 and s.kernel_w == 7)
    assert one_by_seven.out_h == one_by_seven.in_h == one_by_seven.out_w == 17
    assert one_by_seven.weights == one_by_seven.out_ch * one_by_seven.in_ch * 7


@pytest.mark.parametrize(
    ("name", "values", "field"),
    [
        ("inception_v3", {"image": 298}, "inception_v3.image"),  # aux head needs ≥ 299
        ("inception_v3", {"image": 74, "aux": False}, "inception_v3.image"),
        ("inception_v3", {"batch": 1}, "inception_v3.batch"),  # aux BatchNorm on 1×1
        ("resnet50", {"batch": 1, "image": 32}, "resnet50.batch"),  # 1×1 last map, batch 1
        ("vgg16", {"image": 31}, "vgg16.image"),
        ("transformer_base", {"big": "maybe"}, "transformer_base.big"),
        ("deepspeech2", {"frames": 4}, "deepspeech2.frames"),
        ("lstm_ptb", {"hidden": 3}, "lstm_ptb.hidden"),  # not a field: unknown key
    ],
)
def test_bad_configs_name_the_field(name, values, field):
    with pytest.raises(ConfigError) as e:
        families.get(name).config(values)
    assert e.value.field == field
    assert str(e.value).startswith(f"{field} = ")


def test_every_accepted_small_image_builds():
    """The validators' minimum sizes are real: the smallest accepted image runs forward."""
    cases = [
        ("squeezenet1_1", {"batch": 1, "image": 17}),
        ("vgg16", {"batch": 1, "image": 32}),
        ("resnet50", {"batch": 2, "image": 32}),
        ("inception_v3", {"batch": 2, "image": 75, "aux": False}),
        ("retinanet", {"batch": 2, "image": 32}),
    ]
    for name, values in cases:
        fam = families.get(name)
        with torch.device("meta"):
            built = fam.build(fam.config(values), "meta")
            x, _ = built.make_batch()
            built.module(x)
    with pytest.raises(ConfigError):
        families.get("squeezenet1_1").config(image=16)


def test_pool_out_follows_pytorch_ceil_mode():
    for size in range(3, 40):
        for ceil in (False, True):
            pool = torch.nn.MaxPool2d(3, 2, ceil_mode=ceil)
            out = pool(torch.empty(1, 1, size, size, device="meta")).shape[-1]
            assert pool_out(size, 3, 2, ceil=ceil) == out, (size, ceil)


@pytest.mark.parametrize("preset", ["real-world", "accelerator-study"])
def test_presets_hold_the_studies_models_and_batches(preset):
    sweep = presets.get(preset)
    batches: dict[str, set[int]] = {}
    for fam, cfg in sweep.configs:
        batches.setdefault(fam, set()).add(cfg["batch"])
    if preset == "real-world":
        assert batches == {
            "resnet50": {1024}, "densenet121": {1024}, "mobilenet_v2": {1024},
            "squeezenet1_1": {1024}, "retinanet": {64}, "transformer_base": {8},
        }  # fmt: skip
    else:
        assert batches == {
            "resnet50": {64, 128}, "inception_v3": {64, 128}, "vgg16": {64, 128},
            "lstm_ptb": {64, 128, 256}, "deepspeech2": {8, 16, 32},
            "transformer_base": {2, 4, 8},
        }  # fmt: skip
    specs, _ = presets.resolve_native(sweep.specs(), ["fp32", "bf16"])  # as on a GPU
    assert {s.precision for s in specs} == (
        {"fp32", "bf16"} if preset == "real-world" else {"fp32", "fp16"}
    )
    for spec in specs:  # the dry run's memory model handles every one
        fam = families.get(spec.family)
        cfg = fam.config(dict(spec.config))
        for device_type in ("cpu", "cuda"):
            est = memory.predict(spec.family, cfg, spec.precision, "rmsprop",
                                 device_type=device_type)  # fmt: skip
            assert 0 < est.lower_bound <= est.total
            assert est.weights >= 4 * fam.params(cfg)


@pytest.mark.gpu
@pytest.mark.parametrize(("name", "values"), [
    ("resnet50", {"batch": 4, "image": 64}),
    ("transformer_base", {"batch": 2, "length": 32, "vocab": 101}),
    ("deepspeech2", {"batch": 2, "frames": 48, "hidden": 32, "layers": 2}),
    ("lstm_ptb", {"batch": 2, "length": 4}),
])  # fmt: skip
def test_cuda_count_equals_the_analytic_walk(name, values):
    """cuDNN convolutions and RNNs and flash attention count the same model FLOPs."""
    fam = families.get(name)
    cfg = fam.config(values)
    dev = torch.device("cuda")
    built = fam.build(cfg, dev)
    x, y = built.make_batch()
    assert count_step(lambda: built.loss(built.module(x), y).backward(), dev).total == (
        fam.train_flops(cfg)
    )
