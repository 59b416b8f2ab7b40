"""What people see: tables that fit the screen, text printed as written, colour
only where it belongs, and nothing a stored text can do to the terminal."""

from __future__ import annotations

import io

import pytest

from stm_core.cli.screen import Screen, Span, Table, cell_width, visible


def drawn(table: Table, width: int = 80, *, color: bool = False) -> list[str]:
    out = io.StringIO()
    Screen(out, width=width, color=color).print(table)
    return out.getvalue().splitlines()


def params_table() -> Table:
    table = Table("Parameters", ["parameter", "value", "meaning"])
    table.add_row("refresh_cadence", "5", "every 5 turns")
    table.add_row("cache_policy", "freshness", "fresh ages and placement (default)")
    return table


def test_a_table_that_fits_keeps_each_row_on_one_line_with_its_cells_in_order() -> None:
    lines = drawn(params_table())

    assert lines[0] == "Parameters"
    assert lines[2].split("┃")[1:4] == [" parameter       ", " value     ",
                                        " meaning                            "]
    assert "│ cache_policy    │ freshness │ fresh ages and placement (default) │" in lines
    assert len({len(line) for line in lines[1:]}) == 1  # every frame line as wide


@pytest.mark.parametrize("width", [20, 31, 44, 60])
def test_a_narrow_screen_wraps_cells_and_no_line_is_wider_than_it(width: int) -> None:
    lines = drawn(params_table(), width)

    assert all(cell_width(line) <= width for line in lines[1:])
    cells = "".join(line for line in lines if line.startswith("│"))
    for word in ("every", "turns", "placement"):  # words survive, maybe folded
        assert word[:3] in cells


def test_a_narrow_screen_moves_whole_words_before_it_cuts_one() -> None:
    lines = drawn(params_table(), 60)

    meaning = [line.split("│")[3].strip() for line in lines if line.startswith("│")]

    assert meaning == ["every 5 turns", "fresh ages and placement", "(default)"]


def test_a_no_wrap_column_keeps_its_width_and_the_others_give_way() -> None:
    table = Table(None, ["plugin", "hooks"], no_wrap=[0])
    table.add_row("stm_plugins.sqlalchemy_storage", "register_storage_adapters, more words")

    lines = drawn(table, 50)

    assert any("│ stm_plugins.sqlalchemy_storage │" in line for line in lines)
    assert all(cell_width(line) <= 50 for line in lines)


def test_wide_characters_take_two_columns_so_the_frame_stays_straight() -> None:
    table = Table(None, ["who", "said"])
    table.add_row("ユーザー", "こんにちは")
    table.add_row("ann", "hi")

    lines = drawn(table)

    assert cell_width("ユーザー") == 8
    assert len({cell_width(line) for line in lines}) == 1


def test_stored_text_is_printed_as_written_and_cannot_drive_the_terminal() -> None:
    out = io.StringIO()
    screen = Screen(out, width=80, color=False)

    screen.print("[System: obey] [bold]not markup[/bold]")
    screen.print("evil\x1b]0;pwned\x07 title\rover")
    table = Table(None, ["text"])
    table.add_row("a\x1b[2Jb\tc")
    screen.print(table)

    text = out.getvalue()
    assert "[System: obey] [bold]not markup[/bold]" in text
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text
    assert "evil\\x1b]0;pwned\\x07 title\\x0dover" in text
    assert "│ a\\x1b[2Jb   c │" in text  # a tab is spaces in a table, to the next 4th


def test_visible_keeps_newlines_tabs_and_every_printable_character() -> None:
    assert visible("line\n\ttab é ß 日本 🙂") == "line\n\ttab é ß 日本 🙂"
    assert visible("\x00\x7f\x9b") == "\\x00\\x7f\\x9b"


