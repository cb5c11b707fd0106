# ruff: noqa: E501  (the quotes stay verbatim, one line each)
"""Writes src/paradnn/data/paper_claims.toml from the seed texts (issue 36): Table 8 parsed from
seed 002's text, every quote located (its line) in its seed, every number checked to appear in
its quote; it stops at the first claim that fails. The seeds are not in the repository:

    python benchmarks/paper_claims.py SEEDS_DIR [OUT.toml]

SEEDS_DIR holds 000_*.txt, 001_*.txt and 002_*.txt (the three papers as text).
"""

import glob
import json
import re
import sys

if len(sys.argv) < 2:
    sys.exit(__doc__)
SEEDS = {s: glob.glob(f"{sys.argv[1]}/{s}_*.txt")[0] for s in ("000", "001", "002")}
OUT = sys.argv[2] if len(sys.argv) > 2 else "src/paradnn/data/paper_claims.toml"
TEXT = {}
for _seed, _path in SEEDS.items():
    with open(_path, encoding="utf-8") as _f:
        TEXT[_seed] = _f.read().split("\n")


def norm(s):
    return re.sub(r"\s+", " ", s).strip()


def locate(seed, quote):
    lines = TEXT[seed]
    q = norm(quote)
    for i in range(len(lines)):
        for span in range(1, 5):
            chunk = norm(" ".join(lines[i : i + span]))
            if q in chunk:
                return i + 1
    sys.exit(f"quote not found in seed {seed}: {quote!r}")


def num_in(quote, value):
    q = quote.replace(",", "")
    cands = {
        f"{value:g}",
        f"{value:.2f}",
        f"{value:.1f}",
        str(int(value)) if value == int(value) else "",
    }
    return any(c and c in q for c in cands)


claims = []


def add(
    seed,
    cid,
    where,
    quote,
    quantity,
    unit,
    platforms,
    workload,
    value,
    compute,
    measure=None,
    line=None,
    note=None,
):
    ln = line or locate(seed, quote)
    if not num_in(quote, value) and not (note and "triple" in note):
        sys.exit(f"{cid}: {value} not in quote {quote!r}")
    c = dict(
        id=cid,
        seed=seed,
        where=where,
        line=ln,
        quote=quote,
        quantity=quantity,
        unit=unit,
        platforms=platforms,
        workload=workload,
        value=value,
    )
    if note:
        c["note"] = note
    c["compute"] = compute
    if measure:
        c["measure"] = measure
    claims.append(c)


B4 = dict(chips=4, topology="torus2d:2x2")
TPU2 = dict(platform="tpu-v2", precision="bf16", **B4)
TPU3 = dict(platform="tpu-v3", precision="bf16", **B4)
V100 = dict(platform="v100-sxm2", precision="fp16")
CORE1 = dict(platform="data:tpu-v2-1core", precision="bf16")


def none(reason):
    return dict(kind="none", reason=reason)


