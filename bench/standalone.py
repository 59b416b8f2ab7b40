"""Scenarios that also run alone: merge their keys into ``results.json`` and
replace their own marked section of ``RESULTS.md``, leaving the rest as it is."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any


def merge(results: dict[str, Any], folder: Path, section: str, markdown: str) -> None:
    json_path = folder / "results.json"
    stored = json.loads(json_path.read_text(encoding="utf-8")) if json_path.exists() else {}
    stored.update(results)
    json_path.write_text(json.dumps(stored, indent=2) + "\n", encoding="utf-8")
    start, end = f"<!-- {section}:start -->", f"<!-- {section}:end -->"
    block = f"{start}\n{markdown.strip()}\n{end}"
    md_path = folder / "RESULTS.md"
    text = md_path.read_text(encoding="utf-8") if md_path.exists() else ""
    if start in text and end in text:
        head, rest = text.split(start, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    md_path.write_text(text, encoding="utf-8")


def main(prog: str, section: str, measure: Callable[[], Coroutine[Any, Any, dict[str, Any]]],
         markdown: Callable[[dict[str, Any]], str], argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent,
                        help="directory whose results.json and RESULTS.md get the figures")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    results = asyncio.run(measure())
    args.out.mkdir(parents=True, exist_ok=True)
    merge(results, args.out, section, markdown(results))
    print(json.dumps(results, indent=2))
    print(f"done in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 0
