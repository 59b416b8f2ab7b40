"""``cli_startup_ms``: wall time of ``stm server params show`` on a SQLite file.

An operator's command is mostly start-up: the interpreter, then the imports,
then one small read. The command timed is the one operators run: stm built
as a wheel and installed (bytecode compiled, as pip does) into a virtual
environment of its own, whose dependencies come from this interpreter's
environment through a ``.pth`` line. A development checkout's editable
install would add its import hook to every start (pathlib, importlib.util).
It runs again and again on a database created first (warm OS cache),
interleaved with a bare ``python -c pass`` of the same environment so the
interpreter's own share is visible (``cli_python_floor_ms``). One more run
under ``python -X importtime`` names the packages that cost the most to
import (self time summed per top-level package) and says whether SQLAlchemy
was imported at all. A ``tiny`` run (the smoke test) times the command beside
this interpreter instead and says so (``cli_startup.install``).
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.config import RunConfig

#: The server the command reads (its row exists: settings were written once).
SERVER = "1234567890"
#: How many packages the import report lists.
TOP_IMPORTS = 8


def stm_command() -> list[str]:
    """The installed ``stm`` script beside this interpreter (else on PATH)."""
    beside = Path(sys.executable).with_name("stm")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("stm")
    if found is None:
        raise RuntimeError("the stm command is not installed (pip install -e .)")
    return [found]


#: The project's root (what the wheel is built from).
ROOT = Path(__file__).resolve().parent.parent


def wheel_command(workdir: Path) -> tuple[list[str], str]:
    """``stm`` installed from a freshly built wheel into a virtual environment
    under ``workdir`` (its dependencies are this environment's), and that
    environment's python."""
    wheels, venv = workdir / "wheel", workdir / "cli-venv"
    _quiet([sys.executable, "-m", "pip", "wheel", "--no-deps",
            "-w", str(wheels), str(ROOT)])
    (wheel,) = wheels.glob("stm_core-*.whl")
    _quiet([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    _quiet([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
            str(wheel)])
    purelib = _quiet([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
    # The dependencies: this environment's packages, after the wheel's own.
    Path(purelib, "_stm_bench_dependencies.pth").write_text(
        sysconfig.get_path("purelib") + "\n")
    return [str(venv / "bin" / "stm")], str(python)


def _quiet(argv: list[str]) -> str:
    """Run ``argv``; its standard output, stripped (raises when it fails)."""
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("STM_VERIFY_PRECOMPILED_SQL", None)  # a test-suite check, not what users run
    # An installed package runs from bytecode (pip compiles it); with this set,
    # every run would compile stm's own modules again and time the compiler.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU milliseconds of one run (CPU does not swing with an idle vCPU)."""
    cpu, start = _children_cpu_s(), time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000, (_children_cpu_s() - cpu) * 1000


def import_offenders(argv: list[str], env: dict[str, str], python: str) -> dict[str, Any]:
    """``-X importtime`` of one run: self time per top-level package, largest first."""
    script = argv[0]
    out = subprocess.run([python, "-X", "importtime", script, *argv[1:]], env=env,
                         check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True).stderr
    per_package: dict[str, int] = defaultdict(int)
    modules = set()
    for line in out.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _cumulative, name = line.removeprefix("import time:").split("|")
        module = name.strip()
        modules.add(module)
        per_package[module.split(".")[0]] += int(self_us)
    top = sorted(per_package.items(), key=lambda kv: kv[1], reverse=True)[:TOP_IMPORTS]
    return {"top_packages_ms": {k: round(v / 1000, 1) for k, v in top},
            "total_import_ms": round(sum(per_package.values()) / 1000, 1),
            "modules": len(modules),
            "sqlalchemy_imported": "sqlalchemy" in modules}


async def run(cfg: RunConfig) -> dict[str, Any]:
    db = cfg.workdir / "cli.db"
    if cfg.name == "tiny":
        command, python, install = stm_command(), sys.executable, "beside this interpreter"
    else:
        command, python = wheel_command(cfg.workdir)
        install = "wheel, in a virtual environment of its own"
    base = [*command, "--db", f"sqlite:///{db}"]
    env = _env()
    subprocess.run([*base, "db", "upgrade"], env=env, check=True, capture_output=True)
    subprocess.run([*base, "server", "params", "set", SERVER, "--cadence", "7"], env=env,
                   check=True, capture_output=True)
    show = [*base, "server", "params", "show", SERVER]
    floor = [python, "-c", "pass"]
    runs = {"full": 40, "quick": 15}.get(cfg.name, 3)
    for _ in range(2):  # bytecode written, file in the OS cache
        _run(show, env)
    stm, floor_runs = [], []
    for _ in range(runs):  # interleaved: machine noise falls on both alike
        stm.append(_run(show, env))
        floor_runs.append(_run(floor, env))
    stm_ms = [wall for wall, _ in stm]
    return {
        "cli_startup_ms": round(statistics.median(stm_ms), 1),
        "cli_python_floor_ms": round(statistics.median(wall for wall, _ in floor_runs), 1),
        "cli_startup_cpu_ms": round(statistics.median(cpu for _, cpu in stm), 1),
        "cli_python_floor_cpu_ms": round(statistics.median(cpu for _, cpu in floor_runs), 1),
        "cli_startup": {"runs": runs, "command": "stm server params show (SQLite)",
                        "install": install,
                        "min_ms": round(min(stm_ms), 1), "max_ms": round(max(stm_ms), 1),
                        "imports": import_offenders(show, env, python)},
    }
