"""stm plugins written against stm 0.1.0, never updated."""

#: Models a host routes through LiteLLM that cannot call tools.
NO_TOOLS = frozenset({"anthropic/claude-2", "anthropic/claude-instant-1"})
#: The provider prefix these plugins phrase for.
ANTHROPIC_PREFIX = "anthropic/"
