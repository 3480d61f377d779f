/* c-child: the minimal C child of the benchmarks (bench/README.md).
 *
 * It reads requests on the request pipe and answers on the response pipe (PROTOCOL.md §2.2:
 * the descriptors AFTERBURN_FDS names, else 0 and 1), one at a time, in order: an empty body
 * gets "Hello, world!\n", any other body is echoed, each answer framed by Content-Length and
 * written whole in one write. It answers the handshake (§3.1, §3.2) wherever one comes, lists
 * the exchange capability and echoes AfterBurn-Exchange (§4.6), so a watchdog drives it exactly
 * as it drives a library, token check included. Behind the C relay it gets the client's
 * requests as they came and answers them the same way.
 *
 * What it leaves out is what makes it the least a child can cost: no validation (§4.3), no
 * chunked bodies (a request framed by Transfer-Encoding is answered 501 and the child exits,
 * as §8.8 asks of a framing error), no request id, no deadline. A body is held whole in memory.
 *
 * C_CHILD_BUSY_NS=N makes it a slower worker that is otherwise the same: it keeps its CPU
 * busy for N ns (the monotonic clock, read through the vDSO: no system call) before each
 * answer but the handshake's. The front scenario runs the watchdog in front of it to measure
 * the watchdog's saving at a language's lower request rate (bench/README.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "framing.h"

static const char greeting[] = "Hello, world!\n";
static const char library[] = "c-child/0";

static int in_fd = 0, out_fd = 1;
static long long busy_ns; /* C_CHILD_BUSY_NS */

static char *in;  /* request bytes read and not yet answered */
static size_t in_len, in_cap;
static char *out; /* the response being written */
static size_t out_len, out_cap;

__attribute__((noreturn)) static void fail(const char *what)
{
	fprintf(stderr, "c-child: %s\n", what);
	exit(1);
}

/* fds reads AFTERBURN_FDS: two decimal descriptors separated by a comma (§2.3). */
static void fds(void)
{
	const char *v = getenv("AFTERBURN_FDS");
	int r, w, n = 0;
	if (!v)
		return;
	if (sscanf(v, "%d,%d%n", &r, &w, &n) != 2 || v[n] != '\0' || r < 0 || w < 0 ||
	    strspn(v, "0123456789,") != strlen(v)) {
		fprintf(stderr, "c-child: bad AFTERBURN_FDS \"%s\"\n", v);
		exit(2);
	}
	in_fd = r;
	out_fd = w;
}

/* busy reads C_CHILD_BUSY_NS: a count of nanoseconds, 0 when unset. */
static void busy(void)
{
	const char *v = getenv("C_CHILD_BUSY_NS");
	char *end;
	if (!v)
		return;
	busy_ns = strtoll(v, &end, 10);
	if (*v == '\0' || *end != '\0' || busy_ns < 0) {
		fprintf(stderr, "c-child: bad C_CHILD_BUSY_NS \"%s\"\n", v);
		exit(2);
	}
}

/* spin keeps the CPU busy for busy_ns. */
static void spin(void)
{
	struct timespec a, b;
	if (!busy_ns)
		return;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec) < busy_ns);
}

static void *grow(void *p, size_t *cap, size_t need)
{
	if (need <= *cap)
		return p;
	size_t c = *cap ? *cap : 64 << 10;
	while (c < need)
		c *= 2;
	if (!(p = realloc(p, c)))
		fail("out of memory");
	*cap = c;
	return p;
}

/* fill reads more request bytes; 0 at the end of the pipe. A non-blocking descriptor (one a
 * watchdog left so) is waited on with poll. */
static size_t fill(void)
{
	in = grow(in, &in_cap, in_len + 16384);
	for (;;) {
		ssize_t n = read(in_fd, in + in_len, in_cap - in_len);
		if (n >= 0) {
			in_len += (size_t)n;
			return (size_t)n;
		}
		if (errno == EAGAIN) {
			struct pollfd p = {.fd = in_fd, .events = POLLIN};
			poll(&p, 1, -1);
		} else if (errno != EINTR) {
			fail("reading the request pipe");
		}
	}
}

static void write_all(const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(out_fd, p, n);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
		} else if (w < 0 && errno == EAGAIN) {
			struct pollfd pf = {.fd = out_fd, .events = POLLOUT};
			poll(&pf, 1, -1);
		} else if (w < 0 && errno != EINTR) {
			exit(0); /* the reader is gone: nothing left to answer */
		}
	}
}