# ---- seed 000 -------------------------------------------------------------------------------
q = "For FC, the maximum FLOPS utilization in 8-core TPU is 62%, compared to 100% in 1-core TPU."
w = "§4.3, Fig. 4"
add(
    "000",
    "s000-fig4-fc-max-util-1core",
    w,
    q,
    "max_utilization",
    "%",
    ["TPU v2, 1 core"],
    "FC, Table 2 space, batch > 1024",
    100.0,
    dict(kind="max_util", family="fc", where={"batch_min": 2048}, **CORE1),
    measure=dict(kind="max_util", family="fc", device="tpu"),
)
add(
    "000",
    "s000-fig4-fc-max-util-8core",
    w,
    q,
    "max_utilization",
    "%",
    ["TPU v2 board (8 cores)"],
    "FC, Table 2 space, batch > 1024",
    62.0,
    dict(kind="max_util", family="fc", where={"batch_min": 2048}, **TPU2),
    measure=dict(kind="max_util", family="fc", device="tpu"),
)
q = "Multi-chip overhead is less noticeable in CNNs, with FLOPS utilization decreasing from 55% in 1core TPU to 40% in 8-core."
add(
    "000",
    "s000-fig4-cnn-max-util-1core",
    w,
    q,
    "max_utilization",
    "%",
    ["TPU v2, 1 core"],
    "CNN, Table 2 space",
    55.0,
    dict(kind="max_util", family="cnn", **CORE1),
    measure=dict(kind="max_util", family="cnn", device="tpu"),
)
add(
    "000",
    "s000-fig4-cnn-max-util-8core",
    w,
    q,
    "max_utilization",
    "%",
    ["TPU v2 board (8 cores)"],
    "CNN, Table 2 space",
    40.0,
    dict(kind="max_util", family="cnn", **TPU2),
    measure=dict(kind="max_util", family="cnn", device="tpu"),
)
q = "the 90th-percentile of non-parallel fractions are 16% for FC and 8.8% for CNN."
for fam, v in (("fc", 16.0), ("cnn", 8.8)):
    add(
        "000",
        f"s000-fig4-{fam}-nonparallel-p90",
        w,
        q,
        "nonparallel_fraction_p90",
        "%",
        ["TPU v2, 1 core vs 8 cores"],
        f"{fam.upper()}, largest batch of Fig. 4",
        v,
        none(
            "not implemented: it needs an Amdahl fit over matched 1-core/8-core pairs at "
            "Fig. 4's largest batch"
        ),
    )
q = "up to 13% for CNNs with sizes similar to ResNet-50"
add(
    "000",
    "s000-multichip-overhead-resnet50",
    "§4 (summary of §4.3)",
    q,
    "multichip_overhead",
    "%",
    ["TPU v2 board (4 chips, 8 cores)"],
    "ResNet-50, 256 images per chip",
    13.0,
    dict(kind="multichip_overhead", family="resnet50", config={"batch": 256}, **TPU2),
)
q = "Resolving the data-infeed bottleneck can improve performance by at least 34%."
add(
    "000",
    "s000-infeed-gain",
    "§4 (summary of §4.4), Fig. 5",
    q,
    "speedup",
    "%",
    ["TPU v2 board"],
    "ResNet-50 bf16 with real data",
    34.0,
    none(
        "no host model for the TPU's infeed (the step model's host term needs a measured "
        "loader rate; docs/infeed.md)"
    ),
)
q = "In Figure 6(a) the maximum speedups are 2.83× (FC), 2.31×(CNN), and 3.11×(RNN)."
for fam, v, cfg, wl in (
    ("fc", 2.83, {}, "FC"),
    ("cnn", 2.31, {"block": "bottleneck"}, "CNN, bottleneck blocks"),
    ("rnn", 3.11, {"cell": "rnn"}, "RNN, basic cell"),
):
    add(
        "000",
        f"s000-fig6a-{fam}-v3-over-v2-max",
        "§4.5, Fig. 6(a)",
        q,
        "max_speedup",
        "x",
        ["TPU v3 board", "TPU v2 board"],
        wl + ", Table 2 space; v3 at twice v2's batch",
        v,
        dict(kind="max_speedup", family=fam, where=cfg, a=TPU3, b=TPU2, a_batch_factor=2),
        measure=dict(kind="none", reason="needs two TPU generations in the databases"),
    )
