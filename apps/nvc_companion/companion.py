"""An NVC companion (seed 002) on tooljig, in Python: JSON-structured tool calling.

    python apps/nvc_companion/companion.py           # the demo, offline (scripted models)
    GEMINI_API_KEY=... python apps/nvc_companion/companion.py   # Gemini 2.0 plans, 2.5 answers

One planner call answers with the seed's JSON plan (`{"toolCalls": [...], "reasoning"}`);
tooljig parses and repairs it, runs the independent calls in parallel and the dependent one
after them with the value it needs, and hands every result to the responder in one message.
The seed's guardrails are declared, not written per handler: 5 tools a turn, 5 s a tool, 15 s
a turn; cache TTLs per tool (knowledge 5 min, memories 1 min); schema defaults filled
(`limit: 3`, `minSimilarity: 0.7`, `locale: "de"`); a heuristic prefilter that neither offers
nor runs the expensive tools for small talk (`select_tools`, `review_plan`); and the forced
fallback: a request to switch paths is always analysed, even when the planner forgot
(`review_plan`).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import tooljig  # noqa: E402
from tooljig.agent import Agent, AgentState, Emit, Model, ModelClient, RunOutcome  # noqa: E402

import knowledge  # noqa: E402

# The tools that cost a model call (seed: "Cost: 1 AI call"); the prefilter spares them.
EXPENSIVE = {"extract_nvc_components", "retrieve_nvc_knowledge", "analyze_path_switch"}
SMALL_TALK = re.compile(r"^\s*(hi|hallo|hey|danke|merci|guten (morgen|tag|abend)|tschüss|ok)\b[\s!.,]*\w{0,12}[\s!.]*$", re.I)
SWITCH = re.compile(r"\b(wechseln|switch|lass uns zu)\b", re.I)
LIMITS = {"max_tool_calls_per_step": 5, "deadline_ms": 15_000}
TOOL_TIMEOUT_MS = 5_000


class Companion:
    """One user's conversation with the companion."""

    def __init__(
        self,
        user: str = "u_mia",
        *,
        path: str = "idle",
        real_model: bool | None = None,
        kb_delay_s: float = 0.0,
        planner: Model | None = None,
    ) -> None:
        self.user, self.path = user, path
        self.costs: Counter[str] = Counter()  # model calls the tools made, per tool
        self.engine = build_engine(self.costs, kb_delay_s=kb_delay_s)
        use_real = bool(os.environ.get("GEMINI_API_KEY")) if real_model is None else real_model
        if use_real:
            planner: Model = tooljig.HttpModel.gemini("gemini-2.0-flash-lite")
            responder: Model = tooljig.HttpModel.gemini("gemini-2.5-flash")
        else:
            planner = planner or ModelClient(plan, name="scripted-planner")
            responder = ModelClient(respond, name="scripted-responder")
        self.agent = Agent(
            self.engine,
            planner,
            responder=responder,
            options={
                "system": "Du begleitest Menschen mit Gewaltfreier Kommunikation (GFK).",
                "protocol": {"json": {"max_calls": 5}},
                "limits": LIMITS,
            },
            select_tools=prefilter,
            review_plan=review,
        )
        self.state: AgentState | None = None

    def send(self, message: str) -> RunOutcome:
        caller = {"principal": self.user, "attributes": {"path": self.path}}
        if self.state is None:
            self.state = AgentState(message)
            return self.agent.run_sync(self.state, caller=caller)
        return self.agent.send_sync(self.state, message, caller=caller)


def build_engine(costs: Counter[str], *, kb_delay_s: float = 0.0) -> tooljig.Engine:
    engine = tooljig.Engine(audit="memory")
    per_tool = {"timeout_ms": TOOL_TIMEOUT_MS}

    def memories(args: dict[str, Any]) -> list[dict[str, object]]:
        return knowledge.search_memories(args["userId"], args["query"], args["limit"], args["minSimilarity"])

    engine.register(
        "search_memories",
        "Search the user's personal memories for relevant context (past experiences, relationships).",
        {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Search query"},
                "limit": {"type": "integer", "default": 3, "minimum": 1, "maximum": 10},
                "minSimilarity": {"type": "number", "default": 0.7},
                "userId": {"type": "string"},
            },
            "required": ["query", "userId"],
        },
        memories,
        hidden={"userId": {"from": "principal"}},
        effect="read",
        cache={"ttl_ms": 60_000},
        **per_tool,
    )

    def retrieve(args: dict[str, Any]) -> list[dict[str, object]]:
        costs["retrieve_nvc_knowledge"] += 1  # its concept extraction
        time.sleep(kb_delay_s)
        return knowledge.retrieve_knowledge(args["query"], args["limit"], args["minSimilarity"], args.get("category"))

    engine.register(
        "retrieve_nvc_knowledge",
        "Retrieve relevant NVC knowledge (concepts, principles) from the knowledge base.",
        {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": "integer", "default": 3},
                "minSimilarity": {"type": "number", "default": 0.7},
                "category": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["query"],
        },
        retrieve,
        effect="read",
        cache={"ttl_ms": 300_000},
        **per_tool,
    )

    def extract(args: dict[str, Any]) -> dict[str, object]:
        costs["extract_nvc_components"] += 1
        return asdict(knowledge.extract_components(args["message"]))

    engine.register(
        "extract_nvc_components",
        "Extract NVC components (observation, feelings, needs, request) from a message.",
        {
            "type": "object",
            "properties": {"message": {"type": "string"}, "locale": {"type": "string", "default": "de"}},
            "required": ["message"],
        },
        extract,
        **per_tool,
    )

    def path_switch(args: dict[str, Any]) -> dict[str, object]:
        costs["analyze_path_switch"] += 1
        return knowledge.analyze_path_switch(args["message"], args["currentPath"])

    engine.register(
        "analyze_path_switch",
        "Determine whether the user wants to switch conversation paths.",
        {
            "type": "object",
            "properties": {"message": {"type": "string"}, "currentPath": {"type": "string"}},
            "required": ["message", "currentPath"],
        },
        path_switch,
        hidden={"currentPath": {"from": "attribute", "name": "path"}},
        **per_tool,
    )
    return engine


