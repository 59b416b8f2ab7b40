"""Static tool-name macros, backtick-quoted (``{short_term_memory_tool}`` ...).

The long-term-memory tools (``{memory_tool}``, ``{memory_update_tool}``) are not
here: they are the host's, named in its settings (stm_core.text.long_term_tools).
"""

from __future__ import annotations

from collections.abc import Mapping

from hookspecs import hookimpl

TOOL_NAMES: dict[str, str] = {
    "short_term_memory_tool": "update_short_term_memory",
    "capabilities_tool": "manage_capabilities",
    "task_tool": "manage_tasks",
    "cross_channel_tool": "read_other_channel",
    "sticker_tool": "send_sticker",
    "manage_message_tool": "manage_message",
    "pin_tool": "pin_message",
    "message_interaction_tool": "interact_with_message",
    "profile_picture_tool": "view_profile_picture",
    "document_tool": "read_document",
    "message_metadata_tool": "get_message_metadata",
    "timestamp_refresh_tool": "refresh_timestamp",
    "media_context_tool": "get_media_context",
    "gif_tool": "send_gif",
    "youtube_tool": "watch_youtube",
    "image_analysis_tool": "analyze_image",
    "image_generation_tool": "generate_image",
    "anime_image_generation_tool": "generate_anime_image",
    "voice_message_tool": "send_voice_message",
}


@hookimpl(trylast=True)
def stm_prompt_macros() -> Mapping[str, str]:
    return {name: f"`{tool}`" for name, tool in TOOL_NAMES.items()}
