"""The app's own data and services (seed 002's `lib/memory.ts`, `lib/nvc-knowledge.ts`,
`lib/ai-tools.ts`): a user's memories, the NVC knowledge base, and the two "lightweight
model" steps (component extraction, path analysis), here as small lexicon-based functions so
the app runs offline. Nothing here knows about models' tool calling or tooljig.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MEMORIES = {
    "u_mia": [
        "Partner hat unseren Jahrestag vergessen",
        "Streit mit dem Partner über das Zuhören beim Abendessen",
        "Spaziergang mit der Schwester, der gutgetan hat",
    ]
}

KNOWLEDGE = [
    {"title": "Empathisches Zuhören", "category": "empathie", "tags": ["zuhören", "verständnis"],
     "text": "Zuhören, ohne zu bewerten: Gefühle und Bedürfnisse hinter den Worten hören."},
    {"title": "Bedürfnis nach Verständnis", "category": "bedürfnisse", "tags": ["verständnis"],
     "text": "Hinter Frustration steht oft das Bedürfnis, verstanden zu werden."},
    {"title": "Selbst-Empathie", "category": "selbst-empathie", "tags": ["stress", "selbst"],
     "text": "Sich selbst zuwenden: Was fühle ich, was brauche ich gerade?"},
    {"title": "Verbindung", "category": "bedürfnisse", "tags": ["verbindung", "allein"],
     "text": "Einsamkeit weist auf das Bedürfnis nach Verbindung hin."},
]

FEELINGS = {"frustriert": "Frustration", "traurig": "Traurigkeit", "allein": "Einsamkeit",
            "gestresst": "Stress", "wütend": "Wut", "erleichtert": "Erleichterung"}
NEEDS = {"zuhört": "Verständnis", "zuhören": "Verständnis", "ignoriert": "Gesehenwerden",
         "allein": "Verbindung", "gestresst": "Ruhe", "empathie": "Empathie"}
PATHS = {"selbst-empathie": "self_empathy", "konflikt": "conflict", "feedback": "feedback"}


def words(text: str) -> list[str]:
    return re.findall(r"[\wäöüß-]+", text.lower())


def similarity(query: str, text: str) -> float:
    """Word overlap between a query and a text, 0 to 1 (a stand-in for vector search)."""
    q, t = set(words(query)), set(words(text))
    if not q:
        return 0.0
    hits = sum(1 for w in q if any(w[:5] == x[:5] for x in t))
    return round(0.5 + 0.5 * hits / len(q), 2) if hits else 0.0


def search_memories(user: str, query: str, limit: int, min_similarity: float) -> list[dict[str, object]]:
    scored = [{"text": m, "similarity": similarity(query, m)} for m in MEMORIES.get(user, [])]
    found = [m for m in scored if float(m["similarity"]) >= min_similarity]  # type: ignore[arg-type]
    return sorted(found, key=lambda m: -float(m["similarity"]))[:limit]  # type: ignore[arg-type]


def retrieve_knowledge(query: str, limit: int, min_similarity: float, category: str | None) -> list[dict[str, object]]:
    out = []
    for entry in KNOWLEDGE:
        if category and entry["category"] != category:
            continue
        text = f"{entry['title']} {entry['text']} {' '.join(entry['tags'])}"  # type: ignore[arg-type]
        score = similarity(query, text)
        if score >= min_similarity:
            out.append({**entry, "similarity": score})
    return sorted(out, key=lambda e: -float(e["similarity"]))[:limit]  # type: ignore[arg-type]


@dataclass
class Components:
    observation: str | None = None
    feelings: list[str] = field(default_factory=list)
    needs: list[str] = field(default_factory=list)
    request: str | None = None


def extract_components(message: str) -> Components:
    ws = words(message)
    feelings = sorted({FEELINGS[w] for w in ws if w in FEELINGS})
    needs = sorted({NEEDS[w] for w in ws if w in NEEDS})
    because = re.search(r"weil (.+?)(?:[.!?]|$)", message)
    return Components(observation=because.group(1) if because else None, feelings=feelings, needs=needs)


def analyze_path_switch(message: str, current_path: str) -> dict[str, object]:
    lowered = message.lower()
    target = next((p for k, p in PATHS.items() if k in lowered), None)
    wants = any(w in lowered for w in ("wechseln", "switch", "lass uns zu"))
    return {
        "shouldSwitch": bool(wants and target and target != current_path),
        "confidence": 90 if wants and target else 20,
        "suggestedPath": target,
        "reason": "the user asked to switch" if wants else "no switch asked",
        "currentPathComplete": False,
    }
