/* DO NOT EDIT - regenerate with make pyoffsets */
/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Every CPython minor version with a table.  Find a version's table by
 * walking py_offsets_table up to its NULL and matching ->minor and
 * ->free_threaded.
 */
#ifndef PYOFFSETS_CPYTHON_H
#define PYOFFSETS_CPYTHON_H

#include <stddef.h>

#include "pyoffsets.h"
#include "cpython-3.9.h"
#include "cpython-3.10.h"
#include "cpython-3.11.h"
#include "cpython-3.12.h"
#include "cpython-3.13.h"
#include "cpython-3.14.h"
#include "cpython-3.15.h"
#include "cpython-3.13t.h"

static const struct py_offsets *const py_offsets_table[] = {
	&py_offsets_3_9,
	&py_offsets_3_10,
	&py_offsets_3_11,
	&py_offsets_3_12,
	&py_offsets_3_13,
	&py_offsets_3_14,
	&py_offsets_3_15,
	&py_offsets_3_13t,
	NULL,
};

#endif /* PYOFFSETS_CPYTHON_H */
