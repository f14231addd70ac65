"""The host's description and the printed tables and ratios."""

import importlib.metadata
import os
import re
from typing import Dict, Optional

from .ceiling import CEILING_OF
from .judge import SHOWN_MISMATCHES


def host_info() -> dict:
    """CPU model, AVX-512/AMX flags, cores, load average and the packages' versions."""
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        text = ""
    model = re.search(r"model name\s*:\s*(.*)", text)
    versions = {}
    for package in ("ctranslate2", "tensorflow", "aiohttp"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    return {"cpu": model.group(1).strip() if model else "unknown",
            "flags": sorted(set(re.findall(r"\b(avx512\w*|amx_\w+)", text))),
            "cores": os.cpu_count(), "usable_cores": len(os.sched_getaffinity(0)),
            "load_average": os.getloadavg(), "versions": versions}


def _ms(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.0f}"


def print_run(name: str, clients: int, run: dict) -> None:
    """One row: a configuration at one client count."""
    mean = "-" if run["mean_batch"] is None else f"{run['mean_batch']:.1f}"
    print(f"{name:<13} {clients:>7} {run['sentences_per_s']:>11.1f} {_ms(run['p50_ms']):>7} "
          f"{_ms(run['p99_ms']):>7} {run['mismatch']:>6} ({run['mismatch_pct']:4.1f}%) "
          f"{run['engine_mismatch']:>9} {run['wrong_request']:>5} {run['error']:>6} {mean:>10} "
          f"{run['client_cpu_s']:>6.1f} ({run['client_cpu_pct']:3.0f}%) "
          f"{run['server_cpu_s']:>7.1f}", flush=True)


HEADER = (f"{'config':<13} {'clients':>7} {'sentences/s':>11} {'p50 ms':>7} {'p99 ms':>7} "
          f"{'mismatches':>14} {'vs engine':>9} {'wrong':>5} {'errors':>6} {'mean batch':>10} "
          f"{'client CPU s':>13} {'server CPU s':>7}")


def ratios(report: dict) -> Dict[str, float]:
    """The comparisons of the issue at the most clients, where both sides ran."""
    most = str(max(report["settings"]["clients"]))
    results, found = report["configs"], {}

    def rate(config):
        return results.get(config, {}).get("runs", {}).get(most, {}).get("sentences_per_s")

    if rate("batching_on") and rate("batching_off"):
        found["batching_on / batching_off"] = rate("batching_on") / rate("batching_off")
    for config, quantization in CEILING_OF.items():
        top = report["ceiling"].get(quantization, {}).get(most, {}).get("sentences_per_s")
        if rate(config) and top:
            found[f"{config} / in-process ceiling"] = rate(config) / top
    return found


def shown_answer(example: dict) -> str:
    """An example's answer, short: the output line of a 200, else status and body."""
    got = example["got"]
    if example["status"] == 200 and isinstance(got, dict) and len(got.get("outputs") or []) == 1:
        return repr(got["outputs"][0])
    return f"{example['status']} {got!r}"


def print_mismatches(report: dict) -> None:
    """Each configuration's examples of answers not equal to t2t-decoder's line, each
    (sentence, answer) once, at most SHOWN_MISMATCHES of each kind."""
    for name, config in report["configs"].items():
        shown = {}
        for run in [config["warm_up"], *config["runs"].values()]:
            for verdict, examples in run["examples"].items():
                for e in examples:
                    key = (verdict, e["sentence"], shown_answer(e))
                    if sum(k[0] == verdict for k in shown) < SHOWN_MISMATCHES:
                        shown.setdefault(key, e)
        for verdict, sentence, answer in shown:
            print(f"  {verdict.upper()} {name}: {sentence!r}: t2t-decoder "
                  f"{shown[verdict, sentence, answer]['expected']!r}, server {answer}")
