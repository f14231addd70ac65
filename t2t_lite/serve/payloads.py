"""Request bodies in, response bodies out: the API's shapes and checks, without HTTP.

t2t-server's own API:

    POST /v1/translate {"inputs": ["...", ...], "nbest": false, "deadline_ms": 500}
    -> {"outputs": [...], "scores": [...], "model": {"name": ..., "version": ...}}
       (with "nbest": true also "nbest": [[{"output": ..., "score": ...}, ...], ...])

TF Serving's REST predict API over the SavedModel's signatures (`serving_default`:
`inputs` -> `outputs`, `scores`; `nbest`: the same with every beam):

    {"instances": ["...", ...]}          -> {"predictions": [{"outputs": ..., "scores": ...}, ...]}
    {"inputs": ["...", ...]}             -> {"outputs": {"outputs": [...], "scores": [...]}}

Instances may also be objects (`{"inputs": "..."}`) and strings may be TF
Serving's base64 objects (`{"b64": "..."}`), which must hold UTF-8 text.
"""

import base64
import binascii
import dataclasses
import json
import sys
from typing import Any, List, Optional, Sequence

from t2t_lite.decode.decoding import one_line
from t2t_lite.serve.config import ServerConfig
from t2t_lite.serve.engine import Translation

SIGNATURES = ("serving_default", "nbest")


class ApiError(Exception):
    """An answer other than 200: HTTP status, a short code, a message a client can act on."""

    def __init__(self, status: int, code: str, message: str,
                 retry_after: Optional[int] = None):
        super().__init__(message)
        self.status, self.code, self.message, self.retry_after = status, code, message, retry_after

    def body(self) -> dict:
        return {"error": {"code": self.code, "message": self.message}}


def bad_request(message: str) -> ApiError:
    return ApiError(400, "bad_request", message)


@dataclasses.dataclass(frozen=True)
class TranslateRequest:
    """A validated request: texts to translate and how to answer."""

    inputs: List[str]
    nbest: bool = False
    deadline_ms: Optional[float] = None
    signature: str = "serving_default"   # TF Serving's signature_name
    columnar: bool = False               # TF Serving: "inputs" (True) or "instances"


