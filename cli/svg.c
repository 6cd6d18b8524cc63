/* svg.c — `kiln inspect --svg FILE`: the graph's DOT (graphir/dot.c, what --dot
 * writes) rendered to SVG by Graphviz's `dot -Tsvg`, so that a model's fused groups
 * can be looked at without another step.
 *
 * dot is found on PATH by posix_spawnp; without it the message names Debian's
 * graphviz package and --dot. The DOT goes to dot's stdin through a socket pair,
 * written with send(MSG_NOSIGNAL): if dot dies early the write fails with EPIPE
 * instead of the process being killed by SIGPIPE, and no signal disposition (process
 * state) is touched. dot's stdout is FILE, opened here so that the message for an
 * unwritable path is ours; a failed render removes it. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

extern char **environ;

/* Sends all of data; 0, or an errno. */
static int send_all(int fd, const char *data, size_t len) {
  while (len > 0) {
    ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    data += n;
    len -= (size_t)n;
  }
  return 0;
}

int cli_render_svg(const char *dot_text, size_t len, const char *path) {
  int out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (out < 0) {
    fprintf(stderr, "kiln inspect: cannot write '%s': %s\n", path, strerror(errno));
    return -1;
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
    fprintf(stderr, "kiln inspect: --svg: socketpair: %s\n", strerror(errno));
    close(out);
    unlink(path);
    return -1;
  }
  posix_spawn_file_actions_t fa;
  char *argv[] = {"dot", "-Tsvg", NULL};
  pid_t pid = -1;
  int err = posix_spawn_file_actions_init(&fa);
  if (!err) {
    /* dup2 clears FD_CLOEXEC on 0 and 1; every other descriptor of ours closes on exec */
    err = posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
    if (!err) err = posix_spawn_file_actions_adddup2(&fa, out, 1);
    if (!err) err = posix_spawnp(&pid, "dot", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
  }
  close(sv[1]);
  close(out);
  if (err) {
    close(sv[0]);
    unlink(path);
    if (err == ENOENT)
      fprintf(stderr, "kiln inspect: --svg needs Graphviz's dot, which is not on PATH: install it (Debian: "
                      "apt-get install graphviz) or write the graph with --dot FILE and render it elsewhere\n");
    else
      fprintf(stderr, "kiln inspect: --svg: cannot run dot: %s\n", strerror(err));
    return -1;
  }
  int send_err = send_all(sv[0], dot_text, len);
  close(sv[0]); /* EOF for dot */
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      status = -1;
      break;
    }
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || send_err) {
    if (status != -1 && WIFSIGNALED(status))
      fprintf(stderr, "kiln inspect: --svg: dot was killed by signal %d\n", WTERMSIG(status));
    else if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) != 0)
      fprintf(stderr, "kiln inspect: --svg: dot -Tsvg failed (exit status %d)\n", WEXITSTATUS(status));
    else
      fprintf(stderr, "kiln inspect: --svg: feeding dot failed: %s\n", strerror(send_err ? send_err : errno));
    unlink(path);
    return -1;
  }
  return 0;
}
