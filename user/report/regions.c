// SPDX-License-Identifier: BSD-2-Clause
/*
 * Region spans per source line, as Scalene 2.4.0 derives them from Python's
 * ast in scalene_analysis.py.  No Debian library parses Python from C, so
 * this file carries its own scanner: it only needs the statement tree (which
 * statements exist, their kind, first line and end line), not expressions.
 *
 * What Scalene computes, restated over that tree:
 *  - region: the innermost For/While containing the line; failing that the
 *    innermost sync FunctionDef; failing that the innermost ClassDef;
 *    failing that (n, n).  AsyncFor and AsyncFunctionDef do not count.
 *  - function: the innermost FunctionDef, AsyncFunctionDef or ClassDef
 *    containing the line, else (0, 0).
 *  - outermost: a walk that carries a context (the span and kind of the last
 *    node that "reset" it) down the tree.  Class and (async) def always
 *    reset; For, While, AsyncFor and If reset only when the context is a
 *    class, a def or nothing.  A line takes its value from the deepest
 *    statement containing it: the context's span when the context is a
 *    loop; else the statement's own span when the statement is a With, If,
 *    class or (async) def and the line is not blank (str.strip()); else
 *    (n, n).  Lines in no statement get (n, n).
 * A statement's span runs from its keyword's line (a decorated def or class
 * starts at "def"/"class", not at the decorator) to its last token; for a
 * compound statement that is the last token of its body, so trailing blank
 * lines and comments are not part of it.  An "elif" is an If nested in the
 * orelse of the previous one.  Clause headers (except, case, else, finally)
 * are not statements: their lines belong to the compound statement.
 *
 * The scanner follows CPython's tokenizer where the block structure depends
 * on it: universal newlines, indentation with tabs (tab size 8, plus the
 * TabError consistency check with tab size 1), form feeds, backslash
 * continuations (also inside the indentation, as 3.11 does), brackets,
 * comments, strings of every prefix, and f-strings with the 3.12 grammar
 * (PEP 701: nested quotes, comments and newlines inside replacement
 * fields), which also covers every f-string valid in 3.11.
 *
 * Text whose block structure is not valid Python gets the trivial values
 * for every line.  Scalene itself has no fallback: ast.parse raises and the
 * SyntaxError escapes output_profiles(), so no profile is written at all.
 *
 * Known, deliberate differences from Scalene 2.4.0 running on CPython 3.11:
 *  - Only the block structure is checked.  Text with an error inside a
 *    statement (x = = 1, or a Python 2 print) gets a structure here, where
 *    ast.parse fails.  The profiled program ran, so its source parses.
 *  - A UTF-8 byte order mark is skipped, as the interpreter does when it
 *    runs the file; Scalene reads it into the text and ast.parse rejects it.
 *  - Text that is not UTF-8 is scanned byte by byte; Scalene's open() would
 *    raise UnicodeDecodeError.
 *  - 3.12+ f-strings (same quotes nested, multi-line fields) are
 *    understood; ast.parse on 3.11 rejects them.
 *  - Scalene's find_outermost_loop recurses once per nested statement and
 *    hits Python's recursion limit on a few thousand chained elifs; this
 *    code has no such limit.  Likewise for expressions nested so deeply that
 *    the ast module gives up (RecursionError), which are not looked at here.
 *  - Non-ASCII characters outside strings and comments are taken as
 *    identifier characters without checking Unicode's XID tables, except
 *    that Unicode spaces, U+200B and U+FEFF are rejected, as CPython does.
 *
 * Everything runs in time linear in the input: one scan, one tree with one
 * node per statement, and each line is assigned once per field through a
 * "next unassigned line" union-find.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "report/regions.h"
#include "base/utf8.h"

/* CPython's tokenizer: indentation levels (MAXINDENT) and brackets (MAXLEVEL). */
#define MAX_INDENT 100
#define MAX_PAREN 200
/* Brackets plus f-string states; 3.12 allows f-strings 150 deep (MAXFSTRINGLEVEL). */
#define MAX_NEST 640

enum stmt_kind {
	ST_SIMPLE,
	ST_FUNC,
	ST_ASYNC_FUNC,
	ST_CLASS,
	ST_FOR,
	ST_ASYNC_FOR,
	ST_WHILE,
	ST_IF,
	ST_WITH,
	ST_ASYNC_WITH,
	ST_TRY,
	ST_MATCH,
};

/* One ast.stmt.  Nodes are stored in source order, so a parent precedes its children. */
struct node {
	int parent;
	int first, end; /* lineno, end_lineno */
	int tail;	/* last token of the statement's logical lines, a trailing ';' included */
	int ctx;	/* find_outermost_loop's context: the node that set it, or -1 */
	int kind;
};

struct regions {
	int nlines;
	int parsed;
	struct line_regions *lines;
};

/* The first keyword of a logical line. */
enum kw {
	KW_NONE,
	KW_DEF,
	KW_CLASS,
	KW_FOR,
	KW_WHILE,
	KW_IF,
	KW_WITH,
	KW_TRY,
	KW_ASYNC_DEF,
	KW_ASYNC_FOR,
	KW_ASYNC_WITH,
	KW_MATCH, /* soft keyword: decided at the end of the line */
	KW_CASE,  /* soft keyword: a clause only inside a match */
	KW_ELIF,
	KW_ELSE,
	KW_EXCEPT,
	KW_FINALLY,
	KW_DECORATOR,
	KW_ASYNC, /* "async" seen, the next token decides */
};

enum nest_kind {
	NEST_PAREN,
	NEST_SQUARE,
	NEST_CURLY,
	NEST_FSTR,  /* the literal part of an f-string */
	NEST_FIELD, /* a replacement field's expression */
	NEST_SPEC,  /* a replacement field's format spec */
};

