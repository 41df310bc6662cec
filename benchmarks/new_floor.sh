#!/bin/sh
# The least `rlgen new` can do: write the repository's files, build each root its check before
# the first commit renders (JOBS at a time), make that commit.
# usage: new_floor.sh FILES DEST JOBS KUSTOMIZE-COMMAND ROOT...
set -e
files=$1 dest=$2 jobs=$3 kustomize=$4
shift 4
cp -r "$files" "$dest"
cd "$dest"
printf '%s\n' "$@" | xargs -P "$jobs" -n 1 $kustomize > /dev/null
git init -q
git add -A
git -c user.name=bench -c user.email=bench@example.com commit -q -m "first commit"
