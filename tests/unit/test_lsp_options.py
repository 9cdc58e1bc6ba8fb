"""Options: valid keys apply, invalid ones fall back to defaults and are reported."""

from pathlib import Path

from lsp_server.options import ServerOptions, apply_overrides, load_startup_config


def test_valid_overrides_apply_including_nested_engine() -> None:
    options, problems = apply_overrides(
        ServerOptions(),
        {"debounceMs": 50, "engine": {"nCtx": 2048, "threads": 2}, "speculation": "lookup"},
    )
    assert problems == []
    assert options.debounce_ms == 50
    assert options.engine.n_ctx == 2048 and options.engine.threads == 2
    assert options.speculation == "lookup"


def test_invalid_values_fall_back_and_keep_the_valid_ones() -> None:
    options, problems = apply_overrides(
        ServerOptions(),
        {
            "debounceMs": "fast",
            "maxTokens": 0,
            "speculation": "warp",
            "engine": {"nCtx": "big", "threads": 3},
            "colour": "red",
            "temperature": 0.2,
        },
    )
    defaults = ServerOptions()
    assert options.debounce_ms == defaults.debounce_ms
    assert options.max_tokens == defaults.max_tokens
    assert options.speculation == defaults.speculation
    assert options.engine.n_ctx == defaults.engine.n_ctx
    assert options.engine.threads == 3
    assert options.temperature == 0.2
    joined = "\n".join(problems)
    for key in ("debounceMs", "maxTokens", "speculation", "engine.nCtx", "colour"):
        assert key in joined
    assert len(problems) == 5


def test_non_object_options_are_reported() -> None:
    options, problems = apply_overrides(ServerOptions(), ["not", "a", "dict"])
    assert options == ServerOptions()
    assert "must be an object" in problems[0]


def test_config_file_accepts_snake_case_and_reports_bad_values(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("debounce_ms = 30\nmax_tokens = -1\n[engine]\nn_gpu_layers = 0\n")
    config = load_startup_config(str(path), fake=True)
    assert config.options.debounce_ms == 30
    assert config.options.engine.n_gpu_layers == 0
    assert config.options.engine.fake is True
    assert len(config.problems) == 1 and "maxTokens" in config.problems[0]


def test_broken_or_missing_config_file_gives_defaults(tmp_path: Path) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text("debounce_ms = = 3")
    config = load_startup_config(str(broken))
    assert config.options == ServerOptions()
    assert "cannot read config" in config.problems[0]
    missing = load_startup_config(str(tmp_path / "missing.toml"))
    assert missing.options == ServerOptions() and missing.problems


def test_no_draft_on_the_command_line_wins_over_the_file(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[engine]\nuse_draft = true\n")
    assert load_startup_config(str(path)).options.engine.use_draft is True
    config = load_startup_config(str(path), use_draft=False)
    assert config.options.engine.use_draft is False
    assert config.options.engine.fake is False
