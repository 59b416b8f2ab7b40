"""What the tests share: one exchange recorded as a host does after the reply."""

from stm_core import HistoryMessage, PersonaResponse


async def chat(stm, make_turn, text, **turn):
    await stm.record_turn(
        make_turn(**turn),
        [HistoryMessage(author_type="user", content=text, speaker_name="Alice")],
        [PersonaResponse(content=f"Noted: {text}", persona_name="Assistant")])
