"""How a run's progress reads over time: when its first lines come, and how its ETA compares with
the real end (benchmarks/progress/PROGRESS.md).

    python benchmarks/progress/progress_timeline.py --save run.log -- oodfs bench --suite synthetic \
        --quick --out X
    python benchmarks/progress/progress_timeline.py --log run.log

The first form runs the command with standard error on a pipe (so the progress comes as lines,
as in a log file), stamps every line with the seconds since the command started, saves them and
summarises; the second summarises a saved timeline. It reads the progress lines of this oodfs
("37% of the work, ... ETA 5 min 02 s") and those of earlier versions ("[3/24 tasks, 0 failed]
... elapsed 120 s, ETA 2801 s").
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time

WORK = re.compile(r"(\d+)% of the work, (\d+)/(\d+) tasks")
OLD = re.compile(r"\[(\d+)/(\d+) tasks")
CLOCK = re.compile(r"ETA ((?:\d+ h )?(?:\d+ min )?(?:\d+ s)?)(?:;|$|,)")
OLD_ETA = re.compile(r"ETA (\d+) s")


def seconds(text: str) -> float:
    total = 0.0
    for value, unit in re.findall(r"(\d+) (h|min|s)", text):
        total += int(value) * {"h": 3600, "min": 60, "s": 1}[unit]
    return total


def record(command: list[str], save: str) -> list[tuple[float, str]]:
    start = time.perf_counter()
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, bufsize=1)
    lines = []
    with open(save, "w") as out:
        for line in proc.stderr:
            stamp = time.perf_counter() - start
            lines.append((stamp, line.rstrip("\n")))
            out.write(f"{stamp:8.1f} {line}")
            out.flush()
        proc.wait()
        lines.append((time.perf_counter() - start, f"END rc={proc.returncode}"))
        out.write(f"{lines[-1][0]:8.1f} {lines[-1][1]}\n")
    return lines


def read(path: str) -> list[tuple[float, str]]:
    out = []
    for line in open(path):
        stamp, _, text = line.strip("\n").lstrip().partition(" ")
        out.append((float(stamp), text))
    return out


def summary(lines: list[tuple[float, str]]) -> str:
    """Markdown: first lines, the end of the work, and the ETA at 10 % and 50 % of it."""
    points = []  # (time, fraction, eta seconds or None)
    end = None
    for stamp, text in lines:
        m = WORK.search(text)
        if m:
            eta = CLOCK.search(text)
            left = None if "ETA estimating" in text or eta is None else seconds(eta.group(1))
            points.append((stamp, int(m.group(1)) / 100, left))
        else:
            m = OLD.search(text)
            if m:
                eta = OLD_ETA.search(text)
                left = float(eta.group(1)) if eta else None
                points.append((stamp, int(m.group(1)) / int(m.group(2)), left))
        if re.search(r"(\d+)/\1 tasks done|\[(\d+)/\2 tasks", text):
            end = stamp
    rows = [f"- first line on standard error: {lines[0][0]:.1f} s" if lines else "- no output"]
    if len(lines) > 1:  # the longest wait for a line, the end of the process included
        gap, at = max((b[0] - a[0], a[0]) for a, b in zip(lines, lines[1:]))
        rows.append(f"- longest silence: {gap:.1f} s (after the line at {at:.1f} s)")
    if points:
        rows.append(f"- first progress line: {points[0][0]:.0f} s")
        with_eta = [p for p in points if p[2] is not None]
        if with_eta:
            rows.append(f"- first line with an ETA: {with_eta[0][0]:.0f} s")
    if end is None:
        return "\n".join(rows + ["- the run did not finish"])
    rows.append(f"- the work ended (last task in): {end:.0f} s")
    for target in (0.0, 0.10, 0.50):
        at = next((p for p in points if p[1] >= target and p[2] is not None), None)
        if at is None:
            rows.append(f"- at {target:.0%}: no line with an ETA")
            continue
        predicted = at[0] + at[2]
        rows.append(
            f"- first line with an ETA at >= {target:.0%} of the work: {at[0]:.0f} s, ETA {at[2]:.0f} s, "
            f"so an end at {predicted:.0f} s against the real {end:.0f} s (error {predicted - end:+.0f} s, "
            f"{(predicted - end) / (end - at[0]):+.0%} of the time then left)"
        )
    return "\n".join(rows)


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--log", help="summarise a saved timeline")
    parser.add_argument("--save", default="progress-timeline.log", help="where to save the timeline")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if args.log:
        lines = read(args.log)
    else:
        command = args.command[1:] if args.command[:1] == ["--"] else args.command
        if not command:
            sys.exit("give a command after --, or --log FILE")
        lines = record(command, args.save)
    print(summary(lines))


if __name__ == "__main__":
    main()
