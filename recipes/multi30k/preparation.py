"""The Multi30k recipe's data: t2t-datagen of the raw files, or of the text prepared
as Multi30k's tok files with their joint BPE (--preprocess=lc_norm_tok)."""

import os
import sys
import time
from typing import Tuple

from multi30k.commands import run_command
from multi30k.layout import (DEV_STEM, PREPARED_PROBLEM, PROBLEM, SPLIT_STEMS, SUBWORD_FLAGS,
                             TEST_STEM)


def prepare_text(args) -> Tuple[str, int]:
    """Writes the prepared train, val and test files (`lc_norm_tok.prepare_file`) and
    their joint BPE model into args.text_dir, each run anew (the same bytes from the same
    raw files: a changed raw file cannot leave stale data behind); returns the model's
    path and its number of ids."""
    from t2t_lite.data import lc_norm_tok
    from t2t_lite.data.split_writer import write_atomically
    from t2t_lite.errors import T2TError
    start = time.time()
    os.makedirs(args.text_dir, exist_ok=True)
    model = os.path.join(args.text_dir, f"bpe{args.bpe_merges}.model")
    try:
        for stem in SPLIT_STEMS:
            for lang in ("en", "de"):
                prepared = os.path.join(args.text_dir, f"{stem}.{lang}")
                lines, tokens = lc_norm_tok.prepare_file(
                    os.path.join(args.tmp_dir, f"{stem}.{lang}"), prepared, lang)
                print(f"  {prepared}: {lines:,} lines, {tokens:,} tokens", flush=True)
        write_atomically(model, lc_norm_tok.learn_joint_bpe(
            [os.path.join(args.text_dir, f"train.{lang}") for lang in ("en", "de")],
            args.bpe_merges))
    except T2TError as e:
        sys.exit(f"recipe: {e}")
    import sentencepiece
    size = sentencepiece.SentencePieceProcessor(model_file=model).get_piece_size()
    print(f"Prepared text in {args.text_dir} ({time.time() - start:.1f} s): lowercased, "
          f"normalized, tokenized; joint BPE {os.path.basename(model)}, {size:,} ids.",
          flush=True)
    return model, size


def generate_data(args, log_path: str) -> None:
    """t2t-datagen of the raw files, or (--preprocess=lc_norm_tok) of the prepared files
    with their BPE vocabulary, as a problem defined by those files."""
    command = ["t2t-datagen", f"--data_dir={args.data_dir}"]
    command += [f"--{name}={getattr(args, name)}" for name in SUBWORD_FLAGS
                if getattr(args, name) is not None]
    if args.preprocess == "raw":
        run_command(command + [f"--problem={PROBLEM}", f"--tmp_dir={args.tmp_dir}"], log_path)
        return
    model, size = prepare_text(args)
    files = {stem: ",".join(os.path.join(args.text_dir, f"{stem}.{lang}")
                            for lang in ("en", "de")) for stem in SPLIT_STEMS}
    run_command(command + [f"--problem={PREPARED_PROBLEM}", "--source_lang=en",
                           "--target_lang=de", f"--train_files={files['train']}",
                           f"--dev_files={files[DEV_STEM]}", f"--test_files={files[TEST_STEM]}",
                           f"--vocab_size={size}", f"--vocab_from={model}"], log_path)
