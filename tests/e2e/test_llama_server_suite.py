"""llama.cpp's own server tests (tools/server/tests of the llama.cpp the pinned
llama-cpp-python vendors) pass against `groundspec serve --http` on the default
models wherever llama-server passes them on the same model (marked `model`:
run under the model lock). tests/e2e/llama_suite.py runs them through the shim;
tests/e2e/llama_shim/expected.txt lists llama-server's passes, derived with the
same harness. Those groundspec fails on purpose (llama_suite.DELIBERATE, said in
docs/http.md) or does not pass yet (llama_suite.KNOWN_FAILING) are left out. One
case per test file, each a few minutes on two cores (each of llama.cpp's cases
starts its own server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from speculator import provision

from . import llama_suite

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    try:
        source = llama_suite.tests_source()
    except Exception as exc:  # no registry to fetch the sdist from
        pytest.skip(f"llama.cpp's server tests are not available: {exc}")
    return llama_suite.prepare(tmp_path_factory.mktemp("llama-suite"), source)


@pytest.mark.parametrize("file", llama_suite.FILES)
def test_llama_cpp_server_tests_pass_where_llama_server_does(suite_dir: Path, file: str) -> None:
    wanted = [
        t
        for t in llama_suite.expected()
        if t.startswith(f"{file}.py::")
        and t not in llama_suite.DELIBERATE
        and t not in llama_suite.KNOWN_FAILING
    ]
    if not wanted:
        pytest.skip(f"llama-server passes none of {file} on the default model")
    model = provision.model_path(provision.TARGET)
    if not model.exists():
        pytest.skip("the default models are not fetched (groundspec models fetch)")
    # Only the asserted cases, each with its own share of the time: the rest of a
    # file (cases llama-server fails on this model) would only spend it.
    results = llama_suite.run(suite_dir, "groundspec", model, wanted)
    failed = {t: results.get(t, "not run") for t in wanted if results.get(t) != "passed"}
    assert not failed, f"{len(failed)} of {len(wanted)} failed: {failed}"
