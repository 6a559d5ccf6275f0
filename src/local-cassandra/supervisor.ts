import { connect } from 'node:net';

/**
 * What both local launchers (Cassandra, Kafka) use to run a JVM: the supervisor script and the port probe.
 */

/**
 * The bash supervisor a launcher runs its JVM under: it starts
 * `java "$@"` with its output appended to `$1`, writes the JVM's pid to `$2`, forwards TERM/INT/HUP
 * as a TERM to the JVM and kills it `graceSeconds` later if it has not gone, and — because it holds
 * the parent's pipe on fd 3 — stops the JVM when the parent dies (the pipe closes). It exits with
 * the JVM's status.
 *
 * @example spawn('bash', ['-c', supervisorScript(45), 'cassandra-supervisor', outFile, pidFile, ...javaArgs], { stdio: ['pipe', 'ignore', 'ignore'] })
 */
export function supervisorScript(graceSeconds: number): string {
  return `
out="$1"; pidfile="$2"; shift 2
exec 3<&0
java "$@" </dev/null >>"$out" 2>&1 &
jpid=$!
echo "$jpid" >"$pidfile"
stopping=0
killer=
stop() {
  [ "$stopping" = 1 ] && return
  stopping=1
  kill -TERM "$jpid" 2>/dev/null
  ( sleep ${graceSeconds}; kill -KILL "$jpid" 2>/dev/null ) &
  killer=$!
}
trap stop TERM INT HUP
{ cat <&3 >/dev/null; kill -TERM $$ 2>/dev/null; } &
watcher=$!
status=0
while kill -0 "$jpid" 2>/dev/null; do wait "$jpid"; status=$?; done
for p in "$watcher" $killer; do pkill -P "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
exit "$status"
`;
}

/** True when a TCP connection to host:port succeeds within `timeoutMs`. */
export function portAnswers(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
