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
// d, so that a d whose process was killed mid-sync pairs with nothing). Removing and renaming a
// regular file are not durable either until a sync of its directory: each removed file, and
// each file a rename replaces, is first hard-linked into $LARDER_DURABLE_LOG.graveyard/ (the
// same file system as the log; a file elsewhere is not the store's and is not recorded), and
// the call is recorded as "U <inode> <directory's inode> <grave> <name>" or "R <inode> <from
// directory's inode> <to directory's inode> <grave of the file it replaced, or '-'> <from name>
// <to name>", so the roll-back can undo it. Lines are appended to $LARDER_DURABLE_LOG with one
// write(2) each (O_APPEND: whole lines even from concurrent threads); the log itself needs no
// sync, since the test "cuts power" by SIGKILL and then rolls each file back to its durable
// length (plus, sometimes, a random part of what was never synced: partial writeback), undoes
// the removals and renames since their directory's last sync, and removes each file created
// since then.
//
// Tracking by inode follows renames (RocksDB syncs CURRENT under a temporary name, then renames
// it, then syncs the directory). Not modelled: directories created or removed, and reordered
// or torn pages inside the synced part.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int log_fd = -1;
static char graveyard[4096];  // $LARDER_DURABLE_LOG.graveyard

__attribute__((constructor)) static void open_log(void) {
  const char* path = getenv("LARDER_DURABLE_LOG");
  if (path == NULL) return;
  // The real open, not the hook below: the log is not a file of the store.
  int (*real_open)(const char*, int, ...) =
      (int (*)(const char*, int, ...))dlsym(RTLD_NEXT, "open");
  log_fd = real_open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if ((size_t)snprintf(graveyard, sizeof graveyard, "%s.graveyard", path) >= sizeof graveyard) {
    abort();
  }
  if (mkdir(graveyard, 0755) != 0 && errno != EEXIST) abort();
}

// Appends one formatted line to the log with one write (a lost record would fake a data loss).
static void record_line(const char* format, ...) {
  char line[4096 + 256];
  va_list ap;
  va_start(ap, format);
  int n = vsnprintf(line, sizeof line, format, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof line || write(log_fd, line, (size_t)n) != n) abort();
}