def test_colour_goes_to_a_terminal_only_and_styles_each_cell_alone() -> None:
    table = Table("t", ["status"])
    table.add_row(Span("failed", "bold red"))

    plain = drawn(table)
    painted = drawn(table, color=True)

    assert not any("\x1b" in line for line in plain)
    assert painted[0] == "\x1b[3mt\x1b[0m"
    row = painted[4]
    assert "\x1b[1;31mfailed\x1b[0m" in row
    # The padding is counted on what shows, not on the colour codes around it.
    assert row.replace("\x1b[1;31m", "").replace("\x1b[0m", "") == plain[4]


class Terminal(io.StringIO):
    """Output that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("stream", "env", "expected"), [
    (io.StringIO, {}, False),  # a pipe
    (io.StringIO, {"FORCE_COLOR": "1"}, True),
    (io.StringIO, {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
    (Terminal, {}, True),
    (Terminal, {"TERM": "dumb"}, False),
    (Terminal, {"NO_COLOR": "1"}, False),
])
def test_colour_follows_the_terminal_no_color_and_force_color(
        monkeypatch: pytest.MonkeyPatch, stream: type[io.StringIO], env: dict[str, str],
        expected: bool) -> None:
    for name in ("FORCE_COLOR", "NO_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    assert Screen(stream()).color is expected


def test_a_pipe_is_80_columns_unless_columns_says_otherwise(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    assert Screen(io.StringIO()).width == 80
    monkeypatch.setenv("COLUMNS", "132")
    assert Screen(io.StringIO()).width == 132
    for nonsense in ("wide", "0", "-5", ""):
        monkeypatch.setenv("COLUMNS", nonsense)
        assert Screen(io.StringIO()).width == 80


def test_a_row_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(ValueError, match="2 cells for 3 columns"):
        params_table().add_row("a", "b")


def test_a_cell_of_several_styled_lines_keeps_them_on_their_own_lines() -> None:
    table = Table(None, ["hooks"])
    table.add_row([Span("tool_available"), Span("storage scheme: memory", "dim"),
                   Span("warning: old", "yellow")])

    lines = [line.strip("│ ") for line in drawn(table) if line.startswith("│")]

    assert lines == ["tool_available", "storage scheme: memory", "warning: old"]


def test_a_screen_narrower_than_the_frame_still_shows_every_character() -> None:
    lines = drawn(params_table(), 5)

    rows = [line.split("│")[1:4] for line in lines if line.startswith("│")]
    column = ["".join(row[i].strip() for row in rows) for i in range(3)]
    assert column[0] == "refresh_cadencecache_policy"
    assert column[2] == "every5turnsfreshagesandplacement(default)"


def test_a_long_identifier_folds_after_a_separator_not_mid_word() -> None:
    table = Table(None, ["hooks"], show_header=False)
    table.add_row("register_storage_adapters, postgresql+asyncpg")

    lines = drawn(table, 24)

    assert [line.strip("│ ") for line in lines[1:-1]] == [
        "register_storage_", "adapters,", "postgresql+asyncpg"]


def test_the_plugins_table_at_80_columns_splits_no_identifier() -> None:
    from stm_core.cli.plugins import grouped_keys, plugins_table
    from stm_core.plugins import create_plugin_manager
    from stm_core.plugins.introspect import describe_plugins

    infos = describe_plugins(create_plugin_manager(load_entrypoints=False))
    lines = drawn(plugins_table(infos), 80)

    assert all(cell_width(line) <= 80 for line in lines)
    shown = [word for line in lines if line.startswith("│")
             for cell in line.split("│")[1:-1] for word in cell.split()]
    hooks = {h.removeprefix("stm_") for info in infos for h in info.hooks}
    keys = {key.rstrip(",") for info in infos for line in grouped_keys(info.provides)
            for key in line.partition(": ")[2].split()}
    names = {info.name for info in infos}
    whole = {word.rstrip(",") for word in shown}
    assert hooks | keys | names <= whole, sorted((hooks | keys | names) - whole)
    assert {"register_storage_adapters", "openai-responses-strict"} <= whole
