"""Wire formats of the HTTP front door: llama-server's and OpenAI's request bodies,
and the responses built from engine results.

Bodies decode into msgspec Structs: unknown fields are ignored (clients send many
llama-server sampler options we have no use for), a field of the wrong type is a
clear error naming its JSON path. Responses keep llama-server's key order, since
some clients read the raw text before decoding it.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections import Counter
from typing import Annotated, Any, Literal

import msgspec

from speculator.languages import language_id_for_path
from speculator.types import CompletionResult, Speculation, Stats

Temperature = Annotated[float, msgspec.Meta(ge=0.0, le=2.0)]
Probability = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
MAX_PREDICT = 4096  # n_predict / max_tokens above this are clamped
FINGERPRINT = "groundspec"


class BadRequest(Exception):
    """A request we refuse with 400 and llama-server's error shape."""


def decode(body: bytes, kind: type[Any]) -> Any:
    """Decode a JSON body into `kind`, or raise BadRequest with a readable reason."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(f"the request body is not valid UTF-8 (byte {exc.start})") from None
    try:
        raw = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        if _lone_surrogate(body):
            raise BadRequest(
                "the request body has an unpaired UTF-16 surrogate escape (half of a pair "
                'such as "\\ud83d\\ude00"), which is no character: send both halves'
            ) from None
        raise BadRequest(f"the request body is not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise BadRequest("the request body must be a JSON object")
    try:
        return msgspec.convert(raw, kind)
    except msgspec.ValidationError as exc:
        raise BadRequest(f"invalid request: {exc}") from None


def _lone_surrogate(body: bytes) -> bool:
    """Whether a string in `body` holds half a UTF-16 pair (such as "\\ud83d"), which
    msgspec refuses as "Input data was truncated". Only on the error path: Python's
    parser keeps such halves, and UTF-8 cannot encode them."""
    try:
        json.dumps(json.loads(body), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    except (ValueError, RecursionError):  # not JSON to Python either
        pass
    return False


# -- llama-server: /infill and /completion ------------------------------------------


class ExtraChunk(msgspec.Struct):
    """One input_extra entry: a piece of another file (llama.vim also sends `time`);
    `text` is required, as llama-server requires it."""

    text: str
    filename: str = ""


class _Sampling(msgspec.Struct, kw_only=True):
    n_predict: Annotated[int, msgspec.Meta(ge=-1)] = -1
    temperature: Temperature | None = None
    top_k: int | None = None
    top_p: Probability | None = None
    min_p: Probability | None = None
    seed: int | None = None
    samplers: list[str] | str | None = None  # accepted, not used: decoding is our own
    stop: list[str] | None = None
    t_max_prompt_ms: float | None = None
    t_max_predict_ms: float | None = None
    cache_prompt: bool = True
    id_slot: int = -1
    n_probs: int = 0  # the top tokens reported at each generated one (http_probs.py)
    post_sampling_probs: bool = False
    logit_bias: Any = None  # [[token or text, bias], ...] or {token or text: bias}
    stream: bool = False
    response_fields: list[str] | None = None
    # groundspec extensions (llama-server ignores them): what file this is
    filename: str | None = None
    language: str | None = None
    speculation: Speculation | None = None


class InfillBody(_Sampling, kw_only=True):
    input_prefix: str = ""
    input_suffix: str = ""
    input_extra: list[ExtraChunk] = msgspec.field(default_factory=list)
    prompt: str = ""  # the typed part of the current line, after input_prefix
    n_indent: Annotated[int, msgspec.Meta(ge=0)] = 0


class CompletionBody(_Sampling, kw_only=True):
    prompt: Any  # text, token ids or a list of them: http_prompts.prompts_of reads it


def guess_language(body: _Sampling, extra: list[ExtraChunk] | None = None) -> str:
    """The languageId: named, from the file name, or the commonest extra file's."""
    if body.language:
        return body.language
    if body.filename:
        return language_id_for_path(body.filename)
    guesses = Counter(language_id_for_path(c.filename) for c in extra or [] if c.filename)
    guesses.pop("plaintext", None)
    return guesses.most_common(1)[0][0] if guesses else "plaintext"


# -- OpenAI: /v1/completions and /v1/chat/completions -------------------------------


class StreamOptions(msgspec.Struct):
    include_usage: bool = False


class _OpenAISampling(msgspec.Struct, kw_only=True):
    model: str | None = None
    max_tokens: Annotated[int, msgspec.Meta(ge=-1)] | None = None
    temperature: Temperature | None = None
    top_p: Probability | None = None
    top_k: int | None = None  # not OpenAI's: llama-server and vLLM take them
    min_p: Probability | None = None
    seed: int | None = None
    stop: str | list[str] | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: Annotated[int, msgspec.Meta(ge=1, le=8)] = 1
    user: str | None = None
    # accepted from llama-server style clients (llama.vscode sends them on chat too)
    id_slot: int = -1
    filename: str | None = None
    language: str | None = None
    speculation: Speculation | None = None

    def stops(self) -> list[str]:
        if self.stop is None:
            return []
        return [self.stop] if isinstance(self.stop, str) else self.stop


