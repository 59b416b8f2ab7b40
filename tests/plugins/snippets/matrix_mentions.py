"""The plugin guide's converter for another platform (Matrix)."""

# -- start matrix-mentions --
import asyncio
import re

from stm_core import Turn, hookimpl, open_store
from stm_core.mention_names import channel_label

#: Matrix ids carry their sigil: @user:server, #room:server.
MATRIX_ID = re.compile(r"[@#][\w.=-]+:[\w.-]+")


def convert_matrix_mentions(text: str, turn: Turn) -> str:
    def name(match: re.Match[str]) -> str:
        ident = match.group(0)
        if ident.startswith("#"):
            return channel_label(ident, turn) or ident
        return turn.user_names.get(ident, ident)
    return MATRIX_ID.sub(name, text) if ":" in text else text


class MatrixMentions:
    @hookimpl
    def stm_mention_converters(self):
        return [convert_matrix_mentions]


async def main() -> None:
    async with open_store("memory://", plugins=[MatrixMentions()],
                          load_entrypoints=False) as stm:
        turn = Turn(user_id="@alice:example.org", channel_id="!quest:example.org",
                    server_id="example.org", bot_name="Tomori",
                    user_names={"@bob:example.org": "Bob"},
                    channel_names={"#art:example.org": "art"})
        await stm.admin.edit_memory(
            server_id="example.org", channel_id="!quest:example.org",
            summary="@bob:example.org asked to meet in #art:example.org")
        context = await stm.build_context(turn)
        print(context.memory_items[0].text)
        # [System: Tomori's short term memory for this ongoing conversation:
        # Bob asked to meet in the channel named `art`]


if __name__ == "__main__":
    asyncio.run(main())
# -- end matrix-mentions --
