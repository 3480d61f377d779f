/* c-relay: the relay of the benchmarks (bench/README.md), the least that can carry a request
 * from a client through a pipe to a child and its answer back: client -> pipe -> child ->
 * pipe -> client.
 *
 *   c-relay [-addr HOST:PORT] [-children N] -- CHILD ARGS...
 *
 * One process and one thread: an epoll loop over non-blocking sockets and pipes. It starts N
 * children (default 1) with the request pipe on fd 3 and the response pipe on fd 4 and
 * AFTERBURN_FDS=3,4, as a watchdog would (PROTOCOL.md §2.2), and logs
 * "c-relay: listening on ADDR" on stderr once it accepts connections.
 *
 * It does framing only: it finds where a request ends (the head and its Content-Length body),
 * writes the whole request to an idle child's request pipe in one write, finds where the
 * answer ends the same way and writes it whole to the client in one write. A child carries one
 * request at a time, as under the watchdog (§2.1); connections that have a request and find
 * every child busy wait in a first-in first-out queue. Connections are kept alive.
 *
 * Not a proxy: no validation, no handshake, no timeouts, no Transfer-Encoding (a connection
 * that sends one is closed), no HEAD (the answer's Content-Length would be waited for), no
 * limits beyond memory. A child that exits or answers out of
 * turn stops the relay. SIGTERM or SIGINT closes the children's request pipes (the end of the
 * pipe is shutdown, §9.4), waits for them and exits.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "framing.h"

enum { max_message = 64 << 20 };

/* epoll data: what a descriptor belongs to. */
enum kind { k_listener, k_signal, k_conn, k_req, k_resp };
struct tag {
	enum kind kind;
	void *p;
};

struct conn {
	struct tag tag;
	int fd;
	char *in;      /* bytes read from the client; a complete request is at the front */
	size_t in_len, in_cap;
	size_t req;    /* the length of the complete request at the front of in; 0 if none yet */
	char *out;     /* the part of an answer the socket did not take at once */
	size_t out_len, out_off, out_cap;
	int at_child;  /* its request is at a child */
	int queued;    /* its request waits for a child */
	int gone;      /* closed: freed once its exchange ends, after the current epoll batch */
	struct conn *next_queued, *next_buried;
};

struct child {
	struct tag req_tag, resp_tag;
	int req_fd, resp_fd;
	struct conn *conn;  /* the exchange it carries; NULL when idle */
	size_t req_off;     /* bytes of conn's request written to the pipe so far */
	char *resp;         /* bytes of the answer read so far */
	size_t resp_len, resp_cap;
	size_t resp_total;  /* the answer's whole length once its head is read; 0 before */
	struct child *next_idle;
};

static int ep;
static struct conn *queue_head, *queue_tail;
static struct conn *buried; /* closed connections, freed once the current epoll batch is done */
static struct child *idle;

__attribute__((noreturn)) static void fail(const char *what)
{
	fprintf(stderr, "c-relay: %s\n", what);
	exit(1);
}

