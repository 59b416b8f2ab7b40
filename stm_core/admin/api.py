"""The admin calls a host (or the ``stm`` command) makes: ``stm.admin``.

Rules every method keeps:

* every input is validated before anything is written, and a bad one raises
  :class:`~stm_core.errors.ValidationError` naming the field and what is
  allowed, so nothing is ever half-written;
* writes go to the database first; the cache is refreshed only from what the
  database returned;
* reads of settings go to the database (another process may have changed
  them) and refresh the cache on the way;
* after the first positional id every argument is keyword-only; every call
  takes ``actor=`` (an :class:`~hookspecs.types.Actor`): the permission
  policy (``stm_admin_permission``) decides before anything is read or
  written, and a refusal raises :class:`~stm_core.errors.PermissionDenied`.
  Calls without an actor (the host's own code, the ``stm`` command) are not
  checked;
* a write that fails drops what the cache held for it, since the failure may
  have come after the commit.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from hookspecs.types import Actor, AdminAction
from stm_core.admin import categories, history, memory, prompts, user_data, values
from stm_core.admin.argument_types import checked_arguments
from stm_core.admin.ids import check_id, check_ids, check_optional_id
from stm_core.admin.params import PARAM_NAMES, ServerParams, effective_params, validate_params
from stm_core.engine.core import Engine
from stm_core.engine.profile import DEFAULT_CATEGORY, build_profile, detect_mode
from stm_core.errors import PermissionDenied, ValidationError
from stm_core.storage.records import (
    DM_SERVER,
    CategoryRecord,
    MemoryFilter,
    MemoryKey,
    MemoryRecord,
    MemoryRevision,
    MemoryWrite,
    ServerSettings,
)

log = logging.getLogger("stm.admin")


@checked_arguments
class Admin:
    """Settings, categories, prompts, privacy and memory edits of one store."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    # -- plumbing ----------------------------------------------------------------
    def _check(self, actor: Actor | None, name: str, *, writes: bool, scope: str,
               server_id: str | None = None, channel_id: str | None = None,
               user_id: str | None = None) -> None:
        """Ask the permission policy; raise PermissionDenied when it refuses."""
        if actor is None:
            return
        if not isinstance(actor, Actor):
            raise ValidationError(f"actor must be an Actor, got {type(actor).__name__}",
                                  field="actor", allowed="stm_core.Actor(user_id=..., "
                                                         "can_manage=...)")
        action = AdminAction(name=name, writes=writes, scope=scope, server_id=server_id,
                             channel_id=channel_id, user_id=user_id)
        if not self._engine.hooks.admin_allowed(actor, action):
            raise PermissionDenied(_denial(actor, action))

    async def _load(self, server_id: str) -> ServerSettings:
        return await self._engine.read_settings(server_id)

    async def _update(self, server_id: str, changes: Mapping[str, object]) -> ServerSettings:
        stored = await self._engine.update_settings(server_id, changes)
        log.info("server %s settings changed: %s", server_id, ", ".join(sorted(changes)))
        return stored

    async def _change_private(self, server_id: str, *, add: frozenset[str] = frozenset(),
                              remove: frozenset[str] = frozenset()) -> ServerSettings:
        """Add or remove private channels as one step at the database, so
        concurrent edits (from any process) never lose one another."""
        stored = await self._engine.change_private_channels(server_id, add=add, remove=remove)
        log.info("server %s settings changed: private_channel_ids", server_id)
        return stored

    def _params(self, stored: ServerSettings) -> ServerParams:
        return effective_params(stored, self._engine.settings,
                                render_modes=self._engine.hooks.render_modes())

    # -- server parameters ---------------------------------------------------------
    async def server_params(self, server_id: str, *,
                            actor: Actor | None = None) -> ServerParams:
        """The effective parameters (defaults filled in, and named as such)."""
        self._check(actor, "server_params", writes=False, scope="server", server_id=server_id)
        check_id(server_id, "server_id")
        return self._params(await self._load(server_id))

    async def set_server_params(self, server_id: str, *, refresh_cadence: int | None = None,
                                render_mode: str | None = None,
                                crude_message_count: int | None = None,
                                nudge_injection_depth: int | None = None,
                                content_injection_depth: int | None = None,
                                cache_policy: str | None = None,
                                prompt_budget_tokens: int | None = None,
                                actor: Actor | None = None) -> ServerParams:
        """Store the given parameters (``None`` leaves one unchanged).

        Ranges: ``refresh_cadence`` 1-100; ``render_mode`` a registered key;
        ``crude_message_count`` 1-``max_messages_per_channel``;
        ``nudge_injection_depth`` 0-20; ``content_injection_depth`` -1-20;
        ``cache_policy`` ``"freshness"`` or ``"stable"``;
        ``prompt_budget_tokens`` 0-1000000 (0: no budget).
        With nothing given it writes nothing and returns the current values.
        """
        self._check(actor, "set_server_params", writes=True, scope="server", server_id=server_id)
        check_id(server_id, "server_id")
        given = {"refresh_cadence": refresh_cadence, "render_mode": render_mode,
                 "crude_message_count": crude_message_count,
                 "nudge_injection_depth": nudge_injection_depth,
                 "content_injection_depth": content_injection_depth,
                 "cache_policy": cache_policy,
                 "prompt_budget_tokens": prompt_budget_tokens}
        changes = validate_params({k: v for k, v in given.items() if v is not None},
                                  settings=self._engine.settings,
                                  render_modes=self._engine.hooks.render_modes())
        if not changes:
            return await self.server_params(server_id)
        return self._params(await self._update(server_id, changes))

    async def reset_server_params(self, server_id: str, *,
                                  names: Iterable[str] | None = None,
                                  actor: Actor | None = None) -> ServerParams:
        """Return the named parameters (all by default) to their defaults."""
        self._check(actor, "reset_server_params", writes=True, scope="server", server_id=server_id)
        check_id(server_id, "server_id")
        chosen = tuple(PARAM_NAMES if names is None else names)
        unknown = [n for n in chosen if n not in PARAM_NAMES]
        if unknown:
            raise ValidationError(f"unknown server parameter {unknown[0]!r}; allowed: "
                                  + ", ".join(PARAM_NAMES), field="names",
                                  allowed=", ".join(PARAM_NAMES))
        return self._params(await self._update(server_id, dict.fromkeys(chosen)))

    # -- prompt overrides ------------------------------------------------------------
    def _prompts(self, stored: ServerSettings) -> values.ServerPrompts:
        mode = detect_mode(stored.categories or (DEFAULT_CATEGORY,))
        return prompts.server_prompts(stored, mode, self._engine.hooks)

    async def prompts(self, server_id: str, *,
                      actor: Actor | None = None) -> values.ServerPrompts:
        """Each override, or the default for the server's mode (provider ``""``)."""
        self._check(actor, "prompts", writes=False, scope="server", server_id=server_id)
        check_id(server_id, "server_id")
        return self._prompts(await self._load(server_id))

    async def set_prompts(self, server_id: str, *, tool_description: str | None = None,
                          nudge: str | None = None,
                          actor: Actor | None = None) -> values.ServerPrompts:
        """Set the tool description and/or the nudge (``None`` leaves one as is).

        At most 4000 characters each; blank text resets to the default. Text
        is stored as typed: braces that are not a ``{name}`` placeholder
        (``{12:30}``, ``{0.__class__}``) stay literal when rendered.
        """
        self._check(actor, "set_prompts", writes=True, scope="server", server_id=server_id)
        check_id(server_id, "server_id")
        changes: dict[str, object] = {}
        for name, text in (("tool_description", tool_description), ("nudge", nudge)):
            if text is not None:
                if not isinstance(text, str):
                    raise ValidationError(f"{name} must be text", field=name, allowed="text")
                changes[prompts.PROMPT_COLUMNS[name]] = prompts.clean_override(text, field=name)
        if not changes:
            return await self.prompts(server_id)
        return self._prompts(await self._update(server_id, changes))

    async def reset_prompts(self, server_id: str, *, tool_description: bool = True,
                            nudge: bool = True,
                            actor: Actor | None = None) -> values.ServerPrompts:
        """Return the chosen overrides (both by default) to the defaults."""
        self._check(actor, "reset_prompts", writes=True, scope="server", server_id=server_id)
        check_id(server_id, "server_id")
        changes: dict[str, object] = {}
        if tool_description:
            changes[prompts.PROMPT_COLUMNS["tool_description"]] = None
        if nudge:
            changes[prompts.PROMPT_COLUMNS["nudge"]] = None
        if not changes:
            return await self.prompts(server_id)
        return self._prompts(await self._update(server_id, changes))

    # -- categories ---------------------------------------------------------------------
    @staticmethod
    def _categories(stored: ServerSettings, cleared: int = 0) -> values.ServerCategories:
        infos = categories.category_infos(stored.categories)
        return values.ServerCategories(
            server_id=stored.server_id,
            mode=detect_mode(stored.categories or (DEFAULT_CATEGORY,)),
            categories=infos, is_default=not stored.categories, cleared_memories=cleared)

    async def categories(self, server_id: str, *,
                         actor: Actor | None = None) -> values.ServerCategories:
        """The effective categories (the single default ``summary`` when none)."""
        self._check(actor, "categories", writes=False, scope="server", server_id=server_id)
        check_id(server_id, "server_id")
        return self._categories(await self._load(server_id))

    async def set_categories(self, server_id: str,
                             lines: str | Iterable[str], *,
                             actor: Actor | None = None) -> values.ServerCategories:
        """Replace the categories from ``label: description`` lines.

        One text (split at newlines) or one item per category. Blank lines are
        skipped; all blank restores the default ``summary`` category. At most
        ``max_categories`` (5), each line at most 1000 characters. The write
        replaces every category in one transaction and deletes the server's
        server-scope memory rows, whose fields no longer match.
        """
        self._check(actor, "set_categories", writes=True, scope="server", server_id=server_id)
        check_id(server_id, "server_id")
        records = categories.parse_category_lines(
            lines, max_categories=self._engine.settings.max_categories)
        return await self._replace_categories(server_id, records)

    async def reset_categories(self, server_id: str, *,
                               actor: Actor | None = None) -> values.ServerCategories:
        """Back to the single default ``summary`` category (clears server memories)."""
        self._check(actor, "reset_categories", writes=True, scope="server", server_id=server_id)
        check_id(server_id, "server_id")
        return await self._replace_categories(server_id, ())

    async def _replace_categories(self, server_id: str,
                                  records: tuple[CategoryRecord, ...]) -> values.ServerCategories:
        stored, removed = await self._engine.replace_categories(server_id, records)
        _log_categories(server_id, len(records), removed)
        return self._categories(stored, cleared=len(removed))

    # -- capability switch ---------------------------------------------------------
    @staticmethod
    def _capability(stored: ServerSettings) -> values.Capability:
        return values.Capability(server_id=stored.server_id,
                                 stm_enabled=stored.stm_enabled is not False,
                                 is_default=stored.stm_enabled is None)

    async def capability(self, server_id: str, *,
                         actor: Actor | None = None) -> values.Capability:
        self._check(actor, "capability", writes=False, scope="server", server_id=server_id)
        check_id(server_id, "server_id")
        return self._capability(await self._load(server_id))

    async def set_stm_enabled(self, server_id: str, *, enabled: bool,
                              actor: Actor | None = None) -> values.Capability:
        """Turn the bot's automatic memory management (tool + nudge) on or off.
        Memory content keeps rendering; no rows are deleted."""
        self._check(actor, "set_stm_enabled", writes=True, scope="server", server_id=server_id)
        check_id(server_id, "server_id")
        _check_bool(enabled, "enabled")
        return self._capability(await self._update(server_id, {"stm_enabled": enabled}))

    # -- privacy ---------------------------------------------------------------------
    @staticmethod
    def _privacy(stored: ServerSettings) -> values.PrivacySettings:
        return values.PrivacySettings(
            server_id=stored.server_id,
            private_channel_ids=tuple(sorted(stored.private_channel_ids)),
            privacy_bypass=stored.privacy_bypass)

    async def privacy(self, server_id: str, *,
                      actor: Actor | None = None) -> values.PrivacySettings:
        self._check(actor, "privacy", writes=False, scope="server", server_id=server_id)
        check_id(server_id, "server_id")
        return self._privacy(await self._load(server_id))

    async def set_private_channels(self, server_id: str, *,
                                   channel_ids: Iterable[str],
                                   actor: Actor | None = None) -> values.PrivacySettings:
        """Replace the private channel list (empty clears it)."""
        self._check(actor, "set_private_channels", writes=True, scope="server", server_id=server_id)
        check_id(server_id, "server_id")
        ids = check_ids(channel_ids, "channel_ids")
        async with self._engine.storage.serialised():  # not inside another edit's read-write
            return self._privacy(await self._update(server_id, {"private_channel_ids": ids}))

    async def add_private_channels(self, server_id: str, *,
                                   channel_ids: Iterable[str],
                                   actor: Actor | None = None) -> values.PrivacySettings:
        self._check(actor, "add_private_channels", writes=True, scope="server", server_id=server_id)
        check_id(server_id, "server_id")
        ids = check_ids(channel_ids, "channel_ids")
        return self._privacy(await self._change_private(server_id, add=ids))

    async def remove_private_channels(self, server_id: str, *,
                                      channel_ids: Iterable[str],
                                      actor: Actor | None = None) -> values.PrivacySettings:
        self._check(actor, "remove_private_channels", writes=True, scope="server",
                    server_id=server_id)
        check_id(server_id, "server_id")
        ids = check_ids(channel_ids, "channel_ids")
        return self._privacy(await self._change_private(server_id, remove=ids))

    async def set_privacy_bypass(self, server_id: str, *, bypass: bool,
                                 actor: Actor | None = None) -> values.PrivacySettings:
        """With the bypass on, private channels' memories show everywhere."""
        self._check(actor, "set_privacy_bypass", writes=True, scope="server", server_id=server_id)
        check_id(server_id, "server_id")
        _check_bool(bypass, "bypass")
        return self._privacy(await self._update(server_id, {"privacy_bypass": bypass}))

    # -- a user's cross-server opt-in ---------------------------------------------------
    async def user_opt_in(self, user_id: str, *,
                          actor: Actor | None = None) -> values.UserOptIn:
        self._check(actor, "user_opt_in", writes=False, scope="user", user_id=user_id)
        check_id(user_id, "user_id")
        prefs = await self._engine.read_prefs(user_id)
        return values.UserOptIn(user_id=user_id, crossserver_opt_in=prefs.crossserver_opt_in)

    async def set_user_opt_in(self, user_id: str, *, opt_in: bool,
                              actor: Actor | None = None) -> values.UserOptIn:
        """Whether the user's memories from other servers (and DMs) may be
        folded into a server's context for them."""
        self._check(actor, "set_user_opt_in", writes=True, scope="user", user_id=user_id)
        check_id(user_id, "user_id")
        _check_bool(opt_in, "opt_in")
        prefs = await self._engine.set_opt_in(user_id, opt_in)
        return values.UserOptIn(user_id=user_id, crossserver_opt_in=prefs.crossserver_opt_in)

    # -- persona memory in a channel ---------------------------------------------------
    def _key(self, channel_id: str, persona_id: str | None, server_id: str | None,
             user_id: str | None) -> MemoryKey:
        check_id(channel_id, "channel_id")
        check_optional_id(persona_id, "persona_id")
        check_optional_id(server_id, "server_id")
        check_optional_id(user_id, "user_id")
        return memory.live_key(channel_id=channel_id, persona_id=persona_id,
                               server_id=server_id, user_id=user_id)

    def _snapshot(self, key: MemoryKey, record: MemoryRecord | None,
                  stored: ServerSettings | None) -> values.MemorySnapshot:
        profile = build_profile(stored, self._engine.hooks, self._engine.settings)
        return memory.snapshot(key, record, profile, now_ms=self._engine.clock.now_ms(),
                               settings=self._engine.settings)

    async def view_memory(self, *, channel_id: str, persona_id: str | None = None,
                          server_id: str | None = None,
                          user_id: str | None = None,
                          actor: Actor | None = None) -> values.MemorySnapshot:
        """The exact row that gets injected: ``(server, channel, persona)`` in a
        guild (``server_id`` given), ``(user, channel, persona)`` in a DM."""
        self._check(actor, "view_memory", writes=False, scope=_memory_scope(server_id),
                    server_id=server_id, channel_id=channel_id, user_id=user_id)
        key = self._key(channel_id, persona_id, server_id, user_id)
        stored = await self._load(server_id) if server_id is not None else None
        record = await self._engine.read_memory(key)
        return self._snapshot(key, record, stored)

    async def list_personas(self, *, channel_id: str | None = None,
                            server_id: str | None = None, user_id: str | None = None,
                            actor: Actor | None = None) -> tuple[values.PersonaMemory, ...]:
        """Personas with a non-blank memory or stored lines in the channel's live
        scope (persona ``""`` is a memory kept without a persona). Without
        ``channel_id``, every channel of the server (``server_id`` required)."""
        self._check(actor, "list_personas", writes=False, scope=_memory_scope(server_id),
                    server_id=server_id, channel_id=channel_id, user_id=user_id)
        check_optional_id(channel_id, "channel_id")
        check_optional_id(server_id, "server_id")
        check_optional_id(user_id, "user_id")
        if server_id is not None:
            flt = MemoryFilter(channel_id=channel_id, server_id=server_id, scope_kind="server")
        elif channel_id is None:
            raise ValidationError("listing every channel needs the server id",
                                  field="server_id", allowed="a server id")
        elif user_id:
            flt = MemoryFilter(channel_id=channel_id, user_id=user_id, server_id=DM_SERVER,
                               scope_kind="user")
        else:
            raise ValidationError("listing a direct-message channel needs the user id",
                                  field="user_id", allowed="the DM user's id")
        rows = await self._engine.list_memories(flt)
        found = []
        hint: Literal["summary", "categories", "lines"]
        for row in rows:
            if any(v.strip() for v in row.categories.values()):
                hint = "categories"
            elif row.summary and row.summary.strip():
                hint = "summary"
            elif row.messages:
                hint = "lines"
            else:
                continue
            found.append(values.PersonaMemory(persona_id=row.key.persona_id, mode_hint=hint,
                                              updated_at_ms=row.updated_at_ms,
                                              channel_id=row.key.channel_id,
                                              lines=len(row.messages)))
        return tuple(sorted(found, key=lambda p: (p.channel_id, p.persona_id)))

    async def edit_memory(self, *, channel_id: str, persona_id: str | None = None,
                          server_id: str | None = None, user_id: str | None = None,
                          summary: str | None = None,
                          categories: Mapping[str, str] | None = None,
                          actor: Actor | None = None) -> values.MemoryEdit:
        """Hand-edit the live memory of a persona in a channel.

        Summary mode: ``summary`` text is written; blank text clears the
        summary and the stored crude messages. Category mode: ``categories``
        (labels or slugs -> text) becomes the new full set; blank or omitted
        fields are cleared. Values are trimmed, sanitised and cut to
        ``max_summary_length`` like the tool's (truncation, reported in the
        result). In a guild the editor's (``user_id``) user copy is written
        too. The cadence counter is not reset.
        """
        self._check(actor, "edit_memory", writes=True, scope=_memory_scope(server_id),
                    server_id=server_id, channel_id=channel_id, user_id=user_id)
        key = self._key(channel_id, persona_id, server_id, user_id)
        stored = await self._load(server_id) if server_id is not None else None
        profile = build_profile(stored, self._engine.hooks, self._engine.settings)
        limit = self._engine.settings.max_summary_length
        changes: dict[str, Any]
        truncated: tuple[str, ...] = ()
        if profile.mode == "category":
            if categories is None or summary is not None:
                raise ValidationError(
                    "this server is in category mode; give categories (one of: "
                    + ", ".join(profile.slug_map.values()) + ")",
                    field="categories", allowed=", ".join(profile.slug_map))
            texts, truncated = memory.build_categories(categories, profile, max_length=limit)
            changes = {"set_categories": True, "categories": texts}
            cleared = not texts
        else:
            if summary is None or categories is not None:
                raise ValidationError("this server is in summary mode; give a summary",
                                      field="summary", allowed="text (blank clears)")
            if not isinstance(summary, str):
                raise ValidationError("summary must be text", field="summary", allowed="text")
            if summary.strip():
                text, cut = memory.clean_value(summary, max_length=limit)
                truncated = ("summary",) if cut else ()
                changes = {"set_summary": True, "summary": text}
                cleared = False
            else:
                changes = {"set_summary": True, "summary": None, "clear_messages": True}
                cleared = True
        keys = [key]
        if server_id is not None and user_id:
            keys.append(MemoryKey.user(user_id, channel_id, persona_id, server_id))
        settings = self._engine.settings
        now = self._engine.clock.now_ms()
        note = history.revision_note(settings, "admin", actor=actor.user_id if actor else None)
        writes = [MemoryWrite(key=k, now_ms=now, crude_ttl_ms=settings.crude_ttl_ms,
                              summary_ttl_ms=settings.summary_ttl_ms, revision=note, **changes)
                  for k in keys]
        records = await self._engine.write_memory(writes)
        log.info("memory of %s edited (%s)", key, "cleared" if cleared else "written")
        return values.MemoryEdit(snapshot=self._snapshot(key, records[0], stored),
                                 keys=tuple(keys), truncated=truncated, cleared=cleared)

    # -- summary history (undo) ------------------------------------------------------------
    async def _revisions(self, key: MemoryKey) -> tuple[MemoryRecord | None,
                                                        list[MemoryRevision]]:
        kept = self._engine.storage.history()
        return await self._engine.read_memory(key), await kept.list_revisions(key)

    async def memory_history(self, *, channel_id: str, persona_id: str | None = None,
                             server_id: str | None = None, user_id: str | None = None,
                             actor: Actor | None = None) -> history.MemoryHistoryView:
        """The live memory's kept revisions, newest first, each with a diff
        against the current content (see :mod:`stm_core.admin.history`)."""
        self._check(actor, "memory_history", writes=False, scope=_memory_scope(server_id),
                    server_id=server_id, channel_id=channel_id, user_id=user_id)
        key = self._key(channel_id, persona_id, server_id, user_id)
        record, revisions = await self._revisions(key)
        return history.history_view(key, record, revisions,
                                    limit=self._engine.settings.memory_history_revisions)

    async def undo_memory(self, *, channel_id: str, persona_id: str | None = None,
                          server_id: str | None = None, user_id: str | None = None,
                          actor: Actor | None = None) -> history.MemoryRestore:
        """Restore the newest kept revision that differs from the current memory.
        Permission-checked like :meth:`edit_memory`; the restore is a new revision."""
        return await self._restore("undo_memory", None, channel_id=channel_id,
                                   persona_id=persona_id, server_id=server_id,
                                   user_id=user_id, actor=actor)

    async def restore_memory(self, *, channel_id: str, rev: int,
                             persona_id: str | None = None, server_id: str | None = None,
                             user_id: str | None = None,
                             actor: Actor | None = None) -> history.MemoryRestore:
        """Write kept revision ``rev`` back as a new revision (see :meth:`undo_memory`)."""
        if isinstance(rev, bool) or not isinstance(rev, int):
            raise ValidationError(f"rev must be a revision number, got {rev!r}", field="rev",
                                  allowed="a number from memory_history")
        return await self._restore("restore_memory", rev, channel_id=channel_id,
                                   persona_id=persona_id, server_id=server_id,
                                   user_id=user_id, actor=actor)

    async def _restore(self, name: str, rev: int | None, *, channel_id: str,
                       persona_id: str | None, server_id: str | None, user_id: str | None,
                       actor: Actor | None) -> history.MemoryRestore:
        self._check(actor, name, writes=True, scope=_memory_scope(server_id),
                    server_id=server_id, channel_id=channel_id, user_id=user_id)
        key = self._key(channel_id, persona_id, server_id, user_id)
        record, revisions = await self._revisions(key)
        target = (history.undo_target(record, revisions) if rev is None
                  else history.find_revision(revisions, rev))
        stored = await self._load(server_id) if server_id is not None else None
        [written] = await self._engine.write_memory([history.restore_write(
            target, now_ms=self._engine.clock.now_ms(), settings=self._engine.settings,
            actor=actor.user_id if actor else None)])
        log.info("memory of %s restored to revision %s", key, target.rev)
        return history.MemoryRestore(snapshot=self._snapshot(key, written, stored),
                                     restored_from=target.rev, rev=written.rev)

    # -- clearing -------------------------------------------------------------------------
    async def _delete(self, flt: MemoryFilter) -> values.ClearResult:
        removed = await self._engine.delete_memories(flt)
        return values.ClearResult(removed=len(removed), keys=tuple(removed))

    async def clear_channel(self, channel_id: str, *,
                            actor: Actor | None = None) -> values.ClearResult:
        """Delete every memory row of the channel (all scopes, users, personas)."""
        self._check(actor, "clear_channel", writes=True, scope="channel",
                    channel_id=channel_id)
        check_id(channel_id, "channel_id")
        return await self._delete(MemoryFilter(channel_id=channel_id))

    async def channel_rows(self, channel_id: str, *,
                           actor: Actor | None = None) -> values.ClearResult:
        """What :meth:`clear_channel` would delete (nothing is deleted)."""
        self._check(actor, "clear_channel", writes=False, scope="channel",
                    channel_id=channel_id)
        check_id(channel_id, "channel_id")
        rows = await self._engine.list_memories(MemoryFilter(channel_id=channel_id))
        return values.ClearResult(removed=len(rows), keys=tuple(r.key for r in rows))

    async def clear_user(self, user_id: str, *,
                         actor: Actor | None = None) -> values.ClearResult:
        """Delete the user's own (user-scope) memory rows, in DMs and guilds."""
        self._check(actor, "clear_user", writes=True, scope="user", user_id=user_id)
        check_id(user_id, "user_id")
        return await self._delete(MemoryFilter(user_id=user_id, scope_kind="user"))

    # -- what is stored ---------------------------------------------------------------------
    async def list_servers(self, *, actor: Actor | None = None) -> tuple[str, ...]:
        """Servers with stored settings or shared channel memories, sorted."""
        self._check(actor, "list_servers", writes=False, scope="server")
        return tuple(await self._engine.storage.inventory().server_ids())

    # -- privacy requests -------------------------------------------------------------------
    async def forget_user(self, user_id: str, *, dry_run: bool = False,
                          names: Iterable[str] = (),
                          actor: Actor | None = None) -> user_data.ForgetResult:
        """Remove the user's data everywhere: their own rows, their lines in
        shared rows and other users' copies, the lines and memories that name
        them (cleared with their revision history), their opt-in.
        ``names``: display names of the user to search for besides those on
        their stored lines. ``dry_run`` reports what would go and changes nothing."""
        self._check(actor, "forget_user", writes=not dry_run, scope="user", user_id=user_id)
        check_id(user_id, "user_id")
        _check_bool(dry_run, "dry_run")
        return await user_data.forget_user(self._engine, user_id, dry_run=dry_run,
                                           names=user_data.check_names(names))

    async def export_user(self, user_id: str, *, names: Iterable[str] = (),
                          actor: Actor | None = None) -> dict[str, Any]:
        """Every stored thing about the user as a JSON-able dict: their rows,
        their lines in other rows, the memory that names them (``names``:
        display names to search for besides those on their lines), their
        preferences."""
        self._check(actor, "export_user", writes=False, scope="user", user_id=user_id)
        check_id(user_id, "user_id")
        return await user_data.export_user(self._engine, user_id,
                                           names=user_data.check_names(names))

    # -- export / import ----------------------------------------------------------------
    async def export_config(self, server_id: str, *,
                            actor: Actor | None = None) -> dict[str, Any]:
        """The server's configuration (not its memories) as a JSON-able dict."""
        self._check(actor, "export_config", writes=False, scope="server", server_id=server_id)
        check_id(server_id, "server_id")
        from stm_core.admin import config_io
        return config_io.export_document(await self._load(server_id))

    async def import_config(self, server_id: str, data: object, *, dry_run: bool = False,
                            actor: Actor | None = None) -> dict[str, Any]:
        """Validate a document from :meth:`export_config` completely, then apply
        it to ``server_id``; returns the configuration now stored.

        The whole document is written in one transaction (all of it or none
        of it); server memories are cleared in it only when the categories
        it finds stored differ from the document's. With ``dry_run`` nothing
        is written; the result names the fields that would change
        (``would_change``), whether shared memories would be cleared, and the
        configuration that would be stored (``config``).
        """
        self._check(actor, "import_config", writes=not dry_run, scope="server",
                    server_id=server_id)
        check_id(server_id, "server_id")
        _check_bool(dry_run, "dry_run")
        from stm_core.admin import config_io
        doc = config_io.parse_document(data)
        params = {k: v for k, v in
                  ((n, getattr(doc.params, n)) for n in PARAM_NAMES) if v is not None}
        validate_params(params, settings=self._engine.settings,
                        render_modes=self._engine.hooks.render_modes())
        changes: dict[str, object] = {name: getattr(doc.params, name) for name in PARAM_NAMES}
        for name, column in prompts.PROMPT_COLUMNS.items():
            text = getattr(doc.prompts, name)
            changes[column] = None if text is None else prompts.clean_override(
                text, field=f"prompts.{name}")
        changes["stm_enabled"] = doc.stm_enabled
        changes["private_channel_ids"] = check_ids(doc.privacy.private_channel_ids,
                                                   "privacy.private_channel_ids")
        changes["privacy_bypass"] = doc.privacy.bypass
        new_categories = categories.check_categories(
            ((f"categories[{i}]", c.label, c.description) for i, c in enumerate(doc.categories)),
            max_categories=self._engine.settings.max_categories)
        engine = self._engine
        if dry_run:
            from stm_core.admin.config_preview import preview_import
            shared = await engine.list_memories(MemoryFilter(server_id=server_id,
                                                             scope_kind="server"))
            return preview_import(await engine.read_settings(server_id), changes,
                                  new_categories, server_memory_rows=len(shared))
        _, removed = await engine.replace_server_config(server_id, changes, new_categories)
        _log_categories(server_id, len(new_categories), removed)
        return await self.export_config(server_id)


def _log_categories(server_id: str, count: int, removed: list[MemoryKey]) -> None:
    log.info("server %s categories replaced (%d); %d server memories cleared",
             server_id, count, len(removed))


def _memory_scope(server_id: str | None) -> str:
    """A guild channel's memory is the server's; a DM's is its user's."""
    return "server" if server_id is not None else "user"


def _denial(actor: Actor, action: AdminAction) -> str:
    what = action.name.replace("_", " ")
    if action.scope == "user":
        return (f"user {actor.user_id} may not {what}: it concerns user {action.user_id}'s "
                f"own memory, which only they may see or change")
    where = (f"server {action.server_id}" if action.server_id is not None
             else f"channel {action.channel_id}")
    return (f"user {actor.user_id} may not {what} in {where}: changing it needs the manage "
            f"permission (viewing is open)")


def _check_bool(value: object, field: str) -> None:
    if not isinstance(value, bool):
        raise ValidationError(f"{field} must be true or false, got {value!r}", field=field,
                              allowed="true or false")
