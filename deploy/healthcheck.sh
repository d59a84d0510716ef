#!/bin/bash
# healthcheck.sh - container HEALTHCHECK: GET /healthz, exit 0 on HTTP 200.
# The slim image has no curl or wget; bash is Essential in Debian, so its
# /dev/tcp redirection costs no extra bytes in the image. The address comes
# from REDUCED_LISTEN, the same variable the daemon reads.
set -u
listen=${REDUCED_LISTEN:-127.0.0.1:8080}
port=${listen##*:}
host=${listen%:*}
host=${host#[}
host=${host%]}
case $host in
  "" | 0.0.0.0 | "*") host=127.0.0.1 ;;
  ::) host=::1 ;;
esac
exec 3<>"/dev/tcp/$host/$port" || exit 1
printf 'GET /healthz HTTP/1.0\r\nHost: %s\r\nUser-Agent: reduced-healthcheck\r\n\r\n' "$host" >&3
IFS= read -r -t 2 status <&3 || exit 1
case $status in
  "HTTP/1."?" 200 "*) exit 0 ;;
esac
echo "healthcheck: $status" >&2
exit 1
