"""The progress of a long LLM.generate / LLM.chat on stderr: a bar redrawn in
place on a terminal (vLLM's use_tqdm), plain lines — every tenth of the way,
at most one per two seconds — when stderr is not a terminal (CI logs)."""
import sys
import time


class Progress:
    def __init__(self, total: int, enabled: bool, what: str = "Processed prompts"):
        self.total = total
        self.enabled = enabled and total > 1
        self.what = what
        self.tty = self.enabled and sys.stderr.isatty()
        self.start = time.monotonic()
        self.last_line = self.start  # no line in the first two seconds
        self.last_tenth = 0
        self.last_draw = 0.0

    def update(self, done: int, tokens: int):
        if not self.enabled:
            return
        now = time.monotonic()
        elapsed = max(now - self.start, 1e-9)
        if self.tty:
            if now - self.last_draw < 0.1 and done < self.total:
                return
            self.last_draw = now
            width = 30
            filled = width * done // self.total
            bar = "█" * filled + " " * (width - filled)
            sys.stderr.write(f"\r{self.what}: {100 * done // self.total:3d}%|{bar}| "
                             f"{done}/{self.total} [{elapsed:.1f}s, {tokens / elapsed:.1f} tok/s]")
            if done == self.total:
                sys.stderr.write("\n")
            sys.stderr.flush()
            return
        tenth = 10 * done // self.total
        if done == self.total or (tenth > self.last_tenth and now - self.last_line >= 2.0):
            self.last_tenth = tenth
            self.last_line = now
            sys.stderr.write(f"stet: {self.what.lower()} {done}/{self.total}, "
                             f"{tokens} tokens in {elapsed:.1f} s ({tokens / elapsed:.1f} tok/s)\n")
            sys.stderr.flush()
