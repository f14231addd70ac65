"""The server's knobs: what t2t-server's flags set, checked once."""

import dataclasses
from typing import Optional

from t2t_lite.errors import T2TError


@dataclasses.dataclass(frozen=True)
class ServerConfig:
    """Limits, batching and timeouts of one server (defaults: t2t-server's)."""

    model_name: str = "default"          # the NAME of /v1/models/NAME (TF Serving's MODEL_NAME)
    max_batch_sentences: int = 32        # sentences per batch
    max_batch_tokens: int = 4096         # rows x longest row (subwords, EOS included) per batch;
                                         # a sentence longer than this still goes alone
    batch_timeout_ms: float = 10.0       # how long a queued sentence waits for a fuller batch
    batch_workers: int = 1               # batches translated at once, each on its own thread
    max_queue_sentences: int = 4096      # queued sentences beyond which requests get 503
    max_request_sentences: int = 1024    # sentences per request beyond which it gets 422
    max_sentence_chars: int = 10_000     # characters per sentence beyond which it gets 422
    max_body_bytes: int = 1 << 20        # request bodies beyond this get 413
    request_timeout_s: float = 60.0      # a request not answered by then gets 504
    drain_timeout_s: float = 30.0        # after SIGTERM, how long the queue may take to finish
    retry_after_s: int = 1               # the Retry-After of 503 answers

    def __post_init__(self):
        positive = ("max_batch_sentences", "max_batch_tokens", "batch_workers",
                    "max_queue_sentences", "max_request_sentences", "max_sentence_chars",
                    "max_body_bytes", "request_timeout_s", "retry_after_s")
        for name in positive:
            if getattr(self, name) <= 0:
                raise T2TError(f"{name} must be > 0, got {getattr(self, name)}.")
        for name in ("batch_timeout_ms", "drain_timeout_s"):
            if getattr(self, name) < 0:
                raise T2TError(f"{name} must be >= 0, got {getattr(self, name)}.")
        if not self.model_name or "/" in self.model_name or ":" in self.model_name:
            raise T2TError(f"model_name must be a non-empty name without '/' or ':', "
                           f"got {self.model_name!r}.")

    def deadline_seconds(self, deadline_ms: Optional[float]) -> float:
        """Seconds a request may take: its own deadline_ms, at most request_timeout_s."""
        if deadline_ms is None:
            return self.request_timeout_s
        return min(deadline_ms / 1000.0, self.request_timeout_s)
