# ruff: noqa: E501  (a table of source snippets reads best one mutant per line)
"""Hand-made mutants that mutmut does not generate (a dropped ``.lower()``, a
name taken out of a constant, a removed slice, a removed guard): each must
make the named test file fail. Run with ``make mutate`` or on its own:

    .venv/bin/python tools/hand_mutants.py [name ...]

Each mutant is written into the source, its tests run, and the source is
restored. Exit status 1 when any mutant survives.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: (name, file, original text, mutated text, tests that must fail)
MUTANTS: list[tuple[str, str, str, str, list[str]]] = [
 ("render_other newest > -> <", "stm_core/pipeline/render_other.py", "record.updated_at_ms > newest", "record.updated_at_ms < newest", ["tests/pipeline/test_freshness_and_blanks.py"]),
 ("templates case-sensitive", "stm_core/text/templates.py", "name.lower() in IDENTITY_MACROS", "name in IDENTITY_MACROS", ["tests/rules/test_template_rules.py"]),
 ("templates user_term dropped", "stm_core/text/templates.py", '"user_formatted", "user_term", "bot"', '"user_formatted", "bot"', ["tests/rules/test_template_rules.py"]),
 ("templates no ceiling", "stm_core/text/templates.py", "return out[:MAX_EXPANDED_LENGTH]", "return out", ["tests/rules/test_template_rules.py"]),
 ("apply limit > -> >=", "stm_core/tool/apply.py", "if len(text) > limit:", "if len(text) >= limit:", ["tests/tool/test_apply_boundaries.py"]),
 ("inject clamp removed", "stm_core/inject/__init__.py", "max(0, min(at, len(messages)))", "at", ["tests/inject/test_anchored_block.py"]),
 ("inject tool-pair guard removed", "stm_core/inject/__init__.py", "at = keep_tool_calls_together(messages, max(0, min(at, len(messages))), fmt)", "at = max(0, min(at, len(messages)))", ["tests/inject/test_anchored_block.py"]),
 ("cache LRU never evicts", "stm_core/engine/cache.py", "if len(data) > self.maxsize:", "if False:", ["tests/storage/test_cache_rules.py"]),
 ("cache pending.append removed", "stm_core/engine/cache.py", "            if pending is not None:\n                pending.append(record)", "            if pending is not None:\n                pass", ["tests/storage/test_cache_rules.py"]),
 ("cache age <= -> <", "stm_core/engine/cache.py", "<= self._max_age_ms:", "< self._max_age_ms:", ["tests/storage/test_cache_rules.py"]),
 ("record keep-last-N break removed", "stm_core/pipeline/record.py", "    for response in reversed(responses):\n        if len(newest_first) == keep:\n            break", "    for response in reversed(responses):\n        if False:\n            break", ["tests/record/test_record_edges.py"]),
 ("record DM-without-user skip removed", "stm_core/pipeline/record.py", "if turn.server_id is None and not turn.user_id:", "if False:", ["tests/record/test_record_edges.py"]),
 ("record empty persona id kept", "stm_core/pipeline/record.py", "found.setdefault(response.persona_id or None,", "found.setdefault(response.persona_id,", ["tests/record/test_record_edges.py"]),
 ("record counter of first row", "stm_core/pipeline/record.py", "persona: rows[index].turns_since_refresh", "persona: rows[0].turns_since_refresh", ["tests/record/test_record_edges.py"]),
 ("record reply skips annotations", "stm_core/pipeline/record.py", "text = response.content\n        content = cleaned.get(text)\n        if content is None:\n            content = clean_content(text, annotations, max_length)", "text = response.content\n        content = cleaned.get(text)\n        if content is None:\n            content = clean_content(text, None, max_length)", ["tests/record/test_record_turn.py"]),
 ("record crude TTL dropped", "stm_core/pipeline/record.py", "                                   crude_ttl_ms=settings.crude_ttl_ms,\n", "", ["tests/record/test_record_turn.py"]),
 ("record summary TTL dropped", "stm_core/pipeline/record.py", "crude_ttl_ms=settings.crude_ttl_ms,\n                                   summary_ttl_ms=settings.summary_ttl_ms)", "crude_ttl_ms=settings.crude_ttl_ms)", ["tests/record/test_record_turn.py"]),
 ("apply no_identity (summary) removed", "stm_core/tool/apply.py", '        if not _identifiable(turn):\n            return refusal("no_identity")\n        written = {"summary"', '        if False:\n            return refusal("no_identity")\n        written = {"summary"', ["tests/tool/test_apply_boundaries.py"]),
 ("apply no_identity (category) removed", "stm_core/tool/apply.py", '    else:\n        if not _identifiable(turn):', '    else:\n        if False:', ["tests/tool/test_apply_boundaries.py"]),
 ("apply empty args not {}", "stm_core/tool/apply.py", "json.loads(arguments) if arguments.strip() else {}", "json.loads(arguments)", ["tests/tool/test_apply_boundaries.py"]),
 ("apply non-mapping accepted", "stm_core/tool/apply.py", "return arguments if isinstance(arguments, Mapping) else None", "return arguments  # type: ignore", ["tests/tool/test_apply_boundaries.py"]),
 ("nudge empty text kept", "stm_core/pipeline/nudge.py", "return prompts.nudge or None", "return prompts.nudge", ["tests/pipeline/test_nudge.py"]),
 ("same_channel blank kept", "stm_core/pipeline/same_channel.py", "if value and value.strip():", "if value:", ["tests/pipeline/test_freshness_and_blanks.py"]),
 ("same_channel summary-mode blank kept", "stm_core/pipeline/same_channel.py", "for slug, value in categories.items() if value.strip()]", "for slug, value in categories.items()]", ["tests/pipeline/test_freshness_and_blanks.py"]),
 ("render_other blank kept", "stm_core/pipeline/render_other.py", "                 if value.strip()]", "                 ]", ["tests/pipeline/test_freshness_and_blanks.py"]),
 ("expiry blank counts as content", "stm_core/pipeline/expiry.py", "any(v.strip() for v in record.categories.values())", "any(record.categories.values())", ["tests/pipeline/test_freshness_and_blanks.py"]),
 ("slugs no re.ASCII", "stm_core/text/slugs.py", 're.compile(r"[\\s\\W]+", re.ASCII)', 're.compile(r"[\\s\\W]+")', ["tests/rules/test_slug_rules.py"]),
 ("slugs no c_ prefix", "stm_core/text/slugs.py", 'slug = "c_" + slug', 'slug = slug', ["tests/rules/test_slug_rules.py"]),
 ("slugs no 48 cut", "stm_core/text/slugs.py", "return slug[:MAX_SLUG_LENGTH]", "return slug", ["tests/rules/test_slug_rules.py"]),
 ("slugs suffix from 3", "stm_core/text/slugs.py", "slug, n = base, 2", "slug, n = base, 3", ["tests/rules/test_slug_rules.py"]),
 ("intent no lookbehind", "stm_core/text/intent.py", 'r"(?<![a-z0-9_])(?:"', 'r"(?:"', ["tests/rules/test_long_term_intent_phrases.py"]),
 ("intent no U+2018", "stm_core/text/intent.py", '"\\u2018": "\'", ', '', ["tests/rules/test_long_term_intent_phrases.py"]),
]


def main(only: list[str]) -> int:
    env = {k: v for k, v in os.environ.items() if k not in ("STM_TEST_POSTGRES_URL", "STM_REQUIRE_POSTGRES")}
    survivors = 0
    for name, f, old, new, tests in MUTANTS:
        if only and not any(o in name for o in only):
            continue
        p = ROOT / f
        src = p.read_text()
        if src.count(old) != 1:
            print(f"?? {name}: the original text is found {src.count(old)} times")
            survivors += 1
            continue
        p.write_text(src.replace(old, new))
        try:
            r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests],
                               cwd=ROOT, env=env, capture_output=True, text=True)
        finally:
            p.write_text(src)
        last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr[-200:]
        survivors += r.returncode == 0
        print(("killed   " if r.returncode != 0 else "SURVIVED ") + f"{name}: {last}", flush=True)
    return 1 if survivors else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
