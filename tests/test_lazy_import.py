"""``lazy_module`` (the SQLAlchemy adapter binds its statement builders with it)
refuses a package: importing one of its modules would load it twice."""

from __future__ import annotations

import pytest

from stm_core._util.lazy_import import lazy_module


def test_a_package_cannot_be_bound_lazily() -> None:
    with pytest.raises(ImportError, match="is a package"):
        lazy_module("stm_core.admin")

