// power_cut_shim: LD_PRELOADed into larder-server by power_cut_test.py, to simulate power loss.
//
// It records what the process made durable: for every successful fsync()/fdatasync() of a
// regular file, a line "S <inode> <size>" with the file's size *before* the call (bytes appended
// while the sync runs are not counted: the strict reading), and for every file that open()
// creates or truncates, "N <inode>" (its durable length restarts at 0, so a reused inode number
// does not inherit an old file's record). Lines are appended to $LARDER_DURABLE_LOG with one
// write(2) each (O_APPEND: whole lines even from concurrent threads); the log itself needs no
// sync, since the test "cuts power" by SIGKILL and then rolls each file back to its durable
// length (plus, sometimes, a random part of what was never synced: partial writeback).
//
// Tracking by inode follows renames (RocksDB syncs CURRENT under a temporary name, then renames
// it). Not modelled: directory entries (a created or renamed file is taken as durable once its
// data is; unlinks are final at once), and reordered or torn pages inside the synced part.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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

static void record(const char* kind, int fd, long long size) {
  struct stat st;
  if (log_fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
  char line[80];
  int n = size < 0 ? snprintf(line, sizeof line, "%s %llu\n", kind, (unsigned long long)st.st_ino)
                   : snprintf(line, sizeof line, "%s %llu %lld\n", kind,
                              (unsigned long long)st.st_ino, size);
  if (write(log_fd, line, (size_t)n) != n) abort();  // a lost record would fake a data loss
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
    int r = real(fd);                                               \
    if (r == 0 && size >= 0) record("S", fd, size);                 \
    return r;                                                       \
  }
SYNC_HOOK(fsync)
SYNC_HOOK(fdatasync)

// open/openat (and their 64 aliases, the same functions on x86-64) all go to the real openat;
// "N" for a file the call created or truncated.
static int open_and_record(int dirfd, const char* path, int flags, mode_t mode) {
  static int (*real_openat)(int, const char*, int, ...);
  if (real_openat == NULL)
    real_openat = (int (*)(int, const char*, int, ...))dlsym(RTLD_NEXT, "openat");
  struct stat st;
  int existed = fstatat(dirfd, path, &st, 0) == 0;
  int fd = real_openat(dirfd, path, flags, mode);
  if (fd >= 0 && ((flags & O_TRUNC) || ((flags & O_CREAT) && !existed))) record("N", fd, -1);
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
