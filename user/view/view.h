/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reading a profile back (ours or Scalene's) and showing it: the terminal
 * table, the HTML page, and exports of its stacks.  Every function here
 * takes the parsed document as untrusted input.  The command that reads the
 * files and writes the pages is view_cmd.h.
 */
#ifndef VIEW_H
#define VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct json_object;
struct host_index;

/* The largest profile read back (2 GiB). */
#define VIEW_MAX_PROFILE_BYTES (1ULL << 31)

/* Parses a profile from memory: JSON only, depth-limited.  NULL with the
 * reason printed to err (name says which input). */
struct json_object *view_parse(const char *data, size_t len, const char *name, FILE *err);

struct view_opts {
	double threshold; /* hide lines under this percent of the time */
	bool all_lines;	  /* every sampled line, however small */
	int width;	  /* terminal columns */
	bool color;	  /* ANSI colours */
};

/* Prints the terminal table of a parsed profile to f; 0 or -EINVAL when the
 * document is not a profile (the reason printed to err). */
int view_print_cli(struct json_object *doc, FILE *f, FILE *err, const struct view_opts *vo);

/* Writes the self-contained HTML page of a parsed profile to f (title: name,
 * the profile's file name), with the lines vo's threshold or all_lines
 * selects (vo NULL: the default threshold); 0 or -EINVAL as above. */
int view_write_html(struct json_object *doc, const char *name, const struct view_opts *vo, FILE *f,
		    FILE *err);

/* The views of a system-wide run's directory (`scalene-bpf --all -o DIR`)
 * from its index (hostindex.h): the processes ranked by CPU time, those not
 * profiled with why, the warnings, and how to open one.  dir: the directory
 * as the user named it.  0 or -errno. */
int view_print_host_cli(const struct host_index *hi, const char *dir, FILE *f,
			const struct view_opts *vo);
/* The host's page (name: the index's path, DIR/index.json); each process
 * links to the page named by its `page` (beside this one), or says its
 * `problem`. */
int view_write_host_html(const struct host_index *hi, const char *name, FILE *f, FILE *err);

enum export_format {
	EXPORT_FOLDED,	   /* "a;b;c N" lines */
	EXPORT_SPEEDSCOPE, /* speedscope's file format */
	EXPORT_PPROF,	   /* gzipped profile.proto */
	EXPORT_OTLP,	   /* an OTLP ExportProfilesServiceRequest (protobuf) */
};

/* What a pprof export carries: CPU (samples, time and its split), memory
 * (alloc_space), GPU (gpu_time). */
enum {
	EXPORT_KIND_CPU = 1,
	EXPORT_KIND_MEMORY = 2,
	EXPORT_KIND_GPU = 4,
	EXPORT_KIND_ALL = 7,
};

/* "folded", "speedscope", "pprof", "otlp"; 0 or -EINVAL. */
int export_parse_format(const char *s, enum export_format *fmt);
/* Writes the export of a parsed profile to f; 0 or -EINVAL as above. */
int export_write(struct json_object *doc, enum export_format fmt, const char *name, FILE *f,
		 FILE *err);
/* A parsed profile's stacks, read once for several exports of it (the
 * document must outlive it): 0, -EINVAL when doc is not a profile, or
 * -ENOMEM (*out NULL). */
struct export_src;
int export_src_read(struct json_object *doc, struct export_src **out);
void export_src_free(struct export_src *src);
/* The gzipped pprof of a profile with the sample types and stacks of those
 * kinds only, in *buf (malloc'd); -ENODATA when it has none of them,
 * -ENOMEM. */
int export_pprof_kinds(struct export_src *src, unsigned kinds, uint8_t **buf, size_t *len);

/*
 * An OTLP export request (ExportProfilesServiceRequest) made of profiles, a
 * resource each, over one dictionary: what `--format otlp` writes for one
 * profile, and what a continuous run sends for an interval's.
 */
struct otlp_batch;
/* A resource attribute: a string, or the number num when str is NULL. */
struct otlp_attr {
	const char *key, *str;
	int64_t num;
};
struct otlp_batch *otlp_batch_new(void);
void otlp_batch_free(struct otlp_batch *b);
/* Adds a profile as a resource with the profile's own attributes
 * and then extra's (a key given again takes the later value); 0, -EINVAL
 * when it has no stacks, -ENOMEM. */
int otlp_batch_add(struct otlp_batch *b, struct export_src *src, const struct otlp_attr *extra,
		   int nextra);
int otlp_batch_resources(const struct otlp_batch *b);
/* The request's bytes (protobuf), in *buf (malloc'd). */
int otlp_batch_pack(struct otlp_batch *b, uint8_t **buf, size_t *len);

#endif /* VIEW_H */
