/* template.c: a test template and worker for the watchdog's fork mode (PROTOCOL.md §2.6).
 *
 * Go cannot be a template (its runtime is multi-threaded when it would fork), so fork_test.go
 * compiles this with cc. With AFTERBURN_CONTROL_FD set it is a template: it answers the
 * handshake listing fork, closes fds 3 and 4, and forks a worker per `fork <slot>` request by
 * the double fork of §2.6. Without it (or with TPL_INIT=nofork) it is a worker: it answers the
 * handshake (listing exchange and echoing AfterBurn-Exchange, §4.6), GET /crash by exiting 3,
 * and any other request with 200 and "pid=P ppid=PP pgid=G slot=S kind=K".
 *
 * Misbehaviours, by environment: TPL_INIT=exit (exits during initialisation), hang (never
 * answers the handshake), nofork (a library without fork); TPL_FORK=failed (answers
 * `failed`), silent (never answers), close (closes the control socket at the first request);
 * TPL_FORK_DELAY_MS=N (each fork answered N ms late: a template that cannot fork fast enough).
 *
 * The single fork (§2.6, fork-child): the template lists fork-child unless TPL_CHILD=no, and
 * answers `fork-child <slot>` by forking once; it watches each worker with a pidfd,
 * reports `exited <pid> ...` and reaps only at `reap <pid>` (any other pid: exit 2).
 * Misbehaviours: TPL_CHILD=stray (reports the exit of a pid it never forked), twice (reports
 * every exit twice), notchild (answers with its own pid).
 *
 * Isolation (§2.7): `fork <slot> <tmpdir>` sets TMPDIR, which the reply shows; a worker of the
 * single fork makes its own in $AFTERBURN_TMPDIR_ROOT (mkdtemp "<root>/<pid>-XXXXXX") and names it
 * in its handshake reply (AfterBurn-Tmpdir), or with TPL_TMPDIR=outside names /tmp instead, with
 * TPL_TMPDIR=die makes it and exits before its handshake, saying so on stderr. GET /linger
 * answers, then ignores the EOF that follows (the worker must be killed); GET /child leaves a
 * `sleep` in the worker's process group, GET /daemon one in a session of its own; GET /symlink
 * writes a file and a symbolic link to $TPL_OUTSIDE into TMPDIR.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char buf[65536];
static size_t len;
static const char *kind = "exec";

static void die(const char *what)
{
	fprintf(stderr, "template.c: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			exit(0);
		p += w;
		n -= (size_t)w;
	}
}

/* child_mode: the template lists fork-child (§2.6); TPL_CHILD is not "no". */
static int child_mode;

/* tmpdir_field: a worker of the single fork names its temporary directory in its handshake
 * reply (§2.7); empty otherwise. */
static char tmpdir_field[640];

/* lingering: GET /linger was served, so EOF on the request pipe is ignored (§2.7). */
static int lingering;

