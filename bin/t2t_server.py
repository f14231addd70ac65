"""t2t-server: translate over HTTP with a model directory or an export, batching concurrent requests.

    t2t-server --output_dir=runs/ende --model_name=ende --decode_hparams="beam_size=4,alpha=0.6" \\
        --checkpoint_average=5 --port=8501
    curl -X POST http://127.0.0.1:8501/v1/translate -d '{"inputs": ["Hello world."]}'

Serves t2t-server's API (POST /v1/translate), TF Serving's REST predict API
(POST /v1/models/NAME:predict), /healthz, /readyz and /metrics (Prometheus).
Each output is what t2t-decoder writes for that line with the same flags.
SIGTERM (or Ctrl-C) stops accepting at once, answers what was received within
--drain_timeout_s (a version --watch is loading is waited for as long, then
abandoned), and exits.

`--engine=ctranslate2 [--quantization=int8]` translates with CTranslate2 (the
model converted once into a cache, as t2t-decoder's --engine=ctranslate2 does),
running one batch per batch worker at once (`inter_threads`), each on its share
of the cores; the decode options it maps are named in one line at start-up.

`--export_dir=E` serves the newest SavedModel version under E (t2t-exporter's;
its decode settings fixed at export) instead of a model directory.
`--watch` serves the highest complete checkpoint (or export version), looked
for every --watch_interval_s: a newer one once it is loaded and warmed up, a
lower one once the served one is gone (a rollback); each request is answered
by the version served when it was received.
"""

import argparse
import asyncio
import logging
import os
import signal
import sys
from typing import List, Optional

from t2t_lite.bin import cli, problem_flags


def build_parser() -> argparse.ArgumentParser:
    """The program's flags (also read by the docs' generated reference)."""
    p = cli.ArgumentParser(prog="t2t-server", description=__doc__.split("\n")[0])
    p.add_argument("--output_dir", help="model directory written by t2t-trainer")
    p.add_argument("--export_dir", help="instead of --output_dir: serve the newest SavedModel "
                                        "version under this directory (t2t-exporter's)")
    p.add_argument("--checkpoint_path", help="a ckpt-N prefix (default: the latest)")
    p.add_argument("--checkpoint_average", type=int,
                   help="average the last N checkpoints on the fly (default 1)")
    p.add_argument("--watch", action="store_true",
                   help="serve the highest complete checkpoint (or export version): switch "
                        "to it once it is loaded and warmed up")
    p.add_argument("--watch_interval_s", type=float, default=5.0,
                   help="with --watch: seconds between two looks for a newer version")
    p.add_argument("--decode_hparams", default="",
                   help="as t2t-decoder's: beam_size, alpha, extra_length, ..., "
                        "return_beams, write_beam_scores (the written lines), "
                        "batch_size (the default of --max_batch_sentences), "
                        "parallel_batches (batches translated at once; default one per core)")
    p.add_argument("--precision", default="float32", choices=["float32", "bfloat16"],
                   help="as t2t-decoder's")
    cli.add_engine_flags(p)
    p.add_argument("--model_name", help="NAME in /v1/models/NAME (TF Serving's MODEL_NAME; "
                                        "default: the model directory's name)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on")
    p.add_argument("--port", type=int, default=8501, help="port (0: any free one)")
    p.add_argument("--max_batch_sentences", type=int,
                   help="sentences per batch (default: decode_hparams' batch_size, 32)")
    p.add_argument("--max_batch_tokens", type=int, default=4096,
                   help="rows x longest row in subwords per batch")
    p.add_argument("--batch_timeout_ms", type=float, default=10.0,
                   help="how long a sentence waits for a fuller batch")
    p.add_argument("--max_queue_sentences", type=int, default=4096,
                   help="queued sentences beyond which requests get 503")
    p.add_argument("--max_request_sentences", type=int, default=1024,
                   help="sentences per request beyond which it gets 422")
    p.add_argument("--max_sentence_chars", type=int, default=10_000,
                   help="characters per sentence beyond which the request gets 422")
    p.add_argument("--max_body_bytes", type=int, default=1 << 20,
                   help="request bodies beyond this get 413")
    p.add_argument("--request_timeout_s", type=float, default=60.0,
                   help="a request not answered by then gets 504")
    p.add_argument("--drain_timeout_s", type=float, default=30.0,
                   help="after SIGTERM, how long received requests may take")
    problem_flags.add_usr_dir_flag(p)
    return p


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    p = build_parser()
    args = p.parse_args(argv)
    if bool(args.output_dir) == bool(args.export_dir):
        p.error("give exactly one of --output_dir (a model directory) and --export_dir "
                "(t2t-exporter's SavedModel versions)")
    cli.check_engine_flags(p, args)
    if args.export_dir:
        _check_export_flags(p, args)
    if args.engine == "ctranslate2" and args.precision != "float32":
        p.error(f"--engine=ctranslate2 cannot run --precision={args.precision}; "
                "use --quantization")
    if args.watch and args.checkpoint_path:
        p.error("--watch follows the newest checkpoint; --checkpoint_path pins one: "
                "give one of them")
    if not args.watch_interval_s > 0:
        p.error(f"--watch_interval_s must be > 0, got {args.watch_interval_s:g}")
    if args.checkpoint_average is None:
        args.checkpoint_average = 1
    return args


