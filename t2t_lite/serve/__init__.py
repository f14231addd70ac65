"""t2t-server: translation over HTTP with dynamic batching.

    config.py    the server's knobs (limits, batching, timeouts) as one value object
    batcher.py   the queue of sentences and the batch workers (no HTTP, no TensorFlow)
    engine.py    the TensorFlow engine: a model directory -> translations of a batch
    saved_model_engine.py  the engine of t2t-exporter's SavedModel (--export_dir)
    watch.py     --watch: the highest complete checkpoint or export version (newer, or
                 lower after a rollback), loaded, then switched to
    payloads.py  request bodies -> validated inputs, results -> response bodies
    metrics.py   the Prometheus metrics of one server
    app.py       the aiohttp application: routes, errors, limits
    server.py    listening, warm-up, SIGTERM drain
"""
