"""Executing configurations: one config in this process (`execute`), many in order (`local`)."""