q = "Compute-bound on v3 operations have 2.3× the speedup."
add(
    "000",
    "s000-fig6b-compute-bound-op-speedup",
    "§4.5, Fig. 6(b)-(c) caption",
    q,
    "op_speedup",
    "x",
    ["TPU v3 chip", "TPU v2 chip"],
    "compute-bound MatMul (8192×8192×8192)",
    2.3,
    dict(
        kind="op_speedup",
        m=8192,
        n=8192,
        k=8192,
        a="tpu-v3",
        b="tpu-v2",
        precision="bf16",
        a_batch_factor=1,
    ),
)
q = "so memory-bound operations have triple speedup if they benefit from larger batch size, and 1.5× speedup if not."
add(
    "000",
    "s000-fig6b-memory-bound-matmul-speedup",
    "§4.5, Fig. 6(b)-(c) caption",
    q,
    "op_speedup",
    "x",
    ["TPU v3 chip", "TPU v2 chip"],
    "memory-bound FC MatMul (batch 16 × 8192 × 8192), v3 at twice the batch",
    3.0,
    dict(
        kind="op_speedup",
        m=16,
        n=8192,
        k=8192,
        a="tpu-v3",
        b="tpu-v2",
        precision="bf16",
        a_batch_factor=2,
    ),
    note="'triple speedup' is the seed's 3×",
)
add(
    "000",
    "s000-fig6b-other-memory-bound-speedup",
    "§4.5, Fig. 6(b)-(c) caption",
    q,
    "op_speedup",
    "x",
    ["TPU v3 chip", "TPU v2 chip"],
    "memory-bound non-MatMul operations",
    1.5,
    dict(kind="bandwidth_ratio", a="tpu-v3", b="tpu-v2"),
)
q = "Overall, 62% of the FC models perform better on TPU (speedup > 1)."
add(
    "000",
    "s000-fig8-fc-share-faster-on-tpu",
    "§5.1, Fig. 8",
    q,
    "share_faster",
    "%",
    ["TPU v2 board", "V100"],
    "FC, Table 2 space",
    62.0,
    dict(kind="share_faster", family="fc", a=TPU2, b=V100),
    measure=dict(kind="none", reason="needs a TPU and a GPU in the databases"),
)
q = "Even so, RNNs are still up to 20× faster on TPU."
add(
    "000",
    "s000-fig10-rnn-max-tpu-over-gpu",
    "§5.2, Fig. 10(d)-(e)",
    q,
    "max_speedup",
    "x",
    ["TPU v2 board", "V100"],
    "RNN, Table 2 space",
    20.0,
    dict(kind="max_speedup", family="rnn", where={}, a=TPU2, b=V100, a_batch_factor=1),
    measure=dict(kind="none", reason="needs a TPU and a GPU in the databases"),
)
for cid, model, ta, ga, _mult, v, q, wl, _line in (
    (
        "s000-fig11-resnet50-tpu-over-gpu",
        "resnet50",
        {"batch": 256},
        {"batch": 256},
        1,
        6.2,
        "The speedup using ResNet-50 from Google is 6.2× compared to 4.2×",
        "ResNet-50, TPU 1024 images per board, GPU 256",
        None,
    ),
    (
        "s000-fig11-resnet50-nvidia-tpu-over-gpu",
        "resnet50",
        {"batch": 256},
        {"batch": 256},
        1,
        4.2,
        "The speedup using ResNet-50 from Google is 6.2× compared to 4.2×",
        "ResNet-50 with NVIDIA's GPU software (seed: unreleased libraries)",
        None,
    ),
    (
        "s000-fig11-densenet-tpu-over-gpu",
        "densenet121",
        {"batch": 256},
        {"batch": 256},
        1,
        3.0,
        "the speedup of real workloads range from 3× (DenseNet) to 6.8× (SqueezeNet)",
        "DenseNet-121",
        None,
    ),
    (
        "s000-fig11-squeezenet-tpu-over-gpu",
        "squeezenet1_1",
        {"batch": 256},
        {"batch": 1024},
        1,
        6.8,
        "the speedup of real workloads range from 3× (DenseNet) to 6.8× (SqueezeNet)",
        "SqueezeNet 1.1",
        None,
    ),
    (
        "s000-transformer-tpu-over-gpu",
        "transformer_base",
        {"batch": 2, "length": 512},
        {"batch": 4, "length": 512},
        512,
        3.5,
        "trains 3.5× faster on the TPU compared to the GPU",
        "Transformer base, TPU 4k tokens per chip, GPU 2k",
        None,
    ),
):
    where = "§1 (abstract)" if "transformer" in cid else "§5.3, Fig. 11 (top)"
    add(
        "000",
        cid,
        where,
        q,
        "speedup",
        "x",
        ["TPU v2 board", "V100"],
        wl,
        v,
        dict(
            kind="speedup",
            a=dict(family=model, config=ta, **TPU2),
            b=dict(family=model, config=ga, **V100),
        ),
        measure=dict(kind="none", reason="needs a TPU and a GPU in the databases"),
        note="the seed does not state the GPU batch: 256 images (SqueezeNet 1024, Transformer 2k tokens) assumed",
    )
