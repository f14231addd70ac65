"""The Prometheus metrics of one server, in a registry of its own (GET /metrics).

    t2t_server_requests_total{route, status}     answered requests
    t2t_server_requests_in_progress{route}       requests received, not yet answered
    t2t_server_sentences_total                   sentences translated
    t2t_server_rejections_total{reason}          requests refused or failed, by reason
    t2t_server_dropped_sentences_total{reason}   queued sentences never translated
                                                 (cancelled, deadline, failed, shutdown)
    t2t_server_queue_depth                       sentences waiting
    t2t_server_batch_sentences, _batch_tokens    batch sizes (histograms)
    t2t_server_queue_wait_seconds                time from queue to batch (per sentence)
    t2t_server_compute_seconds                   time to translate a batch
    t2t_server_request_seconds{route}            time to answer a request
    t2t_server_model_version{model}              the served version (the checkpoint's step,
                                                 or the export's version number)
"""

import prometheus_client as prom

from t2t_lite.serve.batcher import Observer

_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
_TOKENS = (16, 64, 256, 1024, 2048, 4096, 8192, 16384, 65536)
_SECONDS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class ServerMetrics(Observer):
    """The counters, gauges and histograms of one server; the batcher's observer."""

    def __init__(self, model_name: str, version: int):
        self.registry = prom.CollectorRegistry()
        r = self.registry
        self.requests = prom.Counter("t2t_server_requests", "Answered requests.",
                                     ["route", "status"], registry=r)
        self.in_progress = prom.Gauge("t2t_server_requests_in_progress",
                                      "Requests received, not yet answered.", ["route"],
                                      registry=r)
        self.sentences = prom.Counter("t2t_server_sentences", "Sentences translated.",
                                      registry=r)
        self.rejections = prom.Counter("t2t_server_rejections",
                                       "Requests refused or failed, by reason.", ["reason"],
                                       registry=r)
        self.dropped_sentences = prom.Counter(
            "t2t_server_dropped_sentences", "Queued sentences never translated, by reason.",
            ["reason"], registry=r)
        self.depth = prom.Gauge("t2t_server_queue_depth", "Sentences waiting in the queue.",
                                registry=r)
        self.batch_sentences = prom.Histogram("t2t_server_batch_sentences",
                                              "Sentences per batch.", buckets=_SIZES, registry=r)
        self.batch_tokens = prom.Histogram("t2t_server_batch_tokens",
                                           "Rows x longest row (subwords) per batch.",
                                           buckets=_TOKENS, registry=r)
        self.wait = prom.Histogram("t2t_server_queue_wait_seconds",
                                   "Time a sentence waited for its batch.", buckets=_SECONDS,
                                   registry=r)
        self.compute = prom.Histogram("t2t_server_compute_seconds",
                                      "Time to translate one batch.", buckets=_SECONDS,
                                      registry=r)
        self.latency = prom.Histogram("t2t_server_request_seconds",
                                      "Time to answer a request.", ["route"], buckets=_SECONDS,
                                      registry=r)
        self.version = prom.Gauge("t2t_server_model_version",
                                  "The served version (checkpoint step or export version).",
                                  ["model"], registry=r).labels(model_name)
        self.version.set(version)

    def exposition(self) -> bytes:
        """The text format Prometheus scrapes."""
        return prom.generate_latest(self.registry)

    # The batcher's reports (`batcher.Observer`).
    def queue_depth(self, sentences: int) -> None:
        self.depth.set(sentences)

    def batch(self, sentences: int, tokens: int, compute_s: float) -> None:
        self.batch_sentences.observe(sentences)
        self.batch_tokens.observe(tokens)
        self.compute.observe(compute_s)

    def queue_wait(self, seconds: float) -> None:
        self.wait.observe(seconds)

    def dropped(self, reason: str, sentences: int) -> None:
        self.dropped_sentences.labels(reason).inc(sentences)
