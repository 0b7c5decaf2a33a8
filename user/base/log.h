/* SPDX-License-Identifier: BSD-2-Clause */
/* Leveled messages to stderr; stdout carries only what the user asked for. */
#ifndef LOG_H
#define LOG_H

enum log_level {
	LOG_WARN = 0,
	LOG_INFO = 1,
	LOG_DEBUG = 2,
};

/* The command the user ran us by (argv[0]: ./scalene-bpf before `make
 * install`), quoted for a shell where needed: what the messages' hints
 * give, so that a hint pasted back works.  "scalene-bpf" until set. */
void log_set_command(const char *argv0);
const char *log_command(void);

void log_set_level(int level);
int log_get_level(void);
void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define pr_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define pr_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define pr_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif /* LOG_H */
