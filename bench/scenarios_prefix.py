"""Prompt-cache prefix reuse per cache policy (``freshness``, ``stable``).

Two conversations go through a real store and a prompt assembler (a system
prompt, the conversation's whole dialogue, stm's items spliced in by a host
that hands ``inject`` its previous prompt), once per policy: the bundled demo
transcript, and a synthetic 200-turn conversation in one channel with a second
channel talking beside it and the model writing its
summary whenever nudged. For every turn the share of the prompt that repeats
the previous turn's prompt is recorded (see :mod:`stm_core.inject.prompt_reuse`).

Runs with the others (``python -m bench --only prefix``) or alone, writing only
its own keys into ``results.json`` and its section of ``RESULTS.md``::

    python -m bench.scenarios_prefix
"""

from __future__ import annotations

from typing import Any

from bench import standalone
from stm_core._util.clock import ManualClock
from stm_core.cli.demo.runner import measure_prefix_reuse
from stm_core.inject.prompt_reuse import (
    CACHE_READ_PRICE,
    CACHE_WRITE_PRICE,
    HostPrompts,
    PrefixReuse,
    prompt_text,
    without_memory,
)
from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.settings import CACHE_POLICIES, Settings
from stm_core.store import open_store

SYNTHETIC_TURNS = 200
GUILD, QUEST, GENERAL = "700", "701", "702"
SYSTEM = ("You are Tomori, the game master of a long-running fantasy campaign. Keep the "
          "story consistent, describe scenes vividly but briefly, track every character's "
          "wounds, items and promises, and never decide for the players. ") * 4
PLAYERS = ("Alice", "Bob", "Mira")
BEATS = ("opens the door carefully", "checks the corridor for traps",
         "asks the innkeeper about the drowned bell", "counts the remaining torches",
         "draws a map of the undercroft", "bargains with the ferryman",
         "casts a light spell on the rusted key", "listens at the flooded stairs")


def _player_line(n: int) -> str:
    who = PLAYERS[n % len(PLAYERS)]
    return f"{who}: {who} {BEATS[n % len(BEATS)]} (turn {n}); we keep our voices down."


def _reply(n: int) -> str:
    return (f"The torchlight wavers as you do it (turn {n}). Water drips somewhere below, "
            f"and the bell hums once, softly, as if it heard its name.")


def _turn(channel: str, user: str) -> Turn:
    return Turn(user_id=user, channel_id=channel, server_id=GUILD, persona_id="tomori",
                bot_name="Tomori", triggerer_name=user, provider="anthropic",
                channel_names={QUEST: "quest", GENERAL: "general"})


async def synthetic(policy: str, turns: int = SYNTHETIC_TURNS) -> dict[str, Any]:
    """One channel's long conversation; #general talks every third turn."""
    clock = ManualClock(1_767_000_000_000)
    host, reuse, baseline = HostPrompts(), PrefixReuse(), PrefixReuse()
    dialogue: list[dict[str, str]] = []
    async with open_store("memory://", clock=clock, settings=Settings(),
                          load_entrypoints=False) as stm:
        await stm.admin.set_server_params(GUILD, cache_policy=policy)
        for n in range(turns):
            clock.advance(minutes=1 + n % 3)
            if n % 3 == 0:
                side = _turn(GENERAL, "bob")
                await stm.record_turn(side, [HistoryMessage(
                    author_type="user", content=f"general chatter {n}", speaker_name="Bob")],
                    [PersonaResponse(content=f"noted {n}", persona_name="Tomori",
                                     persona_id="tomori")])
            turn = _turn(QUEST, "alice")
            dialogue.append({"role": "user", "content": _player_line(n)})
            ctx = await stm.build_context(turn)
            messages = [{"role": "system", "content": SYSTEM}, *dialogue]
            reuse.observe(QUEST, prompt_text(host.prompt(QUEST, messages, ctx)),
                          memory=(i.text for i in ctx.memory_items))
            baseline.observe(QUEST, without_memory(messages))
            if ctx.nudge_item is not None:
                await stm.apply_tool_call(turn, {"summary": (
                    f"Session so far (up to turn {n}): the party explores the undercroft "
                    f"below Hollowmere; the drowned bell hums; {n // 5} torches used.")})
            dialogue.append({"role": "assistant", "content": _reply(n)})
            await stm.record_turn(turn, [HistoryMessage(
                author_type="user", content=_player_line(n), speaker_name="Alice")],
                [PersonaResponse(content=_reply(n), persona_name="Tomori",
                                 persona_id="tomori")])
    return {**reuse.figures().to_dict(),
            "without_memory_mean_share": round(baseline.figures().mean_share, 4)}


async def measure() -> dict[str, Any]:
    transcript = await measure_prefix_reuse()
    synthetic_runs = {policy: await synthetic(policy) for policy in CACHE_POLICIES}
    out: dict[str, Any] = {
        f"prefix_reuse_{policy}": synthetic_runs[policy]["mean_share"]
        for policy in CACHE_POLICIES}
    out["prefix_reuse"] = {
        "price_ratios": {"cache_read": CACHE_READ_PRICE, "cache_write": CACHE_WRITE_PRICE,
                         "source": "Anthropic prompt-caching prices"},
        "synthetic_200_turns": synthetic_runs,
        "demo_transcript": transcript,
    }
    return out


async def run(_cfg: object) -> dict[str, Any]:
    """The ``python -m bench`` entry point."""
    return await measure()


def markdown(results: dict[str, Any]) -> str:
    detail = results["prefix_reuse"]
    lines = ["## Prompt-cache prefix reuse", "",
             "Share of each turn's prompt that repeats the previous turn's prompt (mean over "
             "turns), and the estimated input cost relative to no caching with Anthropic's "
             f"prices (cache read {CACHE_READ_PRICE}x, cache write {CACHE_WRITE_PRICE}x). "
             "`python -m bench.scenarios_prefix` re-runs it.", "",
             "| conversation | policy | turns | mean reuse | without memory | steady turns "
             "(reuse) | previous prompt kept | reused chars | est. input cost |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, runs in (("synthetic, 200 turns", detail["synthetic_200_turns"]),
                       ("demo transcript", detail["demo_transcript"])):
        for policy, f in runs.items():
            lines.append(f"| {name} | {policy} | {f['turns']} | {f['mean_share']:.1%} | "
                         f"{f['without_memory_mean_share']:.1%} | {f['steady_turns']} "
                         f"({f['steady_mean_share']:.1%}) | {f['kept_share']:.1%} | "
                         f"{f['char_share']:.1%} | {f['relative_cost']:.2f} |")
    lines += ["", "*Without memory*: the same prompts with no memory at all, what the "
              "conversation's own growth allows (each turn's new dialogue is never in the "
              "previous prompt; short conversations reuse little). "
              "*Steady turns*: turns whose memory text is the same as on the conversation's "
              "previous turn. *Previous prompt kept*: the share of the previous prompt found "
              "again at the start of the new one. `prefix_reuse_freshness` and "
              "`prefix_reuse_stable` in `results.json` are the synthetic conversation's mean "
              "reuse; the 95% target for `stable` is not reachable on the demo transcript by "
              "any placement, since even its prompts without memory stay far below it."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return standalone.main("python -m bench.scenarios_prefix", "prefix-reuse", measure,
                           markdown, argv)


if __name__ == "__main__":
    raise SystemExit(main())
