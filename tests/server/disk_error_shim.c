// disk_error_shim: LD_PRELOADed into larder-server by disk_error_test.py, to make the disk fail
// the index's flushes or WAL syncs with EIO for a while, as a device that errs and recovers does.
//
// While the file named by $LARDER_DISK_ERROR_FLAG exists, fsync() and fdatasync() of a file
// whose name ends in $LARDER_DISK_ERROR_SUFFIX (".sst": the SST files a flush writes; ".log":
// the WAL's files) fail with EIO and sync nothing; every other call, and every call once the
// flag file is gone, goes through unchanged.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// Whether a sync of `fd` is to fail now.
static int failing(int fd) {
  const char* flag = getenv("LARDER_DISK_ERROR_FLAG");
  const char* suffix = getenv("LARDER_DISK_ERROR_SUFFIX");
  if (flag == NULL || suffix == NULL || access(flag, F_OK) != 0) return 0;
  char link[64], name[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, name, sizeof name - 1);
  if (n < 0) return 0;
  name[n] = '\0';
  size_t len = (size_t)n, slen = strlen(suffix);
  return len >= slen && strcmp(name + len - slen, suffix) == 0;
}

// The real `name` (fsync or fdatasync) of `fd`, or EIO while it is to fail.
static int sync_or_fail(int fd, const char* name) {
  if (failing(fd)) {
    errno = EIO;
    return -1;
  }
  int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, name);
  return real(fd);
}

int fsync(int fd) { return sync_or_fail(fd, "fsync"); }

int fdatasync(int fd) { return sync_or_fail(fd, "fdatasync"); }
