#!/bin/sh
# Runs "$1" (an interpreter) on the rest of the arguments, in one of two ways:
#   exec_python.sh exec  PY prog.py args...   the shell becomes Python
#   exec_python.sh child PY prog.py args...   the shell waits for Python
how=$1
shift
if [ "$how" = exec ]; then
	exec "$@"
fi
"$@"
status=$?
echo "shell: python exited $status"
exit $status