class OpenAICompletionBody(_OpenAISampling, kw_only=True):
    prompt: Any  # text, token ids or a list of them: http_prompts.prompts_of reads it
    suffix: str | None = None
    echo: bool = False
    logprobs: int | None = None  # llama-server's n_probs (http_probs.py)
    post_sampling_probs: bool = False
    logit_bias: Any = None  # [[token or text, bias], ...] or {token or text: bias}


class ContentPart(msgspec.Struct):
    type: str = "text"
    text: str = ""


class ChatMessage(msgspec.Struct):
    role: str
    content: str | list[ContentPart] | None = None

    def text(self) -> str:
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(part.text for part in self.content if part.type == "text")


class ChatBody(_OpenAISampling, kw_only=True):
    messages: Annotated[list[ChatMessage], msgspec.Meta(min_length=1)]


# -- instruction edits carried in a chat message ------------------------------------


class EditAsk(msgspec.Struct):
    """A selection to rewrite by an instruction, with the code around it."""

    text: str
    start: int
    end: int
    instruction: str


# llama.vscode: "...instructions:\n{instructions}\n\noriginal code:\n{code}\n\nmodified code:"
_VSCODE_EDIT = re.compile(
    r"instructions:\n(?P<instruction>.*?)\n\noriginal code:\n(?P<code>.*)\n\nmodified code:\s*\Z",
    re.DOTALL,
)
# llama.vim: "--- instruction ---\n...\n--- selected block ---\nN: line\n...\n--- end ---"
_VIM_SECTION = re.compile(r"^--- (?P<name>[a-z ()]+?) -*(?:\n|\Z)", re.MULTILINE)
_NUMBERED = re.compile(r"^\d+: ?", re.MULTILINE)
_FENCE = re.compile(r"```[^\n]*\n(?P<code>.*?)```", re.DOTALL)


def find_edit(messages: list[ChatMessage]) -> EditAsk | None:
    """The instruction edit the last user message asks for (llama.vscode's or
    llama.vim's edit prompt, or a ``` block with the instruction), or None: a
    plain chat."""
    users = [m for m in messages if m.role == "user"]
    if not users:
        return None
    message = users[-1].text()
    return _vscode_edit(message) or _vim_edit(message) or _fenced_edit(message)


def edit_ask(messages: list[ChatMessage]) -> EditAsk:
    """The edit in the last user message (find_edit), with its instruction."""
    ask = find_edit(messages)
    if ask is None:
        raise BadRequest("the messages ask for no instruction edit")
    if not ask.instruction.strip():
        raise BadRequest("the edit request has no instruction")
    return ask


def _vscode_edit(message: str) -> EditAsk | None:
    match = _VSCODE_EDIT.search(message)
    if match is None:
        return None
    code = match["code"]
    return EditAsk(text=code, start=0, end=len(code), instruction=match["instruction"].strip())


def _vim_edit(message: str) -> EditAsk | None:
    sections = _split_sections(message)
    if "instruction" not in sections or "selected block" not in sections:
        return None
    selected = _unnumber(sections["selected block"])
    before, after = "", ""
    around = sections.get("surrounding context (optional)", "")
    if around:
        head, _, tail = around.partition("after:\n")
        before = _unnumber(head.removeprefix("before:\n"))
        after = _unnumber(tail)
    text = before + selected + after
    return EditAsk(
        text=text,
        start=len(before),
        end=len(before) + len(selected),
        instruction=sections["instruction"].strip(),
    )


def _split_sections(message: str) -> dict[str, str]:
    marks = list(_VIM_SECTION.finditer(message))
    return {
        mark.group("name").strip(): message[
            mark.end() : marks[i + 1].start() if i + 1 < len(marks) else len(message)
        ]
        for i, mark in enumerate(marks)
    }


def _unnumber(block: str) -> str:
    return _NUMBERED.sub("", block)


def _fenced_edit(message: str) -> EditAsk | None:
    match = _FENCE.search(message)
    if match is None:
        return None
    code = match["code"]
    instruction = (message[: match.start()] + message[match.end() :]).strip()
    return EditAsk(text=code, start=0, end=len(code), instruction=instruction)


# -- post-processing llama-server applies to generated text -------------------------


class Finish(msgspec.Struct):
    content: str
    stop_type: Literal["none", "eos", "limit", "word"]
    stopping_word: str = ""


def _dedent_cut(text: str, n_indent: int) -> int | None:
    """Where the first non-blank line indented less than `n_indent` starts (its
    newline is cut too), or None."""
    if n_indent <= 0:
        return None
    start = 0
    for line in text.split("\n"):
        indent = len(line) - len(line.lstrip(" \t"))
        if start > 0 and line.strip() and indent < n_indent:
            return start - 1
        start += len(line) + 1
    return None


