"""The Multi30k recipe's scores: a mark's row of test scores, and the table printed."""

import os
from typing import Dict, List, Optional

from multi30k.commands import average, decode_bleu, moses_lowercase_bleu
from multi30k.layout import TEST_STEM
from multi30k.marks import checkpoint_step, minutes_into_run


def score_mark(label: str, available: List[tuple], args, decode_hparams: str,
               log_path: str, avg: Optional[tuple] = None) -> Dict[str, object]:
    """The four test scores with the checkpoints available at one time mark (last
    checkpoint or average, greedy or `decode_hparams`), and the average's
    lowercased Moses-tokenized score."""
    from t2t_lite.train import tokens_seen  # TensorFlow: not for --help
    last = available[-1][1]
    avg_dir, averaged = avg or average(label, available, args, log_path)
    row = {"mark": label, "checkpoint": os.path.basename(last), "step": checkpoint_step(last),
           "minutes": minutes_into_run(available[-1][0], args),
           "tokens": tokens_seen.read(last), "averaged": averaged,
           "decode_hparams": decode_hparams}
    for name, model_dir, checkpoint in (("single", args.model_dir, last),
                                        ("avg", avg_dir, None)):
        for search, options in (("beam1", "beam_size=1"), ("beam", decode_hparams)):
            out = os.path.join(args.score_dir, f"test_{label}_{name}_{search}.de")
            row[f"{name}_{search}"], row["signature"] = decode_bleu(
                model_dir, checkpoint, options, TEST_STEM, args, out, log_path)
    if args.preprocess == "raw":  # the prepared text is scored lowercased and tokenized already
        row["avg_beam_lc_moses"] = moses_lowercase_bleu(
            os.path.join(args.score_dir, f"test_{label}_avg_beam.de"), args, log_path)
    return row


def tokens_text(tokens: Optional[Dict[str, int]]) -> str:
    from t2t_lite.train import tokens_seen
    return tokens_seen.describe(tokens) if tokens else "tokens not counted"


def print_table(rows: List[Dict[str, object]], args, decode_hparams: str) -> None:
    """The scores of every mark, then the final one (the last line)."""
    raw = args.preprocess == "raw"
    how = ("the last" if args.select == "last" else "the lowest dev loss of")
    scored = ("sacreBLEU; lc-tok: lowercased, Moses-tokenized" if raw else
              "BLEU on the lowercased, normalized, tokenized references, tok:none")
    print(f"\n{'mark':>6} {'step':>6} {'greedy':>7} {'beam':>7} {'avg greedy':>11} "
          f"{'avg beam':>9} {'avg beam lc-tok':>16}   (test_2016_flickr {scored}; avg: "
          f"{how} {args.average} checkpoints; beam: {decode_hparams})")
    for r in rows:
        lc_tok = f"{r['avg_beam_lc_moses']:16.2f}" if raw else f"{'-':>16}"
        print(f"{r['mark']:>6} {r['step']:>6} {r['single_beam1']:7.2f} "
              f"{r['single_beam']:7.2f} {r['avg_beam1']:11.2f} {r['avg_beam']:9.2f} "
              f"{lc_tok}   {tokens_text(r['tokens'])}")
    final = rows[-1]
    resumed = (f"; resumed at step {', '.join(map(str, final['resumed_at']))}"
               if final["resumed_at"] else "")
    if final["stopped_at"]:
        resumed += f"; stopped early (--patience={args.patience}) at step {final['stopped_at']}"
    also = (f"; lowercased Moses-tokenized {final['avg_beam_lc_moses']:.2f}" if raw else "")
    print(f"Final: {TEST_STEM} {'sacreBLEU' if raw else 'BLEU (lc.norm.tok, tok:none)'} "
          f"{final['avg_beam']:.2f} (average of "
          f"{len(final['averaged'])} checkpoints, {decode_hparams}; {final['step']} steps of "
          f"batch_size={args.batch_size}: {tokens_text(final['tokens'])}; "
          f"{final['train_minutes']} min of training in this run{resumed}; val "
          f"{final['dev_avg_beam']:.2f}{also}) {final['signature']}")
