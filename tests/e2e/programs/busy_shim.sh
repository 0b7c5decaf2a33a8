#!/bin/sh
# A launcher like pyenv's shims: some shell work, then exec of the
# interpreter "$1" on the rest of the arguments.
i=0
while [ "$i" -lt 30000 ]; do
	i=$((i + 1))
done
exec "$@"
