"""Benchmark the Compaction skill on a scripted session of 300 tool calls with the built-in offline model.

Each user turn asks for one record; the tool returns about 2 KB, and 50 of the results carry a planted
identifier (invoice codes, file names, URLs) at a random place. The model has a 32k context window and
"Compact above" is 24k: threshold compaction runs between turns, as the job after a reply does, and the
capability stays in the run for the inline and overflow cases. Tokens are counted as the skill
estimates them (characters ÷ 4): the offline model has no tokenizer of its own.

Run with `.venv/bin/python benchmarks/compaction.py` (a few minutes: the session without compaction
resends up to 300k tokens per request); exits 1 when a target is missed.
"""

from __future__ import annotations

import asyncio
import gc
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import pydantic_ai.models
from pydantic_ai import Agent
from pydantic_ai.messages import BaseToolCallPart, BaseToolReturnPart, ModelMessage
from pydantic_ai.models.function import AgentInfo, FunctionModel

from app.runtime import offline
from app.runtime.builder import ToolErrorsAsResults
from app.runtime.compaction import Summarizer
from app.runtime.context_size import estimate_tokens
from app.runtime.model_spec import OFFLINE_SPEC
from app.skills.compaction import Compaction, Config, compact_conversation_context

pydantic_ai.models.ALLOW_MODEL_REQUESTS = False

TURNS = 300
WINDOW = 32_000
SETTINGS = Config(compact_above=24_000, keep_recent_tool_results=4_000, minimum_worth_clearing=2_000,
                  keep_recent_messages=6_000, tool_result_size_in_summary=1_000, total_size_in_summary=40_000)
WORDS = ("ledger entry balance customer account payment status approved pending region quarter supplier "
         "delivery shipment carrier warehouse contact remarks audit reviewed total currency").split()
LATENCY_REPEATS = 15


def planted() -> dict[int, str]:
    """Return the turn → identifier map: 50 identifiers of three kinds, on every sixth turn."""
    kinds: list[Callable[[int], str]] = [
        lambda n: f"INV-2024-{7000 + n:04d}",
        lambda n: f"statement_{chr(97 + n % 26)}{n:02d}.pdf",
        lambda n: f"https://erp.example.com/orders/ord-{chr(97 + n % 26)}{n:02d}",
    ]
    return {turn: kinds[n % 3](n) for n, turn in enumerate(range(3, TURNS, 6))}


IDENTIFIERS = planted()


def record(number: int) -> str:
    """Return about 2 KB of record text, with the turn's identifier (if any) at a random place."""
    rng = random.Random(number)
    words = [rng.choice(WORDS) for _ in range(290)]
    if number in IDENTIFIERS:
        words.insert(rng.randrange(len(words)), IDENTIFIERS[number])
    return "Record follows. " + " ".join(words) + "."


class Meter:
    """Wraps the offline model and counts the tokens of every request it is sent."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.model = FunctionModel(self.respond, model_name=offline.MODEL_NAME,
                                   profile={"context_window": WINDOW, "supported_native_tools": frozenset()})

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> Any:
        self.sizes.append(estimate_tokens(messages, calibrate=False) + len(info.instructions or "") // 4)
        return offline.respond(messages, info)


def make_agent(model: FunctionModel, capabilities: list[Any]) -> Agent:
    """Build the agent as Skilldesk's builder does: every agent has ToolErrorsAsResults."""
    agent = Agent(model, instructions="You look records up for the finance team.",
                  capabilities=[ToolErrorsAsResults(), *capabilities])

    @agent.tool_plain
    def fetch_record(number: int) -> str:
        """Fetch a record by its number."""
        return record(number)

    return agent


