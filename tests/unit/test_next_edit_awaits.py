"""A function made async is awaited where async code calls it
(speculator/next_edit/awaits.py), and `async ` is not carried to special methods
(line_edits.py)."""

from __future__ import annotations

from test_next_edit_line_edits import inserted, proposed

from speculator.edits import EditHistory
from speculator.next_edit.awaits import awaited_call_lines
from speculator.next_edit.core import NextEditRequest, prepare

CLIENT_PY = """import asyncio


class Client:
    def __init__(self, base_url):
        self.base_url = base_url

    async def get_json(self, path):
        return {"path": path}

    async def user(self, user_id):
        data = self.get_json(f"/users/{user_id}")
        return data["user"]

    async def many(self, paths):
        return await asyncio.gather(*(self.get_json(p) for p in paths))

    async def later(self, path):
        reply = self.get_json(path)
        return await reply

    def blocking(self, path):
        return self.get_json(path)

    async def team(self, team_id):
        self.get_json(f"/teams/{team_id}")
        return self.get_json(f"/teams/{team_id}/members")


async def main(client, other):
    other.get_json("/")
    return get_json("/")
"""
GET_JSON = CLIENT_PY.split("\n").index("    async def get_json(self, path):")

API_TS = """export class Api {
  async get(path: string): Promise<string> {
    return path;
  }
  async both(): Promise<string> {
    const a = this.get("a");
    this.get("b");
    return [this.get("c")].join();
  }
}
export async function load(): Promise<void> {}
function sync(): void {
  load();
}
async function main(): Promise<void> {
  load();
}
"""


def test_calls_in_async_code_are_awaited_where_their_result_is_used() -> None:
    assert awaited_call_lines(CLIENT_PY, (GET_JSON, GET_JSON + 1), "python") == {
        11: '        data = await self.get_json(f"/users/{user_id}")',
        25: '        await self.get_json(f"/teams/{team_id}")',
        26: '        return await self.get_json(f"/teams/{team_id}/members")',
    }
    # Not: the calls gathered, the reply awaited later, the call in a plain method,
    # another object's method or a plain function of that name.


def test_typescript_methods_and_functions_are_awaited_too() -> None:
    assert awaited_call_lines(API_TS, (1, 2), "typescript") == {
        5: '    const a = await this.get("a");',
        6: '    await this.get("b");',
    }
    assert awaited_call_lines(API_TS, (10, 11), "typescript") == {15: "  await load();"}


def test_only_a_function_the_edit_made_async_or_awaited_is_followed() -> None:
    assert awaited_call_lines(CLIENT_PY, (0, 1), "python") == {}
    # An awaited call on the edited line: its function's other calls follow.
    done = CLIENT_PY.replace("data = self.get_json", "data = await self.get_json")
    assert set(awaited_call_lines(done, (11, 12), "python")) == {25, 26}
    # A name defined both async and not: which one a call reaches is unknown.
    twice = CLIENT_PY + "\n\ndef get_json(path):\n    return path\n"
    assert awaited_call_lines(twice, (GET_JSON, GET_JSON + 1), "python") == {}


def test_a_method_made_async_is_awaited_next_and_init_is_not_made_async() -> None:
    before = CLIENT_PY.replace("    async def get_json", "    def get_json")
    at = before.index("def get_json")
    after = proposed(inserted(before, at, "async "))
    assert "    def __init__(self, base_url):" in after
    assert 'data = await self.get_json(f"/users/{user_id}")' in after


def test_async_is_carried_to_a_sibling_method_but_not_to_a_special_one() -> None:
    code = "class A:\n    def __init__(self):\n        pass\n\n    def run(self):\n"
    code += "        pass\n\n    def stop(self):\n        pass\n"
    after = proposed(inserted(code, code.index("def run"), "async "))
    assert "    async def stop(self):" in after and "    def __init__(self):" in after


def test_after_one_await_is_taken_the_next_call_is_drafted() -> None:
    before = CLIENT_PY.replace("    async def get_json", "    def get_json")
    at = before.index("def get_json")
    history = EditHistory()
    history.record("u", at, "", "async ")
    first = CLIENT_PY.index('self.get_json(f"/users')
    history.record("u", first, "", "await ")
    text = CLIENT_PY[:first] + "await " + CLIENT_PY[first:]
    request = NextEditRequest(
        text=text, cursor=first + 6, edits=history.edits("u"), path="m.py", draft_only=False
    )
    plan = prepare(request)
    assert plan is not None and plan.draft_change is not None
    # The two calls in `team`, next to each other, are one change.
    lines = plan.draft_change.edit.apply(text).split("\n")
    assert lines[25:27] == [
        '        await self.get_json(f"/teams/{team_id}")',
        '        return await self.get_json(f"/teams/{team_id}/members")',
    ]
