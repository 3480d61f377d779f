/* framing.h: the little HTTP/1.1 the C relay and the C child need to find where a message
 * ends: the end of a head, and its Content-Length.
 *
 * Not a parser. It trusts its input (the benchmark's client, the watchdog, the C child): it
 * checks no syntax, and a message framed by Transfer-Encoding is reported as such, not read.
 */
#ifndef AFTERBURN_BENCH_FRAMING_H
#define AFTERBURN_BENCH_FRAMING_H

#include <stddef.h>
#include <string.h>
#include <strings.h>

/* head_length returns the length of the head at the start of buf, through the blank line
 * that ends it, or 0 while the head is incomplete. */
static inline size_t head_length(const char *buf, size_t len)
{
	const char *end = memmem(buf, len, "\r\n\r\n", 4);
	return end ? (size_t)(end - buf) + 4 : 0;
}

/* field is one field line of a head, its value without the whitespace around it. */
struct field {
	const char *name, *value;
	size_t name_len, value_len;
};

/* next_field reads the field line at *p (before end, the end of the head) into f and moves
 * *p past it; 0 at the blank line. Start with *p just past the start line. */
static inline int next_field(const char **p, const char *end, struct field *f)
{
	const char *line = *p;
	const char *eol = memmem(line, (size_t)(end - line), "\r\n", 2);
	if (!eol || eol == line)
		return 0;
	*p = eol + 2;
	const char *colon = memchr(line, ':', (size_t)(eol - line));
	if (!colon)
		colon = eol;
	const char *v = colon < eol ? colon + 1 : eol, *ve = eol;
	while (v < ve && (*v == ' ' || *v == '\t'))
		v++;
	while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
		ve--;
	f->name = line;
	f->name_len = (size_t)(colon - line);
	f->value = v;
	f->value_len = (size_t)(ve - v);
	return 1;
}

/* first_field returns where the field lines of a head begin: just past its start line. */
static inline const char *first_field(const char *head, size_t head_len)
{
	const char *eol = memmem(head, head_len, "\r\n", 2);
	return eol ? eol + 2 : head + head_len;
}

static inline int field_is(const struct field *f, const char *name)
{
	size_t n = strlen(name);
	return f->name_len == n && strncasecmp(f->name, name, n) == 0;
}

/* parse_length reads a Content-Length value: one or more digits; -1 otherwise. */
static inline long long parse_length(const char *v, size_t n)
{
	long long x = 0;
	if (n == 0 || n > 18)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		x = x * 10 + (v[i] - '0');
	}
	return x;
}

/* body_length returns the Content-Length of a head (0 when it has none), -1 when it is not a
 * number, and -2 when the message is framed by Transfer-Encoding, which neither program
 * reads. */
static inline long long body_length(const char *head, size_t head_len)
{
	const char *p = first_field(head, head_len), *end = head + head_len;
	struct field f;
	long long n = 0;
	while (next_field(&p, end, &f)) {
		if (field_is(&f, "content-length"))
			n = parse_length(f.value, f.value_len);
		else if (field_is(&f, "transfer-encoding"))
			return -2;
	}
	return n;
}

#endif