def finish(
    text: str,
    stops: list[str],
    n_indent: int,
    n_predict: int,
    generated: int,
    *,
    timed_out: bool = False,
) -> Finish:
    """Cut at the first stop string (dropped, like llama-server) or at the first new
    line indented less than `n_indent` (the infill rule), whichever comes first; say
    why decoding stopped (`timed_out`: by t_max_predict_ms, which llama-server
    reports as a limit)."""
    cut, word = len(text), ""
    for stop in stops:
        at = text.find(stop) if stop else -1
        if 0 <= at < cut:
            cut, word = at, stop
    dedent = _dedent_cut(text, n_indent)
    if dedent is not None and dedent < cut:
        return Finish(text[:dedent], "limit")
    if word:
        return Finish(text[:cut], "word", word)
    if timed_out or (n_predict > 0 and generated >= n_predict):
        return Finish(text, "limit")
    return Finish(text, "eos")


def rest_of_line(text: str, cursor: int) -> str:
    """What follows the cursor on its line (a completion may stop where it repeats it)."""
    end = text.find("\n", cursor)
    return text[cursor : end if end >= 0 else len(text)].strip()


def streamable(text: str, hold: int) -> str:
    """The part of a completion so far that more tokens can no longer change: its
    complete lines (a later line may be dropped, an earlier one not), less the last
    `hold` characters (the start of a stop string, or of the text after the
    cursor), less trailing blanks (dropped at the end; sent with what follows)."""
    newline = text.rfind("\n")
    end = min(len(text) if newline < 0 else newline, max(0, len(text) - hold))
    return text[:end].rstrip()


# -- responses ------------------------------------------------------------------------


def timings(stats: Stats) -> dict[str, Any]:
    """llama-server's `timings`, with its draft counts when drafting ran."""
    prompt_n = max(0, stats.prompt_tokens - stats.reused_prompt_tokens)
    out: dict[str, Any] = {
        "cache_n": stats.reused_prompt_tokens,
        "prompt_n": prompt_n,
        "prompt_ms": stats.prompt_ms,
        "prompt_per_token_ms": stats.prompt_ms / prompt_n if prompt_n else 0.0,
        "prompt_per_second": 1e3 * prompt_n / stats.prompt_ms if stats.prompt_ms else 0.0,
        "predicted_n": stats.generated_tokens,
        "predicted_ms": stats.decode_ms,
        "predicted_per_token_ms": (
            stats.decode_ms / stats.generated_tokens if stats.generated_tokens else 0.0
        ),
        "predicted_per_second": (
            1e3 * stats.generated_tokens / stats.decode_ms if stats.decode_ms else 0.0
        ),
    }
    if stats.drafted_tokens > 0:
        out["draft_n"] = stats.drafted_tokens
        out["draft_n_accepted"] = stats.accepted_tokens
    return out


def llama_completion(
    result: CompletionResult,
    done: Finish,
    *,
    model: str,
    prompt: str,
    id_slot: int,
    settings: dict[str, Any],
    response_fields: list[str] | None,
    probabilities: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The body of a finished /infill or /completion, in llama-server's key order."""
    stats = result.stats
    body: dict[str, Any] = {
        "index": 0,
        "content": done.content,
        "tokens": [],
        "id_slot": id_slot,
        "stop": True,
        "model": model,
        "tokens_predicted": stats.generated_tokens,
        "tokens_evaluated": stats.prompt_tokens,
        "generation_settings": settings,
        "prompt": prompt,
        "has_new_line": "\n" in done.content,
        "truncated": False,
        "stop_type": done.stop_type,
        "stopping_word": done.stopping_word,
        "tokens_cached": stats.prompt_tokens + stats.generated_tokens,
        "timings": timings(stats),
    }
    if probabilities:  # n_probs asked for (in a stream: in the partial events)
        body["completion_probabilities"] = probabilities
    return nested_fields(response_fields, body) if response_fields else body


def nested_fields(paths: list[str], body: dict[str, Any]) -> dict[str, Any]:
    """llama-server's response_fields: "a/b" picks body["a"]["b"] under the key "a/b"."""
    out: dict[str, Any] = {}
    for path in paths:
        current: Any = body
        for key in path.split("/"):
            if not isinstance(current, dict) or key not in current:
                break
            current = current[key]
        else:
            out[path] = current
    return out


def usage(stats_list: list[Stats]) -> dict[str, Any]:
    prompt = sum(s.prompt_tokens for s in stats_list)
    completion = sum(s.generated_tokens for s in stats_list)
    return {
        "completion_tokens": completion,
        "prompt_tokens": prompt,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": sum(s.reused_prompt_tokens for s in stats_list)},
    }


def finish_reason(done: Finish) -> str:
    return "length" if done.stop_type == "limit" else "stop"


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:24]}"


def openai_envelope(kind: str, ident: str, model: str) -> dict[str, Any]:
    """The fields every OpenAI completion object and chunk shares (after `choices`)."""
    return {
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": FINGERPRINT,
        "object": kind,
        "id": ident,
    }
