#!/bin/sh
# The least a diff of one changed root can do: check out the base revision, build the root
# there and here, diff the texts. usage: changed_floor.sh BASE ROOT KUSTOMIZE-COMMAND
set -e
base=$1 root=$2 kustomize=$3
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/base" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
git worktree add --detach --quiet "$tmp/base" "$(git merge-base HEAD "$base")"
$kustomize "$tmp/base/$root" > "$tmp/old.yaml" &
$kustomize "$root" > "$tmp/new.yaml"
wait
diff -u "$tmp/old.yaml" "$tmp/new.yaml"
