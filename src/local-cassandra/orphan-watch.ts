/**
 * Calls `onOrphaned` once when this process's parent goes away (its parent pid changes, as it
 * does when the parent dies and the process is re-parented). `npm start` runs the service under
 * npm and a shell; a SIGTERM to npm alone would otherwise leave the service — and the Cassandra
 * node it started — running with nobody to stop them. The timer never keeps the process alive.
 */
export function whenOrphaned(onOrphaned: () => void, intervalMs = 1000): () => void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid !== parent) {
      clearInterval(timer);
      onOrphaned();
    }
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
