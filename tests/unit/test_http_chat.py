"""Plain chat on /v1/chat/completions (lsp_server/http_chat.py), on plain data."""

from __future__ import annotations

import msgspec
import pytest

from lsp_server.http_chat import chat_prompt, chat_request, chatml, messages_of
from lsp_server.http_wire import BadRequest, ChatBody
from lsp_server.options import ServerOptions
from speculator.fake import FakeEngine

OPTIONS = ServerOptions()
CHAT = [{"role": "system", "content": "You are a chatbot."}, {"role": "user", "content": "Hi"}]


class TemplatedModel:
    """A vocabulary with a chat template (speculator/models.py's Model)."""

    n_vocab = 10

    def tokenize(self, text: str, special: bool = False) -> list[int]:
        return []

    def token_bytes(self, token: int, special: bool = False) -> bytes:
        return b""

    def format_chat(self, messages: list[dict[str, str]]) -> str:
        return "|".join(m["content"] for m in messages) + "|>"


class TemplatedEngine(FakeEngine):
    target = TemplatedModel()


def test_the_models_template_renders_the_chat_and_chatml_stands_in_without_one() -> None:
    assert chat_prompt(TemplatedEngine(), CHAT) == "You are a chatbot.|Hi|>"
    assert chat_prompt(FakeEngine(), CHAT) == chatml(CHAT)
    assert chatml(CHAT) == (
        "<|im_start|>system\nYou are a chatbot.<|im_end|>\n"
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    )


def test_a_chat_is_a_raw_completion_to_the_end() -> None:
    body = msgspec.convert({"messages": CHAT, "stop": "\n\n", "seed": 3}, ChatBody)
    assert messages_of(body) == CHAT
    completion = chat_request(body, "PROMPT", OPTIONS)
    assert (completion.text, completion.cursor) == ("PROMPT", 6)
    assert (completion.prompt_format, completion.ends_at, completion.stop) == (
        "raw",
        "limit",
        ["\n\n"],
    )
    assert completion.max_tokens == OPTIONS.refactor_max_tokens and completion.seed == 3
    asked = msgspec.structs.replace(body, max_tokens=10)
    assert chat_request(asked, "PROMPT", OPTIONS).max_tokens == 10


def test_media_in_a_chat_is_refused() -> None:
    image = {"type": "image_url", "image_url": {"url": "file://a.jpeg"}}
    content = [{"type": "text", "text": "what is this?"}, image]
    body = msgspec.convert({"messages": [{"role": "user", "content": content}]}, ChatBody)
    with pytest.raises(BadRequest, match="text only"):
        messages_of(body)
    text_only = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
    assert messages_of(msgspec.convert(text_only, ChatBody)) == [{"role": "user", "content": "hi"}]
