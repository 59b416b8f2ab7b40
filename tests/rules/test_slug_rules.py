"""Category slugs follow reference §4.4 step by step."""

from __future__ import annotations

import pytest

from stm_core.text.slugs import build_slug_map, humanize_slug, slugify


@pytest.mark.parametrize(("label", "slug"), [
    ("Party Status", "party_status"),
    ("  Quest -- Log!  ", "quest_log"),
    ("a__b", "a_b"),
    ("tabs\tand\nnewlines", "tabs_and_newlines"),
])
def test_words_are_lowercased_and_joined_by_single_underscores(label: str, slug: str) -> None:
    assert slugify(label) == slug


def test_non_word_characters_are_ascii_only_so_accents_and_japanese_drop_out() -> None:
    # With re.ASCII "é" is a non-word character; without it "Café" would keep it.
    assert slugify("Café") == "caf"
    assert slugify("Café Menu") == "caf_menu"
    assert slugify("日本語") == ""
    assert slugify("ünïcode") == "n_code"


def test_a_leading_digit_gets_the_c_prefix_and_only_a_leading_one() -> None:
    assert slugify("3 wishes") == "c_3_wishes"
    assert slugify("wish 3") == "wish_3"
    assert slugify("_9 lives") == "c_9_lives"


def test_slugs_are_cut_to_48_characters_after_the_prefix() -> None:
    assert slugify("x" * 60) == "x" * 48
    assert len(slugify("x" * 48)) == 48
    assert slugify("x" * 47) == "x" * 47
    assert slugify("1" + "y" * 60) == ("c_1" + "y" * 60)[:48]


def test_empty_slugs_become_field_and_collisions_count_from_2() -> None:
    assert build_slug_map(["日本", "Mood", "mood!", "MOOD", "ーー"]) == {
        "field": "日本",
        "mood": "Mood",
        "mood_2": "mood!",
        "mood_3": "MOOD",
        "field_2": "ーー",
    }


def test_the_slug_map_keeps_the_category_order() -> None:
    assert list(build_slug_map(["b", "a", "c"])) == ["b", "a", "c"]


def test_humanized_slugs_capitalise_each_word() -> None:
    assert humanize_slug("party_status") == "Party Status"
    assert humanize_slug("c_3_wishes") == "C 3 Wishes"
    assert humanize_slug("__x__y") == "X Y"