def is_small_talk(message: str) -> bool:
    return bool(SMALL_TALK.match(message)) or len(knowledge.words(message)) <= 2


def prefilter(message: str, tools: list[dict[str, Any]]) -> list[str]:
    """The seed's heuristic pre-filtering: small talk is not offered the expensive tools."""
    return [t["name"] for t in tools if not (is_small_talk(message) and t["name"] in EXPENSIVE)]


def review(message: str, calls: list[dict[str, Any]], tools: list[str]) -> list[dict[str, Any]]:
    """The plan as it runs: no expensive call for small talk, and the forced fallback (a switch
    request is always analysed)."""
    if is_small_talk(message):
        return [c for c in calls if c["name"] not in EXPENSIVE]
    if SWITCH.search(message) and not any(c["name"] == "analyze_path_switch" for c in calls):
        return [*calls, {"name": "analyze_path_switch", "arguments": {"message": message}}]
    return calls


# The scripted models: the seed's planner (Gemini 2.0 Flash-Lite with a response schema) and
# responder (Gemini 2.5 Flash), as small functions.


def plan(request: dict[str, Any], emit: Emit) -> str:
    """The JSON plan for the latest message, using only the tools it was offered. Like the
    seed's planner, it does not think of the path switch: the reviewer adds it."""
    message = request["messages"][-1]["content"]
    offered = set(re.findall(r'"(search_memories|retrieve_nvc_knowledge|extract_nvc_components|analyze_path_switch)"', json.dumps(request.get("response_schema"))))
    calls: list[dict[str, Any]] = []
    remember = re.search(r"erinnerst du dich an (.+?)[?.!]*$", message, re.I)
    if remember and "search_memories" in offered:
        calls.append({"id": "mem", "tool": "search_memories", "params": {"query": remember.group(1)}})
    elif knowledge.extract_components(message).feelings and {"search_memories", "extract_nvc_components", "retrieve_nvc_knowledge"} <= offered:
        topic = " ".join(w for w in knowledge.words(message) if len(w) > 5)[:60]
        calls = [
            {"id": "mem", "tool": "search_memories", "params": {"query": topic, "limit": 2}},
            {"id": "nvc", "tool": "extract_nvc_components", "params": {"message": message}},
            {"id": "kb", "tool": "retrieve_nvc_knowledge", "dependsOn": ["mem"],
             "params": {"query": {"$from": "nvc", "pointer": "/needs/0"}}},
        ]
    return json.dumps({"toolCalls": calls, "reasoning": "what the message needs"})


def respond(request: dict[str, Any], emit: Emit) -> str:
    """The answer, from every result at once (the protocol's one results message)."""
    text = request["messages"][-1].get("content") or ""
    results = _results(text)
    if not results:
        return "Hallo! Schön, dass du da bist. Wie geht es dir gerade?"
    parts = []
    nvc = results.get("extract_nvc_components")
    if nvc:
        feelings = ", ".join(nvc["feelings"]) or "etwas"
        needs = " und ".join(nvc["needs"]) or "etwas Wichtiges"
        parts.append(f"Ich höre {feelings}, und dass dir {needs} wichtig ist.")
    switch = results.get("analyze_path_switch")
    if switch and switch["shouldSwitch"]:
        parts.append(f"Gern wechseln wir zu {switch['suggestedPath']}.")
    kb = results.get("retrieve_nvc_knowledge")
    if kb:
        parts.append(f"Dazu passt „{kb[0]['title']}“: {kb[0]['text']}")
    memories = results.get("search_memories")
    if memories:
        parts.append(f"Ich erinnere mich: {memories[0]['text']}.")
    elif memories is not None:
        parts.append("Dazu habe ich keine Erinnerung gespeichert.")
    return " ".join(parts) or "Erzähl mir mehr."


def _results(text: str) -> dict[str, Any]:
    """Each successful result's data by tool, from the protocol's results message."""
    start = text.find("[")
    try:
        items = json.loads(text[start:]) if start >= 0 else []
    except json.JSONDecodeError:
        return {}
    return {i["tool"]: i["result"]["data"] for i in items if i.get("result", {}).get("ok")}


def main() -> None:
    mia = Companion()
    before = 0
    for message in [
        "Hallo!",
        "Ich fühle mich frustriert, weil mein Partner nicht zuhört",
        "Können wir zur Selbst-Empathie wechseln? Ich fühle mich gestresst.",
        "Erinnerst du dich an den Jahrestag?",
    ]:
        out = mia.send(message)
        ran, before = out.counters["tool_calls"] - before, out.counters["tool_calls"]
        print(f"  Mia: {message}\n  GFK: {out.answer}\n       ({ran} tool calls)")
    print(f"\nmodel calls made by tools: {dict(mia.costs)}")


if __name__ == "__main__":
    main()
