"""The what-if accelerator model behind `paradnn simulate` (docs/simulate.md). Torch-free.

systolic     GEMM cycles on systolic arrays (SCALE-Sim v2 closed forms, OS/WS/IS, many MXUs)
lowering     a workload's shapes → the GEMMs of one training step
memory       bytes per GEMM, roofline and serial bounds, optimizer/elementwise traffic, capacity
precision    byte widths; bf16 rounding emulation and the matmul-error study
interconnect α–β all-reduce on rings and 2D/3D tori, bisection bandwidth, data-parallel step
chip         the chip: platform database entry, user TOML, or measured ceilings
model        predict(): per-GEMM roofline and whole-step predictions; scaling curves
steptime     predict_step(): the step-time model, term by term (overheads, efficiencies, host, comm)
stepparams   a device's step-time parameters: defaults by kind, a chip file's [id.step] table
fit          fit those parameters from a measured sweep (held-out split by config hash)
studies      the MXU-size study; topologies: SCALE-Sim's ResNet-50 layer list
validate     predictions joined with measured runs; MdAPE per family
render       rich tables of the rows

Everything these modules return is a prediction and says so (``kind = "prediction"``).
"""
