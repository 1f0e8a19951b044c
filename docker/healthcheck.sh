#!/bin/bash
# The images' HEALTHCHECK: GET PATH (default /health) from the server in this
# container with bash's /dev/tcp, so the runtime image needs no curl; exits 0
# on a 200, 1 otherwise (503 while the model loads or the server shuts down).
#   thermocline-healthcheck [/health]
set -euo pipefail
path=${1:-/health}
port=${THERMOCLINE_PORT:-8080}
exec 3<>"/dev/tcp/127.0.0.1/$port" || { echo "healthcheck: nothing listens on port $port" >&2; exit 1; }
printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' "$path" >&3
read -r -t 5 _ status _ <&3 || { echo "healthcheck: no answer on port $port" >&2; exit 1; }
body=$(cat <&3 | tr -d '\r' | sed '1,/^$/d')
exec 3<&-
if [ "$status" = 200 ]; then
  echo "$body"
  exit 0
fi
echo "healthcheck: $path answered $status: $body" >&2
exit 1
