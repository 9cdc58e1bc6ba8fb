"""An editor session, with Neovim's and VS Code's capabilities: open, type, complete, refactor."""

from __future__ import annotations

import asyncio

from lsprotocol import types
from pytest_lsp import LanguageClient

from .conftest import FAKE_TEXT
from .helpers import SOURCE, call, change, inline, open_doc, pos, rng, stats

URI = "file:///work/project/greet.py"


async def test_incremental_edits_then_inline_completion(editor: LanguageClient) -> None:
    open_doc(editor, URI)
    # Type "na" after `return `, then an emoji-bearing edit on line 1 (UTF-16 columns).
    change(editor, URI, 2, rng((2, 11), (2, 11)), "n")
    change(editor, URI, 3, rng((2, 12), (2, 12)), "a")
    change(editor, URI, 4, rng((1, 14), (1, 16)), "🎉")  # replaces the 😀 (2 units)
    result = await inline(editor, URI, pos(2, 13))
    assert len(result.items) == 1
    item = result.items[0]
    assert item.insert_text == FAKE_TEXT
    assert item.range == rng((2, 13), (2, 13))
    assert item.command is not None and item.command.command == "groundspec.accepted"

    # The server's copy equals what the editor has: the fake refactor echoes the selection.
    whole = {"line": 3, "character": 0}
    out = await call(
        editor,
        "groundspec/refactor",
        {
            "textDocument": {"uri": URI},
            "range": {"start": {"line": 0, "character": 0}, "end": whole},
            "instruction": "echo",
        },
    )
    expected = SOURCE.replace("😀", "🎉").replace("return \n", "return na\n")
    assert out["newText"] == "# echo\n" + expected


async def test_accepting_an_item_is_counted(editor: LanguageClient) -> None:
    open_doc(editor, URI)
    item = (await inline(editor, URI, pos(2, 11))).items[0]
    assert item.command is not None
    await editor.workspace_execute_command_async(
        types.ExecuteCommandParams(command=item.command.command, arguments=item.command.arguments)
    )
    totals = await stats(editor)
    assert totals["acceptedItems"] == 1
    assert totals["requests"] == 1


async def test_typed_ahead_suggestion_comes_from_the_cache(editor: LanguageClient) -> None:
    open_doc(editor, URI)
    assert (await inline(editor, URI, pos(2, 11))).items[0].insert_text == FAKE_TEXT
    change(editor, URI, 2, rng((2, 11), (2, 11)), "fake_")
    again = await inline(editor, URI, pos(2, 16))
    assert again.items[0].insert_text == FAKE_TEXT[len("fake_") :]
    totals = await stats(editor)
    assert totals["requests"] == 1 and totals["server"]["cacheHits"] == 1


async def test_completion_fallback_replaces_the_word_before_the_cursor(
    editor: LanguageClient,
) -> None:
    open_doc(editor, URI, "x = na")
    result = await editor.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=URI), position=pos(0, 6)
        )
    )
    assert isinstance(result, types.CompletionList) and result.is_incomplete
    item = result.items[0]
    assert isinstance(item.text_edit, types.TextEdit)
    assert item.text_edit.new_text == "na" + FAKE_TEXT
    assert item.text_edit.range == rng((0, 4), (0, 6))


async def test_code_action_refactor_applies_an_edit(editor: LanguageClient) -> None:
    open_doc(editor, URI)
    selection = rng((0, 0), (1, 20))
    actions = await editor.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=URI),
            range=selection,
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    assert actions and all(isinstance(a, types.CodeAction) for a in actions)
    action = actions[0]
    assert isinstance(action, types.CodeAction) and action.command is not None
    assert action.kind == types.CodeActionKind.RefactorRewrite
    result = await editor.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command=action.command.command, arguments=action.command.arguments
        )
    )
    edits = editor.edits  # type: ignore[attr-defined]
    assert len(edits) == 1
    text_edit = edits[0].edit.changes[URI][0]
    assert text_edit.range == selection
    assert text_edit.new_text == "# Add a docstring\n" + 'def greet(name):\n    """Say hi 😀."""'
    assert result["applied"] is True and result["stats"]["generatedTokens"] > 0
    window = editor.capabilities.window if editor.capabilities else None
    if window and window.work_done_progress:
        kinds = [
            [v.kind for v in values]
            for token, values in editor.progress_reports.items()
            if str(token).startswith("groundspec/refactor")
        ]
        assert kinds == [["begin", "end"]]


