// power_cut_shim: LD_PRELOADed into larder-server by power_cut_test.py, to simulate power loss.
//
// It records what the process made durable: for every successful fsync()/fdatasync() of a
// regular file, a line "S <inode> <size>" with the file's size *before* the call (bytes appended
// while the sync runs are not counted: the strict reading); for every file that open() creates,
// "C <inode> <directory's inode>" (its durable length starts at 0, so a reused inode number
// does not inherit an old file's record, and its name is not durable until a sync of that
// directory); for every file open() truncates, "N <inode>" (its durable length restarts at 0);
// and for every fsync()/fdatasync() of a directory, "d <inode> <thread id>" as it starts and
// "D <inode> <thread id>" once it succeeded: it covers the names created before it started
// (the strict reading, as for sizes; the roll-back pairs each D with the same thread's latest
// d, so that a d whose process was killed mid-sync pairs with nothing). Lines are appended
// to $LARDER_DURABLE_LOG with one write(2) each (O_APPEND: whole lines even from concurrent
// threads); the log itself needs no sync, since the test "cuts power" by SIGKILL and then rolls
// each file back to its durable length (plus, sometimes, a random part of what was never
// synced: partial writeback), and removes each file created since its directory's last sync.
//
// Tracking by inode follows renames (RocksDB syncs CURRENT under a temporary name, then renames
// it, then syncs the directory). Not modelled: renames (a renamed file keeps its new name),
// unlinks (final at once), directories created, and reordered or torn pages inside the synced
// part.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int log_fd = -1;

__attribute__((constructor)) static void open_log(void) {
  const char* path = getenv("LARDER_DURABLE_LOG");
  if (path == NULL) return;
  // The real open, not the hook below: the log is not a file of the store.
  int (*real_open)(const char*, int, ...) =
      (int (*)(const char*, int, ...))dlsym(RTLD_NEXT, "open");
  log_fd = real_open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

// One line "<kind> <fd's inode>[ <number>]" (no number if `number` < 0).
static void record(const char* kind, int fd, long long number) {
  struct stat st;
  if (log_fd < 0 || fstat(fd, &st) != 0) return;
  if (!S_ISREG(st.st_mode) && !((kind[0] == 'D' || kind[0] == 'd') && S_ISDIR(st.st_mode))) return;
  char line[80];
  int n = number < 0 ? snprintf(line, sizeof line, "%s %llu\n", kind, (unsigned long long)st.st_ino)
                     : snprintf(line, sizeof line, "%s %llu %lld\n", kind,
                                (unsigned long long)st.st_ino, number);
  if (write(log_fd, line, (size_t)n) != n) abort();  // a lost record would fake a data loss
}

static int is_directory(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
}

static long long size_of(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? (long long)st.st_size : -1;
}

#define SYNC_HOOK(name)                                             \
  int name(int fd) {                                                \
    static int (*real)(int);                                        \
    if (real == NULL) real = (int (*)(int))dlsym(RTLD_NEXT, #name); \
    long long size = size_of(fd);                                   \
    int dir = is_directory(fd);                                     \
    if (dir) record("d", fd, gettid());                             \
    int r = real(fd);                                               \
    if (r == 0 && size >= 0) record("S", fd, size);                 \
    if (r == 0 && dir) record("D", fd, gettid());                   \
    return r;                                                       \
  }
SYNC_HOOK(fsync)
SYNC_HOOK(fdatasync)

// The inode of the directory holding `path` (relative to dirfd); -1 if it cannot be found.
static long long parent_inode(int dirfd, const char* path) {
  char parent[4096];
  const char* slash = strrchr(path, '/');
  if (slash == NULL) {
    strcpy(parent, ".");
  } else {
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    if (n >= sizeof parent) return -1;
    memcpy(parent, path, n);
    parent[n] = '\0';
  }
  struct stat st;
  return fstatat(dirfd, parent, &st, 0) == 0 ? (long long)st.st_ino : -1;
}

// open/openat (and their 64 aliases, the same functions on x86-64) all go to the real openat;
// "C" for a file the call created, "N" for one it truncated.
static int open_and_record(int dirfd, const char* path, int flags, mode_t mode) {
  static int (*real_openat)(int, const char*, int, ...);
  if (real_openat == NULL)
    real_openat = (int (*)(int, const char*, int, ...))dlsym(RTLD_NEXT, "openat");
  struct stat st;
  int existed = fstatat(dirfd, path, &st, 0) == 0;
  int fd = real_openat(dirfd, path, flags, mode);
  if (fd < 0) return fd;
  if ((flags & O_CREAT) && !existed) {
    long long dir = parent_inode(dirfd, path);
    if (dir < 0) abort();  // an unknown directory would fake a durable name
    record("C", fd, dir);
  } else if (flags & O_TRUNC) {
    record("N", fd, -1);
  }
  return fd;
}

// The mode argument is there only with O_CREAT or O_TMPFILE.
#define MODE_FROM_VARARGS(flags)           \
  mode_t mode = 0;                         \
  if ((flags) & (O_CREAT | __O_TMPFILE)) { \
    va_list ap;                            \
    va_start(ap, flags);                   \
    mode = (mode_t)va_arg(ap, int);        \
    va_end(ap);                            \
  }

int open(const char* path, int flags, ...) {
  MODE_FROM_VARARGS(flags)
  return open_and_record(AT_FDCWD, path, flags, mode);
}
int open64(const char* path, int flags, ...) {
  MODE_FROM_VARARGS(flags)
  return open_and_record(AT_FDCWD, path, flags, mode);
}
int openat(int dirfd, const char* path, int flags, ...) {
  MODE_FROM_VARARGS(flags)
  return open_and_record(dirfd, path, flags, mode);
}
int openat64(int dirfd, const char* path, int flags, ...) {
  MODE_FROM_VARARGS(flags)
  return open_and_record(dirfd, path, flags, mode);
}
