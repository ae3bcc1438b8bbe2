/*
 * toolbelt-sandbox: sets a command up, then execs it in place.
 *
 * Exec-in-place keeps the pid, the process group and the session the caller created, so the
 * caller's kill semantics do not change. The Landlock ABI, the new mount API and pidfds are talked
 * to through raw syscalls so the helper builds without kernel headers and degrades (reporting what
 * it could not do) on older kernels.
 *
 *   toolbelt-sandbox --probe
 *       prints the Landlock ABI version (0 when Landlock is missing or disabled) and exits 0.
 *   toolbelt-sandbox --probe-isolation
 *       prints "ok" when a private mount namespace (for read-only paths) can be made, else why not;
 *       " +pidns" follows when commands can get a PID namespace, " +netns" a network namespace.
 *   toolbelt-sandbox [OPTION]... -- PROGRAM [ARG]...
 *     --write PATH      writes (create, delete, rename, truncate, write) only beneath the --write paths
 *     --read PATH       with --confine-reads: reads and execution only beneath --read and --write paths
 *     --read-nofollow PATH
 *                       with --confine-reads: reads (files and directory listings, no execution) beneath
 *                       PATH, which must be a directory reached without any symlink on the way: a name
 *                       on PATH swapped for a symlink refuses the command instead of granting where it
 *                       points (exit 125)
 *     --confine-reads
 *     --no-landlock     no Landlock rules (the options below still apply)
 *     --landlock-only   Landlock rules and nothing else: no private mount or PID namespace (what a
 *                       read-only command such as a search needs; --ro is refused with it)
 *     --ro PATH         PATH is read-only for the command (a read-only bind mount in a private mount
 *                       namespace; absent paths and symlinks are skipped; best-effort)
 *     --cgroup DIR      the command joins the cgroup DIR (which the caller created and capped)
 *     --also-cgroup DIR the command joins DIR too (another cgroup v1 hierarchy, such as memory); the
 *                       watcher removes it when the caller dies
 *     --fsize BYTES     RLIMIT_FSIZE: no file the command writes grows past BYTES (as root, without
 *                       CAP_SYS_RESOURCE, so the limit cannot be lifted)
 *     --nproc N         RLIMIT_NPROC: the command may run N more tasks (not enforced for root)
 *     --watch MARK      a watcher outlives this exec: when the caller dies it kills the command's
 *                       process group, its descendants, its cgroup and every process carrying MARK
 *                       in TOOLBELT_SHELL_MARK
 *     --net-off         no network: a fresh network namespace with only its own loopback (all
 *                       protocols), else Landlock TCP rules (ABI >= 4: every TCP connect and bind
 *                       denied, abstract unix sockets scoped on ABI >= 6); neither: exit 125
 *     --net-via HOW     with --net-off, only HOW (netns | landlock) may be used (tests, diagnosis)
 *     --net-proxy PATH  with --net-off: the network namespace (nothing else will do) gets one way out,
 *                       127.0.0.1:PORT (--net-proxy-port), which a relay process relays to the unix
 *                       socket PATH (toolbelt's proxy, which decides what may be reached); the relay
 *                       runs outside the command's Landlock domain and PID namespace without any
 *                       capability, and dies with the command; PATH is not hidden by --hide-sockets
 *     --net-proxy-port PORT
 *     --hide-sockets    with --net-off: every listening unix socket on the file system (a daemon's:
 *                       docker, dbus, a database) gets /dev/null bound over it in the private mount
 *                       namespace, so connecting to it is refused; without that namespace, exit 125
 *   A path that does not exist is skipped. Setup failures exit 125 with a message on stderr.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
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

#define NET_BIND_TCP (1ULL << 0)
#define NET_CONNECT_TCP (1ULL << 1)
#define SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)

/* Passed whole to every ABI: a kernel that knows fewer fields accepts the zeroed tail. */
struct ruleset_attr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net; /* ABI >= 4 */
  uint64_t scoped;             /* ABI >= 6 */
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

/* Adds a rule for PATH opened by open_no_symlinks (below); it must be a directory. */
static int open_no_symlinks(const char *path);
static void add_rule_nofollow(int ruleset, const char *path, uint64_t wanted, uint64_t handled) {
  int fd = open_no_symlinks(path);
  if (fd < 0) die("cannot open without following symlinks", path);
  struct stat st;
  if (fstat(fd, &st) != 0) die("cannot stat", path);
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    die("cannot grant reads beneath", path);
  }
  /* Where openat2 is refused (old kernels, seccomp), the kernel's own name for the fd must be PATH. */
  char via[64], real[4096];
  snprintf(via, sizeof via, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(via, real, sizeof real - 1);
  if (n >= 0) {
    real[n] = 0;
    if (strcmp(real, path) != 0) {
      errno = ELOOP;
      die("a symlink is on the way to", path);
    }
  }
  uint64_t allowed = wanted & handled;
  if (allowed != 0) {
    struct path_beneath_attr rule = {.allowed_access = allowed, .parent_fd = fd};
    if (syscall(SYS_landlock_add_rule, ruleset, RULE_PATH_BENEATH, &rule, 0) != 0) die("cannot add rule for", path);
  }
  close(fd);
}

/* ---- the new mount API, pidfds and openat2 (same numbers on every architecture since 5.x) ---- */
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#define TB_OPEN_TREE_CLONE 1
#define TB_AT_EMPTY_PATH 0x1000
#define TB_AT_RECURSIVE 0x8000
#define TB_MOUNT_ATTR_RDONLY 0x1ULL
#define TB_MOVE_MOUNT_F_EMPTY_PATH 0x4
#define TB_MOVE_MOUNT_T_EMPTY_PATH 0x40
#define TB_RESOLVE_NO_SYMLINKS 0x04

struct tb_mount_attr {
  uint64_t attr_set, attr_clr, propagation, userns_fd;
};
struct tb_open_how {
  uint64_t flags, mode, resolve;
};

