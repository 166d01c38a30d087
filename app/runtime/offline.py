"""The built-in offline model: a deterministic pydantic-ai FunctionModel, so Skilldesk works with no key.

It is a demonstration and test partner, not an imitation of intelligence. It
- picks the tool whose name and description best match the user's message and fills the
  arguments it can read from the message;
- reports tool results faithfully, saying plainly that it is the offline model;
- fills structured outputs (titles) from the first words of the question;
- writes extractive summaries under the compaction headings when asked to summarize.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
from pydantic_ai.tools import ToolDefinition

from app.runtime.plain_text import first_words, plain_text
from app.runtime.untrusted import unfence

MODEL_NAME = "skilldesk-offline"
INTRO = "(Offline model)"
# Instructions that contain this marker ask for a summary instead of an answer.
SUMMARY_MARKER = "[[skilldesk:summarize]]"
# How pydantic-ai frames what it says in the user's place (e.g. "the following tools are now available").
SYSTEM_FRAME = "<system>"
# Tool metadata key: regular expressions with named groups that fill the tool's arguments from the message.
OFFLINE_PATTERNS = "offline_patterns"
SUMMARY_HEADINGS = ("Objective", "Done so far", "Decisions", "Left to do", "Identifiers")

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an and are as at be by can could do does for from get give has have how i in is it its me my of on "
    "or please show tell that the this to use what when where which who why will with would you your".split()
)
_IDENTIFIER = re.compile(
    r"https?://[^\s\"'<>)\]]+"  # URLs
    r"|\b[\w.-]+\.(?:pdf|csv|txt|json|md|xlsx?|docx?|png|jpe?g|py|js|html)\b"  # file names
    r"|\b[A-Z]{2,}[-_]?\d[\w-]*\b"  # codes such as INV-2024-001, ORD42
    r"|#\d+\b"  # record references
    r"|\b\d{3,}\b"  # numbers of 3+ digits
)


def make_offline_model(context_window: int = 32_000) -> FunctionModel:
    """Return the offline model; it has no native tools, so skills use their local fallbacks."""
    profile = {"context_window": context_window, "supported_native_tools": frozenset()}
    return FunctionModel(respond, stream_function=stream_respond, model_name=MODEL_NAME, profile=profile)


def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Answer in one piece."""
    plan = decide(messages, info)
    if isinstance(plan, str):
        return ModelResponse(parts=[TextPart(plan)], model_name=MODEL_NAME)
    return ModelResponse(parts=plan, model_name=MODEL_NAME)