async def test_code_action_without_selection_targets_the_enclosing_function(
    editor: LanguageClient,
) -> None:
    open_doc(editor, URI)
    actions = await editor.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=URI),
            range=rng((2, 5), (2, 5)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    assert actions
    action = actions[0]
    assert isinstance(action, types.CodeAction) and action.command is not None
    args = action.command.arguments
    assert args is not None
    assert args[0]["range"] == {
        "start": {"line": 0, "character": 0},
        "end": {"line": 2, "character": 10},  # the tree ends the function at `return`
    }


async def test_free_text_refactor_through_the_command_argument(editor: LanguageClient) -> None:
    open_doc(editor, URI)
    target = {"start": {"line": 2, "character": 4}, "end": {"line": 2, "character": 10}}
    await editor.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="groundspec.refactor",
            arguments=[URI, target, "Return the greeting"],
        )
    )
    edits = editor.edits  # type: ignore[attr-defined]
    assert edits[0].edit.changes[URI][0].new_text == "# Return the greeting\nreturn"


async def test_stats_after_a_session(editor: LanguageClient) -> None:
    open_doc(editor, URI)
    await inline(editor, URI, pos(2, 11))
    totals = await call(editor, "groundspec/stats", {})
    command_totals = await editor.workspace_execute_command_async(
        types.ExecuteCommandParams(command="groundspec.stats")
    )
    for key in (
        "requests",
        "cancelled",
        "acceptance",
        "tokensPerSecond",
        "promptTokens",
        "reusedPromptTokens",
        "latencyMs",
    ):
        assert key in totals
    assert totals["requests"] == 1
    assert totals["server"]["openDocuments"] == 1
    assert command_totals is not None


async def test_an_invoked_inline_completion_returns_several_distinct_items(
    editor: LanguageClient,
) -> None:
    open_doc(editor, URI)
    automatic = await inline(editor, URI, pos(2, 11))
    assert [i.insert_text for i in automatic.items] == [FAKE_TEXT]
    invoked = await inline(editor, URI, pos(2, 11), types.InlineCompletionTriggerKind.Invoked)
    texts = [i.insert_text for i in invoked.items]
    # The fake engine's alternatives: the greedy one first, as typing shows it.
    assert texts == [FAKE_TEXT, f"alt1_{FAKE_TEXT}", f"alt2_{FAKE_TEXT}"]
    assert all(i.command is not None for i in invoked.items)
    assert all(i.range == rng((2, 11), (2, 11)) for i in invoked.items)


async def test_completion_and_inline_completion_for_one_keystroke_both_answer(
    editor: LanguageClient,
) -> None:
    """An editor that asks both ways for one keystroke gets both answers, from one
    generation (the second shares the first's, in flight or cached)."""
    open_doc(editor, URI)
    change(editor, URI, 2, rng((2, 11), (2, 11)), "n")
    here = pos(2, 12)
    completion_params = types.CompletionParams(
        text_document=types.TextDocumentIdentifier(uri=URI), position=here
    )
    inline_result, completion_result = await asyncio.gather(
        inline(editor, URI, here),
        editor.text_document_completion_async(completion_params),
    )
    assert [i.insert_text for i in inline_result.items] == [FAKE_TEXT]
    assert isinstance(completion_result, types.CompletionList)
    assert [i.filter_text for i in completion_result.items] == ["n" + FAKE_TEXT]
    totals = await stats(editor)
    assert totals["requests"] == 1
    assert totals["server"]["superseded"] == 0
