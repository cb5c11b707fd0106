"""Measurement: timing, FLOP counting, precision contexts, memory and the environment."""