static int write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t len = strlen(text);
  ssize_t n = write(fd, text, len);
  int err = errno;
  close(fd);
  errno = err;
  return n == (ssize_t)len ? 0 : -1;
}

/* An O_PATH fd for PATH that no symlink along the way led to (a swapped symlink must not move the mount). */
static int open_no_symlinks(const char *path) {
  struct tb_open_how how = {.flags = O_PATH | O_CLOEXEC, .mode = 0, .resolve = TB_RESOLVE_NO_SYMLINKS};
  if (path[0] != '/') {
    errno = EINVAL;
    return -1;
  }
  int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
  if (fd >= 0 || (errno != ENOSYS && errno != EINVAL && errno != E2BIG)) return fd;
  return open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
}

static unsigned long locked_flags(const char *path) {
  struct statvfs st;
  unsigned long flags = 0;
  if (statvfs(path, &st) != 0) return 0;
  if (st.f_flag & ST_NOSUID) flags |= MS_NOSUID;
  if (st.f_flag & ST_NODEV) flags |= MS_NODEV;
  if (st.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
  if (st.f_flag & ST_NOATIME) flags |= MS_NOATIME;
  if (st.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
  if (st.f_flag & ST_RELATIME) flags |= MS_RELATIME;
  return flags;
}

/* Makes PATH read-only in this mount namespace; 0 when done or when there is nothing to protect. */
static int bind_read_only(const char *path) {
  int fd = open_no_symlinks(path);
  if (fd < 0) return errno == ENOENT || errno == ENOTDIR || errno == ELOOP ? 0 : -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || S_ISLNK(st.st_mode)) {
    close(fd);
    return 0;
  }
  int tree = (int)syscall(SYS_open_tree, fd, "", TB_OPEN_TREE_CLONE | O_CLOEXEC | TB_AT_EMPTY_PATH | TB_AT_RECURSIVE);
  if (tree >= 0) {
    struct tb_mount_attr attr = {.attr_set = TB_MOUNT_ATTR_RDONLY};
    if (syscall(SYS_mount_setattr, tree, "", TB_AT_EMPTY_PATH | TB_AT_RECURSIVE, &attr, sizeof attr) == 0 &&
        syscall(SYS_move_mount, tree, "", fd, "", TB_MOVE_MOUNT_F_EMPTY_PATH | TB_MOVE_MOUNT_T_EMPTY_PATH) == 0) {
      close(tree);
      close(fd);
      return 0;
    }
    close(tree);
  }
  /* Kernels before 5.12: a classic bind through the fd, then a read-only remount keeping locked flags. */
  char via[64];
  snprintf(via, sizeof via, "/proc/self/fd/%d", fd);
  int rc = mount(via, via, NULL, MS_BIND | MS_REC, NULL);
  if (rc == 0) rc = mount(NULL, path, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | locked_flags(path), NULL);
  close(fd);
  return rc;
}

/* Enters a user namespace mapping our own uid and gid 1:1 (plus FLAGS); 0, or -1 with *why set. */
static int enter_user_namespace(int flags, const char **why) {
  uid_t uid = getuid();
  gid_t gid = getgid();
  if (unshare(CLONE_NEWUSER | flags) != 0) {
    *why = flags ? "unshare(CLONE_NEWUSER|CLONE_NEWNS)" : "unshare(CLONE_NEWUSER)";
    return -1;
  }
  char map[64];
  if (write_file("/proc/self/setgroups", "deny") != 0 && errno != ENOENT) {
    *why = "writing /proc/self/setgroups";
    return -1;
  }
  snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
  if (write_file("/proc/self/uid_map", map) != 0) {
    *why = "writing /proc/self/uid_map";
    return -1;
  }
  snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
  if (write_file("/proc/self/gid_map", map) != 0) {
    *why = "writing /proc/self/gid_map";
    return -1;
  }
  return 0;
}

/*
 * A private mount namespace (inside a user namespace mapping our own uid and gid 1:1 when we are not
 * root), so the read-only binds below are seen by the command alone. Returns 0, or -1 with *why set.
 */
static int private_mounts(int *userns, const char **why) {
  *userns = 0;
  if (geteuid() == 0) {
    if (unshare(CLONE_NEWNS) != 0) {
      *why = "unshare(CLONE_NEWNS)";
      return -1;
    }
  } else {
    if (enter_user_namespace(CLONE_NEWNS, why) != 0) return -1;
    *userns = 1;
  }
  /* Without this, binds made here would propagate back to the host's mount table. */
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
    *why = "making / private";
    return -1;
  }
  return 0;
}

/* ---- network off ---- */

#ifndef CAP_NET_ADMIN
#define CAP_NET_ADMIN 12
#endif
#ifndef CAP_SYS_ADMIN
#define CAP_SYS_ADMIN 21
#endif
#ifndef CAP_SYS_RESOURCE
#define CAP_SYS_RESOURCE 24
#endif

/*
 * A network namespace of the command's own: no interface but a loopback of its own, brought up so
 * servers the command starts itself still answer on 127.0.0.1 (the host's loopback services are not
 * in it). Cuts every protocol, UDP (DNS) included, and abstract unix sockets (they belong to the
 * network namespace). Needs root, or a user namespace (entered here when there is none yet).
 * Returns 0, or -1 with *why set.
 */
static int own_network(int *userns, const char **why) {
  if (geteuid() != 0 && !*userns) {
    if (enter_user_namespace(0, why) != 0) return -1;
    *userns = 1;
  }
  if (unshare(CLONE_NEWNET) != 0) {
    *why = "unshare(CLONE_NEWNET)";
    return -1;
  }
  int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sock >= 0) {
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
    /* Best-effort: without it the namespace is still closed, only local servers do not answer. */
    if (ioctl(sock, SIOCGIFFLAGS, &ifr) == 0) {
      ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
      if (ioctl(sock, SIOCSIFFLAGS, &ifr) != 0) { /* loopback stays down */ }
    }
    close(sock);
  }
  /*
   * A root command keeps its capabilities; without CAP_SYS_ADMIN it cannot setns() back into the
   * host's network namespace (through /proc/PID/ns/net of a process it can see).
   */
  if (geteuid() == 0 && !*userns) {
    if (prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0) != 0 || prctl(PR_CAPBSET_DROP, CAP_NET_ADMIN, 0, 0, 0) != 0) {
      *why = "dropping CAP_SYS_ADMIN from the bounding set";
      return -1;
    }
  }
  return 0;
}

