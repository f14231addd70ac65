"""The ceiling: CTranslate2 in this process on the sentences the clients draw, in
batches of the server's mean size (imports t2t_lite and TensorFlow when run)."""

import itertools
import random
import threading
import time
from typing import Dict, List, Sequence

from .programs import BenchError
from .references import Reference

CEILING_OF = {"ct2_float32": "float32", "ct2_int8": "int8"}  # config -> quantization


def ceiling_batches(lengths: Sequence[int], window: int, batch_size: int, seed: int,
                    count: int) -> List[List[int]]:
    """Batches of sentence indices: `count` seeded draws, each `window` of them sorted by
    `lengths` and cut into batches of at most `batch_size`."""
    rng = random.Random(seed)
    draws = [rng.randrange(len(lengths)) for _ in range(count)]
    batches = []
    for start in range(0, count, window):
        part = sorted(draws[start:start + window], key=lambda i: lengths[i])
        batches += [part[i:i + batch_size] for i in range(0, len(part), batch_size)]
    return batches


def drive(translate, batches: List[List[int]], workers: int, seconds: float) -> dict:
    """`workers` threads calling `translate(batch)` on `batches` in turn (cycling) for
    `seconds`; {"sentences", "seconds", "outputs": {index: the last output}}."""
    turn, lock, outputs = itertools.count(), threading.Lock(), {}
    done = []
    deadline = time.perf_counter() + seconds

    def work():
        while time.perf_counter() < deadline:
            batch = batches[next(turn) % len(batches)]  # next() is atomic under the GIL
            lines = translate(batch)
            with lock:
                done.append(len(batch))
                outputs.update(zip(batch, lines))

    began = time.perf_counter()
    threads = [threading.Thread(target=work) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"sentences": sum(done), "seconds": time.perf_counter() - began, "outputs": outputs}


def ceiling(args, quantization: str, workers: int, sentences, decoder: Reference,
            engine_reference: Reference, batch_sizes: Dict[int, float]) -> dict:
    """{clients: figures} of CTranslate2 in-process in batches of the server's mean size."""
    from t2t_lite.bin.cli import filtered_native_stderr
    from t2t_lite.errors import T2TError

    with filtered_native_stderr():  # TensorFlow's start-up notes (CT2Engine reads the model)
        from t2t_lite.serve.ctranslate2_engine import CT2Engine

        try:
            engine = CT2Engine.load(args.output_dir, args.decode_hparams,
                                    args.checkpoint_average, quantization=quantization,
                                    workers=workers)
        except T2TError as e:
            raise BenchError(f"the in-process CTranslate2 engine: {e}") from None
    engine.warm_up()
    lengths = engine.token_lengths(sentences)

    def translate(batch):
        return [t.line for t in engine.translate([sentences[i] for i in batch])]

    results = {}
    for clients, mean in batch_sizes.items():
        size = max(1, round(mean or 1))
        batches = ceiling_batches(lengths, clients, size, args.seed, 4 * len(sentences))
        # No more batches at once than the clients' sentences in flight fill.
        threads = min(workers, max(1, round(clients / size)))
        load = drive(translate, batches, threads, args.seconds)
        outputs = load["outputs"].items()
        same = sum(line == decoder.lines[i] for i, line in outputs)
        same_engine = sum(line == engine_reference.lines[i] for i, line in outputs)
        results[clients] = {"batch_size": size, "threads": threads,
                            "sentences": load["sentences"],
                            "seconds": load["seconds"],
                            "sentences_per_s": load["sentences"] / load["seconds"],
                            "identical_pct": 100.0 * same / max(1, len(outputs)),
                            "identical_to_engine_pct": 100.0 * same_engine / max(1, len(outputs))}
        print(f"ceiling: CTranslate2 {quantization} in-process, batches of {size} "
              f"({clients} clients' mean), {threads} at once: "
              f"{results[clients]['sentences_per_s']:.1f} sentences/s; of the "
              f"sentences, {results[clients]['identical_pct']:.1f}% identical to t2t-decoder's "
              f"line, {results[clients]['identical_to_engine_pct']:.1f}% to t2t-decoder "
              "--engine=ctranslate2's", flush=True)
    return results
