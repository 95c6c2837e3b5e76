#!/usr/bin/env bash
# Measures the latency of running /bin/true through `ironvise exec` against
# bare /bin/true, bubblewrap and, when installed, `codex sandbox` and `srt`,
# with hyperfine, and prints each median and its ratios to bubblewrap (its
# plainest sandbox, and one with the native tier's namespaces)
# (docs/operate/performance.md#exec-latency).
#
#   scripts/bench-exec.sh [--quick] [--bin PATH]... [--runs N] [--parallel N]
#
# --bin names an ironvise binary to measure (repeatable, e.g. a build before
# and after a change), with a row for the ironvise-exec beside it when there
# is one (a binary built without the server needs the ironvise-server beside
# it for its daemon rows); without it the script builds ./cmd/ironvise as
# make build does (ironvise and ironvise-server) and ./cmd/ironvise-exec
# into a temporary directory. Each binary gets a data directory of its own, created
# fresh on disk (under /var/tmp, not a tmpfs) for this run and shared by its
# serve and its rows; the warm-up runs bring it to the steady state. The
# rows of the first binary run it without a wrapper, as the other
# sandboxes run; a further binary's rows go through env, measured as a row
# of its own. It prints what a page fault costs on the machine first
# (scripts/pagetouch), and after hyperfine's table runs the first binary's
# exec rows alternately with bubblewrap, each after 150 ms of quiet: the
# ratio to trust for the target; then the CPU one command costs, by
# process (the client, serve, the launcher and the command), beside
# bubblewrap's.
# --quick takes fewer runs. With two --bin, each exec row is also run with
# the two builds alternating (one run of each in turn), the comparison to
# trust on a machine whose speed drifts. --parallel N also runs each daemon
# row's command from 1 and from N clients at once (the runs shared out
# among them) and prints the commands per second and, when perf is
# installed, serve's fsync calls per command: the group commit at work.
# The script installs nothing: it says what is missing and how to install
# it.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=200
warmup=10
parallel=0
bins=()
while [ $# -gt 0 ]; do
  case $1 in
    --quick) runs=30; warmup=3 ;;
    --runs) runs=$2; shift ;;
    --bin) bins+=("$(realpath "$2")"); shift ;;
    --parallel) parallel=$2; shift ;;
    -h|--help) sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-exec: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