/* ---- the way out for a network allow list (--net-proxy) ---- */

#define RELAY_MAX 128
#define RELAY_BUF 16384

/* Bytes read from one side, not yet written to the other. */
struct flow {
  char buf[RELAY_BUF];
  size_t len, off;
  int eof, shut;
  /* The side this flow reads from hung up: polled again only once the buffer is empty. */
  int hup;
};

/* A connection from the command (in) and its connection to toolbelt's proxy (out). */
struct pair {
  int in, out;
  struct flow up, down; /* up: in -> out; down: out -> in */
};

static struct pair *pairs[RELAY_MAX];

static void close_pair(int k) {
  close(pairs[k]->in);
  close(pairs[k]->out);
  free(pairs[k]);
  pairs[k] = NULL;
}

/* Reads what `from` has into `f`; -1 on an error. */
static int relay_read(int from, struct flow *f) {
  ssize_t n = recv(from, f->buf, sizeof f->buf, 0);
  if (n > 0) {
    f->len = (size_t)n;
    f->off = 0;
  } else if (n == 0) {
    f->eof = 1;
  } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
    return -1;
  }
  return 0;
}

/* Writes what `f` holds to `to`, and passes an end of input on once all is written; -1 on an error. */
static int relay_write(int to, struct flow *f) {
  if (f->len > f->off) {
    ssize_t n = send(to, f->buf + f->off, f->len - f->off, MSG_NOSIGNAL);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
    f->off += (size_t)n;
    if (f->off == f->len) f->len = f->off = 0;
  }
  if (f->eof && f->len == 0 && !f->shut) {
    shutdown(to, SHUT_WR);
    f->shut = 1;
  }
  return 0;
}

/* Accepts on `listener` for ever, relaying each connection to the unix socket `target`. */
static void relay_loop(int listener, const struct sockaddr_un *target) {
  struct pollfd fds[1 + 2 * RELAY_MAX];
  int owner[1 + 2 * RELAY_MAX];
  for (;;) {
    int n = 0, open_pairs = 0;
    for (int k = 0; k < RELAY_MAX; k++) {
      struct pair *p = pairs[k];
      if (!p) continue;
      open_pairs++;
      short in_ev = (short)((p->up.len == 0 && !p->up.eof ? POLLIN : 0) | (p->down.len > 0 ? POLLOUT : 0));
      short out_ev = (short)((p->down.len == 0 && !p->down.eof ? POLLIN : 0) | (p->up.len > 0 ? POLLOUT : 0));
      /* A hung-up side reports POLLHUP whatever is asked: leave it out until its data can move on. */
      fds[n] = (struct pollfd){.fd = p->up.hup && p->up.len > 0 ? -1 : p->in, .events = in_ev};
      owner[n++] = k;
      fds[n] = (struct pollfd){.fd = p->down.hup && p->down.len > 0 ? -1 : p->out, .events = out_ev};
      owner[n++] = k;
    }
    /* At the cap, new connections wait in the backlog until one ends. */
    int listen_at = -1;
    if (open_pairs < RELAY_MAX) {
      listen_at = n;
      fds[n++] = (struct pollfd){.fd = listener, .events = POLLIN};
    }
    if (poll(fds, (nfds_t)n, -1) < 0) {
      if (errno == EINTR) continue;
      _exit(1);
    }
    for (int i = 0; i < n; i++) {
      if (i == listen_at || !fds[i].revents) continue;
      int k = owner[i];
      struct pair *p = pairs[k];
      if (!p) continue;
      int is_in = i % 2 == 0;
      struct flow *rx = is_in ? &p->up : &p->down;
      struct flow *tx = is_in ? &p->down : &p->up;
      int bad = (fds[i].revents & (POLLERR | POLLNVAL)) != 0;
      if (!bad && (fds[i].revents & (POLLIN | POLLHUP)) && rx->len == 0 && !rx->eof)
        bad = relay_read(fds[i].fd, rx) != 0;
      if (fds[i].revents & POLLHUP) rx->hup = 1;
      /* Hung up, its input read to the end, and still owed output: nothing more can move. */
      if (!bad && rx->hup && rx->eof && tx->len > 0) bad = 1;
      if (!bad) bad = relay_write(is_in ? p->out : p->in, rx) != 0;
      if (!bad && (fds[i].revents & POLLOUT)) bad = relay_write(fds[i].fd, tx) != 0;
      if (bad || (p->up.shut && p->down.shut)) close_pair(k);
    }
    if (listen_at >= 0 && (fds[listen_at].revents & POLLIN)) {
      int in = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (in < 0) continue;
      int out = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      int slot = -1;
      for (int k = 0; k < RELAY_MAX && slot < 0; k++)
        if (!pairs[k]) slot = k;
      struct pair *p = out >= 0 && slot >= 0 ? calloc(1, sizeof *p) : NULL;
      /* A unix connect is done at once or refused (the proxy gone, its backlog full). */
      if (!p || connect(out, (const struct sockaddr *)target, sizeof *target) != 0) {
        free(p);
        close(in);
        if (out >= 0) close(out);
        continue;
      }
      p->in = in;
      p->out = out;
      pairs[slot] = p;
    }
  }
}

struct cap_header {
  uint32_t version;
  int pid;
};
struct cap_data {
  uint32_t effective, permitted, inheritable;
};

