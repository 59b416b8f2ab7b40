"""Admin writes one way: through the engine, never the storage adapter, and
without branching on the adapter's capabilities (what an adapter lacks is
filled in once, in ``stm_core.storage.complete``)."""

from __future__ import annotations

import ast
from pathlib import Path

import stm_core.admin

ADMIN = Path(stm_core.admin.__file__).parent
CAPABILITIES = {"AtomicServerEdits", "MemoryHistory", "UserErasure", "StorageInventory"}


def test_no_admin_module_reaches_the_adapter_or_tests_a_capability() -> None:
    found = []
    for path in sorted(ADMIN.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "adapter":
                found.append(f"{path.name}:{node.lineno} .adapter")
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "isinstance"):
                tested = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                found += [f"{path.name}:{node.lineno} isinstance {name}"
                          for name in sorted(tested & CAPABILITIES)]
    assert found == []