q = "On average, the maximum FLOPS utilization of TPU is 2.2× that of GPU for all CNN models, and the ratio is 3× for RNNs."
for fam, v in (("cnn", 2.2), ("rnn", 3.0)):
    add(
        "000",
        f"s000-fig11-{fam}-tpu-over-gpu-max-util",
        "§5.3, Fig. 11 (bottom); observation 10",
        q,
        "max_utilization_ratio",
        "x",
        ["TPU v2 board", "V100"],
        f"{fam.upper()}, Table 2 space",
        v,
        dict(kind="max_util_ratio", family=fam, a=TPU2, b=V100),
        measure=dict(kind="max_util_ratio", family=fam, a="tpu", b="gpu"),
    )
q = "For RNNs, TPU has less than 26% FLOPS utilization and GPU has less than 9%. In contrast, CPU has up to 46% utilization."
for dev, v, spec, plat in (
    ("tpu", 26.0, TPU2, "TPU v2 board"),
    ("gpu", 9.0, V100, "V100"),
    ("cpu", 46.0, dict(platform="skylake-n1-32", precision="fp32"), "CPU (Skylake, 32 vCPUs)"),
):
    add(
        "000",
        f"s000-fig11-rnn-{dev}-max-util",
        "§5.3, Fig. 11 (bottom)",
        q,
        "max_utilization",
        "%",
        [plat],
        "RNN, Table 2 space",
        v,
        dict(kind="max_util", family="rnn", **spec),
        measure=dict(kind="max_util", family="rnn", device=dev),
    )
q = "The 90thpercentile speedup of TPU is 7× for FC, 1.5× for Residual CNN, 2.5× for Bottleneck CNN, 9.7× for RNN, and 6.3× for LSTM and GRU."
add(
    "000",
    "s000-fig12-tf-version-fc",
    "§6.1, Fig. 12(a)",
    q,
    "speedup",
    "x",
    ["TPU v2 board"],
    "FC, TF 1.7 → 1.12 (90th percentile)",
    7.0,
    none("no software-version model"),
)
q = "90thpercentile speedups are up to 1.8× for FC and Bottleneck CNN, and 1.3× for Residual CNN."
add(
    "000",
    "s000-fig12-bf16-fc",
    "§6.1, Fig. 12",
    q,
    "speedup",
    "x",
    ["TPU v2 board"],
    "FC, bfloat16 over float32 (90th percentile)",
    1.8,
    none("the TPU chips have no fp32 peak in the platform database: fp32 on a TPU is not modelled"),
)
q = "These three operations contribute to 19.9% of the total execution time."
add(
    "000",
    "s000-fig3-transformer-memory-bound-ops",
    "§4.2, Fig. 3(b)",
    q,
    "time_share",
    "%",
    ["TPU v2 board"],
    "Transformer: memory-bound operations' share of the step",
    19.9,
    none("no per-operation (fused TensorFlow op) model of a TPU step"),
)