/* fail_sys reports a failed system call with its errno. */
__attribute__((noreturn)) static void fail_sys(const char *what)
{
	fprintf(stderr, "c-relay: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void *grow(void *p, size_t *cap, size_t need)
{
	if (need <= *cap)
		return p;
	size_t c = *cap ? *cap : 16 << 10;
	while (c < need)
		c *= 2;
	if (!(p = realloc(p, c)))
		fail("out of memory");
	*cap = c;
	return p;
}

static void watch(int op, int fd, uint32_t events, struct tag *t)
{
	struct epoll_event ev = {.events = events, .data.ptr = t};
	if (epoll_ctl(ep, op, fd, &ev) < 0)
		fail_sys("epoll_ctl");
}

/* framed reports the length of the complete message at the front of buf: 0 while it is
 * incomplete, -1 when it cannot be framed by Content-Length. */
static long long framed(const char *buf, size_t len)
{
	size_t head = head_length(buf, len);
	if (!head)
		return len > max_message ? -1 : 0;
	long long body = body_length(buf, head);
	if (body < 0 || body > max_message)
		return -1;
	return (size_t)head + (size_t)body <= len ? (long long)head + body : 0;
}

/* bury frees c once the current epoll batch is done: an event of the batch may still name it. */
static void bury(struct conn *c)
{
	c->next_buried = buried;
	buried = c;
}

static void free_buried(void)
{
	while (buried) {
		struct conn *c = buried;
		buried = c->next_buried;
		free(c->in);
		free(c->out);
		free(c);
	}
}

/* close_conn closes c; it is freed at once unless a child or the queue still holds it. */
static void close_conn(struct conn *c)
{
	close(c->fd); /* also leaves the epoll set */
	c->fd = -1;
	c->gone = 1;
	if (!c->at_child && !c->queued)
		bury(c);
}

static void dispatch(void);

/* ready looks for a complete request at the front of c's buffer and queues it for a child. */
static void ready(struct conn *c)
{
	if (c->at_child || c->queued || c->gone)
		return;
	long long n = framed(c->in, c->in_len);
	if (n < 0) {
		close_conn(c);
		return;
	}
	if (n == 0)
		return;
	c->req = (size_t)n;
	c->queued = 1;
	c->next_queued = NULL;
	if (queue_tail)
		queue_tail->next_queued = c;
	else
		queue_head = c;
	queue_tail = c;
	dispatch();
}

/* write_request writes what is left of the child's request; the rest waits for EPOLLOUT. */
static void write_request(struct child *ch)
{
	struct conn *c = ch->conn;
	while (ch->req_off < c->req) {
		ssize_t n = write(ch->req_fd, c->in + ch->req_off, c->req - ch->req_off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			watch(EPOLL_CTL_MOD, ch->req_fd, EPOLLOUT, &ch->req_tag);
			return;
		}
		if (n < 0)
			fail_sys("writing a request to the child");
		ch->req_off += (size_t)n;
	}
}

/* dispatch hands queued requests to idle children. */
static void dispatch(void)
{
	while (idle && queue_head) {
		struct conn *c = queue_head;
		queue_head = c->next_queued;
		if (!queue_head)
			queue_tail = NULL;
		c->queued = 0;
		if (c->gone) {
			bury(c);
			continue;
		}
		struct child *ch = idle;
		idle = ch->next_idle;
		ch->conn = c;
		ch->req_off = 0;
		c->at_child = 1;
		write_request(ch);
	}
}

static void flush_conn(struct conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = write(c->fd, c->out + c->out_off, c->out_len - c->out_off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return; /* EPOLLOUT is on */
		if (n < 0) {
			c->out_off = c->out_len = 0;
			close_conn(c);
			return;
		}
		c->out_off += (size_t)n;
	}
	c->out_off = c->out_len = 0;
}

/* answer sends the child's complete answer to its client and frees the child. */
static void answer(struct child *ch)
{
	struct conn *c = ch->conn;
	size_t n = ch->resp_total;
	if (ch->resp_len > n)
		fail("the child wrote past the end of its answer");
	ch->conn = NULL;
	ch->resp_len = ch->resp_total = 0;
	ch->next_idle = idle;
	idle = ch;
	c->at_child = 0;
	if (c->gone) {
		bury(c);
		dispatch();
		return;
	}
	memmove(c->in, c->in + c->req, c->in_len - c->req);
	c->in_len -= c->req;
	c->req = 0;
	size_t off = 0;
	if (c->out_len == 0) { /* nothing older waits: straight to the socket */
		for (;;) {
			ssize_t w = write(c->fd, ch->resp + off, n - off);
			if (w > 0 && (off += (size_t)w) < n)
				continue;
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0 && errno != EAGAIN) {
				close_conn(c);
				dispatch();
				return;
			}
			break;
		}
	}
	if (off < n) {
		int was_empty = c->out_len == 0;
		c->out = grow(c->out, &c->out_cap, c->out_len + n - off);
		memcpy(c->out + c->out_len, ch->resp + off, n - off);
		c->out_len += n - off;
		if (was_empty)
			watch(EPOLL_CTL_MOD, c->fd, EPOLLIN | EPOLLOUT, &c->tag);
	}
	ready(c); /* a pipelined request may be waiting already */
	dispatch();
}

static void read_answer(struct child *ch)
{
	for (;;) {
		ch->resp = grow(ch->resp, &ch->resp_cap, ch->resp_len + 16384);
		size_t room = ch->resp_cap - ch->resp_len;
		ssize_t n = read(ch->resp_fd, ch->resp + ch->resp_len, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0)
			fail_sys("reading the child's answer");
		if (n == 0)
			fail("the child exited");
		ch->resp_len += (size_t)n;
		if (!ch->conn)
			fail("the child wrote while it had no request");
		if (!ch->resp_total) {
			long long t = framed(ch->resp, ch->resp_len);
			if (t < 0)
				fail("the child's answer is not framed by Content-Length");
			ch->resp_total = (size_t)t;
		}
		if (ch->resp_total && ch->resp_len >= ch->resp_total) {
			answer(ch);
			return;
		}
		if ((size_t)n < room)
			return; /* the pipe is empty: saves a read that would say EAGAIN */
	}
}

static void read_conn(struct conn *c)
{
	for (;;) {
		c->in = grow(c->in, &c->in_cap, c->in_len + 16384);
		size_t room = c->in_cap - c->in_len;
		ssize_t n = read(c->fd, c->in + c->in_len, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			close_conn(c);
			return;
		}
		c->in_len += (size_t)n;
		if (c->in_len > 2 * (size_t)max_message) {
			close_conn(c);
			return;
		}
		if ((size_t)n < room)
			break; /* the socket is empty: saves a read that would say EAGAIN */
	}
	ready(c);
}

static void accept_all(int lfd)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
				return;
			fail_sys("accept");
		}
		int one = 1; /* as Go's net package does for every TCP connection */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		struct conn *c = calloc(1, sizeof *c);
		if (!c)
			fail("out of memory");
		c->fd = fd;
		c->tag = (struct tag){k_conn, c};
		watch(EPOLL_CTL_ADD, fd, EPOLLIN, &c->tag);
	}
}

