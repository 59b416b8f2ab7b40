"""Text helpers: templates and their macros, visible truncation, relative
times, category slugs, the memo of worked-out line texts, long-term-intent
detection and the sentences that name the host's long-term tools.

The values layer, beside :mod:`stm_core.models`: a module here works on
strings and settings only; it never touches the database, the cache or a
plugin.
"""