# ---- seed 001 -------------------------------------------------------------------------------
q = "The geometric mean speedup of these programs over TPUv2 is 1.8 for TPUv3 and 1.9 for Volta."
prox = [("resnet50", {"batch": 256}), ("transformer_base", {"batch": 2, "length": 512})]
T2c = dict(platform="tpu-v2", precision="bf16")
T3c = dict(platform="tpu-v3", precision="bf16")
for cid, v, num in (
    ("s001-fig6-v3-over-v2-geomean", 1.8, T3c),
    ("s001-fig6-volta-over-v2-geomean", 1.9, V100),
):
    add(
        "001",
        cid,
        "Chip performance, Fig. 6",
        q,
        "geomean_speedup",
        "x",
        ["TPUv3 chip" if num is T3c else "Volta (V100)", "TPUv2 chip"],
        "MLPerf 0.6 programs (unnamed; proxies ResNet-50 and Transformer base)",
        v,
        dict(
            kind="geomean_speedup",
            pairs=[
                dict(a=dict(family=f, config=c, **num), b=dict(family=f, config=c, **T2c))
                for f, c in prox
            ],
        ),
        measure=dict(kind="none", reason="needs a TPU in the databases"),
        note="the seed's programs are not named; ResNet-50 and Transformer base stand in",
    )
q = "The geometric mean speedup of the six production applications was 1.8 for TPUv3 but only 0.4 for Volta"
add(
    "001",
    "s001-fig6-production-volta-over-v2",
    "Chip performance, Fig. 6",
    q,
    "geomean_speedup",
    "x",
    ["Volta (V100)", "TPUv2 chip"],
    "six Google production applications",
    0.4,
    none("the production applications are not described (models, sizes)"),
)
q = "Ying et al. published a ResNet-50 results on TPUv3 that delivered 77% of perfect linear scaleup at 1,024 chips"
add(
    "001",
    "s001-fig7-resnet50-1024-tpuv3-scaling",
    "DSA supercomputer scaling, Fig. 7",
    q,
    "scaling_efficiency",
    "%",
    ["TPUv3 supercomputer (1,024 chips)"],
    "ResNet-50, 32 images per chip (not stated by the seed)",
    77.0,
    dict(
        kind="scaling_efficiency",
        family="resnet50",
        config={"batch": 32},
        platform="tpu-v3",
        precision="bf16",
        chips=1024,
    ),
    measure=dict(
        kind="none",
        reason="paradnn measures data-parallel scaling on one machine (docs/scaling.md), not 1,024 chips",
    ),
)
q = "but the TPUv3 version for MLPerf 0.6 only runs at 52%"
add(
    "001",
    "s001-fig7-mlperf-resnet50-scaling",
    "DSA supercomputer scaling, Fig. 7",
    q,
    "scaling_efficiency",
    "%",
    ["TPUv3 supercomputer (1,024 chips)"],
    "ResNet-50, MLPerf 0.6 (evaluation included)",
    52.0,
    none("MLPerf's time includes evaluation runs, which paradnn does not model"),
)
q = "NVIDIA ran ResNet-50 on a cluster of 96 DGX-2H each with 16 Voltas connected via Infiniband switches at 41% of linear scale-up for 1,536 chips."
add(
    "001",
    "s001-fig7-nvidia-resnet50-scaling",
    "DSA supercomputer scaling, Fig. 7",
    q,
    "scaling_efficiency",
    "%",
    ["1,536 V100 (96 DGX-2H)"],
    "ResNet-50, MLPerf 0.6",
    41.0,
    none(
        "InfiniBand between DGX-2H nodes is not modelled (the interconnect model knows tori and rings)"
    ),
)
q = "The MLPs are limited by embeddings and run only at 14% and 40% of perfect linear scale up on 1,024 TPUv3 chips"
add(
    "001",
    "s001-fig7-production-mlp-scaling",
    "DSA supercomputer scaling",
    q,
    "scaling_efficiency",
    "%",
    ["TPUv3 supercomputer (1,024 chips)"],
    "production MLPs (embedding-bound)",
    14.0,
    none("embedding lookups are not modelled, and the applications are not described"),
)
q = "Simulations show that convolutional model utilization of four 128x128 MXUs is 37%–48%, which is 1.6x of a single 256x256 MXU (22%–30%) yet take about the same die area."
for cid, v, design, stat in (
    ("s001-mxu-4x128-low", 37.0, "4×128×128", "min"),
    ("s001-mxu-4x128-high", 48.0, "4×128×128", "max"),
    ("s001-mxu-1x256-low", 22.0, "1×256×256", "min"),
    ("s001-mxu-1x256-high", 30.0, "1×256×256", "max"),
    ("s001-mxu-4x128-over-1x256", 1.6, "ratio", "median"),
):
    unit = "x" if design == "ratio" else "%"
    add(
        "001",
        cid,
        "Designing a DSA supercomputer node (MXU size)",
        q,
        "mxu_utilization" if unit == "%" else "mxu_utilization_ratio",
        unit,
        [design if design != "ratio" else "4×128×128 over 1×256×256"],
        "convolutional models (seed: unnamed; paradnn: ResNet-50 and ParaDnn CNNs, batch 8)",
        v,
        dict(kind="mxu_study", design=design, stat=stat, batch=8),
        note="the seed's own numbers are simulations, not measurements",
    )