missing=()
command -v hyperfine >/dev/null || missing+=(hyperfine)
command -v curl >/dev/null || missing+=(curl)
command -v bwrap >/dev/null || missing+=(bubblewrap)
command -v jq >/dev/null || missing+=(jq)
if [ ${#missing[@]} -gt 0 ]; then
  echo "bench-exec: missing ${missing[*]}; install with: apt-get install -y ${missing[*]}" >&2
  exit 1
fi

work=$(mktemp -d /var/tmp/ironvise-bench-exec.XXXXXX)
serve_pids=()
cleanup() {
  [ ${#serve_pids[@]} -eq 0 ] || kill "${serve_pids[@]}" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
mkdir "$work/ws"
# The page-fault probe is built now, with the binaries: a build right
# before the first rows would have them measured on a machine still busy
# with it.
probe=""
if command -v go >/dev/null && go build -o "$work/pagetouch" ./scripts/pagetouch; then
  probe=$work/pagetouch
else
  echo "bench-exec: no go toolchain to build scripts/pagetouch; the page-fault cost is not printed" >&2
fi
if [ ${#bins[@]} -eq 0 ]; then
  command -v go >/dev/null || { echo "bench-exec: no go toolchain to build ironvise; pass --bin PATH" >&2; exit 1; }
  # Built as the release is (make build): static, no cgo, the sandbox
  # launcher embedded, ironvise without the server and ironvise-server
  # (which its serve hands to) beside it.
  TAGS=noserver scripts/build-ironvise.sh "$work/ironvise"
  scripts/build-ironvise.sh "$work/ironvise-server"
  CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$work/ironvise-exec" ./cmd/ironvise-exec
  bins=("$work/ironvise")
fi

# Two bubblewrap rows: the plainest sandbox it makes (a mount namespace
# with the root read-only), the ratio the issue's target names; and one
# with the namespaces the native tier gives every command (PID, network and
# mount, with a /proc of its own), for a like-for-like view. Neither has
# Landlock, seccomp, masks or a ledger.
names=(true bubblewrap "bubblewrap, pid+net")
serves=() # command index -> the serve pid answering it (daemon rows)
alone=()  # per binary: the index of its standalone row
daemon=() # per binary: the index of its daemon row, when it has one
quick=()  # the indexes of the ironvise-exec rows
cmds=(/bin/true "bwrap --ro-bind / / /bin/true" "bwrap --unshare-pid --unshare-net --ro-bind / / --proc /proc /bin/true")
# acmds are the same commands with every data directory named by env, for
# the alternated comparison of two builds (below), where both sides must
# pay for the same wrapper.
acmds=("${cmds[@]}")
for i in "${!bins[@]}"; do
  b=${bins[$i]}
  [ -x "$b" ] || { echo "bench-exec: $b is not an executable" >&2; exit 1; }
  # Each binary has a data directory of its own, which its standalone and
  # daemon rows share (exec --no-daemon runs beside serve as it would for
  # a user). The first binary's is hyperfine's own environment, so that
  # its rows run ironvise itself, as the other sandboxes' rows run
  # theirs; hyperfine -N sets no variable per command, so the rows of
  # any further binary name theirs with env, and a row of env alone
  # shows what that adds.
  data="$work/data$i"
  mkdir -p "$data"
  wrap="env ECTO_DATA_DIR=$data "
  [ "$i" -eq 0 ] && wrap=""
  label="ironvise exec"
  [ ${#bins[@]} -gt 1 ] && label="ironvise exec ($b)"
  names+=("$label")
  # A build with the daemon path is told to run in-process here; its
  # daemon row follows.
  nodaemon=""
  # The help is read whole first: grep -q would stop reading early, and
  # under pipefail the writer's SIGPIPE would read as "no such flag".
  help=$("$b" exec --help 2>/dev/null || true)
  case $help in *--no-daemon*) nodaemon="--no-daemon " ;; esac
  cmds+=("$wrap$b exec $nodaemon--workspace $work/ws -- /bin/true")
  acmds+=("env ECTO_DATA_DIR=$data $b exec $nodaemon--workspace $work/ws -- /bin/true")
  alone+=($((${#cmds[@]} - 1)))
  if [ -n "$nodaemon" ]; then
    # The daemon path: a serve of this build on the data directory,
    # answering on $data/run/ironvise.sock; it stops with the script.
    ECTO_DATA_DIR="$data" ECTO_BIND_PORT=0 GUARD_REQUIRED=false "$b" serve >"$work/serve$i.log" 2>&1 &
    serve_pids+=($!)
    for _ in $(seq 1 100); do [ -S "$data/run/ironvise.sock" ] && break; sleep 0.1; done
    [ -S "$data/run/ironvise.sock" ] || { echo "bench-exec: serve of $b did not open its socket; see $work/serve$i.log" >&2; exit 1; }
    # serve probes its sandbox guarantees in the background once it
    # listens (a few seconds of deliberately heavy commands: busy loops,
    # memory and process floods); measuring alongside them would time the
    # probes. GET /api/sandbox answers once they are done. (Until the
    # afternoon of 2026-12-04 this waited for a second without a launcher
    # process, but a probe runs as the command a launcher became, so the
    # first rows — /bin/true and bubblewrap — ran beside the probes.)
    base="" tok=${OBSERVER_TOKEN:-}
    for _ in $(seq 1 100); do
      base=$(sed -n 's/^listening on \(http:[^ ]*\).*/\1/p' "$work/serve$i.log")
      [ -z "$tok" ] && tok=$(sed -n 's/^.*generated a one-run admin token: \([0-9a-f]*\).*/\1/p' "$work/serve$i.log")
      [ -n "$base" ] && [ -n "$tok" ] && break
      sleep 0.1
    done
    curl -sf --max-time 180 -H "Authorization: Bearer $tok" "${base%/}/api/sandbox" >/dev/null ||
      { echo "bench-exec: serve of $b did not report its sandbox probes done (GET ${base%/}/api/sandbox); see $work/serve$i.log" >&2; exit 1; }
    sleep 1 # the ready launcher that follows the last probe starts
    names+=("$label (daemon)")
    cmds+=("$wrap$b exec --workspace $work/ws -- /bin/true")
    acmds+=("env ECTO_DATA_DIR=$data $b exec --workspace $work/ws -- /bin/true")
    serves[${#cmds[@]} - 1]=${serve_pids[-1]}
    daemon+=($((${#cmds[@]} - 1)))
    # ironvise-exec beside the binary (make build puts it there): exec's
    # quick path to the same serve as a small program of its own.
    small=$(dirname "$b")/ironvise-exec
    if [ -x "$small" ]; then
      names+=("${label/ironvise exec/ironvise-exec} (daemon)")
      cmds+=("$wrap$small --workspace $work/ws -- /bin/true")
      acmds+=("env ECTO_DATA_DIR=$data $small --workspace $work/ws -- /bin/true")
      serves[${#cmds[@]} - 1]=${serve_pids[-1]}
      quick+=($((${#cmds[@]} - 1)))
    fi
  fi
done
export ECTO_DATA_DIR="$work/data0"
if [ ${#bins[@]} -gt 1 ]; then
  names+=("env")
  cmds+=("env ECTO_DATA_DIR=$work/data1 /bin/true")
  acmds+=("${cmds[-1]}")
fi
# The other sandboxes are measured when they are installed and run here;
# one that is installed but fails (a missing dependency) is skipped with
# its error rather than timed failing.
others() {
  local name=$1 cmd=$2 out
  # shellcheck disable=SC2086 # the command is a word list, as hyperfine -N runs it
  if out=$($cmd 2>&1); then
    names+=("$name")
    cmds+=("$cmd")
    acmds+=("$cmd")
  else
    echo "bench-exec: $name fails here; skipped: $(printf '%s' "$out" | tail -n 1)" >&2
  fi
}
if command -v codex >/dev/null; then
  # Recent releases run the command after `codex sandbox --`; older ones
  # took the platform as a subcommand (`codex sandbox linux --`).
  chelp=$(codex sandbox --help 2>/dev/null || true)
  case $chelp in
    *$'\n'"  linux "*) others "codex sandbox" "codex sandbox linux -- /bin/true" ;;
    *) others "codex sandbox" "codex sandbox -- /bin/true" ;;
  esac
else
  echo "bench-exec: codex is not installed; skipped (npm install -g @openai/codex)" >&2
fi
if command -v srt >/dev/null; then
  others srt "srt /bin/true"
else
  echo "bench-exec: srt is not installed; skipped (npm install -g @anthropic-ai/sandbox-runtime; it needs bubblewrap, ripgrep and socat)" >&2
fi

args=(-N --style basic --runs "$runs" --warmup "$warmup" --export-json "$work/result.json")
for i in "${!cmds[@]}"; do
  args+=(-n "${names[$i]}" "${cmds[$i]}")
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; $runs runs each" >&2
# What a page fault costs here decides how long any new process takes to
# start (scripts/pagetouch explains); printed so that numbers from two
# machines can be told apart.
if [ -n "$probe" ]; then
  "$probe" >&2 || echo "bench-exec: the page-fault probe failed (above); measuring anyway" >&2
fi
hyperfine "${args[@]}" >&2

echo
# With codex measured, a last column says how many times faster than
# `codex sandbox` each row is (the issue's target for the daemon: 10).
jq -r '
  (.results[] | select(.command == "bubblewrap") | .median) as $bw
  | (.results[] | select(.command == "bubblewrap, pid+net") | .median) as $bn
  | ([.results[] | select(.command == "codex sandbox") | .median] | first) as $cx
  | def r2: . * 100 | round / 100 | tostring;
    (["command", "median ms", "× bubblewrap", "× bubblewrap, pid+net"] + (if $cx then ["codex sandbox ÷"] else [] end)),
    (["---", "---:", "---:", "---:"] + (if $cx then ["---:"] else [] end)),
    (.results[] | [.command, (.median * 1000 | r2), (.median / $bw | r2), (.median / $bn | r2)]
                  + (if $cx then [($cx / .median | r2)] else [] end))
  | "| " + join(" | ") + " |"' "$work/result.json"

# Each ironvise row against bubblewrap, one run of each in turn, each
# after 150 ms of quiet: the latency of one command at a time, the ratio
# the issue's target names, measured so that a drift of the machine's
# speed between hyperfine's rows (a slow minute for bubblewrap, a fast one
# for ironvise, or the reverse) falls on both sides. The quiet matters:
# after answering, serve starts the next command's launcher and, within
# 100 ms, writes its remembered checkpoint; run right after, bubblewrap
# would pay for that work and the ratio would flatter IronVise (in
# hyperfine's back-to-back rows each command pays for the one before
# it). Both are timed around their fork and exec from this shell. Only the
# first binary's rows are run so: a further binary's go through env, which
# bubblewrap would not pay for.
quiet=0.15
median() { sort -n | awk '{v[NR] = $1} END {printf "%.2f", v[int((NR + 1) / 2)] / 1e6}'; }
timed() {
  local t0 t1
  # bash's own clock, in microseconds: no process is started to read it
  # (until the night of 2026-12-03 a date process per reading was timed
  # too, several milliseconds on a slow machine).
  t0=${EPOCHREALTIME/[.,]/}
  # shellcheck disable=SC2086 # the command is a word list, as hyperfine -N runs it
  $1 >/dev/null 2>&1 || true
  t1=${EPOCHREALTIME/[.,]/}
  echo $(((10#$t1 - 10#$t0) * 1000))
}
echo
echo "| alternated with bubblewrap, each after $quiet s of quiet, $runs runs each | median ms | bubblewrap median ms | × bubblewrap |"
echo "| --- | ---: | ---: | ---: |"
for i in "${!cmds[@]}"; do
  case ${names[$i]} in "ironvise exec"* | "ironvise-exec"*) ;; *) continue ;; esac
  case ${cmds[$i]} in "env "*) continue ;; esac
  : >"$work/x.times"
  : >"$work/bw.times"
  for _ in $(seq 1 "$runs"); do
    sleep "$quiet"
    timed "${cmds[$i]}" >>"$work/x.times"
    sleep "$quiet"
    timed "${cmds[1]}" >>"$work/bw.times"
  done
  mx=$(median <"$work/x.times")
  mb=$(median <"$work/bw.times")
  echo "| ${names[$i]} | $mx | $mb | $(awk -v a="$mx" -v b="$mb" 'BEGIN {printf "%.2f", a / b}') |"
done

# The CPU one command costs, by process, each run after the same quiet: on
# a 2-core machine a daemon exec keeps both cores busy for most of its
# time, so its CPU, not only its wall time, says what a change can gain
# (performance.md#where-it-stands). A daemon exec's CPU is the client's
# (this shell's children), serve's own (its utime and stime) and that of
# the launchers serve reaped (their cutime and cstime: a launcher becomes
# its command, so this is the launcher's start and setup and the command
# together). Each run reaps the launcher that ran it; the ready one
# started after it is counted when the next run reaps it. bubblewrap's is
# its own process and its command's. The quiet is waited for with read -t
# on a pipe, not sleep, whose process would count as a child.
exec {quietfd}<> <(:)
ticks() {
  local s
  s=$(<"/proc/$1/stat")
  s=${s##*) }
  # shellcheck disable=SC2086 # the fields, split on blanks
  set -- $s
  echo "${12} ${13} ${14} ${15}"
}
childcpu() {
  # The children's user and system time from bash's times, in ms per run.
  (
    for _ in $(seq 1 "$runs"); do
      read -rt "$quiet" -u "$quietfd" || true
      # shellcheck disable=SC2086 # the command is a word list, as hyperfine -N runs it
      $1 >/dev/null 2>&1 || true
    done
    times
  ) | awk -v n="$runs" 'NR == 2 {
      split($1, u, /[ms]/); split($2, s, /[ms]/)
      printf "%.2f", (u[1] * 60 + u[2] + s[1] * 60 + s[2]) * 1000 / n }'
}
hz=$(getconf CLK_TCK)
echo
echo "| CPU per command, $runs runs each after $quiet s of quiet | client ms | serve ms | launcher and command ms | total ms |"
echo "| --- | ---: | ---: | ---: | ---: |"
echo "| ${names[1]} (its process and the command's) | | | | $(childcpu "${cmds[1]}") |"
for i in "${daemon[@]}" "${quick[@]}"; do
  case ${cmds[$i]} in "env "*) continue ;; esac
  read -r u0 s0 cu0 cs0 <<<"$(ticks "${serves[$i]}")"
  client=$(childcpu "${cmds[$i]}")
  read -r u1 s1 cu1 cs1 <<<"$(ticks "${serves[$i]}")"
  awk -v name="${names[$i]}" -v c="$client" -v hz="$hz" -v n="$runs" \
    -v s=$((u1 - u0 + s1 - s0)) -v l=$((cu1 - cu0 + cs1 - cs0)) \
    'BEGIN {sv = s * 1000 / hz / n; lc = l * 1000 / hz / n
      printf "| %s | %.2f | %.2f | %.2f | %.2f |\n", name, c, sv, lc, c + sv + lc}'
done
exec {quietfd}<&-

# Two builds: the same rows again, one run of each build in turn. hyperfine
# measures one command's runs and then the next's, and on a shared virtual
# machine the speed of everything can drift by a quarter between one minute
# and the next, which a comparison of two builds then takes for their
# difference; alternating puts the drift on both. Each run is timed around
# its fork and exec from this shell, a millisecond or two that both share.
#
# Each build runs from three copies of its file, in turn: on a virtual
# machine the same binary copied to another file measured up to 2 ms
# (7 %) apart on a standalone exec, depending on where the file's pages
# landed (performance-log.md#exec-2026-12-03-night), which one file per build
# would take for the builds' difference.
if [ ${#bins[@]} -eq 2 ]; then
  for n in 0 1; do
    for c in 0 1 2; do
      cp "${bins[$n]}" "$work/copy$c-$n"
      # The ironvise-exec rows name the binary's directory's
      # ironvise-exec, which the substitution below turns into this name.
      small=$(dirname "${bins[$n]}")/ironvise-exec
      if [ -x "$small" ]; then cp "$small" "$work/copy$c-$n-exec"; fi
    done
  done
  echo
  echo "| alternated, $runs runs each | median ms, ${bins[0]} | median ms, ${bins[1]} | ratio |"
  echo "| --- | ---: | ---: | ---: |"
  rows=("ironvise exec:${alone[0]}:${alone[1]}")
  [ ${#daemon[@]} -eq 2 ] && rows+=("ironvise exec (daemon):${daemon[0]}:${daemon[1]}")
  [ ${#quick[@]} -eq 2 ] && rows+=("ironvise-exec (daemon):${quick[0]}:${quick[1]}")
  for r in "${rows[@]}"; do
    IFS=: read -r row ia ib <<<"$r"
    : >"$work/a.times"
    : >"$work/b.times"
    for k in $(seq 1 "$runs"); do
      for side in a b; do
        i=$ia n=0
        [ "$side" = b ] && i=$ib n=1
        timed "${acmds[$i]//"${bins[$n]}"/"$work/copy$((k % 3))-$n"}" >>"$work/$side.times"
      done
    done
    ma=$(median <"$work/a.times")
    mb=$(median <"$work/b.times")
    echo "| $row | $ma | $mb | $(awk -v a="$ma" -v b="$mb" 'BEGIN {printf "%.2f", a / b}') |"
  done
fi

# Throughput through the daemon: the runs of each daemon row shared out
# among 1, then $parallel clients running at once. Commands that wait for
# the same commit share its fsync (the ledger's group commit), so the
# fsyncs per command fall as clients are added; perf counts them at
# serve's system-call entry without stopping it (strace would slow every
# client down and change how commits group).
if [ "$parallel" -gt 1 ] && [ ${#daemon[@]} -gt 0 ]; then
  echo
  echo "| daemon row | clients | commands | wall s | commands per s | serve fsyncs per command |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: |"
  for i in "${daemon[@]}" "${quick[@]}"; do
    for clients in 1 "$parallel"; do
      each=$(((runs + clients - 1) / clients))
      counter=""
      if command -v perf >/dev/null; then
        perf stat -x, -e syscalls:sys_enter_fsync,syscalls:sys_enter_fdatasync -p "${serves[$i]}" -o "$work/perf.csv" 2>/dev/null &
        counter=$!
        sleep 0.5
      fi
      t0=$(date +%s%N)
      pids=()
      for _ in $(seq 1 "$clients"); do
        (
          for _ in $(seq 1 "$each"); do
            # shellcheck disable=SC2086 # the command is a word list, as hyperfine -N runs it
            ${cmds[$i]} >/dev/null 2>&1 || echo "bench-exec: a run of ${names[$i]} failed" >&2
          done
        ) &
        pids+=($!)
      done
      wait "${pids[@]}"
      t1=$(date +%s%N)
      per="n/a (perf not installed)"
      if [ -n "$counter" ]; then
        sleep 0.3 # serve may still be writing after its last reply
        kill -INT "$counter"
        wait "$counter" 2>/dev/null || true
        # Without the tracepoints (no permission, no tracefs) perf has
        # nothing to count: say so rather than print zero.
        per=$(awk -F, -v n=$((clients * each)) '/sys_enter_f/ && $1 ~ /^[0-9]+$/ {s += $1; k++} END {if (k) printf "%.2f", s / n; else print "n/a (perf cannot count system calls here)"}' "$work/perf.csv" 2>/dev/null || echo "n/a (perf failed)")
      fi
      awk -v name="${names[$i]}" -v c="$clients" -v n=$((clients * each)) -v ns=$((t1 - t0)) -v per="$per" \
        'BEGIN {printf "| %s | %d | %d | %.2f | %.1f | %s |\n", name, c, n, ns / 1e9, n / (ns / 1e9), per}'
    done
  done
fi

# fsync calls per run of each ironvise row, counted by strace over
# syncruns runs: the client's own and, for a daemon row, those of serve
# while it answers (serve's are traced over all the runs and shared out).
# A standalone run's count depends on what the run before it left: most
# find a WAL to append to, one in about ten checkpoints it on close
# (ledger.md#operations), so the median and the extremes are printed.
if ! command -v strace >/dev/null; then
  echo "bench-exec: strace is not installed; fsync counts skipped (apt-get install -y strace)" >&2
  exit 0
fi
syncruns=20
syncs() { grep -cE '^[0-9]+ +(fsync|fdatasync|sync_file_range)\(' "$1" || true; }
echo
echo "| command | fsync calls per run, median | fewest | most | runs |"
echo "| --- | ---: | ---: | ---: | ---: |"
for i in "${!cmds[@]}"; do
  case ${names[$i]} in "ironvise exec"* | "ironvise-exec"*) ;; *) continue ;; esac
  trace=(strace -f -qq -e "trace=fsync,fdatasync,sync_file_range")
  if [ -n "${serves[$i]:-}" ]; then
    "${trace[@]}" -p "${serves[$i]}" -o "$work/serve.strace" 2>/dev/null &
    tracer=$!
    sleep 1 # strace attaches to every thread of serve first
  fi
  : >"$work/syncs"
  for _ in $(seq "$syncruns"); do
    # shellcheck disable=SC2086 # the command is a word list, as hyperfine -N runs it
    "${trace[@]}" -o "$work/client.strace" ${cmds[$i]} >/dev/null 2>&1
    syncs "$work/client.strace" >>"$work/syncs"
  done
  shared=0
  if [ -n "${serves[$i]:-}" ]; then
    sleep 0.5 # serve may still be writing after its reply (the remembered checkpoint)
    kill -INT "$tracer"; wait "$tracer" 2>/dev/null || true
    shared=$(awk -v n="$(syncs "$work/serve.strace")" -v r="$syncruns" 'BEGIN {print n / r}')
  fi
  sort -n "$work/syncs" | awk -v s="$shared" -v name="${names[$i]}" '
    {v[NR] = $1 + s}
    END {printf "| %s | %g | %g | %g | %d |\n", name, v[int((NR + 1) / 2)], v[1], v[NR], NR}'
done
