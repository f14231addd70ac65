"""The host's description and the printed table of a datagen_scale run."""

import os
import re
from typing import Dict

from .figures import GAP_LIMIT_S, GAP_SLACK_S


def host() -> Dict:
    """CPU model, AVX-512/AMX flags, cores, kernel."""
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        cpuinfo = f.read()
    model = re.search(r"^model name\s*:\s*(.*)$", cpuinfo, re.M)
    return {"cpu_model": model.group(1) if model else None,
            "cpu_flags": sorted(set(re.findall(r"\b(?:avx512\w*|amx\w*)", cpuinfo))),
            "cores": os.cpu_count(), "usable_cores": len(os.sched_getaffinity(0)),
            "kernel": os.uname().release, "hostname": os.uname().nodename}


def print_table(report: Dict) -> None:
    d, p, g = report["datagen"], report["phases"], report["gaps"]
    rows = [("total wall time", f"{d['wall_s']:.1f} s"),
            ("CPU time (user + sys)", f"{d['cpu_s']:.1f} s ({d['cpu_user_s']:.1f} + "
                                      f"{d['cpu_sys_s']:.1f}), {d['cpu_s'] / d['wall_s']:.2f} "
                                      "cores busy on average"),
            ("peak RSS, process tree (0.2 s samples)",
             f"{d['peak_tree_rss_mb']:,.0f} MB at {d['peak_tree_rss_at_s']:.0f} s"),
            ("max RSS, kernel (largest process)", f"{d['kernel_max_rss_mb']:,.0f} MB")]
    if "vocab_s" in p:
        learning = (f" (learning {p['vocab_learning_s']:.1f} s)"
                    if "vocab_learning_s" in p else "")
        rows.append(("vocabulary", f"{p['vocab_s']:.1f} s{learning}, "
                                   f"{p['vocab_cpu_s']:.1f} CPU s"))
    for split, s in p["splits"].items():
        rows.append((f"{split} split", f"{s['seconds']:.1f} s, {s['pairs_per_s']:,.0f} pairs/s, "
                                        f"{s['cpu_s']:.1f} CPU s, {s['examples']:,} examples, "
                                        f"dropped {s['dropped']:,}"))
    if "train_encoding_pairs_per_s_last_line" in p:
        rows.append(("train encoding (last progress line)",
                     f"{p['train_encoding_pairs_per_s_last_line']:,} pairs/s"))
    rows.append(("longest gap between lines",
                 f"{g['longest_gap_s']:.1f} s after the line at {g['longest_gap_after_s']:.0f} s"
                 f" ({g['gaps_late']} gap(s) over {GAP_LIMIT_S + GAP_SLACK_S:g} s in {g['lines']}"
                 " lines; "
                 f"first line at {g['first_line_s'] or 0:.1f} s, exit "
                 f"{g['after_last_line_s'] or 0:.1f} s after the last)"))
    rows.append(("  the line before it", g["longest_gap_after_line"][:70]))
    for split, s in report["shards"].items():
        rows.append((f"{split} shards", f"{s['count']} x {s['min_mb']:.2f} / "
                                        f"{s['median_mb']:.2f} / {s['max_mb']:.2f} MB "
                                        f"(min/median/max), {s['total_mb']:,.1f} MB in all"))
    pipe = report["pipeline"]
    rows.append(("training pipeline (train shards)",
                 pipe.get("error") or f"{pipe['examples_per_s']:,.0f} examples/s, "
                                      f"{pipe['target_tokens_per_s']:,.0f} target tokens/s "
                                      f"({pipe['batches']} batches after {pipe['warmup_batches']};"
                                      f" warm-up {pipe['warmup_s']:.1f} s)"))
    width = max(len(name) for name, _ in rows)
    print()
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    h = report["host"]
    print(f"\nhost: {h['cpu_model']}, {h['cores']} cores ({h['usable_cores']} usable); "
          f"flags: {' '.join(h['cpu_flags']) or 'no AVX-512'}")
    print(f"load average (1/5/15 min): before {report['load_before']}, "
          f"after {report['load_after']}")
    code = report["code"]
    print(f"code: {report['code_root']} at {(code['commit'] or '?')[:10]}"
          + (f" + {code['changed_tracked_files']} changed file(s)"
             if code["changed_tracked_files"] else ""))