/*
 * Listens on 127.0.0.1:PORT in the command's (new, empty) network namespace and forks the relay
 * that carries each connection to toolbelt's proxy at the unix socket PROXY. The relay closes every
 * other descriptor (it holds neither the command's output nor its input), drops every capability
 * and dies with its parent (the process that becomes the command, or the outer helper of a PID
 * namespace), so it outlives nothing.
 */
static void start_relay(const char *proxy, long port) {
  struct sockaddr_un target = {.sun_family = AF_UNIX};
  if (strlen(proxy) >= sizeof target.sun_path) {
    errno = ENAMETOOLONG;
    die("the proxy socket path is too long", proxy);
  }
  strncpy(target.sun_path, proxy, sizeof target.sun_path - 1);
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listener < 0) die("cannot make the proxy's listening socket", NULL);
  int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in at = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listener, (struct sockaddr *)&at, sizeof at) != 0 || listen(listener, 128) != 0)
    die("cannot listen on 127.0.0.1 for the proxy", NULL);
  pid_t parent = getpid();
  pid_t relay = fork();
  if (relay < 0) die("cannot fork the proxy relay", NULL);
  if (relay > 0) {
    close(listener);
    return;
  }
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != parent) _exit(0);
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd = 0; fd < 3; fd++) dup2(null, fd);
  for (int fd = 3; fd < 4096; fd++)
    if (fd != listener) close(fd);
  signal(SIGPIPE, SIG_IGN);
  /* Nothing to gain by taking it over: no capability, no new privileges, not traceable as a peer. */
  struct cap_header header = {.version = 0x20080522, .pid = 0};
  struct cap_data none[2];
  memset(none, 0, sizeof none);
  if (syscall(SYS_capset, &header, none) != 0) _exit(1);
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  relay_loop(listener, &target);
  _exit(0);
}

/* The parent of PID from /proc/PID/status, or 0. */
static pid_t parent_of(pid_t pid) {
  char path[64], buf[4096];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  const char *line = strstr(buf, "\nPPid:");
  return line ? (pid_t)atoi(line + 6) : 0;
}

/*
 * The command's environment is scrubbed, but the processes above it (toolbelt, the CI runner) still
 * hold the secrets in /proc/PID/environ (and their memory), readable by a process of the same user.
 * Inside the private mount namespace, /dev/null is bound over those files for every ancestor, so the
 * scrub cannot be undone by reading a parent. Best-effort per file; returns how many were masked.
 */
static int mask_ancestors(void) {
  static const char *const files[] = {"environ", "mem"};
  int masked = 0;
  pid_t pid = getppid();
  for (int depth = 0; pid > 1 && depth < 64; depth++) {
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
      char path[64];
      snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, files[f]);
      if (mount("/dev/null", path, NULL, MS_BIND, NULL) == 0) masked++;
    }
    pid = parent_of(pid);
  }
  return masked;
}

/*
 * A PID namespace of the command's own, with a /proc that shows only its processes: no other process
 * of the same user (toolbelt, the CI runner, their secrets in environ and memory) can be read through
 * /proc any more. The helper stays outside and mirrors the end of the command; inside, a small init
 * (pid 1) forwards signals and reaps orphans; the command runs as its child. Returns in the process
 * that goes on to exec the command; 0 when the namespace could not be made (nothing changed then).
 */
static volatile pid_t forward_to;
static void forward_signal(int sig) {
  if (forward_to > 0) kill(forward_to, sig);
}
static const int FORWARDED[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT};

static void forward_signals(pid_t to) {
  forward_to = to;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = forward_signal;
  sigemptyset(&sa.sa_mask);
  for (size_t k = 0; k < sizeof FORWARDED / sizeof FORWARDED[0]; k++) sigaction(FORWARDED[k], &sa, NULL);
}

static void default_signals(void) {
  for (size_t k = 0; k < sizeof FORWARDED / sizeof FORWARDED[0]; k++) signal(FORWARDED[k], SIG_DFL);
}

/* Ends this process the way STATUS ended its child: the same exit code, or the same signal. */
static void mirror(int status, int report_fd) {
  if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
  int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
  if (report_fd >= 0) {
    unsigned char b = (unsigned char)sig;
    if (write(report_fd, &b, 1) < 0) { /* the outer helper then sees 128 + sig */ }
    _exit(128 + sig);
  }
  signal(sig, SIG_DFL);
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  kill(getpid(), sig);
  _exit(128 + sig);
}

