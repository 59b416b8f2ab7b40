"""The offline model: each SDK's real client, answered by a script instead of a server.

``python openai_bot.py --offline`` (or any other bot) needs no API key and no
network: the SDK builds and sends every request as it would to the provider,
and this module answers on the SDK's own transport. The answers are built from
the SDK's own response types, so what the bot parses is what the provider
sends.

The script: when the memory tool is declared and stm's nudge (which names the
tool) is in the prompt, the model calls the tool once; otherwise it answers
"Sounds lovely!".
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from anthropic import AsyncAnthropic
from anthropic.types import Message, TextBlock, ToolUseBlock
from anthropic.types import Usage as AnthropicUsage
from google import genai
from google.genai import types as gemini
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion, ChatCompletionMessage
from openai.types.chat.chat_completion import Choice
from openai.types.chat.chat_completion_message_function_tool_call import (
    ChatCompletionMessageFunctionToolCall,
    Function,
)
from openai.types.responses import (
    Response,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from stm_core import TOOL_NAME

try:  # the HTTP library the SDKs use, under the name it is installed as
    import httpx2 as httpx
except ImportError:  # pragma: no cover - SDK releases on plain httpx
    import httpx  # type: ignore[no-redef, import-not-found, unused-ignore]

#: What the scripted model writes into its memory, and what it says.
SUMMARY = "Alice is painting a mural: an orange sun, the sky still open."
REPLY = "Sounds lovely!"
#: Where each wire format keeps the conversation, and how a tool result is marked.
CONVERSATION_KEYS = ("messages", "input", "contents")
TOOL_RESULT_MARKS = ("tool_call_id", "function_call_output", "tool_result", "functionResponse")

Body = dict[str, Any]
#: Builds the provider's JSON answer: ``(request body, call the tool?) -> response body``.
Answer = Callable[[Body, bool], Body]


def calls_the_tool(body: Body) -> bool:
    """The script's one decision, on the request as the provider receives it."""
    conversation = next(body[key] for key in CONVERSATION_KEYS if key in body)
    nudged = TOOL_NAME in json.dumps(conversation)
    answered = any(mark in json.dumps(conversation[-1]) for mark in TOOL_RESULT_MARKS)
    return bool(body.get("tools")) and nudged and not answered


def openai_chat_answer(body: Body, tool: bool) -> Body:
    if tool:
        message = ChatCompletionMessage(role="assistant", content=None, tool_calls=[
            ChatCompletionMessageFunctionToolCall(
                id="call_1", type="function",
                function=Function(name=TOOL_NAME, arguments=json.dumps({"summary": SUMMARY})))])
    else:
        message = ChatCompletionMessage(role="assistant", content=REPLY)
    choice = Choice(index=0, message=message, finish_reason="tool_calls" if tool else "stop")
    return ChatCompletion(id="chatcmpl-offline", object="chat.completion", created=0,
                          model=body["model"], choices=[choice]).model_dump(mode="json")


def openai_responses_answer(body: Body, tool: bool) -> Body:
    output: list[Any] = [
        ResponseFunctionToolCall(type="function_call", id="fc_1", call_id="call_1",
                                 name=TOOL_NAME, arguments=json.dumps({"summary": SUMMARY}),
                                 status="completed")
        if tool else
        ResponseOutputMessage(type="message", id="msg_1", role="assistant", status="completed",
                              content=[ResponseOutputText(type="output_text", text=REPLY,
                                                          annotations=[])])]
    return Response(id="resp_offline", object="response", created_at=0, model=body["model"],
                    output=output, parallel_tool_calls=True, tool_choice="auto",
                    tools=[]).model_dump(mode="json")


def anthropic_answer(body: Body, tool: bool) -> Body:
    content: list[Any] = (
        [ToolUseBlock(type="tool_use", id="toolu_1", name=TOOL_NAME, input={"summary": SUMMARY})]
        if tool else [TextBlock(type="text", text=REPLY)])
    return Message(id="msg_offline", type="message", role="assistant", model=body["model"],
                   content=content, stop_reason="tool_use" if tool else "end_turn",
                   usage=AnthropicUsage(input_tokens=1, output_tokens=1)).model_dump(mode="json")


def gemini_answer(body: Body, tool: bool) -> Body:
    part = (gemini.Part(function_call=gemini.FunctionCall(name=TOOL_NAME,
                                                           args={"summary": SUMMARY}))
            if tool else gemini.Part(text=REPLY))
    response = gemini.GenerateContentResponse(candidates=[gemini.Candidate(
        content=gemini.Content(role="model", parts=[part]),
        finish_reason=gemini.FinishReason.STOP)])
    # The REST API's field names are camel case, as the SDK's aliases.
    return response.model_dump(mode="json", by_alias=True, exclude_none=True)


def transport(answer: Answer, requests: list[Body] | None = None) -> httpx.MockTransport:
    """The SDK's HTTP transport, answered by the script; ``requests`` collects
    every request body the SDK sent."""
    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if requests is not None:
            requests.append(body)
        return httpx.Response(200, json=answer(body, calls_the_tool(body)))
    return httpx.MockTransport(handle)


def openai_client(answer: Answer = openai_chat_answer,
                  requests: list[Body] | None = None) -> AsyncOpenAI:
    """An OpenAI client (Chat Completions or Responses) on the script."""
    return AsyncOpenAI(api_key="offline", base_url="http://offline.invalid/v1", max_retries=0,
                       http_client=httpx.AsyncClient(transport=transport(answer, requests)))


def anthropic_client(requests: list[Body] | None = None) -> AsyncAnthropic:
    return AsyncAnthropic(api_key="offline", base_url="http://offline.invalid", max_retries=0,
                          http_client=httpx.AsyncClient(
                              transport=transport(anthropic_answer, requests)))


def gemini_client(requests: list[Body] | None = None) -> genai.Client:
    return genai.Client(api_key="offline", http_options=gemini.HttpOptions(
        base_url="http://offline.invalid",
        httpx_async_client=httpx.AsyncClient(transport=transport(gemini_answer, requests))))
