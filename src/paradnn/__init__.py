"""paradnn: parameterized deep-learning training benchmarks (after ParaDnn, Wang et al. 2020)."""

__version__ = "0.1.0"