static int own_pid_namespace(void) {
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return 0;
  if (unshare(CLONE_NEWPID) != 0) {
    close(report[0]);
    close(report[1]);
    return 0;
  }
  pid_t init = fork();
  if (init < 0) die("cannot fork", NULL);
  if (init > 0) {
    /*
     * The outer helper: its pid is the one toolbelt knows, and it ends when the command ends. Init
     * reports that end on the pipe: 'E'/'S' (exit code / signal) when nothing else is left and init is
     * ending too, 'e'/'s' when the command left processes running (init stays to reap them, and
     * toolbelt ends them as leftovers). EOF without a report: init itself was killed.
     */
    close(report[1]);
    forward_signals(init);
    unsigned char msg[2];
    ssize_t got = 0;
    while (got < 2) {
      ssize_t n = read(report[0], msg + got, (size_t)(2 - got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += n;
    }
    int status = 0;
    if (got < 2 || msg[0] == 'E' || msg[0] == 'S') {
      while (waitpid(init, &status, 0) < 0 && errno == EINTR) {
      }
    }
    if (got == 2 && (msg[0] == 'e' || msg[0] == 'E')) _exit(msg[1]);
    if (got == 2) {
      default_signals();
      signal(msg[1], SIG_DFL);
      kill(getpid(), msg[1]);
      _exit(128 + msg[1]);
    }
    mirror(status, -1);
  }
  /* pid 1 of the new namespace (no parent-death signal: it may outlive the outer helper to reap leftovers). */
  close(report[0]);
  if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) {
    /* Without a /proc of its own the namespace hides nothing: say so and run as before. */
    fprintf(stderr, "toolbelt-sandbox: cannot mount a private /proc (%s)\n", strerror(errno));
  }
  pid_t command = fork();
  if (command < 0) die("cannot fork", NULL);
  if (command == 0) {
    close(report[1]);
    default_signals();
    return 1;
  }
  forward_signals(command);
  for (;;) {
    int status = 0;
    pid_t done = waitpid(-1, &status, 0);
    if (done < 0 && errno == EINTR) continue;
    if (done < 0) _exit(0);
    if (done != command) continue;
    forward_to = 0;
    int signaled = !WIFEXITED(status);
    unsigned char value = (unsigned char)(signaled ? (WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL)
                                                   : WEXITSTATUS(status));
    /* Reap what already ended; is anything of the command still running? */
    int other = 0;
    pid_t more;
    while ((more = waitpid(-1, &other, WNOHANG)) > 0) {
    }
    int alone = more < 0 && errno == ECHILD;
    unsigned char msg[2] = {(unsigned char)(alone ? (signaled ? 'S' : 'E') : (signaled ? 's' : 'e')), value};
    if (write(report[1], msg, 2) < 0) { /* the outer helper then mirrors how init ends */ }
    close(report[1]);
    if (alone) _exit(0);
    while (waitpid(-1, &other, 0) > 0 || errno == EINTR) {
    }
    _exit(0);
  }
}

/* ---- process tracking ---- */

static int read_small(const char *path, char *buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t got = 0;
  for (;;) {
    ssize_t n = read(fd, buf + got, size - 1 - got);
    if (n <= 0) break;
    got += (size_t)n;
    if (got >= size - 1) break;
  }
  close(fd);
  buf[got] = 0;
  return (int)got;
}

/* Whether the NUL-separated environment of PID carries MARK among the marks of TOOLBELT_SHELL_MARK. */
static int carries_mark(pid_t pid, const char *mark) {
  static char env[256 * 1024];
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t got = 0, n;
  while ((n = read(fd, env + got, sizeof env - 1 - (size_t)got)) > 0) got += n;
  close(fd);
  env[got] = 0;
  const char *key = "TOOLBELT_SHELL_MARK=";
  size_t klen = strlen(key), mlen = strlen(mark);
  for (ssize_t at = 0; at < got;) {
    const char *entry = env + at;
    size_t len = strlen(entry);
    if (strncmp(entry, key, klen) == 0) {
      for (const char *v = entry + klen; *v;) {
        const char *end = strchr(v, ':');
        size_t vlen = end ? (size_t)(end - v) : strlen(v);
        if (vlen == mlen && strncmp(v, mark, mlen) == 0) return 1;
        if (!end) break;
        v = end + 1;
      }
    }
    at += (ssize_t)len + 1;
  }
  return 0;
}

#define MAX_TRACKED 65536
static pid_t found[MAX_TRACKED];
static int nfound;

static void add_found(pid_t pid) {
  for (int i = 0; i < nfound; i++)
    if (found[i] == pid) return;
  if (nfound < MAX_TRACKED) found[nfound++] = pid;
}

/*
 * Every live process of the command: its process group, its descendants (the command runs as a
 * child subreaper, so orphans stay beneath it while it lives), its cgroup, and carriers of MARK.
 */
static int collect(pid_t pgid, const char *mark, const char *cgroup) {
  static pid_t pids[MAX_TRACKED], ppids[MAX_TRACKED];
  int n = 0;
  nfound = 0;
  pid_t self = getpid();
  DIR *proc = opendir("/proc");
  if (proc) {
    struct dirent *entry;
    while ((entry = readdir(proc)) && n < MAX_TRACKED) {
      pid_t pid = (pid_t)atoi(entry->d_name);
      if (pid <= 0 || pid == self) continue;
      char path[64], stat[512];
      snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
      if (read_small(path, stat, sizeof stat) <= 0) continue;
      char *close_paren = strrchr(stat, ')');
      if (!close_paren) continue;
      char state = 0;
      int ppid = 0, pgrp = 0;
      if (sscanf(close_paren + 2, "%c %d %d", &state, &ppid, &pgrp) != 3) continue;
      if (state == 'Z' || state == 'X') continue;
      pids[n] = pid;
      ppids[n] = ppid;
      n++;
      if (pgrp == pgid || pid == pgid) add_found(pid);
      else if (mark && carries_mark(pid, mark)) add_found(pid);
    }
    closedir(proc);
  }
  /* Descendants, to a fixed point. */
  for (int changed = 1; changed;) {
    changed = 0;
    for (int i = 0; i < n; i++) {
      int known = 0, parent_known = 0;
      for (int j = 0; j < nfound; j++) {
        if (found[j] == pids[i]) known = 1;
        if (found[j] == ppids[i]) parent_known = 1;
      }
      if (!known && parent_known) {
        add_found(pids[i]);
        changed = 1;
      }
    }
  }
  if (cgroup) {
    char path[4096];
    snprintf(path, sizeof path, "%s/cgroup.procs", cgroup);
    FILE *procs = fopen(path, "re");
    if (procs) {
      int pid;
      while (fscanf(procs, "%d", &pid) == 1)
        if (pid > 0 && pid != self) add_found((pid_t)pid);
      fclose(procs);
    }
  }
  return nfound;
}

static void kill_everything(pid_t pgid, const char *mark, const char *cgroup, const char *also) {
  char path[4096];
  if (cgroup) {
    /* cgroup v2 kills every member at once, new forks included. */
    snprintf(path, sizeof path, "%s/cgroup.kill", cgroup);
    write_file(path, "1");
  }
  for (int round = 0; round < 200; round++) {
    kill(-pgid, SIGKILL);
    if (collect(pgid, mark, cgroup) == 0) break;
    for (int i = 0; i < nfound; i++) kill(found[i], SIGKILL);
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
  if (cgroup) rmdir(cgroup);
  if (also) rmdir(also);
}

/*
 * Watches the caller (toolbelt) from outside the command: when the caller dies, by SIGKILL included,
 * the command and everything it started die too. Ends on its own once nothing of the command is left.
 */
static int watcher_main(pid_t caller, pid_t pgid, const char *mark, const char *cgroup, const char *also) {
  int pidfd = (int)syscall(SYS_pidfd_open, caller, 0);
  if (pidfd < 0 && errno == ESRCH) {
    kill_everything(pgid, mark, cgroup, also);
    return 0;
  }
  for (int tick = 0;; tick++) {
    int caller_gone;
    if (pidfd >= 0) {
      struct pollfd p = {.fd = pidfd, .events = POLLIN};
      caller_gone = poll(&p, 1, 500) > 0;
    } else {
      struct timespec pause = {0, 500 * 1000 * 1000};
      nanosleep(&pause, NULL);
      caller_gone = kill(caller, 0) != 0 && errno == ESRCH;
    }
    if (caller_gone) {
      kill_everything(pgid, mark, cgroup, also);
      return 0;
    }
    /* Give a fresh command a moment to join its cgroup before "empty" means "done". */
    if (tick >= 1 && collect(pgid, mark, cgroup) == 0) {
      if (cgroup) rmdir(cgroup);
      if (also) rmdir(also);
      return 0;
    }
  }
}

/* Starts the watcher as an orphan (outside the process group, without the mark, not our child). */
static void start_watcher(pid_t caller, const char *mark, const char *cgroup, const char *also) {
  pid_t command = getpid();
  pid_t first = fork();
  if (first < 0) die("cannot fork the watcher", NULL);
  if (first == 0) {
    setsid();
    pid_t second = fork();
    if (second != 0) _exit(0);
    int null = open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; fd++) dup2(null, fd);
    /* Close everything else the command holds: an inherited pipe would keep its output open. */
    for (int fd = 3; fd < 1024; fd++)
      if (fd != null) close(fd);
    if (null > 2) close(null);
    char caller_s[24], command_s[24];
    snprintf(caller_s, sizeof caller_s, "%d", (int)caller);
    snprintf(command_s, sizeof command_s, "%d", (int)command);
    char *argv[] = {"toolbelt-sandbox", "--watcher", caller_s, command_s, (char *)mark,
                    (char *)(cgroup ? cgroup : "-"), (char *)(also ? also : "-"), NULL};
    char *envp[] = {NULL};
    execve("/proc/self/exe", argv, envp);
    _exit(watcher_main(caller, command, mark, cgroup, also));
  }
  waitpid(first, NULL, 0);
}

/* Tasks (threads included, as RLIMIT_NPROC counts them) of the real uid right now. */
static long tasks_of_uid(uid_t uid) {
  long total = 0;
  DIR *proc = opendir("/proc");
  if (!proc) return 0;
  struct dirent *entry;
  while ((entry = readdir(proc))) {
    int pid = atoi(entry->d_name);
    if (pid <= 0) continue;
    char path[64], status[4096];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    if (read_small(path, status, sizeof status) <= 0) continue;
    const char *u = strstr(status, "\nUid:");
    const char *t = strstr(status, "\nThreads:");
    if (!u || !t) continue;
    if ((uid_t)strtoul(u + 5, NULL, 10) == uid) total += strtol(t + 9, NULL, 10);
  }
  closedir(proc);
  return total;
}

static void limit_tasks(long extra, int own_userns) {
  if (extra <= 0 || geteuid() == 0) return; /* not enforced for root: the cgroup's pids.max is */
  /* In a fresh user namespace the count starts at this command; otherwise it is the whole uid's. */
  rlim_t limit = (rlim_t)(own_userns ? extra : tasks_of_uid(getuid()) + extra);
  struct rlimit rl;
  if (getrlimit(RLIMIT_NPROC, &rl) != 0) return;
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < limit) limit = rl.rlim_max;
  rl.rlim_cur = limit;
  rl.rlim_max = limit;
  if (setrlimit(RLIMIT_NPROC, &rl) != 0) die("cannot set RLIMIT_NPROC", NULL);
}