struct nest {
	unsigned char kind;
	unsigned char quote; /* f-string states: the quote of the enclosing f-string */
	unsigned char triple;
	unsigned char raw;
};

struct segment {
	int first, last;
};

/* One logical line, as the parser sees it. */
struct lline {
	int first_line; /* line of the first token */
	int last_tok;	/* line where the last token (';' included) ends */
	int depth;	/* indentation level */
	int kw;
	int ntok;
	int colon;		 /* the header's ':' was seen */
	int colon_ntok;		 /* tokens before it */
	int lambdas;		 /* top-level lambdas still waiting for their ':' */
	int body_from;		 /* first segment after the header's ':' */
	int seg_first, seg_last; /* the segment being scanned; seg_first < 0: empty */
	struct segment *segs;
	int nsegs, cap_segs;
};

struct scan {
	const unsigned char *s;
	size_t len, pos;
	int line;
	int err; /* the text is not valid Python: trivial values */
	int oom;
	int depth;
	int col[MAX_INDENT], alt[MAX_INDENT];
	struct nest nest[MAX_NEST];
	int nnest, nparen;
};

enum frame_kind {
	FR_PLAIN,
	FR_IF,	       /* takes elif, else */
	FR_LOOP,       /* takes else */
	FR_TRY,	       /* takes except, finally; must get one */
	FR_TRY_EXCEPT, /* takes except, else, finally */
	FR_TRY_ELSE,   /* takes finally */
	FR_MATCH,      /* its block holds case clauses only */
	FR_CASE,
};

/* An open block: a compound statement or clause header at indentation level h. */
struct frame {
	int node;
	int h;
	int kind;
};

struct parser {
	struct node *nodes;
	int nnodes, cap_nodes;
	struct frame frames[MAX_INDENT + 2];
	int nframes;
	int prev_depth;
	int pending_body; /* the last line was a header whose block must follow */
	int decorated;	  /* the last line was a decorator */
	int oom;
	int err;
};

/* ---------------------------------------------------------------- scanning */

static int at(const struct scan *sc, size_t off)
{
	size_t p = sc->pos + off;

	return p < sc->len ? sc->s[p] : -1;
}

/* Length of the newline at pos + off ("\n", "\r\n", "\r"), or 0. */
static int newline_at(const struct scan *sc, size_t off)
{
	int c = at(sc, off);

	if (c == '\n')
		return 1;
	if (c == '\r')
		return at(sc, off + 1) == '\n' ? 2 : 1;
	return 0;
}

/* Python's str.isspace() (what str.strip() removes), beyond ASCII. */
static int is_unicode_space(unsigned int cp)
{
	return cp == 0x85 || cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) ||
	       cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

