"""Executing configurations: one in this process (`execute`), many in isolated worker processes
(`supervisor`, `worker`)."""