static void start_child(struct child *ch, char **argv)
{
	int req[2], resp[2];
	if (pipe2(req, O_CLOEXEC) < 0 || pipe2(resp, O_CLOEXEC) < 0)
		fail_sys("pipe2");
	pid_t pid = fork();
	if (pid < 0)
		fail_sys("fork");
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGPIPE, SIG_DFL); /* an ignored signal stays ignored across exec */
		/* Above 4 first, so that neither dup2 below overwrites the other's source. */
		int r = fcntl(req[0], F_DUPFD, 5), w = fcntl(resp[1], F_DUPFD, 5);
		int null = open("/dev/null", O_RDONLY);
		if (r < 0 || w < 0 || null < 0 || dup2(r, 3) < 0 || dup2(w, 4) < 0 || dup2(null, 0) < 0 ||
		    dup2(2, 1) < 0)
			_exit(127);
		close(r);
		close(w);
		close(null);
		setenv("AFTERBURN_FDS", "3,4", 1);
		setenv("AFTERBURN_PROTOCOL", "1", 1);
		execvp(argv[0], argv);
		fprintf(stderr, "c-relay: exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(req[0]);
	close(resp[1]);
	ch->req_fd = req[1];
	ch->resp_fd = resp[0];
	if (fcntl(ch->req_fd, F_SETFL, O_NONBLOCK) < 0 || fcntl(ch->resp_fd, F_SETFL, O_NONBLOCK) < 0)
		fail_sys("O_NONBLOCK");
	ch->req_tag = (struct tag){k_req, ch};
	ch->resp_tag = (struct tag){k_resp, ch};
	watch(EPOLL_CTL_ADD, ch->req_fd, 0, &ch->req_tag);
	watch(EPOLL_CTL_ADD, ch->resp_fd, EPOLLIN, &ch->resp_tag);
	ch->next_idle = idle;
	idle = ch;
}

