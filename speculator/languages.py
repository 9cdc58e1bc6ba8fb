"""tree-sitter grammars by LSP languageId (per-language wheels, loaded lazily)."""

from __future__ import annotations

import functools
import importlib
import logging

import tree_sitter

log = logging.getLogger(__name__)

# languageId -> (module, function returning the grammar's language pointer)
_GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "javascriptreact": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "typescriptreact": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
}

_EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascriptreact",
    ".ts": "typescript",
    ".tsx": "typescriptreact",
    ".go": "go",
    ".rs": "rust",
}


def language_id_for_path(path: str) -> str:
    """Best-guess LSP languageId from a file name ("plaintext" when unknown)."""
    for ext, language_id in _EXTENSIONS.items():
        if path.endswith(ext):
            return language_id
    return "plaintext"


def document_language_id(language_id: str, uri: str) -> str:
    """The languageId a document is read as: the client's, when a grammar knows it
    (any case); else, when the file name says, its extension's. Clients and
    scripts send what they call a language ("Python", "py", "plaintext", or
    nothing), and a .py file read as plain text would get no tree."""
    if language_id.lower() in _GRAMMARS:
        return language_id.lower()
    guess = language_id_for_path(uri.split("?", 1)[0].split("#", 1)[0])
    if guess == "plaintext":
        return language_id
    log.debug("%s: languageId %r read as %s, from its name", uri, language_id, guess)
    return guess


@functools.cache
def grammar(language_id: str) -> tree_sitter.Language | None:
    """The tree-sitter Language for a languageId, or None if we have no grammar."""
    entry = _GRAMMARS.get(language_id)
    if entry is None:
        return None
    module_name, function_name = entry
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        log.warning("grammar package %s is not installed", module_name)
        return None
    return tree_sitter.Language(getattr(module, function_name)())


def new_parser(language_id: str) -> tree_sitter.Parser | None:
    """A fresh parser for the language (parsers are not shared between threads)."""
    language = grammar(language_id)
    return tree_sitter.Parser(language) if language is not None else None
