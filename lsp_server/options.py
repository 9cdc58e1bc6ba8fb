"""Server options: a TOML config file, then the client's initializationOptions.

Both are decoded key by key into msgspec Structs, so one bad value falls back
to its default (and is reported) without losing the valid ones around it.
Keys are camelCase as in JSON; snake_case is accepted too (natural in TOML).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import msgspec

from speculator.config import EngineConfig
from speculator.next_edit.proposal import MIN_CONFIDENCE
from speculator.syntax import MAX_DOCUMENT_CHARS
from speculator.types import Speculation

T = TypeVar("T", bound=msgspec.Struct)


# The most tokens one request may ask for (maxTokens, refactorMaxTokens, --max-tokens).
MAX_TOKENS = 8192
MAX_PARALLEL = 64  # HTTP request slots (httpParallel, --parallel)


def _help(text: str, **limits: Any) -> msgspec.Meta:
    """An option's help, read by the configuration reference (lsp_server/reference.py)."""
    return msgspec.Meta(description=text, **limits)


class CompletionOptions(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    lsp_items: Annotated[
        bool | None,
        _help(
            "Offer LSP completion items (`textDocument/completion`, read at initialize). "
            "Unset: only to clients that do not show inline completions (eglot); an editor "
            "with ghost text would list the same suggestion again in its completion menu."
        ),
    ] = None

    def offered_to(self, shows_inline_completions: bool) -> bool:
        return not shows_inline_completions if self.lsp_items is None else self.lsp_items


class ServerOptions(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    engine: Annotated[
        EngineConfig,
        _help("The engine: models, context, threads, backend. Applies at the next restart."),
    ] = msgspec.field(default_factory=EngineConfig)
    completion: Annotated[CompletionOptions, _help("How completions are offered.")] = msgspec.field(
        default_factory=CompletionOptions
    )
    debounce_ms: Annotated[
        int,
        _help("Wait this long after a keystroke for more typing before completing.", ge=0, le=5000),
    ] = 120
    max_tokens: Annotated[
        int, _help("The most tokens a typing completion generates.", ge=1, le=4096)
    ] = 64
    # llama.vim's t_max_predict_ms and default, which counts from the first token.
    max_predict_ms: Annotated[
        int,
        _help(
            "A typing completion stops at the first new line generated once the engine has "
            "worked on it this long, its prompt included: the first lines come in time, the "
            "rest on a later keystroke. 0: no limit.",
            ge=0,
            le=600_000,
        ),
    ] = 1000
    typing_deadline_ms: Annotated[
        int,
        _help(
            "A typing completion is due this long after the engine starts on it, its prompt "
            "included: on a machine too busy to write the first line in time it stops "
            "mid-line, at the last whole word. A cold file's prompt that takes it all still "
            "gets its first line. 0: no deadline.",
            ge=0,
            le=600_000,
        ),
    ] = 1500
    refactor_max_tokens: Annotated[
        int, _help("The most tokens a refactor generates.", ge=1, le=MAX_TOKENS)
    ] = 512
    speculation: Annotated[
        Speculation,
        _help(
            "How to draft: auto (lookup, sized by measured acceptance and cost), off (plain "
            "decoding), lookup, draft (the draft model), both."
        ),
    ] = "auto"
    temperature: Annotated[
        float, _help("0 is greedy and exact; above 0 samples (still lossless).", ge=0.0, le=2.0)
    ] = 0.0
    load_wait_ms: Annotated[
        int,
        _help(
            "How long a request waits for the models to load before it gets an error "
            "(loading takes seconds; an editor's first keystroke should still be served).",
            ge=0,
        ),
    ] = 60_000
    idle_warm_ms: Annotated[
        int, _help("Warm the KV cache at the cursor after this much idle time (0: never).", ge=0)
    ] = 1500
    max_document_chars: Annotated[
        int,
        _help(
            "Larger documents are kept in sync but get no completions.",
            ge=1,
            le=MAX_DOCUMENT_CHARS,
        ),
    ] = MAX_DOCUMENT_CHARS
    cache_entries: Annotated[
        int,
        _help("Typed-ahead completion cache entries (one per document in use).", ge=0, le=1024),
    ] = 16
    workspace_index: Annotated[
        bool,
        _help("Index the workspace's files (watchdog) for prompt context and drafting."),
    ] = True
    workspace_roots: Annotated[
        list[str],
        _help(
            "Folders an LSP client on TCP may have indexed besides the one the server was "
            "started in (at or under them). Read from the config file only: a client cannot "
            "widen it. `/`, the home folder itself and system folders are never indexed."
        ),
    ] = msgspec.field(default_factory=list)
    http_workspace_context: Annotated[
        bool,
        _help(
            "Put the workspace index's snippets (HTTP beside LSP) into the prompts of HTTP "
            "requests too; off: an HTTP client gets only the context it sends (input_extra), "
            "never another client's workspace files."
        ),
    ] = False
    http_cors_origins: Annotated[
        str,
        _help(
            "Which web pages' origins the HTTP server names back in Access-Control-Allow-Origin "
            "(llama-server's --cors-origins): `*` any request's Origin, `localhost` only "
            "loopback ones (localhost, 127.0.0.1, [::1], any port); anything else is sent as "
            "given."
        ),
    ] = "*"
    http_parallel: Annotated[
        int,
        _help(
            "HTTP request slots (llama-server's --parallel): this many generating requests "
            "are accepted at once, each listed busy in /slots with nCtx / httpParallel of "
            "the context; the one engine serves them in turns. More wait for a free slot.",
            ge=1,
            le=MAX_PARALLEL,
        ),
    ] = 1
    http_slots: Annotated[
        bool,
        _help(
            "Serve /slots (llama-server's --slots); off (--no-slots): it answers 501, so "
            "nobody can list or erase another client's requests."
        ),
    ] = True
    seed: Annotated[
        int,
        _help(
            "The sampling seed of an HTTP request that names none (-1: a random one each "
            "time); it matters above temperature 0 only.",
            ge=-1,
        ),
    ] = 0
    next_edit: Annotated[
        bool,
        _help(
            "Next-edit suggestions (groundspec/nextEdit, textDocument/copilotInlineEdit); "
            "off: every such request is answered with no edit."
        ),
    ] = True
    next_edit_format: Annotated[
        Literal["qwen", "zeta2", "sweep"],
        _help(
            "The next-edit prompt layout: qwen (the shipped instruct model), or zeta2 / sweep "
            "for those next-edit models' GGUFs (docs/next-edit.md)."
        ),
    ] = "qwen"
    next_edit_rewrite: Annotated[
        bool,
        _help(
            "With the qwen format: the model also writes the window anew (decoded with "
            "grounded speculation) instead of only scoring the draft's change. For an "
            "instruct model that can write next edits; seconds more per suggestion. The "
            "zeta2 and sweep formats always rewrite (docs/next-edit.md).",
        ),
    ] = False
    next_edit_debounce_ms: Annotated[
        int,
        _help(
            "textDocument/copilotInlineEdit (sent by clients as the user types) waits for "
            "this pause in typing; groundspec/nextEdit (an explicit ask) runs at once.",
            ge=0,
            le=5000,
        ),
    ] = 300
    next_edit_min_confidence: Annotated[
        float,
        _help(
            "The least probability the model may give a token of a proposed next edit; "
            "below it nothing is proposed. A rename carried on needs this raised to the "
            "power 0.8 (0.0096 for the default), an import copied from another file "
            "this raised to the power 1.5 (0.00016).",
            ge=0.0,
            le=1.0,
        ),
    ] = MIN_CONFIDENCE


# Help for the engine section, whose Struct (speculator/config.py) is the engine's
# own: the reference reads it from here, and a test fails when a field has none.
ENGINE_HELP = {
    "backend": "Where the model runs: local (in-process), llama-server or openai (a shared "
    "server). Env GROUNDSPEC_BACKEND.",
    "backend_url": "The shared server's base URL; unset: the backend's usual loopback address. "
    "Env GROUNDSPEC_BACKEND_URL.",
    "target_model": "Target GGUF; unset: the default model assembled by `groundspec models "
    "fetch`. Env GROUNDSPEC_TARGET_MODEL.",
    "draft_model": "Draft GGUF with the target's vocabulary; unset: the default draft. "
    "Env GROUNDSPEC_DRAFT_MODEL.",
    "use_draft": "Load the draft model (it pays only where verification is nearly free, a GPU).",
    "n_gpu_layers": "Layers to offload to the GPU; unset: all when the build can. "
    "Env GROUNDSPEC_N_GPU_LAYERS.",
    "threads": "CPU threads; unset: the number of cores. Env GROUNDSPEC_THREADS.",
    "adaptive_threads": "Leave cores that other processes keep busy to them. "
    "Env GROUNDSPEC_ADAPTIVE_THREADS (0 or 1).",
    "n_ctx": "Context size in tokens. Env GROUNDSPEC_N_CTX.",
    "kv_ram_mb": "RAM for per-document KV slots, MiB (0: off). Env GROUNDSPEC_KV_RAM_MB.",
    "kv_disk_mb": "Disk for per-document KV slots, MiB (0: off). Env GROUNDSPEC_KV_DISK_MB.",
    "kv_dir": "Where KV slots go on disk; unset: kv-slots in the groundspec cache folder. "
    "Env GROUNDSPEC_KV_DIR.",
    "quick_window_tokens": "An unseen file's first suggestion comes from a prompt window of "
    "about this many tokens while the full prompt warms (0: off). "
    "Env GROUNDSPEC_QUICK_WINDOW_TOKENS.",
    "fake": "A deterministic fake engine, for protocol tests. Env GROUNDSPEC_FAKE_ENGINE=1.",
}


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
