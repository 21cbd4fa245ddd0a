"""Progress of a run: a tqdm bar on a terminal, plain lines otherwise; counted in tasks."""

from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, total: int, enabled: bool = True):
        self.total, self.done, self.failed = total, 0, 0
        self.enabled = enabled and total > 0
        self.start = time.perf_counter()
        self.bar = None
        if self.enabled and sys.stderr.isatty():
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, unit="task", dynamic_ncols=True)

    def update(self, finished) -> None:
        """Count finished tasks (TaskResult objects), one step each."""
        for task in finished:
            self.done += 1
            self.failed += task.status == "failed"
            if not self.enabled:
                continue
            if self.bar is not None:
                self.bar.update(1)
                self.bar.set_postfix(failed=self.failed)
                continue
            elapsed = time.perf_counter() - self.start
            eta = elapsed / self.done * (self.total - self.done)
            setting, r_train, run, method = task.key
            print(
                f"[{self.done}/{self.total} tasks, {self.failed} failed] {setting} r_train={r_train} "
                f"run={run} {method}: {task.status}; elapsed {elapsed:.0f} s, ETA {eta:.0f} s",
                file=sys.stderr,
                flush=True,
            )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