async def session(compacting: bool) -> dict[str, Any]:
    """Play the 300 turns; with compaction, compact between turns as the job does."""
    meter, summaries = Meter(), Meter()
    summarizer = Summarizer(summaries.model)  # metered too: summary requests are tokens sent
    agent = make_agent(meter.model, [Compaction(config=SETTINGS)] if compacting else [])
    # Timed on their own models, so the timing runs are not counted as tokens sent.
    timed, bare = make_agent(Meter().model, [Compaction(config=SETTINGS)]), make_agent(Meter().model, [])
    history: list[ModelMessage] = []
    added: list[float] = []
    jobs: list[float] = []
    for turn in range(TURNS):
        prompt = f"Please fetch record number {turn}."
        if compacting:
            added.append(await added_latency(timed, bare, prompt, history))
        result = await agent.run(prompt, message_history=history)
        history = result.all_messages()
        if compacting:
            started = time.perf_counter()
            job = await compact_conversation_context(history, SETTINGS, OFFLINE_SPEC, summarizer=summarizer)
            jobs.append(time.perf_counter() - started)
            history = job.messages
    return {"sizes": meter.sizes + summaries.sizes, "history": history, "added": added, "jobs": jobs}


async def added_latency(agent: Agent, bare: Agent, prompt: str, history: list[ModelMessage]) -> float:
    """Time the same turn with and without the capability, in back-to-back pairs; return the added share.

    The turn is all computation here (the offline model), so it is timed in this process's CPU time, which
    other processes on the machine do not inflate, with the garbage collector paused; the median of the
    paired differences keeps a disturbed pair from counting as compaction's cost.
    """
    added, base = [], []
    gc.collect()
    gc.disable()
    try:
        for repeat in range(LATENCY_REPEATS):
            times = {}
            order = (("bare", bare), ("with", agent)) if repeat % 2 else (("with", agent), ("bare", bare))
            for name, candidate in order:
                started = time.process_time()
                await candidate.run(prompt, message_history=history)
                times[name] = time.process_time() - started
            added.append(times["with"] - times["bare"])
            base.append(times["bare"])
    finally:
        gc.enable()
    return max(0.0, statistics.median(added)) / statistics.median(base)


def held(history: list[ModelMessage]) -> int:
    """Count the planted identifiers still present in what the model is given (not in metadata)."""
    texts = []
    for part in (part for message in history for part in message.parts):
        if isinstance(part, BaseToolCallPart):
            texts.append(part.args_as_json_str())
        elif isinstance(part, BaseToolReturnPart):
            texts.append(part.model_response_str())
        elif isinstance(getattr(part, "content", None), str):
            texts.append(part.content)
    text = "\n".join(texts)
    return sum(identifier in text for identifier in IDENTIFIERS.values())


def main() -> int:
    with_compaction = asyncio.run(session(compacting=True))
    without = asyncio.run(session(compacting=False))
    peak = max(with_compaction["sizes"])
    sent, sent_without = sum(with_compaction["sizes"]), sum(without["sizes"])
    share = sent / sent_without
    kept = held(with_compaction["history"])
    p95 = statistics.quantiles(with_compaction["added"], n=20)[-1]
    job_p95 = statistics.quantiles(with_compaction["jobs"], n=20)[-1]
    figures = [
        ("peak context tokens", f"{peak:,}", "tokens", f"< {WINDOW:,}", peak < WINDOW),
        ("peak context tokens without compaction", f"{max(without['sizes']):,}", "tokens", "informative",
         True),
        ("total tokens sent with compaction", f"{sent:,}", "tokens", "informative", True),
        ("total tokens sent without compaction", f"{sent_without:,}", "tokens", "informative", True),
        ("tokens sent with / without", f"{share:.1%}", "", "≤ 30%", share <= 0.30),
        ("identifiers held at the end", f"{kept}", f"of {len(IDENTIFIERS)}", f"{len(IDENTIFIERS)}",
         kept == len(IDENTIFIERS)),
        ("latency added to user turns (median)", f"{statistics.median(with_compaction['added']):.1%}",
         "of a turn", "informative", True),
        ("latency added to user turns (p95)", f"{p95:.1%}", "of a turn", "≤ 10%", p95 <= 0.10),
        ("compaction job after a reply (p95)", f"{job_p95 * 1000:.1f}", "ms", "informative, after the reply",
         True),
    ]
    for name, value, unit, target, _ in figures:
        print(f"{name}: {value} {unit} (target {target})".replace("  ", " "))
    return 0 if all(ok for *_, ok in figures) else 1


if __name__ == "__main__":
    sys.exit(main())
