"""Naming a category in an edit (docs/admin.md, edit_memory): by slug, by
label in any case, or by anything whose slug is a category's slug."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from stm_core.admin import Admin
from stm_core.admin.memory import resolve_slug
from stm_core.errors import ValidationError
from tests.conftest import OpenStm

SLUGS = {"c_1st_goal": "1st Goal", "goals": "Goals", "mood": "Mood!"}
WHERE: dict[str, Any] = {"server_id": "g1", "channel_id": "c1"}


@pytest.mark.parametrize(("name", "slug"), [
    ("goals", "goals"), ("c_1st_goal", "c_1st_goal"),  # the slug itself
    ("  1ST GOAL ", "c_1st_goal"), ("mood!", "mood"),  # the label, any case, trimmed
    ("Goals!!", "goals"), ("the mood", None),  # a name whose slug is a category's
])
def test_a_category_is_found_by_slug_label_or_the_slug_of_a_name(name: str,
                                                                  slug: str | None) -> None:
    if slug is None:
        with pytest.raises(ValidationError):
            resolve_slug(name, SLUGS)
    else:
        assert resolve_slug(name, SLUGS) == slug


def test_an_unknown_category_is_refused_listing_the_servers() -> None:
    with pytest.raises(ValidationError) as refused:
        resolve_slug("plans", SLUGS)
    listed = "1st Goal (c_1st_goal), Goals (goals), Mood! (mood)"
    assert str(refused.value) == f"unknown category 'plans'; this server's categories: {listed}"
    assert (refused.value.field, refused.value.allowed) == ("categories", listed)


@pytest.fixture
async def admin(open_stm: OpenStm) -> AsyncIterator[Admin]:
    async with open_stm("memory://") as store:
        await store.admin.set_categories("g1", ["Goals: g", "Mood: m"])
        yield store.admin


async def test_a_category_named_twice_is_refused(admin: Admin) -> None:
    with pytest.raises(ValidationError) as refused:
        await admin.edit_memory(**WHERE, categories={"goals": "a", "GOALS": "b"})
    assert str(refused.value) == "category 'Goals' is given twice"
    assert (refused.value.field, refused.value.allowed) == ("categories", "each category once")
