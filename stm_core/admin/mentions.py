"""What names a user in stored memory: their known names, their id, its mention forms.

A user's erasure and access requests cover more than the lines they wrote.
The summaries and category texts the model wrote, other people's lines and
the persona's replies, and every kept revision of a memory can name them.
stm knows a user by:

- the display names stored on the user's own lines (``speaker_name`` of the
  lines whose author id is theirs) and those the operator gives, except the
  default name a turn carries when the host names nobody (``"User"``) and
  one-character names, which would match ordinary words: those are reported
  as not searched;
- their id, and its mention forms ``<@id>`` and ``<@!id>``.

The rule (its one home): a term names the user where it stands as a whole
word (no letter, digit or underscore right before or after it, on the sides
where the term itself starts or ends with one), ignoring case
(``str.casefold``). Storage adapters find the candidate rows with a wider
test (:meth:`~stm_core.storage.protocol.UserErasure.rows_mentioning`); this
module decides.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from stm_core.models import CrudeMessage, Turn
from stm_core.storage.records import MemoryRecord, MemoryRevision

#: The display name of a turn whose host named nobody: not an identity.
DEFAULT_NAME = str(attrs.fields(Turn).triggerer_name.default)
#: Shorter names are not searched: they would match ordinary words.
MIN_NAME_LENGTH = 2


@attrs.frozen(kw_only=True)
class SearchTerms:
    """What a privacy request looks for."""

    user_id: str
    #: Display names searched, in the order first seen.
    names: tuple[str, ...]
    #: Display names seen on the user's lines but not searched (see module doc).
    names_not_searched: tuple[str, ...] = ()

    @property
    def ids(self) -> tuple[str, ...]:
        return (self.user_id, f"<@{self.user_id}>", f"<@!{self.user_id}>")

    @property
    def terms(self) -> tuple[str, ...]:
        return (*self.names, *self.ids)

    def to_dict(self) -> dict[str, Any]:
        return {"names": list(self.names), "ids": list(self.ids),
                "names_not_searched": list(self.names_not_searched)}


def search_terms(user_id: str, records: Iterable[MemoryRecord]) -> SearchTerms:
    """The user's terms, with the display names found on their lines in ``records``."""
    seen = dict.fromkeys(m.speaker_name for r in records for m in r.messages
                         if m.author_id == user_id and m.speaker_name
                         and m.speaker_name != user_id)  # the id is searched anyway
    names = [n for n in seen if searchable(n)]
    return SearchTerms(user_id=user_id, names=tuple(names),
                       names_not_searched=tuple(n for n in seen if n not in names))


def searchable(name: str) -> bool:
    name = name.strip()
    return len(name) >= MIN_NAME_LENGTH and name.casefold() != DEFAULT_NAME.casefold()


def _pattern(term: str) -> str:
    folded = term.strip().casefold()
    before = r"(?<!\w)" if re.match(r"\w", folded[0]) else ""
    after = r"(?!\w)" if re.match(r"\w", folded[-1]) else ""
    return f"{before}{re.escape(folded)}{after}"


class Matcher:
    """Tells whether a text, a memory's content, a line or a revision names the user."""

    def __init__(self, terms: SearchTerms) -> None:
        self.terms = terms
        self._search = re.compile("|".join(_pattern(t) for t in terms.terms)).search

    def names(self, text: str | None) -> bool:
        return text is not None and self._search(text.casefold()) is not None

    def in_content(self, summary: str | None, categories: Mapping[str, str]) -> bool:
        """The summary or a category text names the user."""
        return self.names(summary) or any(map(self.names, categories.values()))

    def lines(self, messages: Sequence[CrudeMessage]) -> tuple[CrudeMessage, ...]:
        """The lines of others whose text names the user (the user's own
        lines are theirs whatever they say)."""
        return tuple(m for m in messages
                     if m.author_id != self.terms.user_id and self.names(m.content))

    def revisions(self, revisions: Sequence[MemoryRevision]) -> tuple[MemoryRevision, ...]:
        """The revisions whose content names the user, or that the user wrote
        as an operator (their id is the revision's ``actor``)."""
        return tuple(r for r in revisions if r.actor == self.terms.user_id
                     or self.in_content(r.summary, r.categories))