async def stream_respond(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
    """Answer as a stream: words for text, one delta per tool call."""
    plan = decide(messages, info)
    if isinstance(plan, str):
        for chunk in re.findall(r"\S+\s*|\s+", plan):
            yield chunk
        return
    for index, call in enumerate(plan):
        yield {index: DeltaToolCall(name=call.tool_name, json_args=call.args_as_json_str(),
                                    tool_call_id=call.tool_call_id)}


def decide(messages: list[ModelMessage], info: AgentInfo) -> str | list[ToolCallPart]:
    """Choose the next step: a text answer or tool calls."""
    prompt, turn_returns, called = _current_turn(messages)
    if info.instructions and SUMMARY_MARKER in info.instructions:
        return extractive_summary(prompt, info.instructions)
    if info.output_tools and not info.allow_text_output:
        tool = info.output_tools[0]
        return [ToolCallPart(tool.name, fill_arguments(tool, prompt, output=True), _call_id(messages))]

    if turn_returns:
        last_names = {part.tool_name for part in turn_returns}
        # A tool search revealed tools: use the best of them now.
        if last_names <= {"search_tools"}:
            tool = best_tool(prompt, info.function_tools, exclude=called | {"search_tools"})
            if tool is not None:
                return [ToolCallPart(tool.name, fill_arguments(tool, prompt), _call_id(messages))]
        return report(turn_returns)

    tool = best_tool(prompt, info.function_tools, exclude=called)
    if tool is not None:
        return [ToolCallPart(tool.name, fill_arguments(tool, prompt), _call_id(messages))]
    names = ", ".join(t.name for t in info.function_tools) or "none"
    return (
        f"{INTRO} I am Skilldesk's built-in offline model: I do not understand language, I match your "
        f"message to the tools I have and report what they return. Tools available: {names}. "
        f"You wrote: “{_shorten(prompt, 300)}”"
    )


def report(returns: list[ToolReturnPart | RetryPromptPart]) -> str:
    """Report tool results as they are, failures included."""
    lines = [f"{INTRO} Here is what the tools returned:"]
    for part in returns:
        if isinstance(part, RetryPromptPart):
            lines.append(f"- `{part.tool_name}` asked for a correction: {_shorten(str(part.content), 600)}")
        elif part.outcome != "success":
            said = unfence(_summary(unfence(part.model_response_str())))
            lines.append(f"- `{part.tool_name}` failed: {_shorten(said, 600)}")
        else:
            said = unfence(_summary(unfence(part.model_response_str())))
            lines.append(f"- `{part.tool_name}` returned: {_shorten(said, 1500)}")
    return "\n".join(lines)


def _summary(text: str) -> str:
    """Return the `summary` (or the `error`) a JSON result states, when it has one, else the result as it came."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    said = next((value[key] for key in ("summary", "error") if isinstance(value, dict)
                 and isinstance(value.get(key), str)), None)
    return said if said is not None else text


def best_tool(prompt: str, tools: list[ToolDefinition], exclude: set[str] = frozenset()) -> ToolDefinition | None:
    """Return the tool whose name and description share most words with the prompt, if any does.

    A tool whose offline patterns (`OFFLINE_PATTERNS` in its metadata) match the prompt counts as a match
    too: that is how a tool claims requests that share no word with its name ("what is compaction?").
    """
    words = _stems(prompt)
    best, best_score = None, 0.0
    for tool in tools:
        if tool.name in exclude:
            continue
        name_words = _stems(tool.name.replace("_", " "))
        desc_words = _stems(tool.description or "") - name_words
        score = 2.0 * len(words & name_words) + 0.5 * len(words & desc_words)
        if _claims(tool, prompt):
            score += 2.0
        if score > best_score:
            best, best_score = tool, score
    return best if best_score >= 2.0 else None


def _claims(tool: ToolDefinition, prompt: str) -> bool:
    """Tell whether one of the tool's offline patterns matches the prompt."""
    return any(re.search(pattern, prompt, re.IGNORECASE)
               for pattern in (tool.metadata or {}).get(OFFLINE_PATTERNS, ()))


def fill_arguments(tool: ToolDefinition, prompt: str, output: bool = False) -> dict[str, Any]:
    """Fill what the tool's JSON schema asks for from the prompt."""
    schema = tool.parameters_json_schema or {}
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", prompt)]
    quoted = re.findall(r"[\"“']([^\"”']+)[\"”']", prompt)
    urls = re.findall(r"https?://\S+", prompt)
    args: dict[str, Any] = _from_patterns(tool, prompt, properties, schema.get("$defs", {}))
    for name, prop in properties.items():
        kind = prop.get("type")
        if name in args:
            continue
        labelled = re.search(rf"\b{re.escape(name)}\s*[:=]\s*(\"[^\"]*\"|\S+)", prompt, re.IGNORECASE)
        if labelled:
            raw = labelled.group(1).strip('"')
            args[name] = _coerce(raw, kind)
        elif "enum" in prop:
            mentioned = [v for v in prop["enum"] if str(v).lower() in prompt.lower()]
            args[name] = mentioned[0] if mentioned else prop["enum"][0]
        elif kind in ("integer", "number") and numbers:
            value = numbers.pop(0)
            args[name] = int(value) if kind == "integer" else value
        elif kind == "string":
            if "url" in name.lower() and urls:
                args[name] = urls[0].rstrip(".,;)")
            elif output:
                args[name] = title_words(prompt)
            elif quoted:
                args[name] = quoted.pop(0)
            elif name in required:
                args[name] = prompt.strip()
        elif kind == "boolean" and name in required:
            args[name] = False
        elif kind == "array" and name in required:
            item = _labelled_object(_resolved(prop.get("items") or {}, schema.get("$defs", {})), prompt)
            args[name] = [item] if item is not None else [prompt.strip()]
        elif kind == "object" and name in required:
            args[name] = {}
        if name not in args and name in required and "default" in prop:
            args[name] = prop["default"]
    return args


def _resolved(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref", "")
    return defs.get(ref.rsplit("/", 1)[-1], schema) if ref.startswith("#/$defs/") else schema


def _from_patterns(tool: ToolDefinition, prompt: str, properties: dict[str, Any],
                   defs: dict[str, Any]) -> dict[str, Any]:
    """Fill arguments from the regular expressions a tool offers in its metadata (`OFFLINE_PATTERNS`).

    A named group fills the argument of that name; text for an array becomes its items, split on commas
    and "and", each item an object of the first property when the array holds objects.
    """
    for pattern in (tool.metadata or {}).get(OFFLINE_PATTERNS, ()):
        found = re.search(pattern, prompt, re.IGNORECASE)
        if found is None:
            continue
        args: dict[str, Any] = {}
        for name, text in found.groupdict().items():
            prop = properties.get(name) or {}
            if not prop:
                continue
            if prop.get("type") == "array":
                text = (text or "").strip().strip(".?!")
                items = [part.strip() for part in re.split(r",\s*(?:and\s+)?|\s+and\s+", text) if part.strip()]
                first = next(iter(_resolved(prop.get("items") or {}, defs).get("properties") or {}), None)
                args[name] = [{first: item} for item in items] if first else items
            elif text is not None:
                args[name] = text.strip().strip(".?!")
        return args
    return {}


def _labelled_object(schema: dict[str, Any], prompt: str) -> dict[str, Any] | None:
    """Fill an object from "property value" pairs in the prompt ("name Ada, email ada@example.org")."""
    if schema.get("type") != "object" or not schema.get("properties"):
        return None
    found = {}
    for name in schema["properties"]:
        match = re.search(rf"\b{re.escape(name)}\b\s*(?:[:=]|is)?\s*(\"[^\"]*\"|[^,;\n]+)", prompt, re.IGNORECASE)
        if match:
            found[name] = match.group(1).strip().strip('"').rstrip(".")
    return found or None


def title_words(prompt: str, limit: int = 40) -> str:
    """Title from the question's first words: its first paragraph as plain text, whole when it fits `limit`,
    else its first five words (cut to `limit`)."""
    question = plain_text(re.split(r"\n\s*\n", prompt.strip(), maxsplit=1)[0])
    if len(question.rstrip(".?!")) <= limit:
        return first_words(question, limit)
    return first_words(" ".join(question.split()[:5]), limit)


def extractive_summary(text: str, instructions: str = "") -> str:
    """Summarize by extraction under the fixed headings, keeping every identifier."""
    # An earlier summary in the text is carried over as sentences: without its bullets and headings, so
    # rewriting a summary again and again does not nest them.
    lines = [re.sub(r"^(?:[-*]\s+)+", "", s.strip()) for s in re.split(r"(?<=[.!?])\s+|\n+", text)]
    sentences = [s for s in lines if s and not s.startswith("#") and s != "(none)"]
    # A URL or code ending a sentence or a list does not own the punctuation after it.
    identifiers = sorted({m.rstrip(".,;:") for m in _IDENTIFIER.findall(text)}, key=text.find)
    objective = next((s for s in sentences if not s.startswith(("#", "-", "["))), "")
    done = [s for s in sentences if re.search(r"\b(returned|called|created|found|updated|done)\b", s, re.I)]
    decided = [s for s in sentences if re.search(r"\b(decided|agreed|chose|will use|must)\b", s, re.I)]
    left = [s for s in sentences if re.search(r"\b(todo|next|left|remaining|still)\b", s, re.I)]
    sections = {
        "Objective": [_shorten(objective, 300)] if objective else [],
        "Done so far": [_shorten(s, 200) for s in done[-8:]],
        "Decisions": [_shorten(s, 200) for s in decided[-5:]],
        "Left to do": [_shorten(s, 200) for s in left[-5:]],
        "Identifiers": [", ".join(identifiers)] if identifiers else [],
    }
    out = [f"{INTRO} Extractive summary."]
    for heading in SUMMARY_HEADINGS:
        out.append(f"## {heading}")
        out.extend(f"- {line}" for line in sections[heading] or ["(none)"])
    return "\n".join(out)


def _current_turn(messages: list[ModelMessage]) -> tuple[str, list, set[str]]:
    """Return the latest user prompt, the tool results of the latest request, and tools called since."""
    prompt, start = "", 0
    for index, message in enumerate(messages):
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart):
                    text = part.content if isinstance(part.content, str) else " ".join(
                        c for c in part.content if isinstance(c, str))
                    if text.startswith(SYSTEM_FRAME):  # the harness speaking (new tools), not the user
                        continue
                    prompt, start = text, index
    called = {
        part.tool_name
        for message in messages[start:]
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart)
    }
    last = messages[-1] if messages else None
    returns = []
    if isinstance(last, ModelRequest) and messages.index(last) > start:
        returns = [p for p in last.parts if isinstance(p, ToolReturnPart | RetryPromptPart)]
    return prompt, returns, called


def _call_id(messages: list[ModelMessage]) -> str:
    return f"offline-{len(messages)}"


def _stems(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1}


def _stem(word: str) -> str:
    for suffix in ("ing", "es", "s", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _coerce(raw: str, kind: str | None) -> Any:
    try:
        if kind == "integer":
            return int(raw)
        if kind == "number":
            return float(raw)
        if kind == "boolean":
            return raw.lower() in ("true", "yes", "1")
        if kind in ("object", "array"):
            return json.loads(raw)
    except ValueError:
        pass
    return raw


def _shorten(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