static void put(const char *s, size_t n)
{
	out = grow(out, &out_cap, out_len + n);
	memcpy(out + out_len, s, n);
	out_len += n;
}

static void puts_(const char *s) { put(s, strlen(s)); }

static void put_number(unsigned long long n)
{
	char b[24];
	put(b, (size_t)snprintf(b, sizeof b, "%llu", n));
}

/* offers1 reports whether a comma-separated version list (§3.1) contains 1. */
static int offers1(const char *v, size_t n)
{
	size_t i = 0;
	while (i < n) {
		size_t j = i;
		while (j < n && v[j] != ',')
			j++;
		size_t a = i, b = j;
		while (a < b && (v[a] == ' ' || v[a] == '\t'))
			a++;
		while (b > a && (v[b - 1] == ' ' || v[b - 1] == '\t'))
			b--;
		if (b - a == 1 && v[a] == '1')
			return 1;
		i = j + 1;
	}
	return 0;
}

/* reject writes the error response of §8.1 and stops (§8.8): this child never looks for the
 * start of a next request after one it could not read. */
__attribute__((noreturn)) static void reject(const char *status, const char *type, const char *message, int protocol)
{
	char body[256];
	size_t n = (size_t)snprintf(body, sizeof body, "{\"type\": \"%s\", \"message\": \"%s\"}", type, message);
	out_len = 0;
	puts_("HTTP/1.1 ");
	puts_(status);
	puts_(protocol ? "\r\nAfterBurn-Protocol: 1" : "");
	puts_("\r\nAfterBurn-Error: ");
	puts_(type);
	puts_("\r\nContent-Type: application/json\r\nContent-Length: ");
	put_number(n);
	puts_("\r\n\r\n");
	put(body, n);
	write_all(out, out_len);
	fprintf(stderr, "c-child: %s: %s\n", type, message);
	exit(1);
}

int main(void)
{
	fds();
	busy();
	for (;;) {
		size_t head;
		while (!(head = head_length(in, in_len))) {
			if (fill() == 0) {
				if (in_len == 0)
					return 0; /* the end of the pipe between requests: shutdown (§9.4) */
				fail("the request pipe ended inside a head");
			}
		}
		int handshake = 0, offered = 0, is_head = in_len >= 5 && memcmp(in, "HEAD ", 5) == 0;
		const char *token = NULL, *p = first_field(in, head);
		size_t token_len = 0;
		struct field f;
		while (next_field(&p, in + head, &f)) {
			if (field_is(&f, "afterburn-handshake")) {
				handshake = 1;
				offered = offers1(f.value, f.value_len);
			} else if (field_is(&f, "afterburn-exchange")) {
				token = f.value;
				token_len = f.value_len;
			}
		}
		long long length = body_length(in, head);
		if (length == -2)
			reject("501 Not Implemented", "not_implemented", "only Content-Length bodies are read", 0);
		if (length < 0)
			reject("400 Bad Request", "bad_request", "a bad Content-Length", 0);
		size_t total = head + (size_t)length;
		while (in_len < total)
			if (fill() == 0)
				fail("the request pipe ended inside a body");

		out_len = 0;
		if (handshake && !offered) /* §3.4 */
			reject("400 Bad Request", "version_mismatch", "this child speaks version 1 only", 1);
		if (handshake) { /* §3.2 */
			puts_("HTTP/1.1 200 OK\r\nAfterBurn-Protocol: 1\r\nAfterBurn-Library: ");
			puts_(library);
			puts_("\r\nAfterBurn-Capabilities: exchange\r\n");
		} else {
			puts_("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n");
		}
		if (token) { /* §4.6: the token as it came, in every response to a request that has one */
			puts_("AfterBurn-Exchange: ");
			put(token, token_len);
			puts_("\r\n");
		}
		const char *body = length ? in + head : greeting;
		size_t body_len = length ? (size_t)length : sizeof greeting - 1;
		if (handshake)
			body_len = 0;
		puts_("Content-Length: ");
		put_number(body_len);
		puts_("\r\n\r\n");
		if (!is_head)
			put(body, body_len);
		if (!handshake)
			spin();
		write_all(out, out_len);

		memmove(in, in + total, in_len - total);
		in_len -= total;
	}
}
