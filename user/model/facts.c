// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/facts.h"

struct facts *facts__new(void)
{
	return calloc(1, sizeof(struct facts));
}

void facts__free(struct facts *f)
{
	int i;

	if (!f)
		return;
	for (i = 0; i < f->nwarnings; i++)
		free(f->warnings[i]);
	free(f->threads);
	free(f);
}

int facts__warn(struct facts *f, const char *msg)
{
	char *copy;

	if (f->nwarnings >= FACTS_MAX_WARNINGS)
		return -ENOSPC;
	copy = strdup(msg);
	if (!copy)
		return -ENOMEM;
	f->warnings[f->nwarnings++] = copy;
	return 0;
}