def _check_export_flags(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Exits with a usage error for a flag that --export_dir cannot honour."""
    fixed = "an export's decode settings are fixed when t2t-exporter writes it"
    refused = [("decode_hparams", args.decode_hparams, f"{fixed} (see its export.json)"),
               ("checkpoint_average", args.checkpoint_average is not None,
                f"{fixed}, from the checkpoints it averaged"),
               ("checkpoint_path", args.checkpoint_path, "it serves the newest version"),
               ("engine=ctranslate2", args.engine == "ctranslate2",
                "serve t2t-exporter --format=ctranslate2's model with CTranslate2 itself, or "
                "--output_dir with --engine=ctranslate2"),
               ("precision", args.precision != "float32", fixed)]
    for flag, given, why in refused:
        if given:
            p.error(f"--{flag} cannot be used with --export_dir: {why}")


def run(args: argparse.Namespace) -> int:
    problem_flags.import_usr_dir(args)
    from t2t_lite import model_dir as model_dir_lib
    from t2t_lite.decode import decoding
    from t2t_lite.decode.search import SearchParams
    from t2t_lite.serve.config import ServerConfig

    _, options = decoding.parse_decode_hparams(SearchParams(), args.decode_hparams)
    # A wrong directory is told at once; the first engine is built from this reading.
    opened = model_dir_lib.ModelDir.open(args.output_dir) if args.output_dir else None
    # Batches side by side, each op on its share of the cores (as t2t-decoder), set
    # before TensorFlow's first op fixes its thread pools.
    # CTranslate2's converted model runs on the CPU, whatever TensorFlow sees.
    workers = options.concurrent_batches(accelerator=False if args.engine == "ctranslate2"
                                         else None)
    if args.engine == "tensorflow":
        decoding.share_cores(options)
    config = ServerConfig(
        model_name=args.model_name or os.path.basename(os.path.normpath(args.output_dir or
                                                                        args.export_dir)),
        max_batch_sentences=args.max_batch_sentences or options.batch_size,
        max_batch_tokens=args.max_batch_tokens, batch_timeout_ms=args.batch_timeout_ms,
        batch_workers=workers, max_queue_sentences=args.max_queue_sentences,
        max_request_sentences=args.max_request_sentences,
        max_sentence_chars=args.max_sentence_chars, max_body_bytes=args.max_body_bytes,
        request_timeout_s=args.request_timeout_s, drain_timeout_s=args.drain_timeout_s)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format="%(asctime)s %(name)s: %(message)s")

    from t2t_lite.serve.app import ServerState
    load = _loader(args, workers, opened)
    # The state holds the first engine alone: a --watch switch frees it.
    state = ServerState.create(load(), config)
    if args.engine == "ctranslate2":
        print(f"t2t-server: note: {state.engine.notice}", file=sys.stderr, flush=True)
    watcher = None
    if args.watch:
        from t2t_lite.serve import watch
        source = (watch.export_source(args.export_dir) if args.export_dir else
                  watch.checkpoint_source(args.output_dir, args.checkpoint_average))
        watcher = watch.Watcher(source, load, config.model_name, args.watch_interval_s)
    return asyncio.run(_serve(state, args.host, args.port, watcher))


def _loader(args: argparse.Namespace, workers: int, opened):
    """() -> the engine of the newest version these flags select (not warmed up).

    The first call builds on `opened` (the model directory read at start); each
    later one (a --watch reload) reads the directory again, once."""
    if args.export_dir:
        from t2t_lite.serve.saved_model_engine import SavedModelEngine
        return lambda: SavedModelEngine.load(args.export_dir)
    from t2t_lite.model_dir import ModelDir
    unused = [opened]

    def directory() -> ModelDir:
        return unused.pop() if unused else ModelDir.open(args.output_dir)

    if args.engine == "ctranslate2":
        from t2t_lite.serve.ctranslate2_engine import CT2Engine
        return lambda: CT2Engine.load(directory(), args.decode_hparams,
                                      args.checkpoint_average, args.checkpoint_path,
                                      args.quantization or "float32", workers)
    from t2t_lite.serve.engine import TFEngine
    return lambda: TFEngine.load(directory(), args.decode_hparams, args.checkpoint_average,
                                 args.checkpoint_path, args.precision)


async def _serve(state, host: str, port: int, watcher=None) -> int:
    from t2t_lite.serve.server import serve

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)

    def listening(actual_port: int) -> None:
        print(f"t2t-server: serving model {state.config.model_name!r} version "
              f"{state.engine.version} on http://{host}:{actual_port} "
              f"({state.config.batch_workers} batch worker(s))", file=sys.stderr, flush=True)

    return await serve(state, host, port, stop, listening, watcher)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)  # before importing TensorFlow: --help stays instant
    return cli.main("t2t-server", lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
