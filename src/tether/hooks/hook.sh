#!/usr/bin/env bash
# tether's hook client without an interpreter start-up:  bash hook.sh PYTHON AGENT [OPTIONS] < HOOK_JSON
#
# What `tether hook install` writes where bash exists (docs/hook-latency.md, "The bash client"). A call costs bash's
# start-up and one round trip to the user's daemon (tether/hooks/daemon.py) over loopback TCP: bash cannot open
# a Unix socket, so the daemon publishes a port and two tokens in `<socket>.tcp`. Builtins only.
#
# Whenever anything is off before the daemon has the request (options this client does not relay, input over
# 32 KiB or holding a NUL byte, no endpoint file, one that is not the user's or is older than this script,
# connection refused, a handshake that fails, a bash without /dev/tcp) it execs the Python launcher (launch.py beside this file, run by PYTHON) with the same
# arguments and the input it already read: that path asks the daemon on its Unix socket or decides in-process
# and starts a daemon, so the answer is never weaker. Once the daemon has the request, a reply that is not
# exactly well formed is exit 2 with the reason (the daemon may have recorded the call: not asked twice).
# It never exits 0 or 1 without a valid reply from the daemon: exit 1 reads as "no objection" to the agent.

# Input over this goes to the launcher (a Write of a big file): bash reads a pipe one byte per system call.
relay_limit=32768
py=${1-}
shift
args=("$@")
self=${BASH_SOURCE[0]}
here=${self%/*}
[[ $here != "$self" ]] || here=.
input=
have_input=0 # 1: all of it is in $input; 2: $input and then the rest of stdin; 3: $input, a NUL, the rest
[[ ${LC_ALL+set} ]] && caller_lc_all=$LC_ALL
LC_ALL=C # lengths in bytes, no multibyte decoding
trap '' PIPE # a daemon gone mid-write is a failed write, not a dead client
shopt -s execfail

refuse() {
	printf 'tether refused (fail closed): %s\n' "$1" >&2
	exit 2
}

fallback() {
	if [[ ${caller_lc_all+set} ]]; then LC_ALL=$caller_lc_all; else unset LC_ALL; fi
	trap - PIPE # cat feeding a launcher that stopped reading (input over its limit) ends quietly
	local launch=("$py" -I -S "$here/launch.py" "${args[@]}")
	case $have_input in
	0) exec "${launch[@]}" ;;
	1) exec "${launch[@]}" < <(printf '%s' "$input") ;;
	2) exec "${launch[@]}" < <(printf '%s' "$input" && exec cat) ;;
	3) exec "${launch[@]}" < <(printf '%s\0' "$input" && exec cat) ;;
	esac
	refuse "the hook client could not run the launcher with '$py'"
}

# field KEY VALUE: add KEY=<VALUE as an absolute path> to the request (the Python client's abspath; the daemon
# normalises it), or as given when it is a store URL (postgresql://...).
field() {
	[[ -n $2 ]] || return 0
	local value=$2
	[[ $value == /* || $value == *://* ]] || value=$PWD/$value
	[[ $value != *$'\n'* ]] || fallback
	fields+=("$1=$value")
}

((BASH_VERSINFO[0] > 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] >= 2))) || fallback
[[ ${TETHER_HOOK_DAEMON-1} != 0 ]] || fallback
agent=${args[0]-}
[[ $agent == claude-code || $agent == codex ]] || fallback
envelope=${TETHER_ENVELOPE-}
db=${TETHER_DB-}
set -- "${args[@]:1}"
while (($#)); do
	case $1 in
	--envelope) (($# >= 2)) && [[ -n $2 ]] || fallback; envelope=$2 ;;
	--db) (($# >= 2)) && [[ -n $2 ]] || fallback; db=$2 ;;
	*) fallback ;; # --no-daemon, or an option the launcher explains
	esac
	shift 2
done
fields=("agent=$agent")
field envelope "$envelope"
field db "$db"
field project "${CLAUDE_PROJECT_DIR-}"

# The input: read returns 0 only when it stopped early, at a NUL byte or past the relay limit; the launcher
# then gets every byte (what was read, and the rest) and answers it as the in-process path does.
if IFS= read -r -d '' -n $((relay_limit + 1)) input; then
	have_input=$((${#input} > relay_limit ? 2 : 3))
	fallback
fi
have_input=1

sock=${TETHER_HOOK_SOCKET-}
if [[ -z $sock ]]; then
	if [[ -n ${XDG_RUNTIME_DIR-} ]]; then sock=$XDG_RUNTIME_DIR/tether/hookd.sock; else sock=/tmp/tether-$UID/hookd.sock; fi
fi
dir=${sock%/*}
[[ $dir != "$sock" ]] || dir=.
endpoint=$sock.tcp
[[ -d $dir && ! -L $dir && -O $dir && -f $endpoint && ! -L $endpoint && -O $endpoint ]] || fallback
[[ $endpoint -nt $self ]] || fallback # a daemon started before this script was installed: other code
IFS=' ' read -r port client_token server_token script <"$endpoint" || fallback
[[ $port =~ ^[0-9]{1,5}$ && $client_token =~ ^[0-9a-f]{64}$ && $server_token =~ ^[0-9a-f]{64}$ ]] || fallback
[[ $script == "$self" ]] || fallback # the daemon of another tether installation

{ exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null || fallback
printf '%s\n' "$client_token" >&3 2>/dev/null || fallback
IFS= read -r -t 5 -n 65 line <&3 || fallback
[[ $line == "$server_token" ]] || fallback # not the daemon that wrote the endpoint (e.g. a port taken since)
# The request: NUL-separated "key=value" fields, an empty one, the input. No newline in the format: bash's
# stdout is line-buffered, and one write per line would meet Nagle's algorithm and delayed ACKs.
format=
for _ in "${fields[@]}"; do format+='%s\0'; done
printf "$format"'size=%s\0\0%s' "${fields[@]}" "${#input}" "$input" >&3 2>/dev/null || fallback

# The reply: "<exit> <stdout bytes> <stderr bytes>\n<stdout><stderr>", exactly.
IFS=' ' read -r -n 64 code out_size err_size extra <&3 || refuse "the daemon closed the connection without a reply"
size='^(0|[1-9][0-9]{0,8})$' # no leading zero: bash arithmetic would read it as octal
[[ $code =~ ^[02]$ && $out_size =~ $size && $err_size =~ $size && -z $extra ]] ||
	refuse "the daemon's reply is malformed"
out=
err=
((out_size == 0)) || IFS= read -r -N "$out_size" out <&3
((${#out} == out_size)) || refuse "the daemon's reply was cut short"
((err_size == 0)) || IFS= read -r -N "$err_size" err <&3
((${#err} == err_size)) || refuse "the daemon's reply was cut short"
! IFS= read -r -N 1 extra <&3 || refuse "the daemon's reply is longer than it says"
exec 3<&-
[[ -z $out ]] || printf '%s\n' "$out" || refuse "could not write the reply"
printf '%s' "$err" >&2
exit "$code"
