# conftest.py for llama.cpp's server tests run through tests/e2e/llama_shim/shim.py
# (tests/e2e/llama_suite.py copies it in as conftest.py). llama.cpp's own conftest.py,
# less its load_server_presets fixture: that one starts every preset once to download
# the tests' tiny models (and needs filelock); through the shim every preset runs the
# default model, which is on disk already.
import os

import pytest
from utils import *  # noqa: F403


@pytest.fixture(scope="session", autouse=True)
def configure_worker_port(request):
    worker_id = getattr(request.config, "workerinput", {}).get("workerid", "master")
    if worker_id != "master":
        worker_num = int(worker_id[2:])
        os.environ["PORT"] = str(8080 + worker_num * 10)


@pytest.fixture(autouse=True)
def stop_server_after_each_test():
    yield
    for server in set(server_instances):  # noqa: F405
        server.stop()
