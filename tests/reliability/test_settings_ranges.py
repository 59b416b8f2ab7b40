"""Every setting refuses what cannot work, through the Python API and ``stm``.

The cases come from ``stm_core.settings.RULES``, so a setting added there is
tried here without touching this file: just below and above its range, nan,
inf, -inf, text that is not a number, and the wrong Python type. Each must
raise ``ConfigurationError`` naming the variable, the value typed and the
allowed range; the ``stm`` command exits 2 with that one line.
"""

from __future__ import annotations

import math
import subprocess
from pathlib import Path
from typing import Any

import attrs
import pytest

from stm_core.errors import ConfigurationError
from stm_core.plugins.records import STRICT_ENV, TRACE_ENV, env_flag
from stm_core.settings import ENV_VARS, RULES, Rule, Settings
from tests.cli.conftest import clean_env, stm_executable

from .support import add_figure


def bad_texts(rule: Rule) -> list[str]:
    """What an operator might type that the rule must refuse."""
    if rule.kind == "flag":
        return ["maybe", "2", "-1", "nan", "tru"]
    if rule.kind == "choice":
        return ["OFF", "normal2", "nan", "0"]
    if rule.kind == "text":
        return []  # any non-blank text is a value; blank means unset
    if rule.kind == "key":
        return ["two words", "a/b", "x" * 65, "-lead"]
    if rule.kind == "tool":
        return ["two words", "a.b", "x" * 65, "memory()"]
    assert rule.low is not None and rule.high is not None  # every number has a range
    below = rule.low if rule.low_open else rule.low - 1
    texts = [_text(below), _text(rule.high + 1), "nan", "NaN", "inf", "-inf", "infinity",
             "abc", "12abc", "", "1e999"]
    if rule.kind == "int":
        texts += ["1.5", "1e3", "0x10"]
    return [t for t in texts if t]  # blank is "unset", not a bad value


def _text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


def env_cases() -> list[tuple[str, str]]:
    return [(rule.var, text) for rule in RULES.values() for text in bad_texts(rule)]


def test_every_settings_field_has_a_rule() -> None:
    assert set(RULES) == set(attrs.fields_dict(Settings))
    assert sorted(ENV_VARS) == sorted(rule.var for rule in RULES.values())


@pytest.mark.parametrize(("var", "text"), env_cases())
def test_out_of_range_variable_is_refused_naming_it(var: str, text: str,
                                                    figures: dict[str, Any]) -> None:
    rule = RULES[ENV_VARS[var]]
    with pytest.raises(ConfigurationError) as info:
        Settings.from_env({var: text})
    message = str(info.value)
    assert message.startswith(f"{var}={text!r} ")
    assert message.endswith(f"allowed: {rule.allowed}")
    assert "\n" not in message
    add_figure(figures, "settings_cases", 1)


def wrong_values(rule: Rule) -> list[Any]:
    """Values a host might build ``Settings`` with in code."""
    common: list[Any] = [[1], {"a": 1}, b"1", object()]
    if rule.kind in {"int", "float"}:
        assert rule.low is not None and rule.high is not None
        below = rule.low if rule.low_open else rule.low - 1
        return [*common, below, rule.high + 1, math.nan, math.inf, -math.inf, "5", True,
                None if not rule.optional else "x"]
    if rule.kind == "flag":
        return [*common, 1, 0, "yes", None]
    if rule.kind == "choice":  # an optional choice takes None (unset), never a misspelling
        return [*common, "OFF", 1, None if not rule.optional else "Stable"]
    if rule.kind in {"key", "tool"}:
        return [*common, "", "two words", "x" * 65, 5]
    return [*common, "", "   ", 5]


@pytest.mark.parametrize("name", sorted(RULES))
def test_wrong_values_in_code_are_refused(name: str, figures: dict[str, Any]) -> None:
    rule = RULES[name]
    values = wrong_values(rule) + ([1.0, 2.5] if rule.kind == "int" else [])
    for value in values:
        with pytest.raises(ConfigurationError, match=f"^{rule.var}="):
            Settings(**{name: value})
    add_figure(figures, "settings_cases", len(values))


@pytest.mark.parametrize("name", sorted(RULES))
def test_range_ends_are_accepted(name: str) -> None:
    rule = RULES[name]
    if rule.kind in {"int", "float"}:
        assert rule.low is not None and rule.high is not None
        low = rule.low + 0.001 if rule.low_open else rule.low
        for value in (low, rule.high):
            typed = _text(value)
            settings = Settings.from_env({rule.var: f" {typed} "})
            assert getattr(settings, name) == pytest.approx(float(typed))
    elif rule.kind == "flag":
        assert getattr(Settings.from_env({rule.var: "off"}), name) is False
        assert getattr(Settings.from_env({rule.var: "YES"}), name) is True
    elif rule.kind == "choice":
        for choice in rule.choices:
            assert getattr(Settings.from_env({rule.var: choice}), name) == choice
            if choice.isupper():  # upper-case choices are read in any case
                assert getattr(Settings.from_env({rule.var: choice.lower()}), name) \
                    .upper() == choice
    elif rule.kind in {"key", "tool"}:
        for key in ("x", "my_plugin-2", "k" * 64):
            assert getattr(Settings.from_env({rule.var: key}), name) == key
    else:
        assert getattr(Settings.from_env({rule.var: "x://y"}), name) == "x://y"
    # Blank is "unset": the default stays.
    assert getattr(Settings.from_env({rule.var: "  "}), name) == getattr(Settings(), name)


def test_negative_retention_can_no_longer_delete_everything() -> None:
    with pytest.raises(ConfigurationError, match="STM_JANITOR_RETENTION_DAYS='-5'"):
        Settings.from_env({"STM_JANITOR_RETENTION_DAYS": "-5"})


@pytest.mark.parametrize("var", [STRICT_ENV, TRACE_ENV])
def test_plugin_flags_refuse_unknown_words(var: str) -> None:
    assert env_flag({var: " on "}, var) is True
    assert env_flag({var: ""}, var) is False
    with pytest.raises(ConfigurationError, match=f"^{var}='maybe' is not valid"):
        env_flag({var: "maybe"}, var)


def cli_cases() -> list[tuple[str, str]]:
    """One bad value per variable through the real command, rotating the kind
    (below, above, nan, inf, text) so every kind reaches the command."""
    cases = []
    for index, rule in enumerate(RULES.values()):
        texts = bad_texts(rule)
        if texts:
            cases.append((rule.var, texts[index % len(texts)]))
    cases.append((STRICT_ENV, "maybe"))
    return cases


@pytest.mark.parametrize(("var", "text"), cli_cases())
def test_stm_command_exits_2_with_one_line(tmp_path: Path, var: str, text: str,
                                           figures: dict[str, Any]) -> None:
    command = ["plugins"] if var == STRICT_ENV else [
        "--db", f"sqlite+aiosqlite:///{tmp_path}/x.db", "db", "info"]
    done = subprocess.run([stm_executable(), *command], capture_output=True, text=True,
                          env=clean_env(tmp_path / "xdg", {var: text}), timeout=60,
                          cwd=tmp_path)
    assert done.returncode == 2, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"stm: error: {var}={text!r} ")
    assert not (tmp_path / "x.db").exists()  # refused before anything was opened
    add_figure(figures, "settings_cases", 1)