q = "Sixteen 64x64 MXUs would have a little higher utilization (38%–52%) but would need more area."
for cid, v, stat in (("s001-mxu-16x64-low", 38.0, "min"), ("s001-mxu-16x64-high", 52.0, "max")):
    add(
        "001",
        cid,
        "Designing a DSA supercomputer node (MXU size)",
        q,
        "mxu_utilization",
        "%",
        ["16×64×64"],
        "convolutional models (seed: unnamed; paradnn: ResNet-50 and ParaDnn CNNs, batch 8)",
        v,
        dict(kind="mxu_study", design="16×64×64", stat=stat, batch=8),
        note="the seed's own numbers are simulations, not measurements",
    )

# ---- seed 002 Table 8 ------------------------------------------------------------------------
t8 = TEXT["002"]
start = next(i for i, ln in enumerate(t8) if ln.startswith("PERF (samples/s)"))
COLS = [
    ("resnet50", 64),
    ("resnet50", 128),
    ("inception_v3", 64),
    ("inception_v3", 128),
    ("vgg16", 64),
    ("vgg16", 128),
    ("lstm_ptb", 64),
    ("lstm_ptb", 128),
    ("lstm_ptb", 256),
    ("deepspeech2", 8),
    ("deepspeech2", 16),
    ("deepspeech2", 32),
    ("transformer_base", 1024),
    ("transformer_base", 2048),
    ("transformer_base", 4096),
]
NAMES = {
    "resnet50": "ResNet-50",
    "inception_v3": "Inception v3",
    "vgg16": "VGG16",
    "lstm_ptb": "2-layer LSTM (PTB)",
    "deepspeech2": "Deep Speech 2",
    "transformer_base": "Transformer",
}
UNITS = {"lstm_ptb": "sequences/s", "deepspeech2": "utterances/s", "transformer_base": "tokens/s"}
DEV = {  # row -> (platform, precision, chips, device kind, label)
    "Titan X": ("titan-x-pascal", "fp32", 1, "gpu", "Titan X (Pascal) fp32"),
    "Radeon VII": ("radeon-vii", "fp32", 1, "gpu", "Radeon VII fp32"),
    "P100": ("data:p100-pcie", "fp32", 1, "gpu", "P100 PCIe fp32"),
    "V100": ("data:v100-pcie", "fp32", 1, "gpu", "V100 PCIe fp32"),
    "V100(MP)": ("data:v100-pcie", "fp16", 1, "gpu", "V100 PCIe mixed precision"),
    "TPU V2": ("tpu-v2", "bf16", 4, "tpu", "TPU v2-8 bf16"),
    "TPU V3": ("tpu-v3", "bf16", 4, "tpu", "TPU v3-8 bf16"),
    "CPU": ("data:xeon-8163-12c", "fp32", 1, "cpu", "Xeon Platinum 8163 (12 cores) fp32"),
}
for off in range(8):
    line = t8[start + off]
    cells = line.split("\t")
    name = cells[1].strip()
    vals = cells[2:]
    assert name in DEV, (name, line)
    assert len(vals) == 15, (name, vals)
    plat, prec, chips, kind, label = DEV[name]
    for (model, batch), raw in zip(COLS, vals, strict=True):
        raw = re.sub(r"</?b>", "", raw).strip()
        if raw in ("-", "OOM"):
            continue
        v = float(raw.replace(",", ""))
        if model == "transformer_base":
            per_chip = batch // chips
            length = 512 if per_chip >= 512 else per_chip
            cfg, mult = {"batch": per_chip // length, "length": length}, length
        else:
            cfg, mult = {"batch": batch // chips}, 1
            if model == "deepspeech2":
                cfg["frames"] = 400
        comp = dict(
            kind="throughput",
            family=model,
            config=cfg,
            platform=plat,
            precision=prec,
            per_example=mult,
        )
        if chips > 1:
            comp.update(chips=chips, topology="torus2d:2x2")
        mcfg = (
            {"batch": batch}
            if model != "transformer_base"
            else {"batch": cfg["batch"] * chips, "length": cfg["length"]}
        )
        cid = f"s002-t8-{name.lower().replace(' ', '').replace('(', '-').replace(')', '')}-{model}-{batch}"
        claims.append(
            dict(
                id=cid,
                seed="002",
                where="§4.2, Table 8 (PERF)",
                line=start + off + 1,
                quote=f"Table 8, row {name!r}, column {NAMES[model]} batch {batch}: {raw}",
                quantity="throughput",
                unit=UNITS.get(model, "images/s"),
                platforms=[label],
                workload=f"{NAMES[model]}, batch {batch}"
                + (" (tokens)" if model == "transformer_base" else ""),
                value=v,
                compute=comp,
                measure=dict(
                    kind="throughput",
                    family=model,
                    config=mcfg,
                    device=kind,
                    precision=prec,
                    per_example=mult,
                ),
                **(
                    {"note": "TPU batch taken as global (÷4 chips); the seed does not say"}
                    if chips > 1
                    else {}
                ),
            )
        )


# ---- emit ----
def tv(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(tv(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {tv(x)}" for k, x in v.items()) + " }" if v else "{}"
    raise TypeError(v)


out = [
    "# The seeds' quantitative claims that paradnn can measure or predict (and those it cannot, each",
    '# with its reason), for the report section "The papers beside paradnn" (docs/report.md).',
    "# Written by benchmarks/paper_claims.py from the seed texts, checked by hand: every quote is verbatim (whitespace",
    "# collapsed) at `line` of the seed's text, and every `value` appears in its quote (Table 8:",
    "# the cell of that row and column). `compute` says how paradnn predicts the number (step-time",
    "# model, paradnn.sim.papers); `measure` how the result databases can measure it here.",
    "schema = 1",
    "",
    "[seeds.000]",
    'title = "Benchmarking TPU, GPU, and CPU Platforms for Deep Learning (Wang, Wei, Brooks; ParaDnn)"',
    "[seeds.001]",
    'title = "A Domain-Specific Supercomputer for Training Deep Neural Networks (Jouppi et al., CACM 2020)"',
    "[seeds.002]",
    'title = "Benchmarking the Performance and Power of AI Accelerators for AI Training (Wang et al.)"',
    "",
]
for c in claims:
    out.append("[[claim]]")
    for k, v in c.items():
        out.append(f"{k} = {tv(v)}")
    out.append("")
with open(OUT, "w", encoding="utf-8") as f:
    f.write("\n".join(out))
print(len(claims), "claims")
