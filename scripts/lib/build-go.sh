# Sourced by scripts/bootstrap.sh and scripts/test-tools.sh (needs ROOT, BIN and say): builds a Go
# tool once per version into a cache outside the checkout (a fresh clone, a worktree and CI's clone reuse
# it; a change to the Go version, the module or a flag builds anew) and copies it into build/bin.
TOOL_CACHE=${VTO_TOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vto-tools}
build_go() {  # build_go NAME MODULE_DIR PACKAGE [go build flags]
  local name=$1 dir=$2 pkg=$3; shift 3
  local key
  key=$( { go env GOVERSION GOOS GOARCH; echo "$name $pkg $*"; cat "$dir"/go.mod "$dir"/go.sum "$dir"/*.go 2>/dev/null || true; } \
         | sha256sum | cut -c1-16)
  local cached=$TOOL_CACHE/$name-$key
  if [ ! -x "$cached" ]; then
    say "building $name (a first build of a Go tool can take many minutes)"
    mkdir -p "$TOOL_CACHE"
    (cd "$dir" && go build -trimpath "$@" -o "$cached.tmp" "$pkg") && mv "$cached.tmp" "$cached"
  fi
  cmp -s "$cached" "$BIN/$name" || cp "$cached" "$BIN/$name"
}