/* No file the command writes may grow past BYTES; writing past it is SIGXFSZ (or EFBIG). */
static void limit_file_size(rlim_t bytes, int own_userns) {
  struct rlimit rl = {.rlim_cur = bytes, .rlim_max = bytes};
  if (setrlimit(RLIMIT_FSIZE, &rl) != 0) die("cannot set RLIMIT_FSIZE", NULL);
  /* Root could raise its own hard limit again (CAP_SYS_RESOURCE): the command never gets that right. */
  if (geteuid() == 0 && !own_userns && prctl(PR_CAPBSET_DROP, CAP_SYS_RESOURCE, 0, 0, 0) != 0)
    die("cannot drop CAP_SYS_RESOURCE from the bounding set", NULL);
}

#define MAX_HIDDEN_SOCKETS 4096

/*
 * Binds /dev/null over every listening unix socket with a path, as the kernel lists them in
 * /proc/net/unix (this network namespace's, read before the command gets its own): a connect() to one
 * then finds a character device and is refused. Sockets bound later, and those named by a path
 * relative to their daemon's directory, are not covered. Fails closed past MAX_HIDDEN_SOCKETS.
 */
static void hide_unix_sockets(const char *keep) {
  struct stat kept;
  int keep_known = keep && stat(keep, &kept) == 0;
  FILE *list = fopen("/proc/net/unix", "re");
  if (!list) die("cannot read", "/proc/net/unix");
  char line[4096 + 256];
  int hidden = 0;
  if (!fgets(line, sizeof line, list)) { /* header only */ }
  while (fgets(line, sizeof line, list)) {
    /* Num RefCount Protocol Flags Type St Inode Path: the path is the 8th field, to the end of the line. */
    char *p = line;
    for (int field = 0; field < 7 && p; field++) {
      p = strchr(p, ' ');
      while (p && *p == ' ') p++;
    }
    if (!p || *p != '/') continue; /* unnamed, abstract (@) or relative */
    p[strcspn(p, "\n")] = 0;
    int fd = open(p, O_PATH | O_CLOEXEC);
    if (fd < 0) continue; /* in another mount namespace, or gone */
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) ||
        (keep_known && st.st_dev == kept.st_dev && st.st_ino == kept.st_ino)) {
      close(fd);
      continue;
    }
    if (++hidden > MAX_HIDDEN_SOCKETS) {
      fprintf(stderr, "toolbelt-sandbox: more than %d unix sockets to hide for network off; the command does not run\n",
              MAX_HIDDEN_SOCKETS);
      exit(125);
    }
    int done = -1;
    int tree = (int)syscall(SYS_open_tree, AT_FDCWD, "/dev/null", TB_OPEN_TREE_CLONE | O_CLOEXEC);
    if (tree >= 0) {
      done = (int)syscall(SYS_move_mount, tree, "", fd, "", TB_MOVE_MOUNT_F_EMPTY_PATH | TB_MOVE_MOUNT_T_EMPTY_PATH);
      close(tree);
    }
    if (done != 0) {
      /* Kernels before 5.2: a classic bind onto the socket through its descriptor. */
      char via[64];
      snprintf(via, sizeof via, "/proc/self/fd/%d", fd);
      done = mount("/dev/null", via, NULL, MS_BIND, NULL);
    }
    close(fd);
    if (done != 0) die("cannot hide the unix socket", p);
  }
  fclose(list);
}

