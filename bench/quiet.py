"""bench/quiet.py — wait for a quiet machine before timing (shared by shapes.py, models.py, idle.py).

On a machine shared with other work (compiles, tests), a benchmark taken while other
processes run measures them too. wait_quiet() samples /proc/stat and returns once the
whole machine was at most `busy_pct` busy over two consecutive `window` second windows
(so our own idle process sees the other processes' load), or after `max_wait` seconds;
it returns the last busy % seen and whether it was quiet, to be recorded with the numbers.
"""
import time


def _cpu_times():
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:9]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields), idle


def busy_percent(window=2.0):
    t1, i1 = _cpu_times()
    time.sleep(window)
    t2, i2 = _cpu_times()
    return 100.0 * (1 - (i2 - i1) / max(1, t2 - t1))


def wait_quiet(max_wait, busy_pct=15.0, window=2.0):
    """(quiet, busy %): waits up to max_wait seconds (0: no wait, no sample)."""
    if max_wait <= 0:
        return None, None
    deadline = time.monotonic() + max_wait
    calm, busy = 0, 100.0
    while True:
        busy = busy_percent(window)
        calm = calm + 1 if busy <= busy_pct else 0
        if calm >= 2:
            return True, busy
        if time.monotonic() > deadline:
            return False, busy
