"""Who may use a shared server: the API key, and when one is required.

The key is checked as llama-server checks its `--api-key`: HTTP clients send
`Authorization: Bearer KEY` (or `X-Api-Key: KEY`); everything but the public
endpoints (/health, /models) answers 401 without it. LSP clients on TCP send it
in `initialize`'s `initializationOptions.apiKey` (lsp_server/lsp_gate.py).

A server reachable beyond this machine without a key would recite its
workspace's code to anyone who can connect, so binding anything but loopback
needs a key, or `--insecure-no-key` to say the user means it.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
from collections.abc import Mapping

from .startup import parse_http, parse_tcp

KEY_ENV = "GROUNDSPEC_API_KEY"
# llama-server's public endpoints (tools/server/server-http.cpp in the llama.cpp the
# pinned llama-cpp-python vendors; its web UI aside): a client polls /health before it
# knows whether a key is needed. /models tells which model runs: keyed, as there.
PUBLIC_PATHS = frozenset({"/health", "/v1/health"})


def resolve_key(flag: str | None) -> str | None:
    """The key `serve` requires: --api-key, else GROUNDSPEC_API_KEY; None when neither."""
    key = flag if flag is not None else os.environ.get(KEY_ENV)
    return key or None


def is_loopback(host: str) -> bool:
    """Whether `host` is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name, or "" (every interface): may resolve to anything


def check_exposure(
    *, tcp: str | None, http: str | None, key: str | None, insecure_no_key: bool
) -> None:
    """Raise ValueError (one line) when a listening address is beyond loopback
    and no key protects it."""
    if key or insecure_no_key:
        return
    hosts = ([("--tcp", parse_tcp(tcp)[0])] if tcp else []) + (
        [("--http", parse_http(http)[0])] if http else []
    )
    for flag, host in hosts:
        if not is_loopback(host):
            raise ValueError(
                f"{flag} {host} is reachable from other machines and no key protects it: "
                f"give --api-key KEY (or set {KEY_ENV}), or --insecure-no-key if anyone "
                "who can connect may read this workspace's code"
            )


def key_matches(presented: str | None, key: str) -> bool:
    """Constant-time comparison (no timing hint about the key's characters)."""
    if presented is None:
        return False
    return hmac.compare_digest(presented.encode("utf-8"), key.encode("utf-8"))


def presented_key(headers: Mapping[str, str]) -> str | None:
    """The key an HTTP request carries, as llama-server reads it: Authorization
    (with or without "Bearer "), else X-Api-Key."""
    value = headers.get("Authorization") or headers.get("X-Api-Key")
    if not value:
        return None
    return value.removeprefix("Bearer ")


def needs_key(path: str) -> bool:
    return path not in PUBLIC_PATHS