def parse_json(body: bytes) -> Any:
    """The request body's JSON value.

    Raises:
      ApiError: 400 for bytes that are not UTF-8 or not JSON, JSON nested deeper than
        Python's parser recurses (about 1,000 arrays or objects; a body under the size
        limit can nest far deeper), or an integer longer than Python converts from a
        string (4,300 digits by default: a ValueError that is not a JSONDecodeError).
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise bad_request(f"The request body is not UTF-8: byte 0x{body[e.start]:02x} at "
                          f"offset {e.start}.") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise bad_request(f"The request body is not JSON: {e.msg} at line {e.lineno} "
                          f"column {e.colno}.") from None
    except RecursionError:
        raise bad_request("The request body nests arrays or objects too deeply.") from None
    except ValueError:  # after JSONDecodeError, its subclass: the integer limit
        raise bad_request(f"The request body holds an integer of more than "
                          f"{sys.get_int_max_str_digits():,} digits.") from None


def _object(value: Any, keys: Sequence[str]) -> dict:
    if not isinstance(value, dict):
        raise bad_request(f"Expected a JSON object, got {_kind(value)}.")
    unknown = sorted(set(value) - set(keys))
    if unknown:
        raise bad_request(f"Unknown field(s) {', '.join(map(repr, unknown))}; expected "
                          f"{', '.join(map(repr, keys))}.")
    return value


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
             type(None): "null", int: "a number", float: "a number"}
    return names.get(type(value), type(value).__name__)


def _text(value: Any, where: str, config: ServerConfig) -> str:
    """One input sentence, checked: a string (or {"b64": ...}), valid Unicode, not too long."""
    if isinstance(value, dict) and set(value) == {"b64"} and isinstance(value["b64"], str):
        try:
            value = base64.b64decode(value["b64"], validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError) as e:
            raise bad_request(f"{where}: b64 must be base64 of UTF-8 text ({e}).") from None
    if not isinstance(value, str):
        raise bad_request(f"{where} must be a string, got {_kind(value)}.")
    surrogate = next((c for c in value if "\ud800" <= c <= "\udfff"), None)
    if surrogate is not None:
        raise bad_request(f"{where} holds a lone surrogate (U+{ord(surrogate):04X}), "
                          "which is not Unicode text.")
    if len(value) > config.max_sentence_chars:
        raise ApiError(422, "too_large", f"{where} has {len(value):,} characters; the limit is "
                                         f"{config.max_sentence_chars:,} (--max_sentence_chars).")
    return value


def _texts(values: Any, where: str, config: ServerConfig) -> List[str]:
    if not isinstance(values, list):
        raise bad_request(f"{where} must be an array of strings, got {_kind(values)}.")
    if len(values) > config.max_request_sentences:
        raise ApiError(422, "too_large", f"{where} has {len(values):,} sentences; the limit is "
                                         f"{config.max_request_sentences:,} per request "
                                         "(--max_request_sentences).")
    return [_text(v, f"{where}[{i}]", config) for i, v in enumerate(values)]


def _deadline(value: Any) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise bad_request(f"deadline_ms must be a positive number of milliseconds, got "
                          f"{json.dumps(value)}.")
    return float(value)


def parse_translate(value: Any, config: ServerConfig) -> TranslateRequest:
    """The body of POST /v1/translate -> a `TranslateRequest`.

    Raises:
      ApiError: 400 for a wrong shape or type, 422 for too many or too long sentences.
    """
    body = _object(value, ("inputs", "nbest", "deadline_ms"))
    if "inputs" not in body:
        raise bad_request("Missing field 'inputs': an array of strings.")
    nbest = body.get("nbest", False)
    if not isinstance(nbest, bool):
        raise bad_request(f"nbest must be true or false, got {_kind(nbest)}.")
    return TranslateRequest(_texts(body["inputs"], "inputs", config), nbest,
                            _deadline(body.get("deadline_ms")))


def parse_predict(value: Any, config: ServerConfig) -> TranslateRequest:
    """The body of TF Serving's POST /v1/models/NAME:predict -> a `TranslateRequest`.

    Raises:
      ApiError: 400 for a wrong shape, type or signature, 422 for too much input.
    """
    body = _object(value, ("instances", "inputs", "signature_name", "deadline_ms"))
    signature = body.get("signature_name", "serving_default")
    if signature not in SIGNATURES:
        raise bad_request(f"Serving signature name {json.dumps(signature)} not found; "
                          f"signatures: {', '.join(SIGNATURES)}.")
    if ("instances" in body) == ("inputs" in body):
        raise bad_request("Give exactly one of 'instances' (row format) and 'inputs' "
                          "(columnar format).")
    deadline = _deadline(body.get("deadline_ms"))
    if "inputs" in body:
        inputs = body["inputs"]
        if isinstance(inputs, dict):
            inputs = _object(inputs, ("inputs",)).get("inputs")
        return TranslateRequest(_texts(inputs, "inputs", config), False, deadline, signature,
                                columnar=True)
    instances = body["instances"]
    if isinstance(instances, list):  # {"inputs": "..."} objects: their one named input
        instances = [_object(v, ("inputs",)).get("inputs")
                     if isinstance(v, dict) and "b64" not in v else v for v in instances]
    return TranslateRequest(_texts(instances, "instances", config), False, deadline, signature)


def translate_response(results: Sequence[Translation], request: TranslateRequest,
                       model: dict) -> dict:
    """The answer of POST /v1/translate."""
    answer = {"outputs": [r.line for r in results], "scores": [r.scores[0] for r in results],
              "model": model}
    if request.nbest:
        answer["nbest"] = [[{"output": one_line(h), "score": s}
                            for h, s in zip(r.hypotheses, r.scores)] for r in results]
    return answer


def predict_response(results: Sequence[Translation], request: TranslateRequest) -> dict:
    """TF Serving's answer for the request's signature and format."""
    if request.signature == "nbest":
        outputs = [r.hypotheses for r in results]
        scores = [r.scores for r in results]
    else:
        outputs = [r.best for r in results]
        scores = [r.scores[0] for r in results]
    if request.columnar:
        return {"outputs": {"outputs": outputs, "scores": scores}}
    return {"predictions": [{"outputs": o, "scores": s} for o, s in zip(outputs, scores)]}
