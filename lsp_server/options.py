"""Server options: a TOML config file, then the client's initializationOptions.

Both are decoded key by key into msgspec Structs, so one bad value falls back
to its default (and is reported) without losing the valid ones around it.
Keys are camelCase as in JSON; snake_case is accepted too (natural in TOML).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Annotated, Any, TypeVar

import msgspec

from speculator.config import EngineConfig
from speculator.syntax import MAX_DOCUMENT_CHARS
from speculator.types import Speculation

T = TypeVar("T", bound=msgspec.Struct)

NonNegative = Annotated[int, msgspec.Meta(ge=0)]


# The most tokens one request may ask for (maxTokens, refactorMaxTokens, --max-tokens).
MAX_TOKENS = 8192


class CompletionOptions(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    # Offer LSP completion items (completionProvider, read at initialize). Unset:
    # only to clients that do not show inline completions (eglot); an editor with
    # ghost text would list the same suggestion again in its completion menu
    # (nvim-cmp, blink.cmp).
    lsp_items: bool | None = None

    def offered_to(self, shows_inline_completions: bool) -> bool:
        return not shows_inline_completions if self.lsp_items is None else self.lsp_items


class ServerOptions(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    engine: EngineConfig = msgspec.field(default_factory=EngineConfig)
    completion: CompletionOptions = msgspec.field(default_factory=CompletionOptions)
    debounce_ms: Annotated[int, msgspec.Meta(ge=0, le=5000)] = 120
    max_tokens: Annotated[int, msgspec.Meta(ge=1, le=4096)] = 64
    # A typing completion stops at the first new line generated once the engine
    # has worked on it this long, its prompt included (llama.vim's
    # t_max_predict_ms and default, which counts from the first token): on a busy
    # machine or a cold file the first lines come in time, the rest on a later
    # keystroke. 0: no limit.
    max_predict_ms: Annotated[int, msgspec.Meta(ge=0, le=600_000)] = 1000
    # A typing completion is due this long after the engine starts on it, its
    # prompt included: on a machine too busy to write the first line in time,
    # it stops mid-line, at the last whole word (docs/benchmarks.md, "The typing
    # deadline"). A prompt that takes it all (a cold file) still gets its first
    # line. 0: no deadline.
    typing_deadline_ms: Annotated[int, msgspec.Meta(ge=0, le=600_000)] = 1500
    refactor_max_tokens: Annotated[int, msgspec.Meta(ge=1, le=MAX_TOKENS)] = 512
    speculation: Speculation = "auto"
    temperature: Annotated[float, msgspec.Meta(ge=0.0, le=2.0)] = 0.0
    # How long a request waits for the models to load before it gets an error
    # (loading takes seconds; an editor's first keystroke should still be served).
    load_wait_ms: NonNegative = 60_000
    # Warm the KV cache at the cursor after this much idle time (0: never).
    idle_warm_ms: NonNegative = 1500
    # Larger documents are kept in sync but get no completions.
    max_document_chars: Annotated[int, msgspec.Meta(ge=1, le=MAX_DOCUMENT_CHARS)] = (
        MAX_DOCUMENT_CHARS
    )
    # Typed-ahead completion cache entries (one per document in use).
    cache_entries: Annotated[int, msgspec.Meta(ge=0, le=1024)] = 16
    # Index the workspace's files (watchdog) for prompt context and drafting.
    workspace_index: bool = True


class StartupConfig(msgspec.Struct, kw_only=True):
    """Options the server starts with, and the problems found reading them."""

    options: ServerOptions = msgspec.field(default_factory=ServerOptions)
    problems: list[str] = msgspec.field(default_factory=list)
    config_path: str | None = None


def default_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(Path.home(), ".config")
    return Path(base) / "groundspec" / "config.toml"


def load_startup_config(
    config_path: str | None = None, *, fake: bool = False, use_draft: bool = True
) -> StartupConfig:
    """Read the config file (the given one, else the default if it exists).

    Never raises: an unreadable or invalid file gives default options plus a
    problem line that the server shows the client after `initialize`.
    """
    path = Path(config_path) if config_path else default_config_path()
    options, problems = ServerOptions(), list[str]()
    if config_path or path.exists():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
            options, problems = apply_overrides(options, data, f"{path}: ")
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            problems = [f"{path}: cannot read config ({exc}); using defaults"]
    if fake or not use_draft:  # the command line's --fake / --no-draft win over the file
        engine = msgspec.structs.replace(
            options.engine,
            fake=options.engine.fake or fake,
            use_draft=options.engine.use_draft and use_draft,
        )
        options = msgspec.structs.replace(options, engine=engine)
    return StartupConfig(
        options=options, problems=problems, config_path=str(path) if path.exists() else None
    )


def apply_overrides(base: T, data: Any, where: str = "") -> tuple[T, list[str]]:
    """`base` with the valid keys of `data` applied; problems name the rejected keys."""
    if data is None:
        return base, []
    if not isinstance(data, dict):
        return base, [f"{where}options must be an object, got {type(data).__name__}"]
    merged: dict[str, Any] = msgspec.to_builtins(base)
    problems: list[str] = []
    for raw_key, value in data.items():
        key = _camel(str(raw_key))
        name = _field_name(type(base), key)
        if name is None:
            problems.append(f"{where}{key}: unknown option; ignored")
            continue
        current = getattr(base, name)
        if isinstance(current, msgspec.Struct) and isinstance(value, dict):
            # Nested section (engine): keep its valid keys too.
            nested, nested_problems = apply_overrides(current, value, f"{where}{key}.")
            merged[key] = msgspec.to_builtins(nested)
            problems += nested_problems
            continue
        try:
            msgspec.convert({**merged, key: value}, type(base))
        except msgspec.ValidationError as exc:
            problems.append(f"{where}{key}: {_short(exc)}; using the default")
            continue
        merged[key] = value
    return msgspec.convert(merged, type(base)), problems


def _field_name(cls: type[msgspec.Struct], encoded: str) -> str | None:
    for field in msgspec.structs.fields(cls):
        if field.encode_name == encoded:
            return field.name
    return None


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _short(exc: msgspec.ValidationError) -> str:
    # "Expected `int`, got `str` - at `$.debounceMs`" -> the part before " - at".
    return str(exc).split(" - at ")[0]