static int probe_isolation(void) {
  pid_t child = fork();
  if (child < 0) die("cannot fork", NULL);
  if (child == 0) {
    int userns;
    const char *why = NULL;
    if (private_mounts(&userns, &why) != 0) {
      printf("%s: %s\n", why, strerror(errno));
      fflush(stdout);
      _exit(1);
    }
    /* Can commands get a PID namespace with a /proc of their own (what hides other processes)? */
    int pidns = 0;
    if (unshare(CLONE_NEWPID) == 0) {
      pid_t init = fork();
      if (init == 0) _exit(mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0 ? 0 : 1);
      int st = 0;
      if (init > 0 && waitpid(init, &st, 0) == init) pidns = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    /* Last: it drops capabilities when root, and nothing after it needs them. */
    int netns = own_network(&userns, &why) == 0;
    printf("ok%s%s%s\n", userns ? " (user namespace)" : "", pidns ? " +pidns" : "", netns ? " +netns" : "");
    fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return 0;
}

static void usage(void) {
  fputs("usage: toolbelt-sandbox --probe | --probe-isolation\n"
        "       toolbelt-sandbox [--write PATH]... [--read PATH]... [--read-nofollow DIR]... [--confine-reads]\n"
        "                        [--no-landlock | --landlock-only] [--ro PATH]... [--cgroup DIR] [--nproc N]\n"
        "                        [--also-cgroup DIR] [--fsize BYTES] [--watch MARK]\n"
        "                        [--net-off [--net-via netns|landlock] [--hide-sockets]\n"
        "                                   [--net-proxy SOCKET --net-proxy-port PORT]] -- PROGRAM [ARG]...\n",
        stderr);
  exit(125);
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--probe") == 0) {
    printf("%d\n", landlock_abi());
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "--probe-isolation") == 0) return probe_isolation();
  if (argc == 7 && strcmp(argv[1], "--watcher") == 0) {
    const char *cgroup = strcmp(argv[5], "-") == 0 ? NULL : argv[5];
    const char *also = strcmp(argv[6], "-") == 0 ? NULL : argv[6];
    return watcher_main((pid_t)atoi(argv[2]), (pid_t)atoi(argv[3]), argv[4], cgroup, also);
  }

  const char **writes = calloc((size_t)argc, sizeof *writes);
  const char **reads = calloc((size_t)argc, sizeof *reads);
  const char **ros = calloc((size_t)argc, sizeof *ros);
  const char **strict_reads = calloc((size_t)argc, sizeof *strict_reads);
  if (!writes || !reads || !ros || !strict_reads) die("out of memory", NULL);
  int nwrites = 0, nreads = 0, nros = 0, nstrict = 0, confine_reads = 0, landlock = 1, net_off = 0, i = 1;
  int namespaces = 1;
  const char *cgroup = NULL, *also_cgroup = NULL, *mark = NULL, *net_via = NULL, *net_proxy = NULL;
  long net_proxy_port = 0;
  long nproc = 0;
  long long fsize = 0;
  int hide_sockets = 0;
  for (; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) {
      i++;
      break;
    }
    if (strcmp(argv[i], "--write") == 0 && i + 1 < argc)
      writes[nwrites++] = argv[++i];
    else if (strcmp(argv[i], "--read") == 0 && i + 1 < argc)
      reads[nreads++] = argv[++i];
    else if (strcmp(argv[i], "--read-nofollow") == 0 && i + 1 < argc)
      strict_reads[nstrict++] = argv[++i];
    else if (strcmp(argv[i], "--landlock-only") == 0)
      namespaces = 0;
    else if (strcmp(argv[i], "--ro") == 0 && i + 1 < argc)
      ros[nros++] = argv[++i];
    else if (strcmp(argv[i], "--cgroup") == 0 && i + 1 < argc)
      cgroup = argv[++i];
    else if (strcmp(argv[i], "--also-cgroup") == 0 && i + 1 < argc)
      also_cgroup = argv[++i];
    else if (strcmp(argv[i], "--fsize") == 0 && i + 1 < argc)
      fsize = strtoll(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--hide-sockets") == 0)
      hide_sockets = 1;
    else if (strcmp(argv[i], "--nproc") == 0 && i + 1 < argc)
      nproc = strtol(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--watch") == 0 && i + 1 < argc)
      mark = argv[++i];
    else if (strcmp(argv[i], "--confine-reads") == 0)
      confine_reads = 1;
    else if (strcmp(argv[i], "--no-landlock") == 0)
      landlock = 0;
    else if (strcmp(argv[i], "--net-off") == 0)
      net_off = 1;
    else if (strcmp(argv[i], "--net-via") == 0 && i + 1 < argc)
      net_via = argv[++i];
    else if (strcmp(argv[i], "--net-proxy") == 0 && i + 1 < argc)
      net_proxy = argv[++i];
    else if (strcmp(argv[i], "--net-proxy-port") == 0 && i + 1 < argc)
      net_proxy_port = strtol(argv[++i], NULL, 10);
    else
      usage();
  }
  if (i >= argc) usage();
  if (!namespaces && nros > 0) usage();
  if (hide_sockets && (!net_off || !namespaces)) usage();
  if (net_via && strcmp(net_via, "netns") != 0 && strcmp(net_via, "landlock") != 0) usage();
  if (net_proxy && (!net_off || (net_via && strcmp(net_via, "netns") != 0) || net_proxy_port < 1 ||
                    net_proxy_port > 65535 || net_proxy[0] != '/'))
    usage();

  int abi = landlock || net_off ? landlock_abi() : 0;
  if (landlock && abi < 1) {
    fprintf(stderr, "toolbelt-sandbox: Landlock is not available on this kernel\n");
    return 125;
  }

  pid_t caller = getppid();
  if (mark) start_watcher(caller, mark, cgroup, also_cgroup);
  const char *groups[] = {cgroup, also_cgroup};
  for (size_t g = 0; g < 2; g++) {
    if (!groups[g]) continue;
    char path[4096], pid[24];
    snprintf(path, sizeof path, "%s/cgroup.procs", groups[g]);
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    if (write_file(path, pid) != 0) die("cannot join the cgroup", groups[g]);
  }
  /* The command dies with its caller even before the watcher notices; and orphans stay beneath it. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) die("cannot set the parent-death signal", NULL);
  if (getppid() != caller) return 125;
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

  int own_userns = 0, mounts = 0;
  if (namespaces && (nros > 0 || landlock || hide_sockets)) {
    const char *why = NULL;
    /* Best-effort: where namespaces are not allowed the caller's probe says so (doctor, results). */
    if (private_mounts(&own_userns, &why) == 0) {
      mounts = 1;
      for (int r = 0; r < nros; r++)
        if (bind_read_only(ros[r]) != 0) die("cannot make read-only", ros[r]);
    }
  }
  /* Daemons' sockets on the file system are network in all but name: hidden while the host's are listed. */
  if (hide_sockets) {
    if (!mounts) {
      fprintf(stderr, "toolbelt-sandbox: network off cannot hide the unix sockets of local daemons without a "
                      "private mount namespace, so the command does not run\n");
      return 125;
    }
    hide_unix_sockets(net_proxy);
  }
  /*
   * Network off fails closed: the namespace where it can be made, Landlock's TCP rules where not,
   * and no command at all when neither is there. Before the PID namespace, so that its init (which
   * the command can see and, as the same user, ptrace) has no way out either.
   */
  int net_landlock = 0;
  if (net_off) {
    const char *why = NULL;
    int tried = !net_via || strcmp(net_via, "netns") == 0;
    if (!tried || own_network(&own_userns, &why) != 0) {
      char netns_why[256];
      if (tried) snprintf(netns_why, sizeof netns_why, "no network namespace (%s: %s)", why, strerror(errno));
      else snprintf(netns_why, sizeof netns_why, "the network namespace was not allowed (--net-via)");
      if (net_proxy) {
        /* Landlock cannot tell one host from another: an allow list needs the namespace. */
        fprintf(stderr,
                "toolbelt-sandbox: the network allow list (agent.shell_network.allow) needs a network namespace of "
                "the command's own, so the command does not run: %s\n",
                netns_why);
        return 125;
      } else if ((!net_via || strcmp(net_via, "landlock") == 0) && abi >= 4) {
        net_landlock = 1;
      } else {
        fprintf(stderr,
                "toolbelt-sandbox: network off (agent.shell_network: off) cannot be enforced, so the command "
                "does not run: %s and %s\n",
                netns_why,
                abi >= 4 ? "Landlock network rules were not allowed (--net-via)"
                         : "no Landlock network rules (Landlock ABI < 4)");
        return 125;
      }
    }
  }
  /* Before the PID namespace: the relay stays outside it, invisible to the command. */
  if (net_proxy) start_relay(net_proxy, net_proxy_port);
  /* The command's own /proc hides every other process; where that fails, at least its ancestors. */
  if (mounts && !own_pid_namespace()) mask_ancestors();

  limit_tasks(nproc, own_userns);
  if (fsize > 0) limit_file_size((rlim_t)fsize, own_userns);

  if (landlock || net_landlock) {
    uint64_t handled = landlock ? FS_WRITE_RIGHTS | (confine_reads ? FS_READ_RIGHTS : 0) : 0;
    handled &= rights_for_abi(abi);

    struct ruleset_attr attr = {.handled_access_fs = handled};
    /* No rule grants a port: every TCP connect and bind is refused (EACCES). */
    if (net_landlock) attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP;
    if (net_landlock && abi >= 6) attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET;
    int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
    if (ruleset < 0) die("cannot create the Landlock ruleset", NULL);
    for (int w = 0; w < nwrites; w++) add_rule(ruleset, writes[w], handled, handled);
    for (int r = 0; r < nreads; r++) add_rule(ruleset, reads[r], FS_READ_RIGHTS, handled);
    for (int r = 0; r < nstrict; r++) add_rule_nofollow(ruleset, strict_reads[r], FS_READ_FILE | FS_READ_DIR, handled);

    /* Required for an unprivileged restrict_self, and it keeps setuid binaries from lifting the rules. */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("cannot set no_new_privs", NULL);
    /* Also locks the mount topology: the command cannot unmount the read-only binds. */
    if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) die("cannot enforce the Landlock ruleset", NULL);
    close(ruleset);
  }

  execvp(argv[i], &argv[i]);
  fprintf(stderr, "toolbelt-sandbox: cannot run %s: %s\n", argv[i], strerror(errno));
  return errno == ENOENT ? 127 : 126;
}
