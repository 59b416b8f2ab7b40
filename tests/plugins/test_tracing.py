"""STM_TRACE_PLUGINS=1: every hook call logged with its arguments, the
implementations in call order and the result."""

from __future__ import annotations

import logging

import pytest

from stm_core.plugins import create_plugin_manager
from stm_core.plugins.hooks import Hooks


@pytest.fixture(autouse=True)
def _reset_trace_logger() -> None:
    logging.getLogger("stm.trace").setLevel(logging.NOTSET)


def trace_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "stm.trace"]


def test_tracing_logs_the_call_the_implementations_and_the_result(
        caplog: pytest.LogCaptureFixture) -> None:
    pm = create_plugin_manager(load_entrypoints=False, environ={"STM_TRACE_PLUGINS": "1"})
    hooks = Hooks(pm)

    with caplog.at_level(logging.DEBUG, logger="stm.trace"):
        assert hooks.tool_available("novelai", True, True, False, "clio") is False

    call, result = trace_lines(caplog)
    assert call == ("call stm_tool_available(provider='novelai', has_tools=True, "
                    "stm_enabled=True, explicit_long_term_intent=False, model='clio'); "
                    "implementations: "
                    "stm_plugins.builtin_gates, stm_plugins.novelai")
    assert result == "stm_tool_available returned [False]"


def test_memoized_answers_are_not_traced_again(caplog: pytest.LogCaptureFixture) -> None:
    pm = create_plugin_manager(load_entrypoints=False, trace=True)
    hooks = Hooks(pm)

    with caplog.at_level(logging.DEBUG, logger="stm.trace"):
        hooks.nudge_template("openai", "summary")
        hooks.nudge_template("openai", "summary")

    assert len(trace_lines(caplog)) == 2  # one call, one result


def test_tracing_reports_an_exception(caplog: pytest.LogCaptureFixture) -> None:
    from hookspecs import hookimpl

    class Failing:
        name = "failing"

        @hookimpl
        def stm_prompt_macros(self, provider: str) -> dict[str, str]:
            raise ValueError("no macros today")

    pm = create_plugin_manager(load_entrypoints=False, plugins=[Failing()], trace=True)

    with caplog.at_level(logging.DEBUG, logger="stm.trace"), pytest.raises(ValueError):
        Hooks(pm).macros("openai")

    assert trace_lines(caplog)[-1] == "stm_prompt_macros raised ValueError('no macros today')"


def test_tracing_is_off_unless_asked(caplog: pytest.LogCaptureFixture) -> None:
    pm = create_plugin_manager(load_entrypoints=False, environ={})

    with caplog.at_level(logging.DEBUG, logger="stm.trace"):
        Hooks(pm).tool_available("openai", True, True, False)

    assert trace_lines(caplog) == []
