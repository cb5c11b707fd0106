"""Started with this folder on PYTHONPATH (tests/fake_cuda.py `worker_env`), a Python process —
a paradnn worker spawned by a test — sees the fake CUDA device of tests/fake_cuda.py, and with
PARADNN_FAKE_CLOCK=1 its fake clock. Without PARADNN_FAKE_CUDA=1 it does nothing."""

import os

if os.environ.get("PARADNN_FAKE_CUDA") == "1":
    import fake_cuda

    fake_cuda.install()
    if os.environ.get("PARADNN_FAKE_CLOCK") == "1":
        fake_cuda.install_fake_clock()
