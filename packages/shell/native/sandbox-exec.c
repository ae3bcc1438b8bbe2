/*
 * toolbelt-sandbox: restricts itself with Linux Landlock, then execs a command in place.
 *
 * Exec-in-place keeps the pid, the process group and the session the caller created, so the
 * caller's kill semantics do not change. The Landlock ABI is talked to through raw syscalls so the
 * helper builds without kernel headers and runs (reporting ABI 0) on kernels without Landlock.
 *
 *   toolbelt-sandbox --probe
 *       prints the Landlock ABI version (0 when Landlock is missing or disabled) and exits 0.
 *   toolbelt-sandbox [--write PATH]... [--read PATH]... [--confine-reads] -- PROGRAM [ARG]...
 *       writes (create, delete, rename, truncate, write) are allowed only beneath the --write paths;
 *       with --confine-reads, reads and execution are allowed only beneath --read and --write paths.
 *       A path that does not exist is skipped. Setup failures exit 125 with a message on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Same numbers on x86_64 and arm64 (and every architecture using the generic table). */
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

#define CREATE_RULESET_VERSION (1U << 0)
#define RULE_PATH_BENEATH 1

#define FS_EXECUTE (1ULL << 0)
#define FS_WRITE_FILE (1ULL << 1)
#define FS_READ_FILE (1ULL << 2)
#define FS_READ_DIR (1ULL << 3)
#define FS_REMOVE_DIR (1ULL << 4)
#define FS_REMOVE_FILE (1ULL << 5)
#define FS_MAKE_CHAR (1ULL << 6)
#define FS_MAKE_DIR (1ULL << 7)
#define FS_MAKE_REG (1ULL << 8)
#define FS_MAKE_SOCK (1ULL << 9)
#define FS_MAKE_FIFO (1ULL << 10)
#define FS_MAKE_BLOCK (1ULL << 11)
#define FS_MAKE_SYM (1ULL << 12)
#define FS_REFER (1ULL << 13)
#define FS_TRUNCATE (1ULL << 14)

#define FS_READ_RIGHTS (FS_EXECUTE | FS_READ_FILE | FS_READ_DIR)
/* Everything that changes the file system; REFER and TRUNCATE only where the ABI knows them. */
#define FS_WRITE_RIGHTS                                                                               \
  (FS_WRITE_FILE | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_CHAR | FS_MAKE_DIR | FS_MAKE_REG |        \
   FS_MAKE_SOCK | FS_MAKE_FIFO | FS_MAKE_BLOCK | FS_MAKE_SYM | FS_REFER | FS_TRUNCATE)
/* The only rights a rule on a non-directory may carry (anything else is EINVAL). */
#define FS_FILE_RIGHTS (FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE)

struct ruleset_attr {
  uint64_t handled_access_fs;
};

struct path_beneath_attr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

static int landlock_abi(void) {
  long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, CREATE_RULESET_VERSION);
  return abi < 0 ? 0 : (int)abi;
}

/* The file-system rights the running kernel understands. */
static uint64_t rights_for_abi(int abi) {
  uint64_t rights = (1ULL << 13) - 1; /* ABI 1: EXECUTE .. MAKE_SYM */
  if (abi >= 2) rights |= FS_REFER;
  if (abi >= 3) rights |= FS_TRUNCATE;
  return rights;
}

static void die(const char *what, const char *path) {
  int err = errno;
  if (path)
    fprintf(stderr, "toolbelt-sandbox: %s %s: %s\n", what, path, strerror(err));
  else
    fprintf(stderr, "toolbelt-sandbox: %s: %s\n", what, strerror(err));
  exit(125);
}

static void add_rule(int ruleset, const char *path, uint64_t wanted, uint64_t handled) {
  int fd = open(path, O_PATH | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return; /* absent paths are simply not granted */
    die("cannot open", path);
  }
  struct stat st;
  if (fstat(fd, &st) != 0) die("cannot stat", path);
  uint64_t allowed = wanted & handled;
  if (!S_ISDIR(st.st_mode)) allowed &= FS_FILE_RIGHTS;
  if (allowed == 0) {
    close(fd);
    return;
  }
  struct path_beneath_attr rule = {.allowed_access = allowed, .parent_fd = fd};
  if (syscall(SYS_landlock_add_rule, ruleset, RULE_PATH_BENEATH, &rule, 0) != 0) die("cannot add rule for", path);
  close(fd);
}

static void usage(void) {
  fputs("usage: toolbelt-sandbox --probe\n"
        "       toolbelt-sandbox [--write PATH]... [--read PATH]... [--confine-reads] -- PROGRAM [ARG]...\n",
        stderr);
  exit(125);
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--probe") == 0) {
    printf("%d\n", landlock_abi());
    return 0;
  }

  const char **writes = calloc((size_t)argc, sizeof *writes);
  const char **reads = calloc((size_t)argc, sizeof *reads);
  if (!writes || !reads) die("out of memory", NULL);
  int nwrites = 0, nreads = 0, confine_reads = 0, i = 1;
  for (; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) {
      i++;
      break;
    }
    if (strcmp(argv[i], "--write") == 0 && i + 1 < argc)
      writes[nwrites++] = argv[++i];
    else if (strcmp(argv[i], "--read") == 0 && i + 1 < argc)
      reads[nreads++] = argv[++i];
    else if (strcmp(argv[i], "--confine-reads") == 0)
      confine_reads = 1;
    else
      usage();
  }
  if (i >= argc) usage();

  int abi = landlock_abi();
  if (abi < 1) {
    fprintf(stderr, "toolbelt-sandbox: Landlock is not available on this kernel\n");
    return 125;
  }
  uint64_t handled = FS_WRITE_RIGHTS | (confine_reads ? FS_READ_RIGHTS : 0);
  handled &= rights_for_abi(abi);

  struct ruleset_attr attr = {.handled_access_fs = handled};
  int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
  if (ruleset < 0) die("cannot create the Landlock ruleset", NULL);
  for (int w = 0; w < nwrites; w++) add_rule(ruleset, writes[w], handled, handled);
  for (int r = 0; r < nreads; r++) add_rule(ruleset, reads[r], FS_READ_RIGHTS, handled);

  /* Required for an unprivileged restrict_self, and it keeps setuid binaries from lifting the rules. */
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("cannot set no_new_privs", NULL);
  if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) die("cannot enforce the Landlock ruleset", NULL);
  close(ruleset);

  execvp(argv[i], &argv[i]);
  fprintf(stderr, "toolbelt-sandbox: cannot run %s: %s\n", argv[i], strerror(errno));
  return errno == ENOENT ? 127 : 126;
}
