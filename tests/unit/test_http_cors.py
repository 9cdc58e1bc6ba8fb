"""Which origin the HTTP door names back (lsp_server/http_guard.py), as llama-server's
--cors-origins decides it (the option httpCorsOrigins)."""

from __future__ import annotations

import pytest

from lsp_server.http_guard import allowed_origin


@pytest.mark.parametrize(
    "origin",
    ["http://localhost", "http://localhost:8080", "http://127.0.0.1:3000", "http://[::1]:3000"],
)
def test_localhost_reflects_loopback_origins(origin: str) -> None:
    assert allowed_origin(origin, "localhost") == origin
    assert allowed_origin(origin, "*") == origin


@pytest.mark.parametrize(
    "origin",
    ["http://web.mydomain.fr", "http://notlocalhost", "http://localhost.evil.com", "", "http://["],
)
def test_localhost_leaves_other_origins_out(origin: str) -> None:
    assert allowed_origin(origin, "localhost") is None


def test_any_other_setting_is_sent_as_given() -> None:
    assert allowed_origin("http://evil.com", "https://app.example") == "https://app.example"
