#!/usr/bin/env bash
# Rotate the gateway's bearer token with no restart and no MCP session lost (docs/runbooks.md).
#
#   rotate-gateway-token.sh begin  FILE              a new token first in FILE, the old kept after it
#   rotate-gateway-token.sh finish FILE              only the first (new) token left in FILE
#   rotate-gateway-token.sh begin  --kubernetes [NAMESPACE]   the same on the Secret codecompass-secrets
#   rotate-gateway-token.sh finish --kubernetes [NAMESPACE]   (key CODECOMPASS_GATEWAY_AUTH_TOKEN)
#
# `begin` prints the new token on stdout, for the clients. The gateway accepts every token the file
# holds and reads it again when it changes: between `begin` and `finish` both tokens work, so clients
# move over at their own pace. FILE is what CODECOMPASS_GATEWAY_AUTH_TOKEN_FILE names (compose:
# deploy/gateway-token). It is rewritten in place, never replaced: compose bind-mounts that one
# file, and a container keeps seeing the old file if a new one takes its name.
set -euo pipefail

SECRET=codecompass-secrets
KEY=CODECOMPASS_GATEWAY_AUTH_TOKEN

die() { echo "rotate-gateway-token: $*" >&2; exit 2; }

new_token() { od -An -tx1 -N32 /dev/urandom | tr -d ' \n'; }

# The tokens of a token file's text, one a line, as the gateway reads them (blank and # lines aside).
tokens_of() { sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' | grep -v -e '^$' -e '^#' || true; }

rotated() {  # $1: begin|finish, stdin: the current text; stdout: the new text
    local current
    current=$(tokens_of)
    [ -n "$current" ] || die "no token there to rotate from: set one first (docs/deploy.md)"
    if [ "$1" = begin ]; then
        printf '%s\n%s\n' "$(new_token)" "$current"
    else
        printf '%s\n' "$current" | head -n 1
    fi
}

[ $# -ge 2 ] || die "usage: $0 begin|finish FILE | begin|finish --kubernetes [NAMESPACE]"
step=$1
[ "$step" = begin ] || [ "$step" = finish ] || die "the first argument is begin or finish, not '$step'"

if [ "$2" = --kubernetes ]; then
    namespace=${3:-codecompass}
    encoded=$(kubectl -n "$namespace" get secret "$SECRET" -o "jsonpath={.data.$KEY}") \
        || die "cannot read the Secret $SECRET in namespace $namespace"
    text=$(printf '%s' "$encoded" | base64 -d | rotated "$step")
    data=$(printf '%s\n' "$text" | base64 | tr -d '\n')
    kubectl -n "$namespace" patch secret "$SECRET" --type merge -p "{\"data\":{\"$KEY\":\"$data\"}}" >/dev/null \
        || die "cannot update the Secret $SECRET in namespace $namespace"
else
    file=$2
    [ -f "$file" ] || die "$file: no such token file"
    text=$(rotated "$step" <"$file")
    # In place (same inode): truncate and write, never a rename.
    printf '%s\n' "$text" >"$file"
fi
if [ "$step" = begin ]; then
    printf '%s\n' "$text" | head -n 1
fi
