"""The real-world models of the two studies, defined here (no downloads), each a `Family` of
kind "real": seed 000's ResNet-50, DenseNet-121, MobileNetV2, SqueezeNet 1.1, RetinaNet and
Transformer, and seed 002's VGG16, Inception v3, 2-layer LSTM and Deep Speech 2 (Table 5).

The analytic modules are torch-free; the torch modules live in `_vision_torch` and
`_sequence_torch` and load in `build`. docs/models.md lists each model's source and counts.
The registry (`paradnn.families`) names each module; nothing here imports them.
"""