static int is_ascii_space(int c)
{
	return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

static int is_ident_ascii(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

static int lline_push_segment(struct scan *sc, struct lline *ll)
{
	struct segment *segs;
	int cap;

	if (ll->seg_first < 0)
		return 0;
	/* Statements sharing or touching lines behave as one (see add_simple()). */
	if (ll->nsegs > ll->body_from && ll->segs[ll->nsegs - 1].last + 1 >= ll->seg_first) {
		if (ll->seg_last > ll->segs[ll->nsegs - 1].last)
			ll->segs[ll->nsegs - 1].last = ll->seg_last;
		ll->seg_first = -1;
		return 0;
	}
	if (ll->nsegs == ll->cap_segs) {
		cap = ll->cap_segs ? ll->cap_segs * 2 : 16;
		if (cap > INT_MAX / (int)sizeof(*segs)) {
			sc->oom = 1;
			return -ENOMEM;
		}
		segs = realloc(ll->segs, (size_t)cap * sizeof(*segs));
		if (!segs) {
			sc->oom = 1;
			return -ENOMEM;
		}
		ll->segs = segs;
		ll->cap_segs = cap;
	}
	ll->segs[ll->nsegs].first = ll->seg_first;
	ll->segs[ll->nsegs].last = ll->seg_last;
	ll->nsegs++;
	ll->seg_first = -1;
	return 0;
}

/* Records a token spanning lines first..last. */
static void token(struct lline *ll, int first, int last)
{
	if (ll->seg_first < 0)
		ll->seg_first = first;
	ll->seg_last = last;
	ll->last_tok = last;
	ll->ntok++;
}

static int push_nest(struct scan *sc, int kind, int quote, int triple, int raw)
{
	struct nest *n;

	if (sc->nnest == MAX_NEST || (kind <= NEST_CURLY && sc->nparen == MAX_PAREN)) {
		sc->err = 1; /* "too many nested parentheses" */
		return -1;
	}
	if (kind <= NEST_CURLY)
		sc->nparen++;
	n = &sc->nest[sc->nnest++];
	n->kind = (unsigned char)kind;
	n->quote = (unsigned char)quote;
	n->triple = (unsigned char)triple;
	n->raw = (unsigned char)raw;
	return 0;
}

static void pop_nest(struct scan *sc)
{
	if (sc->nest[sc->nnest - 1].kind <= NEST_CURLY)
		sc->nparen--;
	sc->nnest--;
}

static int top_nest(const struct scan *sc)
{
	return sc->nnest ? sc->nest[sc->nnest - 1].kind : -1;
}

/* Skips a backslash and what it escapes inside a string; a newline counts as a line. */
static void skip_escape(struct scan *sc)
{
	int n = newline_at(sc, 1);

	if (n) {
		sc->pos += 1 + n;
		sc->line++;
	} else {
		sc->pos += at(sc, 1) < 0 ? 1 : 2;
	}
}

/* Whether the quote at the cursor closes a string opened with quote (tripled or not). */
static int closes_string(const struct scan *sc, int quote, int triple)
{
	return at(sc, 0) == quote && (!triple || (at(sc, 1) == quote && at(sc, 2) == quote));
}

/*
 * The next character inside a string for the caller to read, after the
 * newlines a triple-quoted string may hold (stepped over and counted); -1,
 * with sc->err set, at the end of the input or a newline in a one-line string.
 */
static int string_char(struct scan *sc, int triple)
{
	int n;

	while ((n = newline_at(sc, 0)) && triple) {
		sc->pos += n;
		sc->line++;
	}
	if (n || at(sc, 0) < 0) {
		sc->err = 1;
		return -1;
	}
	return at(sc, 0);
}

/* A replacement field opens at the brace under the cursor, inside the string of top. */
static void open_field(struct scan *sc, struct lline *ll, const struct nest *top)
{
	sc->pos++;
	push_nest(sc, NEST_FIELD, top->quote, top->triple, top->raw);
	token(ll, sc->line, sc->line);
}

/* A string other than an f-string, from its opening quote. */
static void scan_plain_string(struct scan *sc, struct lline *ll, int first_line)
{
	int q = at(sc, 0), triple = at(sc, 1) == q && at(sc, 2) == q, c;

	sc->pos += triple ? 3 : 1;
	while ((c = string_char(sc, triple)) >= 0) {
		if (c == '\\') {
			skip_escape(sc);
			continue;
		}
		if (closes_string(sc, q, triple)) {
			sc->pos += triple ? 3 : 1;
			token(ll, first_line, sc->line);
			return;
		}
		sc->pos++;
	}
}

/* The literal part of an f-string, up to a replacement field or the closing quote. */
static void scan_fstring_literal(struct scan *sc, struct lline *ll)
{
	struct nest *top = &sc->nest[sc->nnest - 1];
	int c;

	while ((c = string_char(sc, top->triple)) >= 0) {
		if (c == '\\') {
			if (!top->raw && at(sc, 1) == 'N' && at(sc, 2) == '{') {
				/* \N{NAME} is an escape, not a field. */
				sc->pos += 3;
				while ((c = at(sc, 0)) >= 0 && c != '}' && c != top->quote &&
				       !newline_at(sc, 0))
					sc->pos++;
				if (c == '}')
					sc->pos++;
			} else if (at(sc, 1) == '{' || at(sc, 1) == '}') {
				sc->pos++; /* a backslash does not escape a brace */
			} else {
				skip_escape(sc);
			}
			continue;
		}
		if (closes_string(sc, top->quote, top->triple)) {
			sc->pos += top->triple ? 3 : 1;
			pop_nest(sc);
			token(ll, sc->line, sc->line);
			return;
		}
		if (c == '{' || c == '}') {
			if (at(sc, 1) == c) {
				sc->pos += 2;
				continue;
			}
			if (c == '}') {
				sc->err = 1; /* single '}' is not allowed */
				return;
			}
			open_field(sc, ll, top);
			return;
		}
		sc->pos++;
	}
}

/* A format spec, up to a nested field or the '}' that ends the field. */
static void scan_format_spec(struct scan *sc, struct lline *ll)
{
	struct nest *top = &sc->nest[sc->nnest - 1];
	int c;

	while ((c = string_char(sc, top->triple)) >= 0) {
		if (closes_string(sc, top->quote, top->triple)) {
			sc->err = 1;
			return;
		}
		if (c == '{') {
			open_field(sc, ll, top);
			return;
		}
		if (c == '}') {
			sc->pos++;
			pop_nest(sc); /* the spec */
			pop_nest(sc); /* its field */
			token(ll, sc->line, sc->line);
			return;
		}
		if (c == '\\') {
			skip_escape(sc);
			continue;
		}
		sc->pos++;
	}
}

static int kw_of(const unsigned char *w, size_t n)
{
	static const struct {
		const char *word;
		int kw;
	} words[] = {
		{ "def", KW_DEF },	   { "class", KW_CLASS }, { "for", KW_FOR },
		{ "while", KW_WHILE },	   { "if", KW_IF },	  { "with", KW_WITH },
		{ "try", KW_TRY },	   { "match", KW_MATCH }, { "case", KW_CASE },
		{ "elif", KW_ELIF },	   { "else", KW_ELSE },	  { "except", KW_EXCEPT },
		{ "finally", KW_FINALLY }, { "async", KW_ASYNC },
	};
	size_t i;

	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		if (strlen(words[i].word) == n && !memcmp(words[i].word, w, n))
			return words[i].kw;
	}
	return KW_NONE;
}

static int is_header_kw(int kw)
{
	return kw != KW_NONE && kw != KW_DECORATOR && kw != KW_ASYNC;
}

/* A name: keyword bookkeeping for the first tokens of the line and for lambdas. */
static void name_token(struct scan *sc, struct lline *ll, const unsigned char *w, size_t n)
{
	int kw = kw_of(w, n);

	if (ll->ntok == 0) {
		ll->kw = kw;
	} else if (ll->ntok == 1 && ll->kw == KW_ASYNC) {
		if (kw == KW_DEF)
			ll->kw = KW_ASYNC_DEF;
		else if (kw == KW_FOR)
			ll->kw = KW_ASYNC_FOR;
		else if (kw == KW_WITH)
			ll->kw = KW_ASYNC_WITH;
		else
			sc->err = 1;
	} else if (!sc->nnest && !ll->colon && n == 6 && !memcmp(w, "lambda", 6)) {
		ll->lambdas++;
	}
	token(ll, sc->line, sc->line);
}

/* Whether an identifier is a string prefix; *fstr and *raw say which kind. */
static int string_prefix(const unsigned char *w, size_t n, int *fstr, int *raw)
{
	int seen_b = 0, seen_r = 0, seen_f = 0, seen_u = 0;
	size_t i;

	if (n < 1 || n > 2)
		return 0;
	for (i = 0; i < n; i++) {
		switch (w[i] | 0x20) {
		case 'b':
			seen_b++;
			break;
		case 'r':
			seen_r++;
			break;
		case 'f':
		case 't': /* 3.14 template strings scan like f-strings */
			seen_f++;
			break;
		case 'u':
			seen_u++;
			break;
		default:
			return 0;
		}
	}
	if (seen_b > 1 || seen_r > 1 || seen_f > 1 || seen_b + seen_f > 1 || (seen_u && n > 1))
		return 0;
	*fstr = seen_f;
	*raw = seen_r;
	return 1;
}

/* An identifier, keyword, or string prefix followed by its string. */
static void scan_word(struct scan *sc, struct lline *ll)
{
	size_t start = sc->pos, n;
	int c, fstr, raw;
	uint32_t cp;

	while ((c = at(sc, 0)) >= 0) {
		if (is_ident_ascii(c)) {
			sc->pos++;
			continue;
		}
		if (c < 0x80)
			break;
		n = utf8_decode(sc->s + sc->pos, sc->len - sc->pos, &cp);
		if (n && (is_unicode_space(cp) || cp == 0x200b || cp == 0xfeff)) {
			sc->err = 1; /* "invalid non-printable character" */
			return;
		}
		sc->pos += n ? n : 1;
	}
	c = at(sc, 0);
	if ((c == '\'' || c == '"') && string_prefix(sc->s + start, sc->pos - start, &fstr, &raw)) {
		if (!fstr) {
			scan_plain_string(sc, ll, sc->line);
			return;
		}
		token(ll, sc->line, sc->line);
		n = at(sc, 1) == c && at(sc, 2) == c;
		sc->pos += n ? 3 : 1;
		push_nest(sc, NEST_FSTR, c, n, raw);
		return;
	}
	name_token(sc, ll, sc->s + start, sc->pos - start);
}

static void scan_number(struct scan *sc, struct lline *ll)
{
	int c;

	/* Only the extent matters: digits, letters, '_' and '.'; a sign after an exponent. */
	for (;;) {
		c = at(sc, 0);
		if (is_ident_ascii(c) || c == '.') {
			sc->pos++;
		} else if ((c == '+' || c == '-') && ((sc->s[sc->pos - 1] | 0x20) == 'e')) {
			sc->pos++;
		} else {
			break;
		}
	}
	token(ll, sc->line, sc->line);
}

static void colon_token(struct scan *sc, struct lline *ll)
{
	int top = top_nest(sc);

	sc->pos++;
	if (top == NEST_FIELD) {
		token(ll, sc->line, sc->line);
		push_nest(sc, NEST_SPEC, sc->nest[sc->nnest - 1].quote,
			  sc->nest[sc->nnest - 1].triple, sc->nest[sc->nnest - 1].raw);
		return;
	}
	if (top >= 0 || ll->colon || !is_header_kw(ll->kw)) {
		token(ll, sc->line, sc->line);
		return;
	}
	if (ll->lambdas) {
		ll->lambdas--;
		token(ll, sc->line, sc->line);
		return;
	}
	/* The header's ':': the header is one segment, the body (if any) follows. */
	ll->colon = 1;
	ll->colon_ntok = ll->ntok;
	token(ll, sc->line, sc->line);
	if (lline_push_segment(sc, ll))
		return;
	ll->body_from = ll->nsegs;
}

static void close_bracket(struct scan *sc, struct lline *ll, int c)
{
	int top = top_nest(sc);

	sc->pos++;
	if ((c == ')' && top == NEST_PAREN) || (c == ']' && top == NEST_SQUARE) ||
	    (c == '}' && (top == NEST_CURLY || top == NEST_FIELD)))
		pop_nest(sc);
	else
		sc->err = 1;
	token(ll, sc->line, sc->line);
}

/*
 * At the start of a logical line: measures the indentation like CPython
 * 3.11's tokenizer and skips blank and comment-only lines.  Returns 1 at a
 * token, 0 at the end of the text.
 */
static int scan_indent(struct scan *sc, int *col, int *alt)
{
	int c, n, cont;

	for (;;) {
		*col = *alt = cont = 0;
		for (;;) {
			c = at(sc, 0);
			if (c == ' ') {
				(*col)++;
				(*alt)++;
			} else if (c == '\t') {
				*col = (*col / 8 + 1) * 8;
				(*alt)++;
			} else if (c == '\f') {
				*col = *alt = 0;
			} else if (c == '\\') {
				/* The first backslash fixes the indentation (3.11). */
				cont = cont ? cont : *col;
				n = newline_at(sc, 1);
				if (!n || sc->pos + 1 + n >= sc->len) {
					sc->err = 1;
					return 0;
				}
				sc->pos += n;
				sc->line++;
			} else {
				break;
			}
			sc->pos++;
		}
		if (cont)
			*col = *alt = cont;
		if (c == '#') {
			while (at(sc, 0) >= 0 && !newline_at(sc, 0))
				sc->pos++;
		}
		if (at(sc, 0) < 0)
			return 0;
		n = newline_at(sc, 0);
		if (!n)
			return 1;
		sc->pos += n; /* a blank or comment-only line */
		sc->line++;
	}
}

/* Updates the indentation stack for a line at col/alt; returns the new level or -1. */
static int indent_level(struct scan *sc, int col, int alt)
{
	if (col == sc->col[sc->depth]) {
		if (alt != sc->alt[sc->depth])
			return -1; /* TabError */
	} else if (col > sc->col[sc->depth]) {
		if (sc->depth + 1 >= MAX_INDENT || alt <= sc->alt[sc->depth])
			return -1;
		sc->depth++;
		sc->col[sc->depth] = col;
		sc->alt[sc->depth] = alt;
	} else {
		while (sc->depth > 0 && col < sc->col[sc->depth])
			sc->depth--;
		if (col != sc->col[sc->depth] || alt != sc->alt[sc->depth])
			return -1;
	}
	return sc->depth;
}

static void lline_reset(struct lline *ll)
{
	ll->first_line = ll->last_tok = 0;
	ll->kw = KW_NONE;
	ll->ntok = ll->colon = ll->colon_ntok = ll->lambdas = 0;
	ll->body_from = 0;
	ll->seg_first = -1;
	ll->nsegs = 0;
}

/* The tokens of one logical line, up to its NEWLINE. */
static void scan_tokens(struct scan *sc, struct lline *ll)
{
	int c, n, top, kind;

	while (!sc->err && !sc->oom) {
		top = top_nest(sc);
		if (top == NEST_FSTR) {
			scan_fstring_literal(sc, ll);
			continue;
		}
		if (top == NEST_SPEC) {
			scan_format_spec(sc, ll);
			continue;
		}
		c = at(sc, 0);
		if (c < 0) {
			if (sc->nnest)
				sc->err = 1;
			return;
		}
		n = newline_at(sc, 0);
		if (n) {
			sc->pos += n;
			sc->line++;
			if (!sc->nnest)
				return;
			continue;
		}
		switch (c) {
		case ' ':
		case '\t':
		case '\f':
			sc->pos++;
			break;
		case '#':
			while ((c = at(sc, 0)) >= 0 && !newline_at(sc, 0))
				sc->pos++;
			break;
		case '\\':
			n = newline_at(sc, 1);
			if (!n || sc->pos + 1 + n >= sc->len) {
				sc->err = 1;
				return;
			}
			sc->pos += 1 + n;
			sc->line++;
			break;
		case '\'':
		case '"':
			scan_plain_string(sc, ll, sc->line);
			break;
		case '(':
		case '[':
		case '{':
			sc->pos++;
			token(ll, sc->line, sc->line);
			kind = c == '(' ? NEST_PAREN : c == '[' ? NEST_SQUARE : NEST_CURLY;
			push_nest(sc, kind, 0, 0, 0);
			break;
		case ')':
		case ']':
		case '}':
			close_bracket(sc, ll, c);
			break;
		case ':':
			if (at(sc, 1) == '=') {
				sc->pos += 2;
				token(ll, sc->line, sc->line);
			} else {
				colon_token(sc, ll);
			}
			break;
		case ';':
			sc->pos++;
			if (sc->nnest) {
				token(ll, sc->line, sc->line);
				break;
			}
			if (ll->seg_first < 0) {
				sc->err = 1; /* an empty statement */
				return;
			}
			if (!ll->colon && (ll->kw == KW_MATCH || ll->kw == KW_CASE)) {
				ll->kw = KW_NONE; /* a soft keyword used as a name */
			} else if (!ll->colon && is_header_kw(ll->kw)) {
				sc->err = 1; /* a ';' inside a compound header */
				return;
			}
			lline_push_segment(sc, ll);
			ll->last_tok = sc->line;
			ll->ntok++;
			break;
		case '!':
			/* "!=", or a conversion inside a replacement field */
			if (at(sc, 1) != '=' && top != NEST_FIELD) {
				sc->err = 1;
				return;
			}
			sc->pos += at(sc, 1) == '=' ? 2 : 1;
			token(ll, sc->line, sc->line);
			break;
		case '@':
			if (ll->ntok == 0)
				ll->kw = KW_DECORATOR;
			sc->pos++;
			token(ll, sc->line, sc->line);
			break;
		case '$':
		case '?':
		case '`':
		case 0x7f:
			sc->err = 1;
			return;
		default:
			if (c < 0x20) {
				sc->err = 1; /* a control character outside strings */
				return;
			}
			if (is_ident_ascii(c) && !(c >= '0' && c <= '9')) {
				scan_word(sc, ll);
			} else if (c >= 0x80) {
				scan_word(sc, ll);
			} else if ((c >= '0' && c <= '9') ||
				   (c == '.' && at(sc, 1) >= '0' && at(sc, 1) <= '9')) {
				scan_number(sc, ll);
			} else {
				sc->pos++;
				token(ll, sc->line, sc->line);
			}
			break;
		}
	}
}

/*
 * Scans the next logical line.  Returns 1 with ll filled, 0 at the end of
 * the text or on an error (sc->err, sc->oom).
 */
static int next_logical_line(struct scan *sc, struct lline *ll)
{
	int col, alt;

	lline_reset(ll);
	if (!scan_indent(sc, &col, &alt) || sc->err)
		return 0;
	ll->depth = indent_level(sc, col, alt);
	if (ll->depth < 0) {
		sc->err = 1;
		return 0;
	}
	ll->first_line = sc->line;
	scan_tokens(sc, ll);
	if (sc->err || sc->oom || lline_push_segment(sc, ll))
		return 0;
	if (ll->kw == KW_ASYNC)
		sc->err = 1; /* "async" alone */
	return !sc->err;
}

/* ----------------------------------------------------------------- parsing */

static int new_node(struct parser *p, int kind, int first, int last, int parent)
{
	struct node *nodes, *n;
	int cap;

	if (p->nnodes == p->cap_nodes) {
		cap = p->cap_nodes ? p->cap_nodes * 2 : 256;
		if (cap > INT_MAX / (int)sizeof(*nodes)) {
			p->oom = 1;
			return -1;
		}
		nodes = realloc(p->nodes, (size_t)cap * sizeof(*nodes));
		if (!nodes) {
			p->oom = 1;
			return -1;
		}
		p->nodes = nodes;
		p->cap_nodes = cap;
	}
	n = &p->nodes[p->nnodes];
	n->kind = kind;
	n->parent = parent;
	n->first = first;
	n->end = last;
	n->tail = last;
	n->ctx = -1;
	return p->nnodes++;
}

/* Simple statements for segments [from, nsegs); a line-spanning gap splits them. */
static void add_simple(struct parser *p, const struct lline *ll, int from, int parent)
{
	int i = from, first, last, idx = -1;

	while (i < ll->nsegs) {
		first = ll->segs[i].first;
		last = ll->segs[i].last;
		/* Statements sharing or touching lines behave as one: merge them. */
		for (i++; i < ll->nsegs && ll->segs[i].first <= last + 1; i++) {
			if (ll->segs[i].last > last)
				last = ll->segs[i].last;
		}
		idx = new_node(p, ST_SIMPLE, first, last, parent);
		if (idx < 0)
			return;
	}
	if (idx >= 0 && ll->last_tok > p->nodes[idx].tail)
		p->nodes[idx].tail = ll->last_tok;
}

/* The body of a header line: inline simple statements, or an indented block to come. */
static void header_body(struct parser *p, const struct lline *ll, int node, int kind)
{
	if (!ll->colon) {
		p->err = 1;
		return;
	}
	if (ll->body_from < ll->nsegs) {
		if (kind == FR_MATCH) {
			p->err = 1;
			return;
		}
		add_simple(p, ll, ll->body_from, node);
	} else {
		p->pending_body = 1;
	}
}

static void push_frame(struct parser *p, int node, int h, int kind)
{
	struct frame *f;

	if (p->nframes == (int)(sizeof(p->frames) / sizeof(p->frames[0]))) {
		p->err = 1;
		return;
	}
	f = &p->frames[p->nframes++];
	f->node = node;
	f->h = h;
	f->kind = kind;
}

static int clause_ok(int frame_kind, int kw)
{
	switch (kw) {
	case KW_ELIF:
		return frame_kind == FR_IF;
	case KW_ELSE:
		return frame_kind == FR_IF || frame_kind == FR_LOOP || frame_kind == FR_TRY_EXCEPT;
	case KW_EXCEPT:
		return frame_kind == FR_TRY || frame_kind == FR_TRY_EXCEPT;
	case KW_FINALLY:
		return frame_kind == FR_TRY || frame_kind == FR_TRY_EXCEPT ||
		       frame_kind == FR_TRY_ELSE;
	}
	return 0;
}

/* A clause line continuing the compound statement of the frame at the top. */
static void clause(struct parser *p, const struct lline *ll)
{
	struct frame *f = &p->frames[p->nframes - 1];
	int node;

	switch (ll->kw) {
	case KW_ELIF:
		node = new_node(p, ST_IF, ll->first_line, ll->first_line, f->node);
		if (node < 0)
			return;
		f->node = node;
		break;
	case KW_ELSE:
		f->kind = f->kind == FR_TRY_EXCEPT ? FR_TRY_ELSE : FR_PLAIN;
		break;
	case KW_EXCEPT:
		f->kind = FR_TRY_EXCEPT;
		break;
	default:
		f->kind = FR_PLAIN;
		break;
	}
	header_body(p, ll, f->node, f->kind);
}

static void compound(struct parser *p, const struct lline *ll, int parent)
{
	static const struct {
		int stmt, frame;
	} kinds[] = {
		[KW_DEF] = { ST_FUNC, FR_PLAIN },
		[KW_CLASS] = { ST_CLASS, FR_PLAIN },
		[KW_FOR] = { ST_FOR, FR_LOOP },
		[KW_WHILE] = { ST_WHILE, FR_LOOP },
		[KW_IF] = { ST_IF, FR_IF },
		[KW_WITH] = { ST_WITH, FR_PLAIN },
		[KW_TRY] = { ST_TRY, FR_TRY },
		[KW_ASYNC_DEF] = { ST_ASYNC_FUNC, FR_PLAIN },
		[KW_ASYNC_FOR] = { ST_ASYNC_FOR, FR_LOOP },
		[KW_ASYNC_WITH] = { ST_ASYNC_WITH, FR_PLAIN },
		[KW_MATCH] = { ST_MATCH, FR_MATCH },
	};
	int node;

	if (ll->kw <= KW_NONE || ll->kw > KW_MATCH) {
		p->err = 1;
		return;
	}
	node = new_node(p, kinds[ll->kw].stmt, ll->first_line, ll->first_line, parent);
	if (node < 0)
		return;
	push_frame(p, node, ll->depth, kinds[ll->kw].frame);
	header_body(p, ll, node, kinds[ll->kw].frame);
}

/* Whether a line starting with the soft keyword "match" is a match statement. */
static int is_match_stmt(const struct lline *ll)
{
	return ll->colon && ll->colon_ntok >= 2 && ll->body_from == ll->nsegs;
}

static void parse_line(struct parser *p, const struct lline *ll)
{
	int d = ll->depth, kw = ll->kw, parent;
	struct frame *top;

	if (p->pending_body ? d != p->prev_depth + 1 : d > p->prev_depth)
		goto bad; /* expected an indented block / unexpected indent */
	if (p->decorated && (d != p->prev_depth || (kw != KW_DEF && kw != KW_ASYNC_DEF &&
						    kw != KW_CLASS && kw != KW_DECORATOR)))
		goto bad;
	p->pending_body = p->decorated = 0;
	p->prev_depth = d;

	while (p->nframes && p->frames[p->nframes - 1].h > d) {
		if (p->frames[p->nframes - 1].kind == FR_TRY)
			goto bad; /* try without except or finally */
		p->nframes--;
	}
	if (p->nframes && p->frames[p->nframes - 1].h == d) {
		if (clause_ok(p->frames[p->nframes - 1].kind, kw)) {
			clause(p, ll);
			return;
		}
		if (p->frames[p->nframes - 1].kind == FR_TRY)
			goto bad;
		p->nframes--;
	}
	if (kw == KW_ELIF || kw == KW_ELSE || kw == KW_EXCEPT || kw == KW_FINALLY)
		goto bad;
	top = p->nframes ? &p->frames[p->nframes - 1] : NULL;
	if (top ? top->h != d - 1 : d != 0)
		goto bad;
	parent = top ? top->node : -1;

	if (top && top->kind == FR_MATCH) {
		if (kw != KW_CASE || !ll->colon)
			goto bad;
		push_frame(p, top->node, d, FR_CASE);
		header_body(p, ll, parent, FR_CASE);
		return;
	}
	if (kw == KW_MATCH && !is_match_stmt(ll))
		kw = KW_NONE;
	switch (kw) {
	case KW_DECORATOR:
		p->decorated = 1;
		break;
	case KW_NONE:
	case KW_CASE:
		add_simple(p, ll, 0, parent);
		break;
	default:
		compound(p, ll, parent);
		break;
	}
	return;
bad:
	p->err = 1;
}

static void parse_end(struct parser *p)
{
	int i;

	if (p->pending_body || p->decorated)
		p->err = 1;
	for (i = 0; i < p->nframes; i++) {
		if (p->frames[i].kind == FR_TRY)
			p->err = 1;
	}
	p->nframes = 0;
}

/* Builds the statement tree; returns 0, -EINVAL for text that is not Python, or -ENOMEM. */
static int build_tree(const unsigned char *s, size_t len, struct parser *p)
{
	struct scan *sc;
	struct lline ll = { 0 };
	int err = 0;

	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return -ENOMEM;
	sc->s = s;
	sc->len = len;
	sc->line = 1;
	if (len >= 3 && s[0] == 0xef && s[1] == 0xbb && s[2] == 0xbf)
		sc->pos = 3;
	if (memchr(s, 0, len))
		sc->err = 1; /* "source code cannot contain null bytes" */
	while (!sc->err && !p->err && !p->oom && next_logical_line(sc, &ll))
		parse_line(p, &ll);
	if (!sc->err && !sc->oom && !p->err && !p->oom)
		parse_end(p);
	if (sc->oom || p->oom)
		err = -ENOMEM;
	else if (sc->err || p->err)
		err = -EINVAL;
	free(ll.segs);
	free(sc);
	return err;
}

/* --------------------------------------------------------------- the spans */

/* "Next unassigned line at or after x" with path halving; nx[nlines + 1] is a sentinel. */
static int next_free(int *nx, int x)
{
	while (nx[x] != x) {
		nx[x] = nx[nx[x]];
		x = nx[x];
	}
	return x;
}

static void free_reset(int *nx, int nlines)
{
	int i;

	for (i = 0; i <= nlines + 1; i++)
		nx[i] = i;
}

/* Ends of compound statements, then find_outermost_loop's context per node. */
static void finish_tree(struct node *nodes, int n)
{
	struct node *nd;
	int i, in, oc;

	for (i = n - 1; i >= 0; i--) {
		nd = &nodes[i];
		if (nd->kind != ST_SIMPLE)
			nd->end = nd->tail;
		if (nd->parent >= 0 && nodes[nd->parent].tail < nd->tail)
			nodes[nd->parent].tail = nd->tail;
	}
	for (i = 0; i < n; i++) {
		nd = &nodes[i];
		in = nd->parent >= 0 ? nodes[nd->parent].ctx : -1;
		oc = in >= 0 ? nodes[in].kind : -1;
		nd->ctx = in;
		if (nd->kind == ST_CLASS || nd->kind == ST_FUNC || nd->kind == ST_ASYNC_FUNC)
			nd->ctx = i;
		else if ((nd->kind == ST_FOR || nd->kind == ST_WHILE || nd->kind == ST_ASYNC_FOR ||
			  nd->kind == ST_IF) &&
			 (oc < 0 || oc == ST_FUNC || oc == ST_ASYNC_FUNC || oc == ST_CLASS))
			nd->ctx = i;
	}
}

/* Gives each still-unassigned line of the innermost node of the given kinds that node's span. */
static void assign_innermost(const struct node *nodes, int n, unsigned int kinds, int *nx,
			     struct line_regions *lines, int nlines, int which)
{
	const struct node *nd;
	int i, l;

	for (i = n - 1; i >= 0; i--) {
		nd = &nodes[i];
		if (!(kinds & (1u << nd->kind)) || nd->first < 1 || nd->end > nlines)
			continue;
		for (l = next_free(nx, nd->first); l <= nd->end; l = next_free(nx, l)) {
			if (which == 0) {
				lines[l - 1].start_region = nd->first;
				lines[l - 1].end_region = nd->end;
			} else {
				lines[l - 1].start_function = nd->first;
				lines[l - 1].end_function = nd->end;
			}
			nx[l] = l + 1;
		}
	}
}

static void assign_outermost(const struct node *nodes, int n, const unsigned char *blank, int *nx,
			     struct line_regions *lines, int nlines)
{
	const struct node *nd, *cx;
	int i, l, loop, block;

	for (i = n - 1; i >= 0; i--) {
		nd = &nodes[i];
		if (nd->first < 1 || nd->end > nlines)
			continue;
		cx = nd->ctx >= 0 ? &nodes[nd->ctx] : NULL;
		loop = cx &&
		       (cx->kind == ST_FOR || cx->kind == ST_WHILE || cx->kind == ST_ASYNC_FOR);
		block = nd->kind == ST_WITH || nd->kind == ST_IF || nd->kind == ST_CLASS ||
			nd->kind == ST_FUNC || nd->kind == ST_ASYNC_FUNC;
		for (l = next_free(nx, nd->first); l <= nd->end; l = next_free(nx, l)) {
			if (loop) {
				lines[l - 1].start_outermost_loop = cx->first;
				lines[l - 1].end_outermost_loop = cx->end;
			} else if (block && !blank[l - 1]) {
				lines[l - 1].start_outermost_loop = nd->first;
				lines[l - 1].end_outermost_loop = nd->end;
			} else {
				lines[l - 1].start_outermost_loop = l;
				lines[l - 1].end_outermost_loop = l;
			}
			nx[l] = l + 1;
		}
	}
}

static int compute_spans(struct regions *r, struct node *nodes, int n, const unsigned char *blank)
{
	int nl = r->nlines, *nx, l;

	nx = malloc(((size_t)nl + 2) * sizeof(*nx));
	if (!nx)
		return -ENOMEM;
	finish_tree(nodes, n);

	/* find_regions: loops first, then sync functions, then classes. */
	free_reset(nx, nl);
	assign_innermost(nodes, n, 1u << ST_FOR | 1u << ST_WHILE, nx, r->lines, nl, 0);
	assign_innermost(nodes, n, 1u << ST_FUNC, nx, r->lines, nl, 0);
	assign_innermost(nodes, n, 1u << ST_CLASS, nx, r->lines, nl, 0);

	free_reset(nx, nl);
	assign_innermost(nodes, n, 1u << ST_FUNC | 1u << ST_ASYNC_FUNC | 1u << ST_CLASS, nx,
			 r->lines, nl, 1);

	free_reset(nx, nl);
	assign_outermost(nodes, n, blank, nx, r->lines, nl);

	for (l = 1; l <= nl; l++) {
		struct line_regions *lr = &r->lines[l - 1];

		if (!lr->start_region)
			lr->start_region = lr->end_region = l;
		if (!lr->start_outermost_loop)
			lr->start_outermost_loop = lr->end_outermost_loop = l;
	}
	free(nx);
	return 0;
}

/* ------------------------------------------------------------------ lines */

/* Counts the lines as Python's readlines() does after universal-newline translation. */
static int count_lines(const unsigned char *s, size_t len, int *nlines)
{
	size_t i;
	long n = 0;

	for (i = 0; i < len; i++) {
		if (s[i] == '\n' || (s[i] == '\r' && (i + 1 == len || s[i + 1] != '\n'))) {
			if (++n > INT_MAX - 2)
				return -EOVERFLOW;
		}
	}
	if (len && s[len - 1] != '\n' && s[len - 1] != '\r')
		n++;
	*nlines = (int)n;
	return 0;
}

/* Marks the lines that str.strip() leaves empty. */
static void mark_blank(const unsigned char *s, size_t len, unsigned char *blank, int nlines)
{
	size_t i = 0, n;
	int l = 0, is_blank = 1;
	uint32_t cp;

	if (len >= 3 && s[0] == 0xef && s[1] == 0xbb && s[2] == 0xbf)
		i = 3;
	while (i < len && l < nlines) {
		if (s[i] == '\n' || s[i] == '\r') {
			blank[l++] = (unsigned char)is_blank;
			is_blank = 1;
			i += (s[i] == '\r' && i + 1 < len && s[i + 1] == '\n') ? 2 : 1;
			continue;
		}
		n = utf8_decode(s + i, len - i, &cp);
		if (!n || !(cp < 0x80 ? is_ascii_space((int)cp) : is_unicode_space(cp)))
			is_blank = 0;
		i += n ? n : 1;
	}
	if (l < nlines)
		blank[l] = (unsigned char)is_blank;
}

static void trivial(struct regions *r)
{
	int l;

	for (l = 1; l <= r->nlines; l++) {
		struct line_regions *lr = &r->lines[l - 1];

		lr->start_region = lr->end_region = l;
		lr->start_outermost_loop = lr->end_outermost_loop = l;
		lr->start_function = lr->end_function = 0;
	}
}

struct regions *regions__compute(const char *src, size_t len)
{
	const unsigned char *s = (const unsigned char *)src;
	struct parser p = { 0 };
	unsigned char *blank = NULL;
	struct regions *r = NULL;
	int err, nlines;

	if (!s || !len) {
		s = (const unsigned char *)"";
		len = 0;
	}
	err = count_lines(s, len, &nlines);
	if (err)
		goto cleanup;
	r = calloc(1, sizeof(*r));
	blank = calloc((size_t)nlines + 1, 1);
	if (!r || !blank) {
		err = -ENOMEM;
		goto cleanup;
	}
	r->nlines = nlines;
	r->lines = calloc((size_t)nlines + 1, sizeof(*r->lines));
	if (!r->lines) {
		err = -ENOMEM;
		goto cleanup;
	}
	mark_blank(s, len, blank, nlines);

	err = build_tree(s, len, &p);
	if (!err)
		err = compute_spans(r, p.nodes, p.nnodes, blank);
	if (err == -ENOMEM)
		goto cleanup;
	/* Not Python (-EINVAL): the trivial values, as when Scalene's ast.parse fails. */
	r->parsed = !err;
	if (err)
		trivial(r);
	err = 0;
cleanup:
	free(p.nodes);
	free(blank);
	if (err) {
		regions__free(r);
		errno = -err;
		return NULL;
	}
	return r;
}

int regions__nlines(const struct regions *r)
{
	return r ? r->nlines : 0;
}

int regions__parsed(const struct regions *r)
{
	return r ? r->parsed : 0;
}

const struct line_regions *regions__line(const struct regions *r, int lineno)
{
	if (!r || lineno < 1 || lineno > r->nlines)
		return NULL;
	return &r->lines[lineno - 1];
}

void regions__free(struct regions *r)
{
	if (!r)
		return;
	free(r->lines);
	free(r);
}
