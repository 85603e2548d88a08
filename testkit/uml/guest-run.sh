#!/bin/bash
# Starts one long-running process in a user-mode-linux guest the way a container runtime starts a container's
# process (testkit/uml/guest-process.ts writes DIR and starts this script in the background; see
# docs/data-path-tests.md). DIR is on the host's side of hostfs, so the host reads what is written here at once.
#
#   DIR/argv  the program and its arguments, each ending in a NUL byte
#   DIR/env   NAME=VALUE entries, each ending in a NUL byte: the whole environment (nothing is inherited)
#   DIR/cwd   the working directory, ending in a NUL byte
#
# Writes DIR/output.log (stdout and stderr), DIR/pid (the process's guest pid and a newline, once it runs) and
# DIR/status (its wait status and a newline once it ended: the exit code, or 128 + the signal's number, as a
# container runtime reports it). The process leads a process group of its own (set -m), so one kill of the
# group ends it and everything it started, as a container's end does, while this script stays to write the
# status. Builtins only, besides the program itself and env(1): every exec costs 0.1-0.5 s in the guest.
d=$1
mapfile -d '' -t argv <"$d/argv"
mapfile -d '' -t envs <"$d/env"
mapfile -d '' -t cwd <"$d/cwd"
set -m
(
	cd -- "${cwd[0]}" || exit 127
	exec env -i "${envs[@]}" "${argv[@]}"
) >"$d/output.log" 2>&1 </dev/null &
pid=$!
echo "$pid" >"$d/pid"
wait "$pid"
echo "$?" >"$d/status"