/* leave does what a route leaves behind (§2.7); it returns the pid of a process left, or 0. */
static int leave(const char *route)
{
	if (strcmp(route, "linger") == 0) {
		lingering = 1;
		return 0;
	}
	if (strcmp(route, "symlink") == 0) {
		const char *tmp = getenv("TMPDIR"), *outside = getenv("TPL_OUTSIDE");
		char path[4096];
		snprintf(path, sizeof path, "%s/file", tmp ? tmp : "/nonexistent");
		FILE *f = fopen(path, "w");
		if (f) {
			fputs("left by a request\n", f);
			fclose(f);
		}
		snprintf(path, sizeof path, "%s/outside", tmp ? tmp : "/nonexistent");
		if (outside)
			symlink(outside, path);
		return 0;
	}
	if (strcmp(route, "child") != 0 && strcmp(route, "daemon") != 0)
		return 0;
	int p[2];
	if (pipe(p) < 0)
		return 0;
	pid_t c = fork();
	if (c == 0) {
		close(p[0]);
		if (route[0] == 'd') {
			/* A daemon: its own session, its parent gone (the classic double fork). */
			if (fork() != 0)
				_exit(0);
			setsid();
		}
		pid_t me = getpid();
		write(p[1], &me, sizeof me);
		close(p[1]);
		for (int fd = 0; fd < 5; fd++)
			close(fd); /* it holds none of the worker's pipes */
		execlp("sleep", "sleep", "60", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	pid_t left = 0;
	if (read(p[0], &left, sizeof left) != sizeof left)
		left = 0;
	close(p[0]);
	if (route[0] == 'd')
		waitpid(c, NULL, 0); /* the daemon's first parent */
	return (int)left;
}

/* field copies the value of a header field (case-insensitive name) into out; 0 if absent. */
static int field(const char *head, const char *name, char *out, size_t cap)
{
	size_t n = strlen(name);
	for (const char *p = strstr(head, "\r\n"); p && p[2] != '\r'; p = strstr(p + 2, "\r\n")) {
		const char *line = p + 2;
		if (strncasecmp(line, name, n) == 0 && line[n] == ':') {
			const char *v = line + n + 1, *end = strstr(v, "\r\n");
			while (*v == ' ')
				v++;
			size_t m = (size_t)(end - v) < cap - 1 ? (size_t)(end - v) : cap - 1;
			memcpy(out, v, m);
			out[m] = 0;
			return 1;
		}
	}
	return 0;
}

/* serve answers requests on fds 3 and 4 until EOF; a template returns after its handshake. */
static void serve(int template)
{
	for (;;) {
		char *end;
		while (!(end = memmem(buf, len, "\r\n\r\n", 4))) {
			ssize_t n = read(3, buf + len, sizeof buf - 1 - len);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0 && lingering)
				for (;;)
					pause(); /* GET /linger: a worker that does not exit after its exchange */
			if (n <= 0)
				exit(0); /* EOF between requests: shutdown (§9.4) */
			len += (size_t)n;
		}
		size_t head = (size_t)(end - buf) + 4;
		char saved = buf[head];
		buf[head] = 0;
		char token[80] = "", cl[32] = "0", hdr[160] = "";
		int handshake = field(buf, "AfterBurn-Handshake", hdr, sizeof hdr);
		if (field(buf, "AfterBurn-Exchange", token, sizeof token))
			snprintf(hdr, sizeof hdr, "AfterBurn-Exchange: %s\r\n", token);
		else
			hdr[0] = 0;
		field(buf, "Content-Length", cl, sizeof cl);
		int crash = strncmp(buf, "GET /crash ", 11) == 0;
		const char *route = strncmp(buf, "GET /linger ", 12) == 0 ? "linger"
				    : strncmp(buf, "GET /child ", 11) == 0 ? "child"
				    : strncmp(buf, "GET /daemon ", 12) == 0 ? "daemon"
				    : strncmp(buf, "GET /symlink ", 13) == 0 ? "symlink" : "";
		buf[head] = saved;
		size_t body = (size_t)atol(cl);
		while (len < head + body) {
			ssize_t n = read(3, buf + len, sizeof buf - len);
			if (n <= 0)
				exit(0);
			len += (size_t)n;
		}
		memmove(buf, buf + head + body, len - head - body);
		len -= head + body;
		char out[1024], text[256];
		int n;
		if (handshake) {
			n = snprintf(out, sizeof out,
				     "HTTP/1.1 200 OK\r\nAfterBurn-Protocol: 1\r\nAfterBurn-Library: c-template/0\r\n"
				     "AfterBurn-Capabilities: exchange%s\r\n%s%sContent-Length: 0\r\n\r\n",
				     template ? (child_mode ? ", fork, fork-child" : ", fork") : "", template ? "" : tmpdir_field, hdr);
			write_all(4, out, (size_t)n);
			if (template)
				return;
			continue;
		}
		if (crash) {
			fprintf(stderr, "template.c: pid %d crashing on purpose\n", getpid());
			exit(3);
		}
		int left = leave(route);
		const char *slot = getenv("AFTERBURN_WORKER_ID"), *tmp = getenv("TMPDIR");
		int t = snprintf(text, sizeof text, "pid=%d ppid=%d pgid=%d slot=%s kind=%s left=%d tmpdir=%s\n", getpid(),
				 getppid(), getpgid(0), slot ? slot : "?", kind, left, tmp ? tmp : "");
		n = snprintf(out, sizeof out, "HTTP/1.1 200 OK\r\n%sContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s",
			     hdr, t, text);
		write_all(4, out, (size_t)n);
	}
}

/* own_tmpdir makes a worker of the single fork's temporary directory in root and names it in
 * the handshake reply to come (§2.7); a worker that cannot exits before its handshake. */
static void own_tmpdir(const char *root)
{
	const char *how = getenv("TPL_TMPDIR");
	char dir[520];
	snprintf(dir, sizeof dir, "%s/%d-XXXXXX", root, getpid());
	if (!mkdtemp(dir)) {
		fprintf(stderr, "template.c: worker pid %d cannot make its temporary directory in %s: %s\n", getpid(),
			root, strerror(errno));
		exit(1);
	}
	if (how && strcmp(how, "die") == 0) {
		fprintf(stderr, "template.c: worker pid %d made %s and exits before its handshake\n", getpid(), dir);
		exit(1);
	}
	setenv("TMPDIR", dir, 1);
	snprintf(tmpdir_field, sizeof tmpdir_field, "AfterBurn-Tmpdir: %s\r\n",
		 how && strcmp(how, "outside") == 0 ? "/tmp" : dir);
}

/* become_worker is the forked worker's set-up of §2.6, before any request; parent is the
 * process it must end up under: the watchdog, or the template after a single fork. */
static void become_worker(int ctl, int fds[4], int slot, pid_t parent, int once)
{
	setpgid(0, 0);
	int high[4], to[4] = {3, 4, 1, 2};
	for (int i = 0; i < 4; i++)
		if ((high[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 100)) < 0)
			die("dup");
	for (int i = 0; i < 4; i++)
		close(fds[i]);
	close(ctl);
	for (int i = 0; i < 4; i++) {
		if (dup2(high[i], to[i]) < 0)
			die("dup2");
		close(high[i]);
	}
	char id[16];
	snprintf(id, sizeof id, "%d", slot);
	setenv("AFTERBURN_WORKER_ID", id, 1);
	unsetenv("AFTERBURN_CONTROL_FD");
	while (!once && getppid() != parent) {
		if (getppid() == 1 && parent != 1)
			exit(1); /* the watchdog died meanwhile */
		usleep(100);
	}
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		exit(1);
	const char *root = getenv("AFTERBURN_TMPDIR_ROOT");
	if (once && root)
		own_tmpdir(root);
	kind = "fork";
	len = 0;
	serve(0);
	exit(0);
}

static void answer(int ctl, const char *text)
{
	if (send(ctl, text, strlen(text), MSG_NOSIGNAL) < 0)
		exit(1);
}

/* The workers of the single fork (§2.6): pid and pidfd, -1 once its exit is reported;
 * reported lists the pids waiting for the watchdog's `reap`. */
#define MAXKIDS 64
static struct {
	pid_t pid;
	int pidfd;
} kids[MAXKIDS];
static pid_t reported[MAXKIDS];

static void report_exits(int ctl, const char *mode)
{
	for (int i = 0; i < MAXKIDS; i++) {
		if (kids[i].pid == 0 || kids[i].pidfd < 0)
			continue;
		siginfo_t si = {0};
		if (waitid(P_PID, (id_t)kids[i].pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0)
			continue;
		char text[96];
		snprintf(text, sizeof text, "exited %d %s %d\n", kids[i].pid,
			 si.si_code == CLD_EXITED ? "exit" : "signal", si.si_status);
		answer(ctl, text);
		if (strcmp(mode, "twice") == 0)
			answer(ctl, text);
		close(kids[i].pidfd);
		for (int j = 0; j < MAXKIDS; j++)
			if (reported[j] == 0) {
				reported[j] = kids[i].pid;
				break;
			}
		kids[i].pid = 0;
	}
}

/* await_control polls the control socket and the workers' pidfds until a record arrives. */
static void await_control(int ctl, const char *mode)
{
	for (;;) {
		struct pollfd p[MAXKIDS + 1] = {{.fd = ctl, .events = POLLIN}};
		int n = 1;
		for (int i = 0; i < MAXKIDS; i++)
			if (kids[i].pid && kids[i].pidfd >= 0)
				p[n++] = (struct pollfd){.fd = kids[i].pidfd, .events = POLLIN};
		if (poll(p, (nfds_t)n, -1) < 0 && errno != EINTR)
			die("poll");
		report_exits(ctl, mode);
		if (p[0].revents)
			return;
	}
}

/* reap reaps a worker reported exited, on the watchdog's word; any other pid is an error. */
static void reap(pid_t pid)
{
	for (int j = 0; j < MAXKIDS; j++)
		if (reported[j] == pid && pid > 0) {
			reported[j] = 0;
			waitpid(pid, NULL, 0);
			return;
		}
	fprintf(stderr, "template.c: reap of pid %d, not reported exited\n", pid);
	exit(2);
}

/* fork_once answers `fork-child`: one fork, the worker stays this process's child. */
static void fork_once(int ctl, int fds[4], int slot, const char *mode)
{
	char text[128];
	fflush(NULL);
	pid_t w = fork();
	if (w == 0)
		become_worker(ctl, fds, slot, getppid(), 1);
	for (int i = 0; i < 4; i++)
		close(fds[i]);
	if (w < 0) {
		snprintf(text, sizeof text, "failed %d fork: %s\n", slot, strerror(errno));
		answer(ctl, text);
		return;
	}
	setpgid(w, w);
	int fd = (int)syscall(SYS_pidfd_open, w, 0);
	if (fd < 0)
		die("pidfd_open");
	for (int i = 0; i < MAXKIDS; i++)
		if (kids[i].pid == 0) {
			kids[i].pid = w;
			kids[i].pidfd = fd;
			break;
		}
	snprintf(text, sizeof text, "forked %d %d\n", slot, strcmp(mode, "notchild") == 0 ? getpid() : w);
	answer(ctl, text);
	if (strcmp(mode, "stray") == 0) {
		snprintf(text, sizeof text, "exited %d exit 0\n", w + 100000);
		answer(ctl, text);
	}
}

int main(void)
{
	const char *c = getenv("AFTERBURN_CONTROL_FD"), *init = getenv("TPL_INIT"), *mode = getenv("TPL_FORK");
	init = init ? init : "";
	mode = mode ? mode : "";
	if (!c || strcmp(init, "nofork") == 0) {
		serve(0);
		return 0;
	}
	int ctl = atoi(c);
	pid_t watchdog = getppid();
	const char *child = getenv("TPL_CHILD");
	child = child ? child : "";
	child_mode = strcmp(child, "no") != 0;
	if (strcmp(init, "exit") == 0) {
		fprintf(stderr, "template.c: initialisation failed on purpose\n");
		return 1;
	}
	if (strcmp(init, "hang") == 0)
		for (;;)
			pause();
	serve(1);
	close(3);
	close(4);
	for (;;) {
		if (child_mode)
			await_control(ctl, child);
		char msg[600], cbuf[CMSG_SPACE(4 * sizeof(int))];
		struct iovec iov = {msg, sizeof msg - 1};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
		ssize_t n = recvmsg(ctl, &mh, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0; /* the control socket ended: shutdown (§2.6) */
		msg[n] = 0;
		int slot, fds[4], pid;
		if (child_mode && sscanf(msg, "reap %d", &pid) == 1) {
			reap(pid);
			continue;
		}
		int once = child_mode && strncmp(msg, "fork-child ", 11) == 0;
		if (once) {
			memmove(msg + 5, msg + 11, strlen(msg + 11) + 1); /* "fork <slot> ..." from here */
			msg[4] = ' ';
		}
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		char tmpdir[520] = "";
		if (sscanf(msg, "fork %d %511[^\n]", &slot, tmpdir) < 1 || !cm || cm->cmsg_type != SCM_RIGHTS ||
		    cm->cmsg_len != CMSG_LEN(4 * sizeof(int))) {
			fprintf(stderr, "template.c: bad control message\n");
			return 2;
		}
		memcpy(fds, CMSG_DATA(cm), sizeof fds);
		char text[128];
		if (strcmp(mode, "close") == 0) {
			close(ctl);
			for (;;)
				pause();
		}
		if (strcmp(mode, "failed") == 0 || strcmp(mode, "silent") == 0) {
			for (int i = 0; i < 4; i++)
				close(fds[i]);
			if (mode[0] == 'f') {
				snprintf(text, sizeof text, "failed %d EAGAIN: refused on purpose\n", slot);
				answer(ctl, text);
			}
			continue;
		}
		const char *delay = getenv("TPL_FORK_DELAY_MS");
		if (delay)
			usleep((useconds_t)atoi(delay) * 1000);
		if (tmpdir[0])
			setenv("TMPDIR", tmpdir, 1); /* the worker's; the template forks one at a time */
		if (once) {
			fork_once(ctl, fds, slot, child);
			continue;
		}
		int p[2];
		if (pipe2(p, O_CLOEXEC) < 0)
			die("pipe");
		fflush(NULL);
		pid_t middle = fork();
		if (middle == 0) {
			close(p[0]);
			pid_t w = fork();
			if (w == 0) {
				close(p[1]);
				become_worker(ctl, fds, slot, watchdog, 0);
			}
			write_all(p[1], (char *)&w, sizeof w);
			_exit(0);
		}
		close(p[1]);
		for (int i = 0; i < 4; i++)
			close(fds[i]);
		pid_t w = -1;
		if (middle < 0 || read(p[0], &w, sizeof w) != sizeof w || w < 0) {
			close(p[0]);
			if (middle > 0)
				waitpid(middle, NULL, 0);
			snprintf(text, sizeof text, "failed %d fork: %s\n", slot, strerror(errno));
			answer(ctl, text);
			continue;
		}
		close(p[0]);
		waitpid(middle, NULL, 0); /* before answering: the worker is the watchdog's child now */
		snprintf(text, sizeof text, "forked %d %d\n", slot, w);
		answer(ctl, text);
	}
}
