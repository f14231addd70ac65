"""Loss and dev BLEU against training time, from a model directory's TensorBoard events.

    python recipes/plot_curves.py --output_dir=m30k/model --png=curves.png [--results=m30k/results.json]

Reads the scalars t2t-trainer writes (`train/`: loss; `eval/`: loss, bleu),
prints the evaluations as a table (minutes since the trainer started, step,
dev loss, dev BLEU) and draws training loss, dev loss and dev BLEU against
minutes into a PNG. With `--results` (written by recipes/multi30k_ende.py) the
test BLEU of each time mark is drawn as well. Needs matplotlib
(`pip install -e .[plot]`).
"""

import argparse
import glob
import json
import os
import sys
from collections import defaultdict
from typing import Dict, List, Optional, Tuple

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

Series = Dict[str, List[Tuple[float, int, float]]]  # tag -> [(wall time, step, value)]


def read_scalars(events_dir: str) -> Tuple[Series, float]:
    """All scalar summaries under `events_dir`, and the earliest event time (writer creation)."""
    import tensorflow as tf

    series: Series = defaultdict(list)
    first = float("inf")
    files = sorted(glob.glob(os.path.join(events_dir, "events.out.tfevents.*")))
    if not files:
        raise SystemExit(f"plot_curves: no TensorBoard event files in {events_dir}.")
    for path in files:
        for record in tf.data.TFRecordDataset(path):
            event = tf.compat.v1.Event.FromString(record.numpy())
            first = min(first, event.wall_time)
            for value in event.summary.value:
                number = (float(tf.make_ndarray(value.tensor)) if value.HasField("tensor")
                          else value.simple_value)
                series[value.tag].append((event.wall_time, event.step, number))
    # A step logged twice (a finished run started again evaluates its last step again)
    # is drawn once, at its first time.
    for tag, points in series.items():
        first_of_step = {}
        for point in sorted(points):
            first_of_step.setdefault(point[1], point)
        series[tag] = sorted(first_of_step.values())
    return series, first


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--output_dir", required=True, help="model directory written by t2t-trainer")
    p.add_argument("--png", required=True, help="where to write the figure")
    p.add_argument("--results", help="results.json of recipes/multi30k_ende.py")
    return p.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    train, start = read_scalars(os.path.join(args.output_dir, "train"))
    dev, _ = read_scalars(os.path.join(args.output_dir, "eval"))

    def minutes(points):
        return [(t - start) / 60 for t, _, _ in points]

    print(f"{'minutes':>7} {'step':>6} {'dev loss':>8} {'dev BLEU':>8}")
    bleu_by_step = {s: v for _, s, v in dev.get("bleu", [])}
    for t, step, loss in dev.get("loss", []):
        bleu = bleu_by_step.get(step)
        print(f"{(t - start) / 60:7.1f} {step:>6} {loss:8.3f} "
              f"{'' if bleu is None else format(bleu, '8.2f'):>8}")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_curves: matplotlib is not installed (pip install -e .[plot]).")
    fig, (ax_loss, ax_bleu) = plt.subplots(1, 2, figsize=(11, 4))
    ax_loss.plot(minutes(train["loss"]), [v for *_, v in train["loss"]], lw=0.8,
                 label="training loss (label-smoothed)")
    ax_loss.plot(minutes(dev["loss"]), [v for *_, v in dev["loss"]], "o-", label="dev loss")
    ax_loss.set_xlabel("minutes of training")
    ax_loss.set_ylabel("cross-entropy (nats per token)")
    ax_loss.legend()
    if "bleu" in dev:
        ax_bleu.plot(minutes(dev["bleu"]), [v for *_, v in dev["bleu"]], "o-",
                     label="dev BLEU (val, greedy, last checkpoint)")
    if args.results:
        with open(args.results, encoding="utf-8") as f:
            rows = json.load(f)
        # Each row's minutes: its last checkpoint's (older results: "25min" marks); none
        # for a checkpoint an earlier run saved (the recipe resumed), which is left out.
        marks = [(r["minutes"] if "minutes" in r else
                  float(r["mark"][:-3]) if r["mark"].endswith("min") else r["train_minutes"],
                  r.get("avg_beam", r.get("avg_beam4"))) for r in rows]  # older: avg_beam4
        marks = [mark for mark in marks if mark[0] is not None]
        if marks:
            ax_bleu.plot(*zip(*marks), "s", label="test_2016_flickr BLEU (averaged, beam)")
    ax_bleu.set_xlabel("minutes of training")
    ax_bleu.set_ylabel("sacreBLEU")
    ax_bleu.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(args.png, dpi=90)
    print(f"Wrote {args.png}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
