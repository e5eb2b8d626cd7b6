#!/usr/bin/python3
"""The page-cache experiment behind bench/ANALYSIS.md §2: what the kernel's CPU costs to bring a
cold file into the page cache, by the order in which it is read, and in what size of folio
(the page cache's unit) the pages land.

Writes a file of random bytes (512 MiB by default) in the directory given, then, several times
over, drops it from the page cache and reads it whole in pieces of 256 KiB, in a random order
(what cold GETs of different keys do) or in file order, and in a random order of 8 MiB pieces.
Prints each pass's wall time and its system CPU per MiB read, and, where /proc/kpageflags can
be read (root), the share of the file's cached pages that sit in large folios. On Linux 6.x an
exact random read (`pread`, `POSIX_FADV_WILLNEED` and `readahead` alike) fills the cache one
4 KiB page at a time, where a read the kernel sees as sequential reads ahead in large folios;
which costs the kernel less per byte depends on how readily it finds large free blocks.
    bench/analysis/page_cache_cost.py DIR [MiB] [passes]
"""
import ctypes
import mmap
import os
import random
import resource
import sys
import time

PIECE = 256 << 10
KPF_COMPOUND = (1 << 15) | (1 << 16)  # head and tail pages of a large folio


def large_folio_share(fd, size):
    """The share of the file's cached pages in large folios, or None without /proc/kpageflags."""
    try:
        kpf = os.open("/proc/kpageflags", os.O_RDONLY)
    except OSError:
        return None
    pagemap = os.open("/proc/self/pagemap", os.O_RDONLY)
    m = mmap.mmap(fd, size, access=mmap.ACCESS_COPY)  # private: reads map the cached pages
    first = ctypes.c_char.from_buffer(m)
    start = ctypes.addressof(first)
    pages = large = 0
    for off in range(0, size, 4096):
        m[off]  # every page is cached after the pass: this maps it and reads nothing
        entry = int.from_bytes(os.pread(pagemap, 8, (start + off) // 4096 * 8), "little")
        if not entry >> 63:  # not present
            continue
        flags = int.from_bytes(os.pread(kpf, 8, (entry & ((1 << 55) - 1)) * 8), "little")
        pages += 1
        large += bool(flags & KPF_COMPOUND)
    del first
    m.close()
    os.close(pagemap)
    os.close(kpf)
    return large / pages if pages else 0.0


def one_pass(fd, size, piece, shuffled):
    """Seconds of wall time and of system CPU to read the cold file in `piece`-byte preads."""
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    offsets = list(range(0, size, piece))
    if shuffled:
        random.Random(1).shuffle(offsets)
    buf = bytearray(piece)  # one buffer, zeroed (so faulted in) before the clock starts
    sys0, t0 = resource.getrusage(resource.RUSAGE_SELF).ru_stime, time.perf_counter()
    for off in offsets:
        os.preadv(fd, [buf], off)
    return time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_stime - sys0


def main():
    directory = sys.argv[1]
    mib = int(sys.argv[2]) if len(sys.argv) > 2 else 512
    passes = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    path = os.path.join(directory, "page_cache_cost.dat")
    size = mib << 20
    try:
        with open(path, "wb") as f:
            for _ in range(mib):
                f.write(os.urandom(1 << 20))
            os.fsync(f.fileno())
        fd = os.open(path, os.O_RDONLY)
        cases = (("random", PIECE, True), ("file order", PIECE, False),
                 ("random 8 MiB", 8 << 20, True))
        print("| pass | order | wall s | system CPU us per MiB | cached pages in large folios |")
        print("|---|---|---|---|---|")
        for n in range(passes):
            for name, piece, shuffled in cases:
                wall, system = one_pass(fd, size, piece, shuffled)
                share = large_folio_share(fd, size)
                print("| %d | %s | %.3f | %.0f | %s |" % (
                    n + 1, name, wall, system * 1e6 / mib,
                    "-" if share is None else "%.0f%%" % (share * 100)), flush=True)
        os.close(fd)
    finally:
        os.unlink(path)


if __name__ == "__main__":
    main()
