"""Comparing what a batch produced with what a vector expects, as readable problems
(mirrors ``core/tests/support/conformance/compare.rs``)."""

from __future__ import annotations

import json
from typing import Any

from tooljig import BatchResult, CallResult


def results(expected: list[dict[str, Any]], actual: BatchResult, problems: list[str]) -> None:
    """Compares each expected result with the actual one at the same position."""
    if len(expected) != len(actual):
        ids = [r.call_id for r in actual]
        problems.append(
            f"expect.results has {len(expected)} entries but the batch returned "
            f"{len(actual)} results; actual call ids: {ids}"
        )
        return
    for i, (want, got) in enumerate(zip(expected, actual)):
        whole = got.to_dict()
        at = f"results[{i}] (call {got.call_id!r})"
        for key, wanted in want.items():
            if key == "error_code":
                value: Any = got.error_code
            elif key == "has_detail":
                value = got.detail is not None
            elif key == "retry_after_ms_at_most":
                after = got.envelope.get("error", {}).get("retry_after_ms")
                if not isinstance(after, int) or not 1 <= after <= wanted:
                    problems.append(f"{at}: retry_after_ms should be in 1..={wanted}, it is {after!r}")
                continue
            elif key == "approval":
                # Ids, hashes and times are random: compare the keys the vector gives.
                got_approval = whole.get("approval")
                value = (
                    {k: got_approval.get(k) for k in wanted}
                    if isinstance(got_approval, dict) and isinstance(wanted, dict)
                    else got_approval
                )
            elif key == "message_contains":
                message = got.envelope.get("error", {}).get("message")
                if not isinstance(message, str) or wanted not in message:
                    problems.append(f"{at}: error message should contain {wanted!r}, it is {message!r}")
                continue
            else:
                value = whole.get(key)
            if value != wanted or _json(value) != _json(wanted):
                paths: list[str] = []
                diff(wanted, value, "", paths)
                problems.append(
                    f"{at}.{key} differs:\n" + "\n".join(paths)
                    + f"\n      expected: {_json(wanted)}\n      actual:   {_json(value)}"
                )


def _json(v: Any) -> str:
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


def diff(want: Any, got: Any, path: str, out: list[str]) -> None:
    """Lists where two JSON values differ, by JSON pointer."""
    if isinstance(want, dict) and isinstance(got, dict):
        for k, wv in want.items():
            p = f"{path}/{k}"
            if k in got:
                diff(wv, got[k], p, out)
            else:
                out.append(f"      at {p!r}: missing, expected {_json(wv)}")
        for k, gv in got.items():
            if k not in want:
                out.append(f"      at {path + '/' + k!r}: unexpected {_json(gv)}")
    elif isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        for i, (wv, gv) in enumerate(zip(want, got)):
            diff(wv, gv, f"{path}/{i}", out)
    elif _json(want) != _json(got):
        out.append(f"      at {path!r}: expected {_json(want)}, got {_json(got)}")


def timing(expect: dict[str, Any], out: BatchResult, problems: list[str]) -> None:
    """Checks the ordering, overlap and wall-time facts."""

    def find(call_id: str) -> CallResult | None:
        r = out.get(call_id)
        if r is None:
            problems.append(f"a timing fact names call {call_id!r}, which is not in the batch")
        return r

    def started(r: CallResult, fact: str) -> int | None:
        if r.started_us is None:
            problems.append(f"{fact}: call {r.call_id!r} never started")
        return r.started_us

    for a, b in expect.get("order", []):
        fact = f"order [{a!r}, {b!r}]"
        ra, rb = find(a), find(b)
        if ra is None or rb is None:
            continue
        sb = started(rb, fact)
        if sb is not None and sb < ra.finished_us:
            problems.append(f"{fact}: {b!r} started at {sb} µs, before {a!r} finished at {ra.finished_us} µs")
    for kind in ("overlap", "disjoint"):
        for a, b in expect.get(kind, []):
            fact = f"{kind} [{a!r}, {b!r}]"
            ra, rb = find(a), find(b)
            if ra is None or rb is None:
                continue
            sa, sb = started(ra, fact), started(rb, fact)
            if sa is None or sb is None:
                continue
            together = sa < rb.finished_us and sb < ra.finished_us
            apart = ra.finished_us <= sb or rb.finished_us <= sa
            if (kind == "overlap" and not together) or (kind == "disjoint" and not apart):
                problems.append(
                    f"{fact}: {a!r} ran {sa}..{ra.finished_us} µs, {b!r} ran {sb}..{rb.finished_us} µs"
                )
    within = expect.get("within_ms")
    if within is not None and out.duration_us > within * 1000:
        problems.append(f"the batch took {out.duration_us} µs, more than within_ms {within}")
