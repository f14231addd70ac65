"""Judging one answer against the references, and what one load run saw."""

from typing import Dict, List

from .references import Reference

# t2t-decoder writes scores with 4 decimals; a batch's composition moves them by ~1e-5.
SCORE_TOLERANCE = 1e-3
SHOWN_MISMATCHES = 5


def classify(index: int, body, decoder: Reference, engine: Reference) -> str:
    """"ok", "wrong_request" or "mismatch" for a 200 answer `body` to sentence `index`
    (see bench/http_load.py's docstring): `decoder` is t2t-decoder's reference, `engine` its
    reference with the served engine (the same object for TensorFlow)."""
    outputs = body.get("outputs") if isinstance(body, dict) else None
    scores = body.get("scores") if isinstance(body, dict) else None
    if not (isinstance(outputs, list) and isinstance(scores, list) and len(outputs) == 1
            and len(scores) == 1 and isinstance(scores[0], (int, float))):
        return "wrong_request"
    output, score = outputs[0], scores[0]
    if output == decoder.lines[index]:
        return "ok"
    if output == engine.lines[index]:
        return "mismatch"
    for reference in (decoder, engine):
        if any(abs(score - reference.scores[j]) <= SCORE_TOLERANCE
               for j in reference.owners.get(output, ()) if j != index):
            return "wrong_request"
    return "mismatch"


class Tally:
    """What one load run saw: latencies, each answer's verdict, and how many answers
    differ from t2t-decoder's line with the served engine."""

    def __init__(self):
        self.latencies: List[float] = []
        self.counts = {"ok": 0, "mismatch": 0, "wrong_request": 0, "error": 0}
        self.engine_mismatch = 0
        self.examples: Dict[str, List[dict]] = {"mismatch": [], "wrong_request": [], "error": []}

    def add(self, verdict: str, latency: float, example: dict, engine_line: bool) -> None:
        self.latencies.append(latency)
        self.counts[verdict] += 1
        self.engine_mismatch += verdict in ("mismatch", "wrong_request") and not engine_line
        if verdict != "ok" and len(self.examples[verdict]) < SHOWN_MISMATCHES:
            self.examples[verdict].append(example)
