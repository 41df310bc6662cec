#!/usr/bin/env bash
# Builds and pushes the images of this repository that the registry does not hold yet. The
# images workflow (.github/workflows/images.yaml) runs it on every push that changes images/;
# run it by hand the same way after logging in to the registry.
#
#   bash images/build.sh           build and push each image the registry lacks
#   bash images/build.sh --list    print those images, build nothing
#
# Each tag ends in a hash of its folder's files as git tracks them (sha256sum of each file, then
# of that list; untracked files do not count), so a
# tag the registry holds is an image of exactly these files and is never built again. rlgen
# wrote the tags below, the RayJob's and the Jobs' images with them: a folder whose files no
# longer match its tag (edited by hand) is refused, as the cluster would run the old image.
#
# Needs crane (github.com/google/go-containerregistry/cmd/crane) on PATH, and docker with buildx
# unless IMAGE_BUILD names another builder, run as `$IMAGE_BUILD CONTEXT REFERENCE`, which
# must build CONTEXT and push REFERENCE. A folder with a build.sh of its own (a plugin's image
# built from upstream source, such as images/sandbox-manager) is built by it, whatever
# IMAGE_BUILD says: `sh CONTEXT/build.sh REFERENCE` builds and pushes REFERENCE. With REGISTRY_USERNAME and REGISTRY_PASSWORD set, it
# logs in to each registry first (crane auth login: docker's config file, which docker reads too).
set -euo pipefail
cd "$(dirname "$0")/.."

# Folder, then the reference rlgen tagged it with.
images=(
{%- for image in repo.images %}
  "{{ image.context }} {{ image.ref }}"
{%- endfor %}
)
{% raw %}
list_only=false
case "${1:-}" in
  --list) list_only=true ;;
  "") ;;
  *) echo "usage: bash images/build.sh [--list]" >&2; exit 2 ;;
esac

context_hash() {
  (cd "$1" && git ls-files -z | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-12
}

# Whether the registry holds $1: a missing tag or repository is "no"; anything else (a refused
# login, an unreachable registry) stops the script rather than rebuilding blindly.
present() {
  local out
  if out=$(crane digest "$1" 2>&1); then
    return 0
  fi
  case "$out" in
    *MANIFEST_UNKNOWN*|*NAME_UNKNOWN*|*"404 Not Found"*) return 1 ;;
  esac
  echo "images/build.sh: cannot read $1 from its registry: $out" >&2
  exit 1
}

if [ -n "${REGISTRY_USERNAME:-}" ]; then
  for entry in "${images[@]}"; do
    host=${entry#* }; host=${host%%/*}
    printf '%s\n' "${REGISTRY_PASSWORD:?REGISTRY_PASSWORD is not set}" \
      | crane auth login "$host" --username "$REGISTRY_USERNAME" --password-stdin
  done
fi

missing=()
for entry in "${images[@]}"; do
  context=${entry%% *} ref=${entry#* }
  hash=$(context_hash "$context")
  if [ "${ref##*-}" != "$hash" ] && [ "${ref##*:}" != "$hash" ]; then
    echo "images/build.sh: $context no longer matches its tag ${ref##*:} (its files hash to $hash):" \
      "change it through rlgen (rlgen update; a plugin's packages), not by hand" >&2
    exit 1
  fi
  present "$ref" || missing+=("$entry")
done

for entry in "${missing[@]}"; do
  context=${entry%% *} ref=${entry#* }
  if $list_only; then
    echo "$ref ($context)"
  else
    echo "Building $ref from $context"
    if [ -f "$context/build.sh" ]; then
      sh "$context/build.sh" "$ref"
    elif [ -n "${IMAGE_BUILD:-}" ]; then
      # shellcheck disable=SC2086 # split on purpose: a command and its arguments
      $IMAGE_BUILD "$context" "$ref"
    else
      docker buildx build --push --tag "$ref" "$context"
    fi
    present "$ref" || { echo "images/build.sh: $ref is not in the registry after its build" >&2; exit 1; }
    echo "Pushed $ref ($(crane digest "$ref"))"
  fi
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "Every image is in its registry."
fi
{% endraw -%}