/* shutdown_children ends the children the way a watchdog does (§9.4) and waits for them, so
 * that none outlives the relay unreaped. */
__attribute__((noreturn)) static void shutdown_children(struct child **all, int n)
{
	for (int k = 0; k < n; k++)
		close(all[k]->req_fd);
	while (wait(NULL) > 0 || errno == EINTR)
		;
	exit(0);
}

static int listen_on(const char *addr)
{
	char host[64];
	const char *colon = strrchr(addr, ':');
	if (!colon || (size_t)(colon - addr) >= sizeof host) {
		fprintf(stderr, "c-relay: bad -addr \"%s\": want HOST:PORT\n", addr);
		exit(2);
	}
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = '\0';
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		fprintf(stderr, "c-relay: bad -addr \"%s\": want an IPv4 address\n", addr);
		exit(2);
	}
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
	if (fd < 0)
		fail_sys("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 1024) < 0)
		fail_sys("listen");
	socklen_t n = sizeof sa;
	getsockname(fd, (struct sockaddr *)&sa, &n);
	char ip[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof ip);
	fprintf(stderr, "c-relay: listening on %s:%d\n", ip, ntohs(sa.sin_port));
	return fd;
}

int main(int argc, char **argv)
{
	const char *addr = "127.0.0.1:0";
	int children = 1, i = 1;
	for (; i < argc && strcmp(argv[i], "--") != 0; i += 2) {
		if (i + 1 >= argc)
			break;
		if (strcmp(argv[i], "-addr") == 0)
			addr = argv[i + 1];
		else if (strcmp(argv[i], "-children") == 0)
			children = atoi(argv[i + 1]);
		else
			break;
	}
	if (i >= argc || strcmp(argv[i], "--") != 0 || i + 1 >= argc || children < 1) {
		fprintf(stderr, "usage: c-relay [-addr HOST:PORT] [-children N] -- CHILD ARGS...\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	if ((ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
		fail_sys("epoll_create1");
	struct child **all = calloc((size_t)children, sizeof *all);
	if (!all)
		fail("out of memory");
	for (int k = 0; k < children; k++) {
		if (!(all[k] = calloc(1, sizeof *all[k])))
			fail("out of memory");
		start_child(all[k], argv + i + 1);
	}
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	int sfd = signalfd(-1, &stop, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0 || sigprocmask(SIG_BLOCK, &stop, NULL) < 0)
		fail_sys("signalfd");
	struct tag signals = {k_signal, NULL};
	watch(EPOLL_CTL_ADD, sfd, EPOLLIN, &signals);
	int lfd = listen_on(addr);
	struct tag listener = {k_listener, NULL};
	watch(EPOLL_CTL_ADD, lfd, EPOLLIN, &listener);

	struct epoll_event evs[64];
	for (;;) {
		int n = epoll_wait(ep, evs, 64, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fail_sys("epoll_wait");
		for (int e = 0; e < n; e++) {
			struct tag *t = evs[e].data.ptr;
			switch (t->kind) {
			case k_listener:
				accept_all(lfd);
				break;
			case k_signal:
				shutdown_children(all, children);
			case k_conn: {
				struct conn *c = t->p;
				if (c->gone)
					break; /* closed by an earlier event of this batch */
				if (evs[e].events & EPOLLOUT) {
					flush_conn(c);
					if (!c->gone && c->out_len == 0)
						watch(EPOLL_CTL_MOD, c->fd, EPOLLIN, t);
				}
				if (!c->gone && evs[e].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
					read_conn(c);
				break;
			}
			case k_req: {
				struct child *ch = t->p;
				watch(EPOLL_CTL_MOD, ch->req_fd, 0, t);
				if (ch->conn)
					write_request(ch);
				break;
			}
			case k_resp:
				read_answer(t->p);
				break;
			}
		}
		free_buried();
	}
}
