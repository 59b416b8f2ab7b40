"""The walk of every build, written as one loop, keeps exactly the rows the
rules keep: other channels of the turn's persona lineage (``gather``), not
expired (``expiry.is_shown``), visible, the newest first up to the cap."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from stm_core.engine.cache import MemoryView
from stm_core.models import Turn, crude_line
from stm_core.pipeline.expiry import is_shown
from stm_core.pipeline.sortcap import first_visible
from stm_core.plugin_types import VisibilityContext, VisibilityPolicy
from stm_core.storage.records import MemoryKey, MemoryRecord

CHANNELS = ("1", "2", "3", "4", "5")
NOW = 100_000
CRUDE_TTL, SUMMARY_TTL = 20_000, 50_000
#: Ages on either side of each TTL, and on it.
AT_THE_EDGES = [ttl + d for ttl in (CRUDE_TTL, SUMMARY_TTL) for d in (-1, 0, 1)]

ROWS = st.builds(
    lambda channel, persona, lineage, summary, categories, lines, age, rev: MemoryRecord(
        key=MemoryKey.server("9", channel, persona), persona_lineage_id=lineage,
        summary=summary, categories=categories,
        messages=tuple(crude_line("user", text, "Ann", 0) for text in lines),
        updated_at_ms=NOW - age, rev=rev),
    st.sampled_from(CHANNELS), st.sampled_from([None, "p1"]),
    st.sampled_from([None, "L1", "L2"]), st.sampled_from([None, "", "a summary"]),
    st.dictionaries(st.sampled_from(["mood", "plan"]), st.sampled_from(["", " ", "calm"]),
                    max_size=2),
    st.lists(st.sampled_from(["hi", "yo"]), max_size=2),
    st.integers(0, 60_000) | st.sampled_from(AT_THE_EDGES), st.integers(1, 3))


#: What a policy answers for each channel: hide, let through, or abstain.
ANSWERS = st.dictionaries(st.sampled_from(CHANNELS), st.sampled_from([False, True, None]))


@settings(max_examples=400, deadline=None)
@given(st.lists(ROWS, max_size=12), st.sampled_from(CHANNELS),
       st.sampled_from([None, "", "L1", "L2"]), st.integers(-1, 4),
       st.lists(ANSWERS, max_size=3))
def test_the_walk_keeps_what_the_rules_keep(
        rows: list[MemoryRecord], channel: str, lineage: str | None, cap: int,
        answers: list[dict[str, bool | None]]) -> None:
    view = MemoryView(rows, max_rows=len(rows) + 1)
    turn = Turn(user_id="42", channel_id=channel, server_id="9",
                persona_lineage_id=lineage)
    ctx = VisibilityContext(turn=turn, current=None, current_is_private=False,
                            crossserver_opt_in=False, servers={})

    def policy(answer: dict[str, bool | None]) -> VisibilityPolicy:
        def decide(r: MemoryRecord, seen: VisibilityContext) -> bool | None:
            assert seen is ctx
            return answer.get(r.key.channel_id)
        return decide

    policies = [policy(a) for a in answers]
    walked = first_visible(view.newest_first(), turn, policies, ctx, cap, now_ms=NOW,
                           crude_ttl_ms=CRUDE_TTL, summary_ttl_ms=SUMMARY_TTL)
    # The rules, one by one, over the rows newest first: any False hides.
    ruled = [r for r in view.newest_first()
             if r.key.channel_id != channel and (not lineage or r.persona_lineage_id == lineage)
             and is_shown(r, NOW, crude_ttl_ms=CRUDE_TTL, summary_ttl_ms=SUMMARY_TTL)
             and all(a.get(r.key.channel_id) is not False for a in answers)][:max(cap, 0)]
    assert walked == ruled
    assert all(a is b for a, b in zip(walked, ruled, strict=True))
