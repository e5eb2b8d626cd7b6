#!/usr/bin/python3
"""The memory experiment behind bench/ANALYSIS.md §1: how long a first write to fresh memory
takes on this machine, per 32 MiB, and again right after that memory was freed.

Writes 2 GiB of anonymous memory 32 MiB at a time (one memset each, which faults every page in),
frees it, and does it twice more, printing the milliseconds of each 32 MiB. On a VM whose host
takes back free guest memory (a balloon's free page reporting) the first pass meets pages the
host must back again and runs several times slower than a pass over pages freed moments ago.
The page cache a Put fills draws on the same free memory, so which peer of a bench round meets
such pages decides much of its Put figure. Reads and writes no file. Run with /usr/bin/python3
from anywhere; it takes a few seconds.
"""
import ctypes
import mmap
import sys
import time

CHUNK = 32 << 20


def one_pass(total):
    """Milliseconds per CHUNK to fault in a fresh anonymous mapping of `total` bytes."""
    m = mmap.mmap(-1, total, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    base = ctypes.addressof(ctypes.c_char.from_buffer(m))
    times = []
    for off in range(0, total, CHUNK):
        t0 = time.perf_counter()
        ctypes.memset(base + off, 1, CHUNK)
        times.append((time.perf_counter() - t0) * 1e3)
    m.close()
    return times


def main():
    total = (int(sys.argv[1]) if len(sys.argv) > 1 else 2048) << 20
    for n in range(3):
        t = sorted(one_pass(total))
        print("pass %d: ms per 32 MiB  min %.0f  median %.0f  max %.0f  (%d chunks over 60 ms)" % (
            n + 1, t[0], t[len(t) // 2], t[-1], sum(x > 60 for x in t)))


if __name__ == "__main__":
    main()