// One line "<kind> <fd's inode>[ <number>]" (no number if `number` < 0).
static void record(const char* kind, int fd, long long number) {
  struct stat st;
  if (log_fd < 0 || fstat(fd, &st) != 0) return;
  if (!S_ISREG(st.st_mode) && !((kind[0] == 'D' || kind[0] == 'd') && S_ISDIR(st.st_mode))) return;
  if (number < 0) {
    record_line("%s %llu\n", kind, (unsigned long long)st.st_ino);
  } else {
    record_line("%s %llu %lld\n", kind, (unsigned long long)st.st_ino, number);
  }
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

// The inode of the directory holding `path` (relative to dirfd). Aborts if it cannot be found:
// an unknown directory would fake a durable name.
static long long parent_inode(int dirfd, const char* path) {
  char parent[4096];
  const char* slash = strrchr(path, '/');
  if (slash == NULL) {
    strcpy(parent, ".");
  } else {
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    if (n >= sizeof parent) abort();
    memcpy(parent, path, n);
    parent[n] = '\0';
  }
  struct stat st;
  if (fstatat(dirfd, parent, &st, 0) != 0) abort();
  return (long long)st.st_ino;
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
    record("C", fd, parent_inode(dirfd, path));
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

// A graveyard entry's path, from its name.
static void grave_path(char* out, size_t size, const char* name) {
  snprintf(out, size, "%s/%s", graveyard, name);
}

// A removed or replaced regular file: `path` (relative to dirfd) kept alive by a hard link in
// the graveyard, for the roll-back to bring back. Fills *st and `grave` (the link's name,
// "<pid>-<n>", 64 bytes) and returns 1; returns 0, keeping nothing, for what is not a regular
// file or lies on another file system than the log (not the store's).
static int keep_in_graveyard(int dirfd, const char* path, struct stat* st, char* grave) {
  static long long next;
  if (log_fd < 0 || fstatat(dirfd, path, st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st->st_mode)) {
    return 0;
  }
  snprintf(grave, 64, "%d-%lld", (int)getpid(), __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED));
  char target[4096 + 64];
  grave_path(target, sizeof target, grave);
  if (linkat(dirfd, path, AT_FDCWD, target, 0) != 0) {
    if (errno == EXDEV) return 0;
    abort();  // a removal the roll-back could not undo would make the model lie
  }
  return 1;
}

// The graveyard link of a call that failed: the file was not removed or replaced.
static void drop_grave(const char* grave) {
  char target[4096 + 64];
  grave_path(target, sizeof target, grave);
  static int (*real_unlink)(const char*);
  if (real_unlink == NULL) real_unlink = (int (*)(const char*))dlsym(RTLD_NEXT, "unlink");
  real_unlink(target);
}

static const char* base_name(const char* path) {
  const char* slash = strrchr(path, '/');
  return slash == NULL ? path : slash + 1;
}

// unlink, unlinkat (not of a directory) and remove all go to the real unlinkat or remove.
static int unlink_and_record(int dirfd, const char* path, int flags, int via_remove) {
  static int (*real_unlinkat)(int, const char*, int);
  static int (*real_remove)(const char*);
  if (real_unlinkat == NULL) {
    real_unlinkat = (int (*)(int, const char*, int))dlsym(RTLD_NEXT, "unlinkat");
    real_remove = (int (*)(const char*))dlsym(RTLD_NEXT, "remove");
  }
  struct stat st;
  char grave[64];
  int kept = !(flags & AT_REMOVEDIR) && keep_in_graveyard(dirfd, path, &st, grave);
  int r = via_remove ? real_remove(path) : real_unlinkat(dirfd, path, flags);
  if (kept && r != 0) drop_grave(grave);
  if (kept && r == 0) {
    record_line("U %llu %lld %s %s\n", (unsigned long long)st.st_ino, parent_inode(dirfd, path),
                grave, base_name(path));
  }
  return r;
}

int unlink(const char* path) {
  return unlink_and_record(AT_FDCWD, path, 0, 0);
}
int unlinkat(int dirfd, const char* path, int flags) {
  return unlink_and_record(dirfd, path, flags, 0);
}
int remove(const char* path) {
  return unlink_and_record(AT_FDCWD, path, 0, 1);
}

// rename, renameat and renameat2 all go to the real renameat2.
static int rename_and_record(int olddirfd, const char* oldpath, int newdirfd, const char* newpath,
                             unsigned int flags) {
  static int (*real_renameat2)(int, const char*, int, const char*, unsigned int);
  if (real_renameat2 == NULL) {
    real_renameat2 =
        (int (*)(int, const char*, int, const char*, unsigned int))dlsym(RTLD_NEXT, "renameat2");
  }
  struct stat st, replaced;
  char grave[64] = "-";
  int moved = log_fd >= 0 && fstatat(olddirfd, oldpath, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
              S_ISREG(st.st_mode);
  int kept = moved && keep_in_graveyard(newdirfd, newpath, &replaced, grave);
  int r = real_renameat2(olddirfd, oldpath, newdirfd, newpath, flags);
  if (kept && r != 0) drop_grave(grave);
  if (moved && r == 0) {
    record_line("R %llu %lld %lld %s %s %s\n", (unsigned long long)st.st_ino,
                parent_inode(olddirfd, oldpath), parent_inode(newdirfd, newpath), grave,
                base_name(oldpath), base_name(newpath));
  }
  return r;
}

int rename(const char* oldpath, const char* newpath) {
  return rename_and_record(AT_FDCWD, oldpath, AT_FDCWD, newpath, 0);
}
int renameat(int olddirfd, const char* oldpath, int newdirfd, const char* newpath) {
  return rename_and_record(olddirfd, oldpath, newdirfd, newpath, 0);
}
int renameat2(int olddirfd, const char* oldpath, int newdirfd, const char* newpath,
              unsigned int flags) {
  return rename_and_record(olddirfd, oldpath, newdirfd, newpath, flags);
}
